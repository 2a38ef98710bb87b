// portico on Fastify 5: the onRequest hook, the error handler and the not-found handler, over
// real sockets, with Fastify's logger watched for "reply already sent" and other complaints.
import { globalAgent } from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fastifyErrorHandler, fastifyNotFound, toFastify } from '../../src/adapters/fastify.js';
import { authenticate } from '../../src/auth/authenticate.js';
import type { Authenticator } from '../../src/auth/authenticator.js';
import type { Middleware } from '../../src/core/compose.js';
import { getRequestId } from '../../src/core/context.js';
import { conflict, HttpError } from '../../src/core/errors/errors.js';
import { sendJson } from '../../src/core/send.js';
import { cors } from '../../src/cors/cors.js';
import { requestId } from '../../src/http/request-id.js';
import { mount } from '../../src/http/routing/router.js';
import { securityHeaders } from '../../src/http/security-headers.js';
import { rateLimit } from '../../src/rate-limit/rate-limit.js';
import {
  closeAll,
  expectProblem,
  json,
  type Listening,
  listen,
  type Reply,
  request,
} from '../helpers/http.js';
import { captureLogger } from '../helpers/logger.js';
import { connect as connectStream } from '../helpers/sse.js';

const ORIGIN = 'http://app.example.test';

const userHeader: Authenticator = {
  scheme: 'User',
  challenge: 'User realm="test"',
  authenticate(req) {
    const sub = req.headers['x-user'];
    return typeof sub === 'string' ? { sub, scopes: [], method: 'test' } : undefined;
  },
};

/** Middleware that answers (or fails) by itself under `/mw/`, and passes everything else on. */
const own: Middleware = async (req, res, next) => {
  switch (req.url) {
    case '/mw/answer':
      return sendJson(res, 200, { answeredBy: 'portico' });
    case '/mw/conflict':
      throw conflict('Already there.');
    case '/mw/boom':
      await new Promise((r) => setTimeout(r, 5));
      throw new Error('secret internals: hunter2');
    case '/mw/half':
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.write('partial');
      throw new Error('failed halfway');
    case '/mw/stream':
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write('data: first\n\n');
      setTimeout(() => res.write('data: second\n\n'), 30);
      return; // holds the response open
    default: {
      // next() settles at once under Fastify: within this turn of the event loop (before
      // an immediate queued now can run), and before Fastify runs the route
      const routedBefore = routed;
      let turned = false;
      const immediate = setImmediate(() => {
        turned = true;
      });
      await next();
      clearImmediate(immediate);
      res.setHeader('X-Next-Settled', turned ? 'after a turn' : 'at once');
      res.setHeader('X-Routed-Before-Next-Settled', String(routed !== routedBefore));
    }
  }
};

let app: FastifyInstance;
let listening: Listening;
const logs: { level: number; msg: string }[] = [];
const log = captureLogger();
const failures = log.errors;
let routed = 0;
/** What the app's own `onSend` and `onResponse` hooks saw. */
const sent: { url: string; status: number; contentType: unknown; payload: unknown }[] = [];
const responded: string[] = [];

