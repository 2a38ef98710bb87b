import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compose, type Middleware } from '../../../src/core/compose.js';
import { HttpError } from '../../../src/core/errors/errors.js';
import { PROBLEM_TYPE } from '../../../src/core/problem.js';
import { sendJson } from '../../../src/core/send.js';
import { silentLogger } from '../../../src/diagnostics/index.js';
import {
  createRouter,
  getParams,
  getPathname,
  getRoute,
  methods,
  mount,
  notFoundHandler,
} from '../../../src/http/routing/router.js';
import { closeAll, json, parseReply, rawRequest, request, serve } from '../../helpers/http.js';

const echo =
  (name: string): Middleware =>
  (req, res) =>
    sendJson(res, 200, { route: name, method: req.method, params: getParams(req) });

const mounted: string[] = [];

const app = compose([
  mount('/api', (req, _res, next) => {
    mounted.push(getPathname(req));
    return next();
  }),
  createRouter({
    '/': echo('root'),
    '/api': echo('api'),
    '/api/messages': { GET: echo('list'), POST: echo('create') },
    '/api/messages/:id': { GET: echo('read'), PUT: echo('replace'), DELETE: echo('remove') },
    '/api/channels/:channel/messages/:id': { GET: echo('channel message') },
    '/api/messages/special': echo('special-never-shadowed'),
    '/files/:name': echo('file'),
    '/only-post': { POST: echo('only post') },
    '/custom-options': {
      GET: echo('custom get'),
      OPTIONS: (_req, res) => sendJson(res, 200, { custom: 'options' }),
    },
    '/explicit-head': {
      GET: echo('get'),
      HEAD: (_req, res) => {
        res.setHeader('X-Head', 'explicit');
        res.end();
      },
    },
    '/any': echo('any method'),
    '/target': (req, res) => sendJson(res, 200, { url: req.url, pathname: getPathname(req) }),
    '/doc': {
      GET: (_req, res) => {
        res.setHeader('ETag', '"v1"');
        sendJson(res, 200, { title: 'A document', body: 'é'.repeat(10) });
      },
    },
  }),
]);

let port: number;

beforeAll(async () => {
  ({ port } = await serve(app, { logger: silentLogger }));
});

afterAll(closeAll);

describe('createRouter', () => {
  it('serves exact paths', async () => {
    const root = await request(port, '/');
    expect(root.status).toBe(200);
    expect(json(root).route).toBe('root');
    const list = await request(port, '/api/messages');
    expect(json(list)).toEqual({ route: 'list', method: 'GET', params: {} });
  });

  it('ignores the query when matching', async () => {
    const answer = await request(port, '/api/messages?limit=10&cursor=abc');
    expect(answer.status).toBe(200);
    expect(json(answer).route).toBe('list');
  });

  it('picks the handler by method', async () => {
    expect(json(await request(port, '/api/messages', { method: 'POST' })).route).toBe('create');
    expect(json(await request(port, '/api/messages/7', { method: 'PUT' })).route).toBe('replace');
    expect(json(await request(port, '/api/messages/7', { method: 'DELETE' })).route).toBe('remove');
  });

  it('matches :param segments', async () => {
    const answer = await request(port, '/api/messages/42');
    expect(json(answer)).toEqual({ route: 'read', method: 'GET', params: { id: '42' } });
    const nested = await request(port, '/api/channels/general/messages/9');
    expect(json(nested).params).toEqual({ channel: 'general', id: '9' });
  });

  it('prefers an exact route over a :param route', async () => {
    const answer = await request(port, '/api/messages/special');
    expect(json(answer).route).toBe('special-never-shadowed');
  });

  it('percent-decodes parameters', async () => {
    const answer = await request(port, '/files/caf%c3%a9%20menu%2Bv2.txt');
    expect(json(answer).params).toEqual({ name: 'café menu+v2.txt' });
    // an encoded slash is one segment to this router, two to another reader: refused
    const slash = await request(port, '/files/menu%2Fv2.txt');
    expect(slash.status).toBe(400);
    expect(json(slash).type).toBe('urn:portico:problem:ambiguous-path');
    const plus = await request(port, '/files/a+b');
    expect(json(plus).params).toEqual({ name: 'a+b' });
  });

  it('answers 400 with a problem for malformed percent-encoding', async () => {
    const answer = await request(port, '/files/%E0%A4%A');
    expect(answer.status).toBe(400);
    expect(answer.headers['content-type']).toBe(PROBLEM_TYPE);
    expect(json(answer)).toMatchObject({ status: 400, instance: '/files/%E0%A4%A' });
    const lone = await request(port, '/api/messages/%');
    expect(lone.status).toBe(400);
  });

  it('goes on to next for unmatched paths (404 from the listener)', async () => {
    for (const path of [
      '/nope',
      '/api/messages/1/extra',
      '/api/messages/',
      '/files/',
      '/API/messages',
    ]) {
      const answer = await request(port, path);
      expect(answer.status, path).toBe(404);
      expect(answer.headers['content-type']).toBe(PROBLEM_TYPE);
      expect(json(answer).instance).toBe(path);
    }
  });

  it('refuses an empty segment instead of guessing whether it merges', async () => {
    const answer = await request(port, '/api/channels//messages/1');
    expect(answer.status).toBe(400);
    expect(json(answer).type).toBe('urn:portico:problem:ambiguous-path');
  });

  it('calls the chain next for unmatched paths', async () => {
    let nextCalled = 0;
    const router = createRouter({ '/a': echo('a'), '/b/:id': echo('b') });
    await router({ url: '/zzz', headers: {} } as never, {} as never, async () => {
      nextCalled++;
    });
    await router({ url: '/b/1/2', headers: {} } as never, {} as never, async () => {
      nextCalled++;
    });
    expect(nextCalled).toBe(2);
  });

  it('serves any method with a plain middleware', async () => {
    const answer = await request(port, '/any', { method: 'PATCH' });
    expect(answer.status).toBe(200);
    expect(json(answer).method).toBe('PATCH');
  });
});

