import type { IncomingMessage } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Middleware } from '../../src/core/compose.js';
import { getRequestId } from '../../src/core/context.js';
import {
  badGateway,
  conflict,
  HttpError,
  internalError,
  methodNotAllowed,
  notFound,
  PROBLEM_TYPE_BASE,
  tooManyRequests,
  unauthorized,
  unprocessable,
} from '../../src/core/errors/errors.js';
import {
  PROBLEM_TYPE,
  problemContentType,
  renderError,
  requestPath,
  toHttpError,
  toProblem,
} from '../../src/core/problem.js';
import type { LogFields, Logger } from '../../src/diagnostics/index.js';
import { requestId } from '../../src/http/request-id.js';
import { closeAll, json, type Listening, rawRequest, request, serve } from '../helpers/http.js';

const SECRET = 'hunter2-db-password';

const logged: Array<{ error: unknown; fields: LogFields }> = [];
let throwingLogger = false;
const record = (fields: LogFields) => {
  logged.push({ error: fields.err, fields });
  if (throwingLogger) throw new Error('logger down');
};
const logger: Logger = {
  error: record,
  warn: record,
  info: record,
  debug: record,
  child: () => logger,
};

const thrown = new Map<string, unknown>();

const routes: Record<string, Middleware> = {
  '/not-found': () => {
    throw notFound('No message with this id.');
  },
  '/conflict': () => {
    throw conflict('A message with this id already exists.');
  },
  '/validation': () => {
    throw unprocessable([
      { field: '/text', message: 'must be 1–1000 characters' },
      { field: 'channel', message: 'is required' },
    ]);
  },
  '/method': () => {
    throw methodNotAllowed(['GET', 'HEAD', 'OPTIONS']);
  },
  '/unauthorized': () => {
    throw unauthorized('The access token expired.', {
      challenge: 'Bearer error="invalid_token"',
    });
  },
  '/rate': () => {
    throw tooManyRequests(12.3);
  },
  '/extensions': () => {
    throw conflict('Not enough credit.', {
      typeSlug: 'out-of-credit',
      extensions: { balance: 30, status: 200, type: 'overridden?', title: 'Nope' },
    });
  },
  '/boom': () => {
    const error = new Error(`secret internals: ${SECRET}`);
    thrown.set('/boom', error);
    throw error;
  },
  '/async-boom': async () => {
    await Promise.resolve();
    const error = new Error(`async secret: ${SECRET}`);
    thrown.set('/async-boom', error);
    throw error;
  },
  '/throw-string': () => {
    throw `plain string with ${SECRET}`;
  },
  '/throw-null': () => {
    throw null;
  },
  '/throw-undefined': () => {
    throw undefined;
  },
  '/throw-number': () => {
    throw 42;
  },
  '/http-errors-404': () => {
    throw Object.assign(new Error('No such user'), { status: 404, expose: true });
  },
  '/http-errors-502': () => {
    throw Object.assign(new Error(`upstream said ${SECRET}`), { statusCode: 502 });
  },
  '/http-errors-500-exposed': () => {
    throw Object.assign(new Error(`exposed 500 ${SECRET}`), { status: 500, expose: true });
  },
  '/representation': (_req, res) => {
    res.setHeader('ETag', '"abc"');
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.setHeader('Content-Length', '1234');
    res.setHeader('Content-Language', 'fr');
    res.setHeader('Content-Encoding', 'gzip');
    res.setHeader('Last-Modified', new Date(0).toUTCString());
    res.setHeader('Location', '/api/messages/1');
    res.setHeader('X-Custom', 'kept');
    throw conflict('Changed meanwhile.');
  },
  '/representation-500': (_req, res) => {
    res.setHeader('ETag', '"abc"');
    res.setHeader('Location', '/somewhere');
    res.setHeader('X-Custom', 'kept');
    throw new Error('boom');
  },
  '/status-200-then-throw': (_req, res) => {
    res.statusCode = 200;
    throw new Error('after setting 200');
  },
  '/status-201-then-bad-request': (_req, res) => {
    res.statusCode = 201;
    throw new HttpError(400, 'Bad input.');
  },
  '/after-headers': async (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.write('partial');
    await new Promise((resolve) => setImmediate(resolve));
    throw new Error(`late failure ${SECRET}`);
  },
  '/app-500': () => {
    throw internalError(undefined, { cause: new Error('root') });
  },
  '/bad-gateway': () => {
    throw badGateway('The payment service answered garbage.');
  },
  '/ok': (req, res) => {
    res.setHeader('Content-Type', 'text/plain');
    res.end(`ok ${getRequestId(req) ?? 'none'}`);
  },
};