beforeAll(async () => {
  app = Fastify({
    bodyLimit: 1024,
    logger: { level: 'warn', stream: { write: (line: string) => logs.push(JSON.parse(line)) } },
  });
  app.addHook(
    'onRequest',
    toFastify(
      [
        requestId(),
        securityHeaders(),
        cors({ origins: [ORIGIN], credentials: true }),
        mount('/api', rateLimit({ limit: 1000, windowMs: 60_000 })),
        mount('/private', authenticate([userHeader])),
        mount('/limited', rateLimit({ limit: 1, windowMs: 60_000 })),
        own,
      ],
      { logger: log },
    ),
  );
  app.get('/api/hello', async (request) => {
    routed++;
    return { hello: 'world', id: getRequestId(request.raw) ?? null };
  });
  app.get('/private/me', async () => ({ me: true }));
  app.get('/limited', async () => ({ ok: true }));
  app.post('/api/echo', async (request, reply) => reply.code(201).send(request.body));
  app.post(
    '/api/validated',
    {
      schema: {
        body: {
          type: 'object',
          required: ['text'],
          properties: { text: { type: 'string' } },
        },
      },
    },
    async (request) => request.body,
  );
  app.get('/api/conflict', async () => {
    throw conflict('Already there.');
  });
  app.get('/api/native', async () => {
    throw Object.assign(new Error('native conflict'), { statusCode: 409 });
  });
  app.get('/api/boom', async (_request, reply) => {
    reply.header('X-Route', 'kept').type('text/html');
    throw new Error('secret internals: hunter2');
  });
  app.get('/api/cookie', async (_request, reply) => {
    reply.raw.setHeader('Set-Cookie', 'early=1'); // as a middleware of the chain would
    throw new HttpError(401, 'Signed out.', { headers: { 'Set-Cookie': 'session=; Max-Age=0' } });
  });
  // the app's own hooks, which portico's problems must go through like any answer of Fastify
  app.addHook('onSend', async (request, reply, payload) => {
    sent.push({
      url: request.url,
      status: reply.statusCode,
      contentType: reply.getHeader('content-type'),
      payload,
    });
    reply.header('X-On-Send', 'seen');
    if (request.headers['x-rewrite'] === 'yes' && typeof payload === 'string') {
      return JSON.stringify({ ...JSON.parse(payload), rewritten: true });
    }
    return payload;
  });
  app.addHook('onResponse', async (request, reply) => {
    responded.push(`${request.method} ${request.url} ${reply.statusCode}`);
  });
  app.setNotFoundHandler(fastifyNotFound());
  app.setErrorHandler(fastifyErrorHandler({ logger: log }));
  await app.ready();
  listening = await listen(app.server);
});

afterAll(async () => {
  await closeAll();
  await app.close();
});

beforeEach(() => {
  logs.length = 0;
  failures.length = 0;
  sent.length = 0;
  responded.length = 0;
});

const call = (
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string | Buffer,
) => request(listening, path, { method, headers, body, agent: globalAgent });