describe('method tables', () => {
  it('answers 405 with Allow listing the methods, HEAD (with GET) and OPTIONS', async () => {
    const answer = await request(port, '/api/messages', { method: 'DELETE' });
    expect(answer.status).toBe(405);
    expect(answer.headers['content-type']).toBe(PROBLEM_TYPE);
    const allow = String(answer.headers.allow).split(', ');
    expect(allow.sort()).toEqual(['GET', 'HEAD', 'OPTIONS', 'POST']);
    expect(json(answer).status).toBe(405);
  });

  it('lists no HEAD when there is no GET', async () => {
    const answer = await request(port, '/only-post', { method: 'GET' });
    expect(answer.status).toBe(405);
    const allow = String(answer.headers.allow).split(', ');
    expect(allow.sort()).toEqual(['OPTIONS', 'POST']);
  });

  it('answers OPTIONS with 204 and Allow', async () => {
    const answer = await request(port, '/api/messages/3', { method: 'OPTIONS' });
    expect(answer.status).toBe(204);
    expect(answer.body).toBe('');
    const allow = String(answer.headers.allow).split(', ');
    expect(allow.sort()).toEqual(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PUT']);
  });

  it('lets an explicit OPTIONS handler win', async () => {
    const answer = await request(port, '/custom-options', { method: 'OPTIONS' });
    expect(answer.status).toBe(200);
    expect(json(answer)).toEqual({ custom: 'options' });
  });

  it('serves HEAD by GET, without body but with the same Content-Length', async () => {
    const get = await request(port, '/doc', { method: 'GET' });
    const head = await request(port, '/doc', { method: 'HEAD' });
    expect(get.status).toBe(200);
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    expect(Number(get.headers['content-length'])).toBe(Buffer.byteLength(get.body));
    expect(head.headers['content-length']).toBe(get.headers['content-length']);
    expect(head.headers['content-type']).toBe(get.headers['content-type']);
    expect(head.headers.etag).toBe('"v1"');
    // the GET handler ran for HEAD
    const echoed = await request(port, '/api/messages/42', { method: 'HEAD' });
    expect(echoed.status).toBe(200);
    expect(echoed.body).toBe('');
    expect(Number(echoed.headers['content-length'])).toBe(
      Buffer.byteLength(JSON.stringify({ route: 'read', method: 'HEAD', params: { id: '42' } })),
    );
  });

  it('uses an explicit HEAD handler over GET', async () => {
    const head = await request(port, '/explicit-head', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers['x-head']).toBe('explicit');
  });

  it('throws TypeError for invalid tables', () => {
    const fn: Middleware = () => {};
    expect(() => methods({ get: fn })).toThrow(TypeError);
    expect(() => methods({ 'GET ': fn })).toThrow(TypeError);
    expect(() => methods({ GET: 'nope' as unknown as Middleware })).toThrow(TypeError);
    expect(() => methods({ GET: undefined })).toThrow(TypeError);
  });
});

describe('mount', () => {
  it('runs for the prefix and paths under it, not for look-alikes', async () => {
    mounted.length = 0;
    for (const path of ['/api', '/api/messages', '/api/', '/apiary', '/', '/ap', '/x/api']) {
      await request(port, path);
    }
    expect(mounted).toEqual(['/api', '/api/messages', '/api/']);
  });

  it('ignores the query when matching the prefix', async () => {
    mounted.length = 0;
    await request(port, '/api?x=1');
    await request(port, '/apiary?x=/api/');
    expect(mounted).toEqual(['/api']);
  });

  it('treats a trailing slash in the prefix like none', async () => {
    const seen: string[] = [];
    const mw = mount('/v1/', (req, _res, next) => {
      seen.push(req.url ?? '');
      return next();
    });
    for (const url of ['/v1', '/v1/x', '/v10']) {
      await mw({ url, headers: {} } as never, {} as never, async () => {});
    }
    expect(seen).toEqual(['/v1', '/v1/x']);
  });

  it('keeps the prefix: a router under a mount matches the full path', async () => {
    const s = await serve([mount('/api', createRouter({ '/api/v1/:id': echo('full path') }))]);
    try {
      const answer = await request(s, '/api/v1/3');
      expect(json(answer)).toEqual({ route: 'full path', method: 'GET', params: { id: '3' } });
      expect((await request(s, '/v1/3')).status).toBe(404);
    } finally {
      await s.close();
    }
  });

  it('throws TypeError for a prefix without a leading slash', () => {
    expect(() => mount('api', () => {})).toThrow(TypeError);
    expect(() => mount('', () => {})).toThrow(TypeError);
  });

  it('mount("/") covers every path', async () => {
    const seen: string[] = [];
    const mw = mount('/', (req, _res, next) => {
      seen.push(req.url ?? '');
      return next();
    });
    for (const url of ['/', '/a', '/a/b']) {
      await mw({ url, headers: {} } as never, {} as never, async () => {});
    }
    expect(seen).toEqual(['/', '/a', '/a/b']);
  });
});

describe('absolute-form request targets (RFC 9112 §3.2.2)', () => {
  /** Sends `GET <target>` over a raw socket, with a matching Host header. */
  const rawGet = async (target: string) =>
    parseReply(
      await rawRequest(
        port,
        `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`,
      ),
    );
  const origin = () => `http://127.0.0.1:${port}`;

  it('routes by the path of the target, exact and with parameters, ignoring the query', async () => {
    const list = await rawGet(`${origin()}/api/messages?limit=10`);
    expect(list.status, list.body).toBe(200);
    expect(JSON.parse(list.body)).toEqual({ route: 'list', method: 'GET', params: {} });
    const read = await rawGet(`${origin()}/api/messages/42`);
    expect(JSON.parse(read.body)).toEqual({ route: 'read', method: 'GET', params: { id: '42' } });
  });

  it('takes any case of the http and https schemes', async () => {
    for (const target of [
      `HTTP://127.0.0.1:${port}/api/messages`,
      `https://127.0.0.1:${port}/api/messages`,
    ]) {
      const reply = await rawGet(target);
      expect(reply.status, target).toBe(200);
      expect(JSON.parse(reply.body).route).toBe('list');
    }
  });

  it('reads an empty path as /', async () => {
    for (const target of [origin(), `${origin()}?x=1`]) {
      const reply = await rawGet(target);
      expect(reply.status, target).toBe(200);
      expect(JSON.parse(reply.body).route).toBe('root');
    }
  });

  it('leaves req.url as it was sent', async () => {
    const reply = await rawGet(`${origin()}/target?a=1`);
    expect(JSON.parse(reply.body)).toEqual({
      url: `${origin()}/target?a=1`,
      pathname: '/target',
    });
  });

  it('runs mounted middleware for the path under the prefix, not for look-alikes', async () => {
    mounted.length = 0;
    await rawGet(`${origin()}/api/messages`);
    await rawGet(`${origin()}/apiary`);
    await rawGet(`http://api.example/x/api`);
    expect(mounted).toEqual(['/api/messages']);
  });

  it('gives a path that matches nothing a 404 whose instance is the path alone', async () => {
    const reply = await rawGet(`${origin()}/nothing?secret=1`);
    expect(reply.status).toBe(404);
    expect(reply.headers['content-type']).toBe(PROBLEM_TYPE);
    expect(JSON.parse(reply.body).instance).toBe('/nothing');
  });
});

describe('route definitions', () => {
  it('throw TypeError when invalid', () => {
    const fn: Middleware = () => {};
    expect(() => createRouter({ 'no-slash': fn })).toThrow(TypeError);
    expect(() => createRouter({ '': fn })).toThrow(TypeError);
    expect(() => createRouter({ '/x': 42 as unknown as Middleware })).toThrow(TypeError);
    expect(() => createRouter({ '/x': null as unknown as Middleware })).toThrow(TypeError);
    expect(() => createRouter({ '/x/:id': { get: fn } })).toThrow(TypeError);
    expect(() => createRouter({ '/x': { GET: 'nope' as unknown as Middleware } })).toThrow(
      TypeError,
    );
  });

  it('carry the ERR_INVALID_OPTION code', () => {
    try {
      createRouter({ 'no-slash': () => {} });
      expect.unreachable();
    } catch (err) {
      expect((err as { code?: string }).code).toBe('ERR_INVALID_OPTION');
    }
  });
});

describe('notFoundHandler', () => {
  it('answers every request with a 404 problem', async () => {
    const s = await serve([notFoundHandler('Nothing here.')]);
    try {
      const answer = await request(s, '/whatever');
      expect(answer.status).toBe(404);
      expect(json(answer).detail).toBe('Nothing here.');
    } finally {
      await s.close();
    }
  });
});

describe('the match step (router.match, then router.dispatch)', () => {
  const seen: { path: string; route: unknown; params: unknown; reachedAuth: boolean }[] = [];
  const router = createRouter({
    '/api/messages': { GET: echo('list'), POST: echo('create') },
    '/api/messages/:id': {
      GET: (req, res) => {
        // the match the handler sees is the one made before authentication, not a new one
        sendJson(res, 200, { sameMatch: getRoute(req) === matchedBefore.get(req) });
      },
    },
    '/any': echo('any method'),
  });
  const matchedBefore = new WeakMap<object, unknown>();
  const authenticateStandIn: Middleware = (req, _res, next) => {
    const route = getRoute(req);
    matchedBefore.set(req, route);
    seen.push({
      path: getPathname(req),
      route: route?.route,
      params: getParams(req),
      reachedAuth: true,
    });
    if (req.headers.authorization !== 'Bearer ok') {
      return Promise.reject(new HttpError(401, 'Who are you?'));
    }
    return next();
  };
  const extra: Middleware = (req, res, next) =>
    getPathname(req) === '/served-later' ? sendJson(res, 200, { later: true }) : next();
  let port2: number;

  beforeAll(async () => {
    ({ port: port2 } = await serve(
      compose([router.match, extra, authenticateStandIn, router.dispatch]),
      { logger: silentLogger },
    ));
  });

  const authorized = { authorization: 'Bearer ok' };

  it('answers 405 with Allow for a known path before authentication runs', async () => {
    seen.length = 0;
    const answer = await request(port2, '/api/messages', { method: 'DELETE' });
    expect(answer.status).toBe(405);
    expect(String(answer.headers.allow).split(', ').sort()).toEqual([
      'GET',
      'HEAD',
      'OPTIONS',
      'POST',
    ]);
    expect(seen).toEqual([]);
  });

  it('answers OPTIONS 204 with Allow before authentication runs', async () => {
    seen.length = 0;
    const answer = await request(port2, '/api/messages/7', { method: 'OPTIONS' });
    expect(answer.status).toBe(204);
    expect(String(answer.headers.allow).split(', ').sort()).toEqual(['GET', 'HEAD', 'OPTIONS']);
    expect(seen).toEqual([]);
  });

  it('stores the route, its params and methods for the middleware after it', async () => {
    seen.length = 0;
    const refused = await request(port2, '/api/messages/42');
    expect(refused.status).toBe(401);
    expect(seen).toEqual([
      {
        path: '/api/messages/42',
        route: '/api/messages/:id',
        params: { id: '42' },
        reachedAuth: true,
      },
    ]);
    const served = await request(port2, '/api/messages/42', { headers: authorized });
    expect(json(served)).toEqual({ sameMatch: true });
  });

  it('passes an unknown path on, to a later middleware or to the 404', async () => {
    seen.length = 0;
    const later = await request(port2, '/served-later');
    expect(later.status).toBe(200);
    expect(json(later)).toEqual({ later: true });
    const unknown = await request(port2, '/nothing-here', { headers: authorized });
    expect(unknown.status).toBe(404);
    expect(seen).toEqual([
      { path: '/nothing-here', route: undefined, params: {}, reachedAuth: true },
    ]);
  });

  it('lets a route served by one middleware through whatever the method', async () => {
    const answer = await request(port2, '/any', { method: 'PATCH', headers: authorized });
    expect(answer.status).toBe(200);
    expect(json(answer).route).toBe('any method');
  });

  it('gives getRoute the pattern, params and Allow list, once matched', async () => {
    const routes = createRouter({
      '/a/:x/b/:y': { GET: (_req, _res) => {} },
      '/plain': (_req, _res, next) => next(),
    });
    const req = { url: '/a/1/b/caf%C3%A9?q', headers: {}, method: 'GET' } as never;
    expect(getRoute(req)).toBeUndefined();
    await routes.match(req, {} as never, async () => {});
    expect(getRoute(req)).toEqual({
      route: '/a/:x/b/:y',
      params: { x: '1', y: 'café' },
      methods: ['GET', 'HEAD', 'OPTIONS'],
    });
    const plain = { url: '/plain', headers: {}, method: 'PUT' } as never;
    await routes.match(plain, {} as never, async () => {});
    expect(getRoute(plain)).toEqual({ route: '/plain', params: {}, methods: undefined });
  });

  it('matches again in dispatch when req.url changed since the match', async () => {
    const routes = createRouter({ '/inner/:id': echo('inner') });
    const strip: Middleware = (req, _res, next) => {
      req.url = req.url!.replace(/^\/outer/, '');
      return next();
    };
    const s = await serve([routes.match, strip, routes.dispatch]);
    try {
      const answer = await request(s, '/outer/inner/5');
      expect(json(answer)).toEqual({ route: 'inner', method: 'GET', params: { id: '5' } });
    } finally {
      await s.close();
    }
  });

  it('keeps two routers apart: each dispatch serves its own match', async () => {
    const first = createRouter({ '/one/:id': echo('one') });
    const second = createRouter({ '/two/:id': echo('two') });
    const s = await serve([first.match, second.match, first.dispatch, second.dispatch]);
    try {
      expect(json(await request(s, '/one/1'))).toEqual({
        route: 'one',
        method: 'GET',
        params: { id: '1' },
      });
      expect(json(await request(s, '/two/2'))).toEqual({
        route: 'two',
        method: 'GET',
        params: { id: '2' },
      });
    } finally {
      await s.close();
    }
  });

  it('is the same router as one middleware: dispatch without match matches first', async () => {
    expect(router.dispatch).toBe(router);
    const s = await serve([router.dispatch]);
    try {
      expect(json(await request(s, '/api/messages')).route).toBe('list');
      expect((await request(s, '/api/messages', { method: 'PUT' })).status).toBe(405);
    } finally {
      await s.close();
    }
  });

  it('refuses patterns with an empty or repeated parameter name', () => {
    const fn: Middleware = () => {};
    expect(() => createRouter({ '/a/:': fn })).toThrow(TypeError);
    expect(() => createRouter({ '/a/:id/b/:id': fn })).toThrow(/distinct name/);
  });
});