const dispatch: Middleware = (req, res, next) => {
  const handler = routes[requestPath(req)];
  return handler ? handler(req, res, next) : next();
};

let plain: Listening;
let withId: Listening;
let defaultLogger: Listening;

beforeAll(async () => {
  plain = await serve(dispatch, { logger });
  withId = await serve([requestId(), dispatch], { logger });
  defaultLogger = await serve(dispatch);
});

afterAll(closeAll);

afterEach(() => {
  throwingLogger = false;
  vi.restoreAllMocks();
});

describe('problem body', () => {
  it('renders type, title, status, detail and instance', async () => {
    const answer = await request(plain, '/not-found');
    expect(answer.status).toBe(404);
    expect(answer.headers['content-type']).toBe(PROBLEM_TYPE);
    expect(json(answer)).toEqual({
      type: 'about:blank',
      title: 'Not Found',
      status: 404,
      detail: 'No message with this id.',
      instance: '/not-found',
    });
  });

  it('sets Content-Length to the body size and Cache-Control: no-store', async () => {
    const answer = await request(plain, '/conflict');
    expect(answer.status).toBe(409);
    expect(answer.headers['cache-control']).toBe('no-store');
    expect(Number(answer.headers['content-length'])).toBe(Buffer.byteLength(answer.body));
  });

  it('uses the path without its query as instance, and never echoes the query', async () => {
    for (const path of [
      '/not-found?api_key=secret-key-123',
      '/boom?api_key=secret-key-123',
      '/nowhere?api_key=secret-key-123',
    ]) {
      const answer = await request(withId, path);
      expect(answer.status).toBeGreaterThanOrEqual(400);
      expect(json(answer).instance).toBe(path.slice(0, path.indexOf('?')));
      expect(answer.body).not.toContain('secret-key-123');
      expect(answer.body).not.toContain('api_key');
    }
  });

  it('carries requestId when requestId() ran, equal to the X-Request-ID header', async () => {
    const answer = await request(withId, '/not-found', {
      headers: { 'X-Request-ID': 'trace-abc.123' },
    });
    expect(answer.headers['x-request-id']).toBe('trace-abc.123');
    expect(json(answer).requestId).toBe('trace-abc.123');

    const generated = await request(withId, '/conflict');
    const id = generated.headers['x-request-id'];
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(json(generated).requestId).toBe(id);
  });

  it('has no requestId member when requestId() did not run', async () => {
    const answer = await request(plain, '/not-found', {
      headers: { 'X-Request-ID': 'trace-abc' },
    });
    expect(answer.headers['x-request-id']).toBeUndefined();
    expect(json(answer)).not.toHaveProperty('requestId');
  });

  it('renders errors and the validation type on 422', async () => {
    const answer = await request(plain, '/validation');
    expect(answer.status).toBe(422);
    const body = json(answer);
    expect(body.type).toBe(`${PROBLEM_TYPE_BASE}validation`);
    expect(body.title).toBe('Validation failed');
    expect(body.errors).toEqual([
      { field: '/text', message: 'must be 1–1000 characters' },
      { field: 'channel', message: 'is required' },
    ]);
  });

  it('renders extensions without letting them override the standard members', async () => {
    const answer = await request(plain, '/extensions');
    expect(answer.status).toBe(409);
    const body = json(answer);
    expect(body.balance).toBe(30);
    expect(body.status).toBe(409);
    expect(body.type).toBe(`${PROBLEM_TYPE_BASE}out-of-credit`);
    expect(body.title).toBe('Conflict');
  });

  it('sends the headers the status demands', async () => {
    const allow = await request(plain, '/method');
    expect(allow.status).toBe(405);
    expect(allow.headers.allow).toBe('GET, HEAD, OPTIONS');

    const auth = await request(plain, '/unauthorized');
    expect(auth.status).toBe(401);
    expect(auth.headers['www-authenticate']).toBe('Bearer error="invalid_token"');

    const rate = await request(plain, '/rate');
    expect(rate.status).toBe(429);
    expect(rate.headers['retry-after']).toBe('13');
  });

  it('answers a HEAD request with the problem headers and no body', async () => {
    const answer = await request(plain, '/not-found', { method: 'HEAD' });
    expect(answer.status).toBe(404);
    expect(answer.headers['content-type']).toBe(PROBLEM_TYPE);
    expect(answer.body).toBe('');
  });
});