/** The headers the portico chain sets on every answer. */
function expectPorticoHeaders(reply: Reply): void {
  expect(reply.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  expect(reply.headers['x-content-type-options']).toBe('nosniff');
  expect(reply.headers['x-frame-options']).toBe('DENY');
  expect(reply.headers['access-control-allow-origin']).toBe(ORIGIN);
  expect(reply.headers['access-control-allow-credentials']).toBe('true');
}

/** Fastify's logger stayed quiet: no "reply already sent", no error it logged itself. */
function expectQuietFastify(): void {
  expect(logs).toEqual([]);
}

describe('toFastify', () => {
  it("runs with Fastify's logger watched", () => {
    app.log.warn('probe');
    expect(logs).toMatchObject([{ level: 40, msg: 'probe' }]);
  });

  it("keeps the chain's headers on Fastify's own answer", async () => {
    const before = routed;
    const res = await call('GET', '/api/hello', { Origin: ORIGIN });
    expect(res.status).toBe(200);
    expect(routed).toBe(before + 1);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(json(res)).toEqual({ hello: 'world', id: res.headers['x-request-id'] });
    expectPorticoHeaders(res);
    expect(res.headers['x-powered-by']).toBeUndefined(); // Fastify sets none; nor does portico
    expect(res.headers['x-ratelimit-limit']).toBe('1000');
    expect(Number(res.headers['x-ratelimit-remaining'])).toBeLessThan(1000);
    // next() settled at once, before Fastify routed and answered, so a header set after it
    // still went out (an order, not a time: nothing a loaded machine can stretch)
    expect(res.headers['x-next-settled']).toBe('at once');
    expect(res.headers['x-routed-before-next-settled']).toBe('false');
    expectQuietFastify();
  });

  it('answers a CORS preflight itself, without Fastify answering again', async () => {
    const before = routed;
    const res = await call('OPTIONS', '/api/hello', {
      Origin: ORIGIN,
      'Access-Control-Request-Method': 'GET',
      'Access-Control-Request-Headers': 'authorization',
    });
    expect(res.status).toBe(204);
    expect(res.body).toBe('');
    expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
    expect(String(res.headers['access-control-allow-headers'])).toMatch(/authorization/i);
    expect(routed).toBe(before);
    expectQuietFastify();
  });

  it('lets a middleware answer, and keeps the connection usable afterwards', async () => {
    const res = await call('GET', '/mw/answer', { Origin: ORIGIN });
    expect(res.status).toBe(200);
    expect(json(res)).toEqual({ answeredBy: 'portico' });
    expectPorticoHeaders(res);
    const again = await call('GET', '/api/hello'); // same keep-alive agent
    expect(again.status).toBe(200);
    expectQuietFastify();
  });

  it('answers 401 with its challenge, and routes once a credential is sent', async () => {
    const refused = await call('GET', '/private/me', { Origin: ORIGIN });
    expectProblem(refused, 401);
    expect(refused.headers['www-authenticate']).toMatch(/^User/);
    expectPorticoHeaders(refused);
    const allowed = await call('GET', '/private/me', { 'X-User': 'alice' });
    expect(allowed.status).toBe(200);
    expect(json(allowed)).toEqual({ me: true });
    expectQuietFastify();
  });

  it('answers 429 with Retry-After once the limit is reached', async () => {
    expect((await call('GET', '/limited')).status).toBe(200);
    const limited = await call('GET', '/limited', { Origin: ORIGIN });
    expectProblem(limited, 429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.headers['x-ratelimit-remaining']).toBe('0');
    expectPorticoHeaders(limited);
    expectQuietFastify();
  });

  it("sends the chain's errors to Fastify's error handler, hiding internals", async () => {
    const conflictRes = await call('GET', '/mw/conflict', { Origin: ORIGIN });
    expect(expectProblem(conflictRes, 409)).toMatchObject({
      title: 'Conflict',
      detail: 'Already there.',
      instance: '/mw/conflict',
    });
    expectPorticoHeaders(conflictRes);
    expect(failures).toEqual([]);

    const boom = await call('GET', '/mw/boom', { Origin: ORIGIN });
    const problem = expectProblem(boom, 500);
    expect(problem.requestId).toBe(boom.headers['x-request-id']);
    expect(boom.body).not.toMatch(/secret|hunter2/);
    expectPorticoHeaders(boom);
    expect(failures).toHaveLength(1);
    expect(String(failures[0])).toMatch(/hunter2/);
    expectQuietFastify();
  });

  it('ends the connection when the chain fails after its answer started', async () => {
    await expect(call('GET', '/mw/half')).rejects.toThrow(); // cut short mid-body
    expect(failures).toHaveLength(1);
    expect(String(failures[0])).toMatch(/failed halfway/);
    expectQuietFastify();
  });

  it('leaves a response the chain holds open (an event stream) to the chain', async () => {
    const stream = await connectStream(listening, '/mw/stream', { Origin: ORIGIN });
    try {
      expect(stream.status).toBe(200);
      expect(stream.headers['access-control-allow-origin']).toBe(ORIGIN);
      // Fastify did not route it (its not-found answer would have cut the stream)
      expect(await stream.until((text) => text.includes('data: second'))).toBe(
        'data: first\n\ndata: second\n\n',
      );
    } finally {
      stream.destroy();
    }
    expectQuietFastify();
  });
});

describe('fastifyErrorHandler', () => {
  it("renders route errors, portico's and Fastify-native, keeping earlier headers", async () => {
    for (const path of ['/api/conflict', '/api/native']) {
      const res = await call('GET', path, { Origin: ORIGIN });
      expect(expectProblem(res, 409)).toMatchObject({ title: 'Conflict', instance: path });
      expectPorticoHeaders(res);
    }
    expectQuietFastify();
  });

  it('hides an unexpected route error, keeps reply.header() but drops the representation', async () => {
    const res = await call('GET', '/api/boom', { Origin: ORIGIN });
    expectProblem(res, 500);
    expect(res.body).not.toMatch(/secret|hunter2/);
    expect(res.headers['x-route']).toBe('kept');
    expectPorticoHeaders(res);
    expect(failures).toHaveLength(1);
    expectQuietFastify();
  });

  it("answers Fastify's body errors with their status: 400, 415, 413, and validation 400", async () => {
    const jsonType = { 'Content-Type': 'application/json', Origin: ORIGIN };
    const ok = await call('POST', '/api/echo', jsonType, '{"a":[1,2]}');
    expect(ok.status).toBe(201);
    expect(json(ok)).toEqual({ a: [1, 2] });

    const invalid = await call('POST', '/api/echo', jsonType, '{"a":1,}');
    expectProblem(invalid, 400, 'invalid-json'); // as readJson answers it
    expectPorticoHeaders(invalid);

    const wrongType = await call(
      'POST',
      '/api/echo',
      { 'Content-Type': 'application/x-unknown', Origin: ORIGIN },
      'hi',
    );
    expect(expectProblem(wrongType, 415).detail).toBe(
      'The Content-Type of the request body is not accepted here.',
    );
    expectPorticoHeaders(wrongType);

    const big = await call('POST', '/api/echo', jsonType, JSON.stringify({ a: 'x'.repeat(2048) }));
    expectProblem(big, 413);
    expectPorticoHeaders(big);

    const unvalidated = await call('POST', '/api/validated', jsonType, '{"txt":"hi"}');
    expect(expectProblem(unvalidated, 400).detail).toMatch(/text/);
    expect(json(await call('POST', '/api/validated', jsonType, '{"text":"hi"}'))).toEqual({
      text: 'hi',
    });
    expect(failures).toEqual([]);
    expectQuietFastify();
  });

  it('answers application/json to clients that accept only that', async () => {
    const res = await call('GET', '/api/conflict', { Accept: 'application/json' });
    expect(res.status).toBe(409);
    expect(res.headers['content-type']).toBe('application/json');
    expect(json(res).status).toBe(409);
  });
});

describe('fastifyNotFound', () => {
  it('answers an unknown path or method with a 404 problem, keeping the headers', async () => {
    for (const [method, path] of [
      ['GET', '/nowhere?api_key=secret'],
      ['DELETE', '/api/hello'],
    ] as const) {
      const res = await call(method, path, { Origin: ORIGIN });
      const problem = expectProblem(res, 404);
      expect(problem.instance).toBe(path.split('?')[0]);
      expect(res.body).not.toContain('secret');
      expectPorticoHeaders(res);
    }
    expectQuietFastify();
  });
});

describe("problems answered through Fastify's reply", () => {
  /** The one answer the app's `onSend` hook saw for `url`: the problem, as a string. */
  function seenOnSend(url: string, status: number): Record<string, unknown> {
    const seen = sent.filter((entry) => entry.url === url);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ status, contentType: 'application/problem+json' });
    expect(typeof seen[0]!.payload).toBe('string');
    return JSON.parse(seen[0]!.payload as string) as Record<string, unknown>;
  }

  /** The app's `onSend` hook added its header, and its `onResponse` hook ran. */
  function expectAppHooks(reply: Reply, method: string, url: string): void {
    expect(reply.headers['x-on-send']).toBe('seen');
    expect(responded).toContain(`${method} ${url} ${reply.status}`);
  }

  it('runs onSend and onResponse on the 404 of fastifyNotFound', async () => {
    const res = await call('GET', '/nowhere', { Origin: ORIGIN });
    const problem = expectProblem(res, 404);
    expect(seenOnSend('/nowhere', 404)).toEqual(problem);
    expectAppHooks(res, 'GET', '/nowhere');
    expectPorticoHeaders(res); // each once: a second value would be joined with ', '
    expect(problem.requestId).toBe(res.headers['x-request-id']);
    expectQuietFastify();
  });

  it('runs them on an HttpError thrown by a route, and lets onSend rewrite the body', async () => {
    const res = await call('GET', '/api/conflict', { Origin: ORIGIN });
    const problem = expectProblem(res, 409);
    expect(seenOnSend('/api/conflict', 409)).toEqual(problem);
    expectAppHooks(res, 'GET', '/api/conflict');
    expectPorticoHeaders(res);
    expect(res.headers['x-ratelimit-limit']).toBe('1000');
    expect(res.headers['cache-control']).toBe('no-store');

    const rewritten = await call('GET', '/api/conflict', { 'X-Rewrite': 'yes' });
    expect(expectProblem(rewritten, 409)).toMatchObject({ title: 'Conflict', rewritten: true });
    expect(Number(rewritten.headers['content-length'])).toBe(Buffer.byteLength(rewritten.body));
    expectQuietFastify();
  });

  it('runs them on a 500, whose payload hides the internals already', async () => {
    const res = await call('GET', '/api/boom', { Origin: ORIGIN });
    expectProblem(res, 500);
    expect(JSON.stringify(seenOnSend('/api/boom', 500))).not.toMatch(/secret|hunter2/);
    expectAppHooks(res, 'GET', '/api/boom');
    expect(failures).toHaveLength(1); // reported once
    expectQuietFastify();
  });

  it('runs them on a 401 thrown by authenticate() in the portico chain', async () => {
    const res = await call('GET', '/private/me', { Origin: ORIGIN });
    const problem = expectProblem(res, 401);
    expect(res.headers['www-authenticate']).toBe('User realm="test"');
    expect(seenOnSend('/private/me', 401)).toEqual(problem);
    expectAppHooks(res, 'GET', '/private/me');
    expectPorticoHeaders(res);
    expectQuietFastify();
  });

  it("runs them on Fastify's own errors: invalid JSON, a body too large, a failed validation", async () => {
    const jsonType = { 'Content-Type': 'application/json', Origin: ORIGIN };
    const cases = [
      ['/api/echo', '{"a":1,}', 400],
      ['/api/echo', JSON.stringify({ a: 'x'.repeat(2048) }), 413],
      ['/api/validated', '{"txt":"hi"}', 400],
    ] as const;
    for (const [path, body, status] of cases) {
      sent.length = 0;
      const res = await call('POST', path, jsonType, body);
      const problem = expectProblem(res, status);
      expect(seenOnSend(path, status)).toEqual(problem);
      expectAppHooks(res, 'POST', path);
      expectPorticoHeaders(res);
    }
    expect(failures).toEqual([]);
    expectQuietFastify();
  });

  it('answers HEAD with the headers of the problem and no body', async () => {
    for (const [path, status] of [
      ['/api/conflict', 409],
      ['/nowhere', 404],
      ['/private/me', 401],
    ] as const) {
      const get = await call('GET', path, { Origin: ORIGIN });
      const head = await call('HEAD', path, { Origin: ORIGIN });
      expect(head.status).toBe(status);
      expect(head.body).toBe('');
      expect(head.headers['content-type']).toBe('application/problem+json');
      expect(head.headers['content-length']).toBe(get.headers['content-length']);
      expect(head.headers['x-on-send']).toBe('seen');
      expectPorticoHeaders(head);
    }
    expectQuietFastify();
  });

  it("adds an error's Set-Cookie to the cookies already set", async () => {
    const res = await call('GET', '/api/cookie');
    expectProblem(res, 401);
    expect(res.headers['set-cookie']).toEqual(['early=1', 'session=; Max-Age=0']);
    expectQuietFastify();
  });
});