describe('content negotiation', () => {
  it.each([
    [undefined, PROBLEM_TYPE],
    ['', PROBLEM_TYPE],
    ['*/*', PROBLEM_TYPE],
    ['application/*', PROBLEM_TYPE],
    ['application/problem+json', PROBLEM_TYPE],
    ['application/json', 'application/json'],
    ['application/json;q=0.9', 'application/json'],
    ['text/html', PROBLEM_TYPE],
    ['text/html, application/json', 'application/json'],
    ['application/json, */*;q=0', 'application/json'],
    ['application/json;q=0', PROBLEM_TYPE],
    ['application/json, application/problem+json', PROBLEM_TYPE],
    ['application/json, */*', PROBLEM_TYPE],
  ])('problemContentType(%j) is %s', (accept, expected) => {
    expect(problemContentType(accept)).toBe(expected);
  });

  it('problemContentType honours q=0 on application/problem+json', () => {
    expect(problemContentType('application/json, application/problem+json;q=0')).toBe(
      'application/json',
    );
  });

  it('answers application/json to a client that only accepts JSON', async () => {
    const answer = await request(plain, '/not-found', {
      headers: { Accept: 'application/json' },
    });
    expect(answer.status).toBe(404);
    expect(answer.headers['content-type']).toBe('application/json');
    expect(json(answer).status).toBe(404);
  });

  it('answers the problem type to a browser asking for HTML', async () => {
    const answer = await request(plain, '/not-found', { headers: { Accept: 'text/html' } });
    expect(answer.headers['content-type']).toBe(PROBLEM_TYPE);
  });
});

describe('headers set before the error', () => {
  it('drops representation headers and keeps the others', async () => {
    const answer = await request(plain, '/representation');
    expect(answer.status).toBe(409);
    expect(answer.headers.etag).toBeUndefined();
    expect(answer.headers.location).toBeUndefined();
    expect(answer.headers['last-modified']).toBeUndefined();
    expect(answer.headers['content-language']).toBeUndefined();
    expect(answer.headers['content-encoding']).toBeUndefined();
    expect(answer.headers['content-type']).toBe(PROBLEM_TYPE);
    expect(Number(answer.headers['content-length'])).toBe(Buffer.byteLength(answer.body));
    expect(answer.headers['x-custom']).toBe('kept');
    expect(json(answer).detail).toBe('Changed meanwhile.');
  });

  it("adds an error's Set-Cookie to the cookies already set instead of replacing them", async () => {
    const server = await serve((_req, res) => {
      res.setHeader('Set-Cookie', ['theme=dark; Path=/']);
      throw new HttpError(401, 'Signed out.', {
        headers: { 'Set-Cookie': 'session=; Max-Age=0; Path=/' },
      });
    });
    const answer = await request(server, '/');
    expect(answer.status).toBe(401);
    expect(answer.headers['set-cookie']).toEqual([
      'theme=dark; Path=/',
      'session=; Max-Age=0; Path=/',
    ]);
  });

  it('does the same for unexpected errors', async () => {
    const answer = await request(plain, '/representation-500');
    expect(answer.status).toBe(500);
    expect(answer.headers.etag).toBeUndefined();
    expect(answer.headers.location).toBeUndefined();
    expect(answer.headers['x-custom']).toBe('kept');
  });
});

describe('unexpected errors', () => {
  it('answers 500 without the thrown message and hands the original error to the logger', async () => {
    logged.length = 0;
    const answer = await request(plain, '/boom');
    expect(answer.status).toBe(500);
    expect(answer.body).not.toContain(SECRET);
    expect(answer.body).not.toContain('secret internals');
    const body = json(answer);
    expect(body.title).toBe('Internal Server Error');
    expect(body.detail).toBe('An unexpected error occurred.');
    expect(logged).toHaveLength(1);
    expect(logged[0]!.error).toBe(thrown.get('/boom'));
    expect(logged[0]!.fields).toMatchObject({
      component: 'http',
      event: 'request.failed',
      method: 'GET',
      path: '/boom',
    });
  });

  it('does the same for an async rejection', async () => {
    logged.length = 0;
    const answer = await request(plain, '/async-boom');
    expect(answer.status).toBe(500);
    expect(answer.body).not.toContain(SECRET);
    expect(logged[0]!.error).toBe(thrown.get('/async-boom'));
  });

  it('quotes the request id in the 500 detail when there is one', async () => {
    const answer = await request(withId, '/boom', { headers: { 'X-Request-ID': 'rid-500' } });
    expect(answer.status).toBe(500);
    const body = json(answer);
    expect(body.requestId).toBe('rid-500');
    expect(body.detail).toContain('rid-500');
    expect(answer.body).not.toContain(SECRET);
  });

  it('turns thrown plain values into 500 without echoing them', async () => {
    for (const path of ['/throw-string', '/throw-null', '/throw-undefined', '/throw-number']) {
      const answer = await request(plain, path);
      expect(answer.status, path).toBe(500);
      expect(answer.headers['content-type']).toBe(PROBLEM_TYPE);
      expect(answer.body).not.toContain(SECRET);
      expect(json(answer).detail).toBe('An unexpected error occurred.');
    }
  });

  it('hands a thrown string to the logger as it is', async () => {
    logged.length = 0;
    await request(plain, '/throw-string');
    expect(logged[0]!.error).toBe(`plain string with ${SECRET}`);
  });

  it('still answers when the logger throws', async () => {
    throwingLogger = true;
    logged.length = 0;
    const answer = await request(plain, '/boom');
    expect(logged).toHaveLength(1);
    expect(answer.status).toBe(500);
    expect(json(answer).status).toBe(500);
    // and the server lives on
    const next = await request(plain, '/ok');
    expect(next.status).toBe(200);
  });

  it('logs to stderr by default, without the query', async () => {
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    let lines: string[];
    try {
      const answer = await request(defaultLogger, '/boom?api_key=secret-key-123');
      expect(answer.status).toBe(500);
      lines = spy.mock.calls
        .map((call) => String(call[0]))
        .filter((l) => l.startsWith('[portico]'));
    } finally {
      spy.mockRestore();
    }
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('http request.failed (method=GET path=/boom)');
    expect(lines[0]).toContain(SECRET);
    expect(lines[0]).not.toContain('secret-key-123');
  });

  it('does not log a 4xx', async () => {
    logged.length = 0;
    await request(plain, '/not-found');
    await request(plain, '/validation');
    expect(logged).toHaveLength(0);
  });

  it('never answers 200 for an error, whatever status the handler had set', async () => {
    const a = await request(plain, '/status-200-then-throw');
    expect(a.status).toBe(500);
    expect(json(a).status).toBe(500);
    const b = await request(plain, '/status-201-then-bad-request');
    expect(b.status).toBe(400);
    expect(json(b).detail).toBe('Bad input.');
  });

  it('ends the connection without a second response when headers were already sent', async () => {
    logged.length = 0;
    const text = await rawRequest(
      plain.port,
      'GET /after-headers HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n',
    );
    expect(text.startsWith('HTTP/1.1 200 OK')).toBe(true);
    expect(text).toContain('partial');
    expect(text.match(/HTTP\/1\.1 /g)).toHaveLength(1);
    expect(text).not.toContain(SECRET);
    // the chunked body was cut off: no terminating zero-length chunk
    expect(text.endsWith('0\r\n\r\n')).toBe(false);
    expect(logged).toHaveLength(1);
    const next = await request(plain, '/ok');
    expect(next.status).toBe(200);
    expect(next.body).toBe('ok none');
  });

  it('answers a request nothing handled with a 404 problem', async () => {
    const answer = await request(plain, '/nothing/here');
    expect(answer.status).toBe(404);
    expect(json(answer)).toMatchObject({ status: 404, instance: '/nothing/here' });
  });
});

describe('errors of the http-errors kind', () => {
  it('uses status and message when expose is true', async () => {
    const answer = await request(plain, '/http-errors-404');
    expect(answer.status).toBe(404);
    expect(json(answer).detail).toBe('No such user');
  });

  it('uses statusCode and hides the message of a 5xx', async () => {
    logged.length = 0;
    const answer = await request(plain, '/http-errors-502');
    expect(answer.status).toBe(502);
    expect(answer.body).not.toContain(SECRET);
    expect(json(answer).detail).toBe('Bad Gateway');
    expect(logged).toHaveLength(1);
    expect((logged[0]!.error as Error).message).toContain(SECRET);
  });

  it('never shows the message of a 500, even marked expose', async () => {
    const answer = await request(plain, '/http-errors-500-exposed');
    expect(answer.status).toBe(500);
    expect(answer.body).not.toContain(SECRET);
  });

  it('keeps the detail of a 5xx HttpError the app built on purpose', async () => {
    const answer = await request(plain, '/bad-gateway');
    expect(answer.status).toBe(502);
    expect(json(answer).detail).toBe('The payment service answered garbage.');
    const app500 = await request(plain, '/app-500');
    expect(app500.status).toBe(500);
    expect(json(app500).detail).toBe('Internal Server Error');
  });
});

describe('toHttpError', () => {
  it('returns an HttpError as it is', () => {
    const error = conflict('x');
    expect(toHttpError(error)).toBe(error);
  });

  it('maps {status: 404, expose: true, message}', () => {
    const source = { status: 404, expose: true, message: 'No such user' };
    const error = toHttpError(source);
    expect(error.status).toBe(404);
    expect(error.detail).toBe('No such user');
    expect(error.cause).toBe(source);
  });

  it('exposes the message of a 4xx by default and hides it when expose is false', () => {
    expect(toHttpError({ status: 400, message: 'Bad field' }).detail).toBe('Bad field');
    expect(toHttpError({ status: 404, expose: false, message: 'internal path' }).detail).toBe(
      'Not Found',
    );
  });

  it('maps {statusCode: 502} without exposing its message', () => {
    const error = toHttpError({ statusCode: 502, message: 'upstream 10.0.0.7 refused' });
    expect(error.status).toBe(502);
    expect(error.detail).not.toContain('10.0.0.7');
    expect(error.detail).toBe('Bad Gateway');
  });

  it('keeps string headers of the source error only', () => {
    const error = toHttpError({
      status: 429,
      headers: { 'Retry-After': '10', 'X-Number': 5, 'X-Obj': { a: 1 } },
    });
    expect(error.headers).toEqual({ 'Retry-After': '10' });
  });

  it.each([
    ['a string', 'oops'],
    ['null', null],
    ['undefined', undefined],
    ['a number', 42],
    ['an Error', new Error('db down')],
    ['an object with status 200', { status: 200 }],
    ['an object with status 302', { status: 302 }],
    ['an object with status 600', { status: 600 }],
    ['an object with a string status', { status: '404' }],
    ['an object with a fractional status', { status: 404.5 }],
  ])('maps %s to a 500', (_name, value) => {
    const error = toHttpError(value);
    expect(error).toBeInstanceOf(HttpError);
    expect(error.status).toBe(500);
    expect(error.code).toBe('ERR_INTERNAL');
    expect(error.detail).toBe('Internal Server Error');
    expect(error.cause).toBe(value);
  });
});

describe('toProblem', () => {
  it('copies the field errors instead of sharing them', () => {
    const errors = [{ field: '/a', message: 'bad' }];
    const problem = toProblem(unprocessable(errors), {
      url: '/x?y=1',
      headers: {},
    } as IncomingMessage);
    expect(problem.errors).toEqual(errors);
    expect(problem.errors).not.toBe(errors);
    expect(problem.errors![0]).not.toBe(errors[0]);
    expect(problem.instance).toBe('/x');
  });

  it('prefers originalUrl (Express) for instance', () => {
    const req = { url: '/inner', originalUrl: '/api/inner?token=abc', headers: {} };
    expect(requestPath(req as unknown as IncomingMessage)).toBe('/api/inner');
  });
});

describe('renderError', () => {
  /** A request as renderError sees it, without a server. */
  const fakeRequest = (url: string, headers: Record<string, string> = {}) =>
    ({ method: 'GET', url, headers }) as IncomingMessage;

  /** What `routes[path]` throws. */
  function thrownBy(path: string): unknown {
    try {
      void routes[path]!(fakeRequest(path), {} as never, () => Promise.resolve());
    } catch (error) {
      return error;
    }
    throw new Error(`${path} did not throw`);
  }

  it('renders what sendError sends: status, body and headers', async () => {
    for (const path of [
      '/not-found',
      '/validation',
      '/method',
      '/unauthorized',
      '/rate',
      '/boom',
    ]) {
      logged.length = 0;
      const sentAnswer = await request(plain, path);
      const rendered = renderError(fakeRequest(path), thrownBy(path), { logger });
      expect(rendered.status).toBe(sentAnswer.status);
      expect(rendered.body).toBe(sentAnswer.body);
      const expected = Object.fromEntries(
        ['content-type', 'cache-control', 'allow', 'www-authenticate', 'retry-after']
          .filter((name) => sentAnswer.headers[name] !== undefined)
          .map((name) => [name, sentAnswer.headers[name]]),
      );
      const lowered = Object.fromEntries(
        Object.entries(rendered.headers).map(([name, value]) => [name.toLowerCase(), value]),
      );
      expect(lowered).toEqual(expected);
    }
  });

  it('writes nothing, and logs a 5xx once, keeping its details out of the body', () => {
    logged.length = 0;
    const req = fakeRequest('/boom?api_key=secret');
    const error = new Error(`secret internals: ${SECRET}`);
    const rendered = renderError(req, error, { logger });
    expect(rendered.status).toBe(500);
    expect(rendered.body).not.toContain(SECRET);
    expect(JSON.parse(rendered.body)).toMatchObject({ status: 500, instance: '/boom' });
    expect(rendered.headers).toEqual({
      'Content-Type': PROBLEM_TYPE,
      'Cache-Control': 'no-store',
    });
    expect(logged).toHaveLength(1);
    expect(logged[0]!.error).toBe(error);
    expect(logged[0]!.fields).toMatchObject({ method: req.method, path: '/boom' });
    expect(JSON.stringify(logged[0]!.fields)).not.toContain('api_key');

    logged.length = 0;
    renderError(req, conflict('Already there.'), { logger });
    expect(logged).toEqual([]); // a 4xx is not reported
  });

  it('negotiates the media type, and lets neither the error nor Cache-Control change it', () => {
    const error = new HttpError(409, 'Taken.', {
      headers: { 'content-type': 'text/html', 'cache-control': 'max-age=60', 'X-Kept': 'yes' },
    });
    const rendered = renderError(fakeRequest('/x', { accept: 'application/json' }), error);
    expect(rendered.headers).toEqual({
      'X-Kept': 'yes',
      'Content-Type': 'application/json',
      'Cache-Control': 'no-store',
    });
  });

  it('drops a header value setHeader would refuse, and reports it', () => {
    logged.length = 0;
    const error = new HttpError(400, 'Bad.', { headers: { 'X-Bad': 'a\r\nInjected: 1' } });
    const rendered = renderError(fakeRequest('/x'), error, { logger });
    expect(rendered.headers['X-Bad']).toBeUndefined();
    expect(logged).toHaveLength(1);
  });

  it("copies the error's header arrays", () => {
    const cookies = ['a=; Max-Age=0', 'b=; Max-Age=0'] as const;
    const error = new HttpError(401, 'Signed out.', { headers: { 'Set-Cookie': cookies } });
    const rendered = renderError(fakeRequest('/x'), error);
    expect(rendered.headers['Set-Cookie']).toEqual(cookies);
    expect(rendered.headers['Set-Cookie']).not.toBe(cookies);
  });
});
