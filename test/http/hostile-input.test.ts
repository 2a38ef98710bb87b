// Hostile HTTP input, table by table: against the real reference server over raw sockets,
// and against an in-process portico stack configured like examples/reference-server/main.ts.
// Expected everywhere: the right 4xx (a Problem Details body wherever portico answers), never a
// 5xx, never a hang (every wait is bounded), and a server that still answers afterwards.

import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serve, toNodeListener } from '../../src/adapters/node.js';
import { basicAuth } from '../../src/auth/basic.js';
import type { Middleware } from '../../src/core/compose.js';
import { HttpError, unauthorized } from '../../src/core/errors/errors.js';
import { PROBLEM_TYPE, requestPath } from '../../src/core/problem.js';
import { sendJson } from '../../src/core/send.js';
import { silentLogger } from '../../src/diagnostics/index.js';
import { readJson } from '../../src/http/body/body.js';
import { handleClientError } from '../../src/http/client-error.js';
import { requireHttps } from '../../src/http/https.js';
import { REQUEST_ID_PATTERN, requestId } from '../../src/http/request-id.js';
import { type RunningServer, startReferenceServer } from '../examples/spawn-server.js';
import { closeAll, listen, parseReply, type RawReply, rawRequest } from '../helpers/http.js';
import { captureLogger } from '../helpers/logger.js';

const DEMO_KEY = 'demo-key-of-the-hostile-input-suite-0123456789';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let ref: RunningServer;
let refPort: number;
/** The in-process stack: a node:http server set up like the reference server's main.ts. */
let stackPort: number;
let stackServer: Server;
const log = captureLogger();
const reported = log.errors;

/** Routes of the in-process stack. */
const routes: Record<string, Middleware> = {
  '/health': (_req, res) => sendJson(res, 200, { ok: true }),
  '/json': async (req, res) => {
    const body = await readJson<unknown>(req);
    // depth and keys, measured without recursion: the body may be nested 100k levels deep
    let depth = 0;
    let node: unknown = body;
    while (typeof node === 'object' && node !== null) {
      depth++;
      node = Array.isArray(node) ? node[0] : Object.values(node).at(-1);
    }
    const top = typeof body === 'object' && body !== null ? Object.keys(body) : [];
    sendJson(res, 200, {
      depth,
      keys: top,
      prototypeIsPlain:
        typeof body !== 'object' ||
        body === null ||
        Array.isArray(body) ||
        Object.getPrototypeOf(body) === Object.prototype,
    });
  },
  // errors whose headers carry CR/LF (a challenge or an echo built from input)
  '/error-crlf-challenge': () => {
    throw unauthorized('Sign in first.', {
      challenge: ['Basic realm="a\r\nSet-Cookie: injected=1"'],
    });
  },
  '/error-crlf-sync-header': () => {
    throw new HttpError(400, 'Bad input.', { headers: { 'X-Echo': 'a\nSet-Cookie: injected=1' } });
  },
  '/error-crlf-foreign': async () => {
    // a foreign error (http-errors style) that knows its status and carries headers
    throw Object.assign(new Error('refused'), {
      status: 403,
      expose: true,
      headers: { 'X-Reason': 'no\r\nSet-Cookie: injected=1', 'X-Fine': 'kept' },
    });
  },
  '/error-bad-header-name': async () => {
    throw new HttpError(409, 'Conflict.', { headers: { 'X Bad Name': 'v', 'Retry-After': '3' } });
  },
};

const dispatch: Middleware = (req, res, next) => {
  const handler = routes[requestPath(req)];
  return handler ? handler(req, res, next) : next();
};

beforeAll(async () => {
  const started = startReferenceServer({ DEMO_API_KEY: DEMO_KEY, RATE_LIMIT: '100000' });
  // node:http like main.ts (bounded header and request times, handleClientError), shorter times
  stackServer = createServer(
    { headersTimeout: 400, requestTimeout: 800, connectionsCheckingInterval: 50 },
    toNodeListener([requestId(), dispatch], { logger: log }),
  );
  stackServer.keepAliveTimeout = 5_000;
  stackServer.on('clientError', handleClientError);
  stackPort = (await listen(stackServer)).port;
  ref = await started;
  refPort = Number(new URL(ref.url).port);
});

afterAll(async () => {
  await closeAll();
  await ref?.stop();
});

/** Writes raw bytes, reads until the server closes (5 s at most), parses the answer. */
const raw = async (port: number, data: string | Buffer, timeoutMs = 5_000) =>
  parseReply(await rawRequest(port, data, { tolerateReset: true, timeoutMs }));

/** A request through fetch with the demo key; `signal` bounds it. */
async function api(path: string, init: RequestInit = {}) {
  const res = await fetch(`${ref.url}${path}`, {
    ...init,
    headers: { 'X-API-Key': DEMO_KEY, ...(init.headers as Record<string, string>) },
    signal: AbortSignal.timeout(8_000),
  });
  return { status: res.status, headers: res.headers, body: await res.text() };
}

const postMessage = (body: string | Buffer, type = 'application/json') =>
  api('/api/messages', { method: 'POST', headers: { 'Content-Type': type }, body });

function expectRawProblem(answer: RawReply, status: number): Record<string, unknown> {
  expect(answer.status, answer.statusLine).toBe(status);
  expect(answer.headers['content-type']).toBe(PROBLEM_TYPE);
  const problem = JSON.parse(answer.body) as Record<string, unknown>;
  expect(problem.status).toBe(status);
  expect(typeof problem.title).toBe('string');
  expect(typeof problem.detail).toBe('string');
  return problem;
}

function expectProblem(
  reply: { status: number; headers: Headers; body: string },
  status: number,
): Record<string, unknown> {
  expect(reply.status, reply.body.slice(0, 300)).toBe(status);
  expect(reply.headers.get('content-type')).toBe(PROBLEM_TYPE);
  const problem = JSON.parse(reply.body) as Record<string, unknown>;
  expect(problem).toMatchObject({ status, instance: expect.any(String) });
  return problem;
}

/** The reference server still answers a good request (and has not crashed). */
async function referenceAlive(): Promise<void> {
  expect(ref.child.exitCode).toBeNull();
  const reply = await api('/api/me');
  expect(reply.status).toBe(200);
  expect(JSON.parse(reply.body)).toMatchObject({ sub: 'alice', method: 'api_key' });
}

/** The in-process stack still answers a good request over a raw socket. */
async function stackAlive(): Promise<void> {
  const answer = await raw(
    stackPort,
    'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
  );
  expect(answer.status).toBe(200);
  expect(JSON.parse(answer.body)).toEqual({ ok: true });
}

/** Polls `check` every 20 ms until it holds, failing after `ms`. */
async function eventually(check: () => boolean | Promise<boolean>, ms: number, what: string) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const openConnections = () =>
  new Promise<number>((resolve, reject) =>
    stackServer.getConnections((err, count) => (err ? reject(err) : resolve(count))),
  );

const H = 'Host: x\r\n';
const JSON_POST = `POST /api/messages HTTP/1.1\r\n${H}X-API-Key: ${DEMO_KEY}\r\nContent-Type: application/json\r\n`;

const MALFORMED: [string, number, string | Buffer][] = [
  ['spaces inside the request target', 400, 'GET /a b c\r\n\r\n'],
  ['a lower-case method', 400, `get / HTTP/1.1\r\n${H}\r\n`],
  ['an unknown method token', 501, `FROB / HTTP/1.1\r\n${H}\r\n`],
  ['whitespace before the method', 400, ` GET / HTTP/1.1\r\n${H}\r\n`],
  ['an empty request target', 400, `GET  HTTP/1.1\r\n${H}\r\n`],
  ['a control character in the target', 400, `GET /\x01 HTTP/1.1\r\n${H}\r\n`],
  ['raw UTF-8 bytes in the target', 400, Buffer.from(`GET /é✓ HTTP/1.1\r\n${H}\r\n`, 'utf8')],
  ['an unknown HTTP version', 400, `GET / HTTP/9.9\r\n${H}\r\n`],
  ['the HTTP/2 connection preface', 400, 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'],
  ['a TLS ClientHello on the plain port', 400, Buffer.from([0x16, 0x03, 0x01, 0x00, 0xa5, 0x01])],
  ['bare LF line endings', 400, 'GET / HTTP/1.1\nHost: x\n\n'],
  ['a header line without a colon', 400, `GET / HTTP/1.1\r\n${H}Bad Header\r\n\r\n`],
  ['a space inside a header name', 400, `GET / HTTP/1.1\r\n${H}X A: b\r\n\r\n`],
  ['whitespace before the colon', 400, `GET / HTTP/1.1\r\n${H}X-A : b\r\n\r\n`],
  ['a NUL byte in a header value', 400, `GET / HTTP/1.1\r\n${H}X-A: a\x00b\r\n\r\n`],
  ['a bare CR in a header value', 400, `GET / HTTP/1.1\r\n${H}X-A: a\rb\r\n\r\n`],
  ['an obsolete line fold', 400, `GET / HTTP/1.1\r\n${H}X-A: a\r\n b\r\n\r\n`],
  [
    'Content-Length together with Transfer-Encoding (RFC 9112 §6.1)',
    400,
    `${JSON_POST}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
  ],
  [
    'Transfer-Encoding before Content-Length',
    400,
    `${JSON_POST}Transfer-Encoding: chunked\r\nContent-Length: 12\r\n\r\n0\r\n\r\n`,
  ],
  [
    'two Content-Length headers that differ',
    400,
    `${JSON_POST}Content-Length: 2\r\nContent-Length: 14\r\n\r\n{"text":"abc"}`,
  ],
  [
    'two equal Content-Length headers',
    400,
    `${JSON_POST}Content-Length: 14\r\nContent-Length: 14\r\n\r\n{"text":"abc"}`,
  ],
  ['a Content-Length list', 400, `${JSON_POST}Content-Length: 14, 2\r\n\r\n{"text":"abc"}`],
  ['a negative Content-Length', 400, `${JSON_POST}Content-Length: -1\r\n\r\n`],
  ['a hexadecimal Content-Length', 400, `${JSON_POST}Content-Length: 0x0e\r\n\r\n{"text":"abc"}`],
  [
    'a Content-Length past 2^64',
    400,
    `${JSON_POST}Content-Length: 99999999999999999999999\r\n\r\n{}`,
  ],
  ['Transfer-Encoding: gzip without chunked', 400, `${JSON_POST}Transfer-Encoding: gzip\r\n\r\n`],
  ['chunked not last', 400, `${JSON_POST}Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n`],
  [
    'a chunk size that is not hex',
    400,
    `${JSON_POST}Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
  ],
  [
    'a chunk longer than its size',
    400,
    `${JSON_POST}Transfer-Encoding: chunked\r\n\r\n2\r\n{"text":"abc"}\r\n0\r\n\r\n`,
  ],
  ['one header of 20 KiB', 431, `GET / HTTP/1.1\r\n${H}X-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`],
  [
    '3,000 small headers',
    431,
    `GET / HTTP/1.1\r\n${H}${Array.from({ length: 3000 }, (_, i) => `X-${i}: a\r\n`).join('')}\r\n`,
  ],
  ['a request target of 20 KiB', 414, `GET /${'a'.repeat(20 * 1024)} HTTP/1.1\r\n${H}\r\n`],
];

describe('malformed request lines and headers', () => {
  it.each(MALFORMED)(
    'the reference server answers %s with a %i problem',
    async (_n, status, data) => {
      const answer = await raw(refPort, data);
      expectRawProblem(answer, status);
      expect(answer.headers.connection).toBe('close');
    },
  );

  it.each(MALFORMED)(
    'the in-process stack answers %s with a %i problem',
    async (_n, status, data) => {
      // the same bytes to a route that reads the body (one that does not may answer first)
      const bytes = typeof data === 'string' ? data.replace('/api/messages', '/json') : data;
      expectRawProblem(await raw(stackPort, bytes), status);
    },
  );

  it('leaves both servers answering good requests', async () => {
    await referenceAlive();
    await stackAlive();
  });
});

describe('the Host header', () => {
  it('refuses an HTTP/1.1 request without Host with 400 and closes (node answers it)', async () => {
    for (const port of [refPort, stackPort]) {
      const answer = await raw(port, 'GET /api/me HTTP/1.1\r\nX-API-Key: x\r\n\r\n');
      expect(answer.status).toBe(400);
      expect(answer.headers.connection).toBe('close');
    }
    await referenceAlive();
  });

  // node's requireHostHeader check would answer a bare 400 before any listener runs: the
  // reference server turns it off and checks Host itself, answering a problem.
  it('answers a request without Host with a problem+json body', async () => {
    const answer = await raw(refPort, 'GET /api/me HTTP/1.1\r\nX-API-Key: x\r\n\r\n');
    expectRawProblem(answer, 400);
  });

  // RFC 9112 §3.2: a server MUST answer 400 to a request with more than one Host line (node
  // would keep the first one and serve the request).
  it('refuses two Host headers with 400 (RFC 9112 §3.2)', async () => {
    const answer = await raw(
      refPort,
      `GET /api/me HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\nX-API-Key: ${DEMO_KEY}\r\nConnection: close\r\n\r\n`,
    );
    expect(answer.status).toBe(400);
  });

  it('keeps answering HTTP/1.0 without Host (Host is optional there)', async () => {
    const answer = await raw(refPort, `GET /api/me HTTP/1.0\r\nX-API-Key: ${DEMO_KEY}\r\n\r\n`);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ sub: 'alice' });
  });
});

describe('bodies cut off mid-way', () => {
  /** Sends a request whose body stops short, waits until the server has it, then drops it. */
  async function cutOff(port: number, head: string, sent: string): Promise<void> {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    socket.write(head + sent);
    await new Promise((resolve) => setTimeout(resolve, 30));
    socket.destroy();
  }

  const declared = (n: number) =>
    `${JSON_POST.replace('/api/messages', '/json')}Content-Length: ${n}\r\n\r\n`;
  const chunked = `${JSON_POST.replace('/api/messages', '/json')}Transfer-Encoding: chunked\r\n\r\n`;
  const CASES: [string, string, string][] = [
    ['a Content-Length body', declared(1000), `{"text":"${'x'.repeat(100)}`],
    ['an empty start of a Content-Length body', declared(50), ''],
    ['a chunked body mid-chunk', chunked, `64\r\n{"text":"${'y'.repeat(20)}`],
    ['a chunked body between chunks', chunked, '5\r\n{"a":\r\n'],
    ['a body over the limit', declared(5 * 1024 * 1024), 'z'.repeat(64 * 1024)],
  ];

  it.each(CASES)('the reference server survives %s, 10 times over', async (_n, head, sent) => {
    const target = head.replace('/json', '/api/messages');
    await Promise.all(Array.from({ length: 10 }, () => cutOff(refPort, target, sent)));
    await referenceAlive();
    const created = await postMessage('{"text":"after the cut-offs"}');
    expect(created.status).toBe(201);
  });

  it.each(CASES)(
    'the in-process stack survives %s and keeps no connection',
    async (_n, head, sent) => {
      await Promise.all(Array.from({ length: 10 }, () => cutOff(stackPort, head, sent)));
      // every dropped connection is gone from the server: nothing leaks
      await eventually(async () => (await openConnections()) === 0, 3_000, 'connections closed');
      await stackAlive();
    },
  );
});

describe('slow clients', () => {
  it('mirrors the reference server: serve() bounds header and request times, answers clientError', async () => {
    const main = readFileSync(
      new URL('../../examples/reference-server/main.ts', import.meta.url),
      'utf8',
    );
    // the reference server runs on serve() with its default times
    expect(main).toContain("from 'portico/node'");
    expect(main).not.toMatch(/headersTimeout|requestTimeout/);
    const service = serve([(_req, res) => void res.end()], { port: 0, signals: [] });
    await service.ready;
    try {
      const { headersTimeout, requestTimeout } = service.server;
      expect(headersTimeout).toBeGreaterThan(0);
      expect(headersTimeout).toBeLessThanOrEqual(60_000);
      expect(requestTimeout).toBeGreaterThanOrEqual(headersTimeout);
      expect(requestTimeout).toBeLessThanOrEqual(120_000);
      expect(service.server.listenerCount('clientError')).toBeGreaterThan(0);
    } finally {
      await service.close();
    }
  });

  /** Dribbles `text` one byte every `everyMs`, resolving with what the server wrote and when it closed. */
  function dribble(port: number, text: string, everyMs: number, limitMs: number) {
    return new Promise<{ answer: RawReply; elapsed: number }>((resolve, reject) => {
      const started = Date.now();
      let received = '';
      let sent = 0;
      const socket = connect(port, '127.0.0.1');
      socket.setEncoding('latin1');
      const tick = setInterval(() => {
        if (sent < text.length && socket.writable) socket.write(text[sent++]!);
      }, everyMs);
      const limit = setTimeout(() => {
        clearInterval(tick);
        socket.destroy();
        reject(new Error(`the server kept a dribbling connection open for ${limitMs} ms`));
      }, limitMs);
      socket.on('data', (chunk: string) => {
        received += chunk;
      });
      socket.on('error', () => {});
      socket.on('close', () => {
        clearInterval(tick);
        clearTimeout(limit);
        resolve({ answer: parseReply(received), elapsed: Date.now() - started });
      });
    });
  }

  it('closes a connection dribbling its headers (slow loris) with a 408 problem', async () => {
    // never-ending headers, one byte every 20 ms: headersTimeout (400 ms) must end it
    const endless = `GET /health HTTP/1.1\r\nHost: x\r\n${'X-Slow: a\r\n'.repeat(200)}`;
    const { answer, elapsed } = await dribble(stackPort, endless, 20, 3_000);
    expectRawProblem(answer, 408);
    expect(elapsed).toBeLessThan(2_000);
    await stackAlive();
  });

  it('closes a connection dribbling its body with a 408 problem', async () => {
    const head = `POST /json HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10000\r\n\r\n`;
    const { answer, elapsed } = await dribble(stackPort, head + ' '.repeat(10_000), 1, 4_000);
    // the headers arrive within 400 ms; the body does not within requestTimeout (800 ms)
    expectRawProblem(answer, 408);
    expect(elapsed).toBeLessThan(3_000);
    await stackAlive();
  });

  it('holds many slow connections at once and closes every one', async () => {
    const slow = Array.from({ length: 20 }, () =>
      dribble(stackPort, `GET / HTTP/1.1\r\n${'X-Slow: b\r\n'.repeat(100)}`, 25, 4_000),
    );
    for (const { answer } of await Promise.all(slow)) expect(answer.status).toBe(408);
    await eventually(async () => (await openConnections()) === 0, 2_000, 'connections closed');
    await stackAlive();
  });
});

describe('CR/LF injection into headers portico echoes or builds', () => {
  it.each([
    ['a bare LF', 'a\nSet-Cookie: injected=1'],
    ['a bare CR', 'a\rSet-Cookie: injected=1'],
    ['an obsolete line fold', 'a\r\n Set-Cookie: injected=1'],
    ['a NUL', 'a\x00b'],
  ])('X-Request-ID with %s: refused by the parser, nothing injected', async (_n, value) => {
    const answer = await raw(
      refPort,
      `GET /api/me HTTP/1.1\r\n${H}X-API-Key: ${DEMO_KEY}\r\nX-Request-ID: ${value}\r\nConnection: close\r\n\r\n`,
    );
    expectRawProblem(answer, 400);
    expect(answer.lines.some((line) => /^set-cookie/i.test(line))).toBe(false);
    expect(answer.body).not.toContain('injected');
  });

  it.each([
    ['percent-encoded CR/LF', 'a%0d%0aSet-Cookie:%20injected=1'],
    ['spaces and a colon', 'a Set-Cookie: injected=1'],
    ['a tab', 'a\tb'],
    ['latin-1 bytes', 'caf\xe9'],
    ['201 characters', 'r'.repeat(201)],
    ['an HTML payload', '<script>alert(1)</script>'],
  ])('X-Request-ID with %s: replaced by a fresh id', async (_n, value) => {
    const answer = await raw(
      refPort,
      Buffer.from(
        `GET /api/me HTTP/1.1\r\n${H}X-API-Key: ${DEMO_KEY}\r\nX-Request-ID: ${value}\r\nConnection: close\r\n\r\n`,
        'latin1',
      ),
    );
    expect(answer.status).toBe(200);
    expect(answer.headers['x-request-id']).toMatch(UUID);
    expect(answer.lines.some((line) => /^set-cookie/i.test(line))).toBe(false);
  });

  it('builds Location of POST /api/messages from the new id only, whatever the text holds', async () => {
    const reply = await postMessage(
      JSON.stringify({ text: 'a\r\nSet-Cookie: injected=1\r\nLocation: https://evil.example' }),
    );
    expect(reply.status).toBe(201);
    const { id } = JSON.parse(reply.body) as { id: string };
    expect(reply.headers.get('location')).toBe(`/api/messages/${id}`);
    expect(reply.headers.get('location')).toMatch(/^\/api\/messages\/[0-9a-f-]{36}$/);
    expect(reply.headers.get('set-cookie')).toBeNull();
  });

  it('refuses a channel name with CR/LF with 422 before anything is built from it', async () => {
    const reply = await postMessage(JSON.stringify({ text: 'x', channel: 'a\r\nX-Evil: 1' }));
    const problem = expectProblem(reply, 422);
    expect(problem.errors).toEqual([{ field: 'channel', message: expect.any(String) }]);
    expect(reply.headers.get('x-evil')).toBeNull();
  });

  it.each([
    ['a Bearer token with header syntax in it', { Authorization: 'Bearer a"b, realm="evil"' }],
    ['Basic credentials decoding to CR/LF', { Authorization: `Basic ${btoa('a\r\nb:c\r\nd')}` }],
    ['an API key with quotes and commas', { 'X-API-Key': 'k", realm="evil' }],
    ['an unknown scheme', { Authorization: 'Evil realm="x"' }],
  ])(
    'answers %s with 401 and only the server’s own WWW-Authenticate challenges',
    async (_n, headers) => {
      const res = await fetch(`${ref.url}/api/me`, {
        headers,
        signal: AbortSignal.timeout(5_000),
      });
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toBe(PROBLEM_TYPE);
      const challenges = res.headers.get('www-authenticate') ?? '';
      expect(challenges).toMatch(/realm="/);
      expect(challenges).not.toContain('evil');
      expect(challenges).not.toMatch(/[\r\n]/);
    },
  );

  it('refuses a realm with CR/LF when the authenticator is built, never per request', () => {
    expect(() => basicAuth({ verify: () => undefined, realm: 'api\r\nSet-Cookie: x=1' })).toThrow(
      TypeError,
    );
  });

  it.each([
    ['a session id with percent-encoded CR/LF', 'session=abc%0d%0aSet-Cookie:%20injected=1'],
    ['a quoted session id', 'session="abc\\"def"'],
    ['two session cookies', 'session=a; session=b'],
    ['a 6 KiB session id', `session=${'s'.repeat(6 * 1024)}`],
    ['a cookie without a name', '=abc; ; ;;'],
    ['latin-1 bytes', 'session=caf\xe9'],
  ])(
    'answers a Cookie with %s with 401, never a 5xx, setting no cookie of its own',
    async (_n, cookie) => {
      const answer = await raw(
        refPort,
        Buffer.from(
          `GET /api/me HTTP/1.1\r\n${H}Cookie: ${cookie}\r\nConnection: close\r\n\r\n`,
          'latin1',
        ),
      );
      expectRawProblem(answer, 401);
      // at most the session cookie is cleared; nothing of the request comes back in it
      for (const line of answer.lines.filter((l) => /^set-cookie:/i.test(l))) {
        expect(line).toMatch(/^Set-Cookie: session=; Max-Age=0;/);
      }
      expect(answer.lines.join('\n')).not.toContain('injected');
    },
  );

  it('answers a login whose user name holds CR/LF with 401 and sets no cookie', async () => {
    const res = await fetch(`${ref.url}/login`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ username: 'alice\r\nSet-Cookie: injected=1', password: 'x\r\n' }),
      signal: AbortSignal.timeout(5_000),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toBe(PROBLEM_TYPE);
    expect(res.headers.getSetCookie().join('\n')).not.toContain('injected');
  });

  // An error whose header holds CR/LF used to make sendError's setHeader throw: the request
  // hung unanswered and the rejection went unhandled (a crash under node's default policy).
  it.each([
    ['a 401 challenge', '/error-crlf-challenge', 401],
    ['a header of a synchronous throw', '/error-crlf-sync-header', 400],
    ['a foreign error’s header', '/error-crlf-foreign', 403],
    ['an invalid header name', '/error-bad-header-name', 409],
  ])(
    'answers an error with CR/LF in %s with its status, without the bad header',
    async (_n, path, status) => {
      reported.length = 0;
      const answer = await raw(
        stackPort,
        `GET ${path} HTTP/1.1\r\n${H}Connection: close\r\n\r\n`,
        3_000,
      );
      expectRawProblem(answer, status);
      expect(answer.lines.some((line) => /^set-cookie/i.test(line))).toBe(false);
      expect(answer.body).not.toContain('injected');
      expect(reported).toHaveLength(1);
      expect(reported[0]).toBeInstanceOf(TypeError);
      if (path === '/error-crlf-foreign') expect(answer.headers['x-fine']).toBe('kept');
      if (path === '/error-bad-header-name') expect(answer.headers['retry-after']).toBe('3');
      await stackAlive();
    },
  );

  it('keeps requireHttps redirects on the request’s own host, encoded', async () => {
    const https = await listen(toNodeListener(requireHttps(), { logger: silentLogger }));
    https.server.on('clientError', handleClientError);
    const absolute = await raw(
      https.port,
      `GET http://evil.example/%0d%0aSet-Cookie:%20x=1 HTTP/1.1\r\nHost: good.example\r\nConnection: close\r\n\r\n`,
    );
    expect(absolute.status).toBe(308);
    expect(absolute.headers.location).toBe('https://good.example/%0d%0aSet-Cookie:%20x=1');
    expect(absolute.lines.some((line) => /^set-cookie/i.test(line))).toBe(false);
    for (const host of ['evil.example/x', 'a b', 'caf\xe9', 'a@b', '']) {
      const answer = await raw(
        https.port,
        Buffer.from(`GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`, 'latin1'),
      );
      expectRawProblem(answer, 400);
      expect(answer.headers.location).toBeUndefined();
    }
  });

  it('leaves both servers answering good requests', async () => {
    await referenceAlive();
    await stackAlive();
  });
});

const nestedArrays = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
const nestedObjects = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;

describe('JSON bombs on POST /api/messages', () => {
  it.each([
    ['text nested 100k arrays deep', 422, `{"text":${nestedArrays(100_000)}}`],
    ['a body nested 100k arrays deep', 422, nestedArrays(100_000)],
    ['a body nested 100k objects deep', 422, nestedObjects(100_000)],
    ['500k unclosed brackets', 400, '['.repeat(500_000)],
    ['text 1e400 (Infinity)', 422, '{"text":1e400}'],
    ['text -1e400', 422, '{"text":-1e400}'],
    ['text 1e-400 (underflow)', 422, '{"text":1e-400}'],
    ['text a 100k-digit number', 422, `{"text":${'9'.repeat(100_000)}}`],
    ['text a 10^6-character string (within 1 MiB)', 422, JSON.stringify({ text: 'x'.repeat(1e6) })],
    ['a 10^6-character channel', 422, JSON.stringify({ text: 'x', channel: 'c'.repeat(1e6) })],
    ['escapes that pass 1 MiB on the wire', 413, `{"text":"${'\\u0041'.repeat(200_000)}"}`],
    [
      '100k keys (over 1 MiB)',
      413,
      `{${Array.from({ length: 100_000 }, (_, i) => `"k${i}":1`)},"text":"x"}`,
    ],
    ['a 2 MiB body', 413, JSON.stringify({ text: 'y'.repeat(2 * 1024 * 1024) })],
    ['duplicate text keys, the last a number', 422, '{"text":"ok","text":5}'],
    ['NaN', 400, '{"text":NaN}'],
    ['a trailing comma', 400, '{"text":"x",}'],
    ['a single-quoted string', 400, "{'text':'x'}"],
    ['a comment', 400, '{"text":"x"/* c */}'],
    ['an empty body', 400, ''],
    ['whitespace only', 400, ' \n\t '],
    ['null', 422, 'null'],
    ['a bare string', 422, '"text"'],
  ])('answers %s with %i', async (_n, status, body) => {
    const reply = await postMessage(body);
    expectProblem(reply, status);
  });

  it.each([
    ['__proto__ with fields', '{"__proto__":{"text":"from the prototype"}}'],
    ['constructor.prototype', '{"constructor":{"prototype":{"text":"from the prototype"}}}'],
    ['prototype', '{"prototype":{"text":"x"},"__proto__":{"text":"y"}}'],
    ['an escaped __proto__', '{"\\u005f_proto__":{"text":"escaped"}}'],
    ['an escaped constructor', '{"\\u0063onstructor":{"prototype":{"text":"x"}}}'],
  ])('drops %s: no text comes from it (422)', async (_n, body) => {
    const problem = expectProblem(await postMessage(body), 422);
    expect(problem.errors).toEqual([{ field: 'text', message: 'is required' }]);
  });

  it('keeps a message’s own fields when __proto__ tries to add others', async () => {
    const reply = await postMessage(
      '{"text":"mine","__proto__":{"from":"mallory","channel":"admin","id":"forged"}}',
    );
    expect(reply.status).toBe(201);
    const message = JSON.parse(reply.body) as Record<string, unknown>;
    expect(message).toMatchObject({ text: 'mine', from: 'alice', channel: 'general' });
    expect(message.id).toMatch(UUID);
  });

  it('is not polluted afterwards: an empty object still lacks text', async () => {
    // were Object.prototype polluted with `text`, `{}` would validate and be created
    const problem = expectProblem(await postMessage('{}'), 422);
    expect(problem.errors).toEqual([{ field: 'text', message: 'is required' }]);
  });

  it.each([
    [
      'nested 5,000 levels with __proto__',
      `{"text":"deep","__proto__":1,"d":${nestedArrays(5_000)}}`,
    ],
    [
      'nested 100k levels with constructor',
      `{"text":"deep","constructor":1,"d":${nestedArrays(100_000)}}`,
    ],
    ['nested 100k levels with a \\u escape', `{"text":"d\\u00e9ep","d":${nestedObjects(100_000)}}`],
  ])('reads valid JSON %s (it is not "invalid JSON")', async (_n, body) => {
    // used to be a 400 "not valid JSON": the reviver that drops __proto__ overflowed the stack
    const reply = await postMessage(body);
    expect(reply.status, reply.body.slice(0, 300)).toBe(201);
    expect(JSON.parse(reply.body)).toMatchObject({ from: 'alice', channel: 'general' });
  });

  it('keeps serving after the bombs', async () => {
    await referenceAlive();
    expect((await postMessage('{"text":"after the bombs"}')).status).toBe(201);
  });
});

describe('readJson in process: deep and poisoned bodies', () => {
  const post = (body: string) =>
    raw(
      stackPort,
      Buffer.from(
        `POST /json HTTP/1.1\r\n${H}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      ),
    );

  it('reads a body nested 100k levels deep holding __proto__ at the bottom', async () => {
    const body = `${'{"a":'.repeat(100_000)}{"__proto__":{"polluted":true},"b":1}${'}'.repeat(100_000)}`;
    const answer = await post(body);
    expect(answer.status).toBe(200);
    // 100k wrappers, then the innermost object (without __proto__: its last key is b)
    expect(JSON.parse(answer.body)).toMatchObject({ depth: 100_001, keys: ['a'] });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('drops __proto__ at the top and keeps a plain prototype', async () => {
    const answer = await post('{"__proto__":{"polluted":true},"ok":1}');
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ depth: 1, keys: ['ok'], prototypeIsPlain: true });
    expect(Object.prototype).not.toHaveProperty('polluted');
  });
});

describe('charsets', () => {
  it.each([
    ['latin1', 'application/json; charset=latin1'],
    ['iso-8859-1', 'application/json; charset=ISO-8859-1'],
    ['utf-16', 'application/json; charset=utf-16'],
    ['utf-16le', 'application/json; charset=utf-16le'],
    ['utf-32', 'application/json; charset=utf-32'],
    ['an unknown charset', 'application/json; charset=klingon'],
  ])('answers charset %s with a 415 problem naming it', async (_n, type) => {
    const problem = expectProblem(await postMessage('{"text":"x"}', type), 415);
    expect(String(problem.detail).toLowerCase()).toContain(
      /charset=([\w-]+)/.exec(type)![1]!.toLowerCase(),
    );
  });

  it.each([
    ['an unterminated quoted parameter', 'application/json; charset="'],
    ['an empty media type', ''],
    ['a parameter without a value', 'application/json; charset'],
    ['text/json', 'text/json'],
    ['application/json5', 'application/json5'],
  ])('answers a Content-Type with %s with a 415 problem', async (_n, type) => {
    expectProblem(await postMessage('{"text":"x"}', type), 415);
  });

  it.each([
    ['a lone 0xff byte', [0xff]],
    ['an overlong encoding of /', [0xc0, 0xaf]],
    ['an encoded surrogate', [0xed, 0xa0, 0x80]],
    ['a truncated sequence', [0xe2, 0x82]],
    ['a code point past U+10FFFF', [0xf4, 0x90, 0x80, 0x80]],
    ['a stray continuation byte', [0x80]],
  ])('answers invalid UTF-8 (%s) with a 400 problem', async (_n, bytes) => {
    const body = Buffer.concat([Buffer.from('{"text":"a'), Buffer.from(bytes), Buffer.from('b"}')]);
    const problem = expectProblem(await postMessage(body), 400);
    expect(problem.detail).toMatch(/UTF-8/);
  });

  it('answers UTF-16 bytes sent as (UTF-8) JSON with a 400 problem', async () => {
    const body = Buffer.from('\ufeff{"text":"x"}', 'utf16le');
    expectProblem(await postMessage(body), 400);
  });

  it('accepts a UTF-8 byte order mark and charset=utf-8 in any case', async () => {
    const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"text":"bom"}')]);
    expect((await postMessage(bom)).status).toBe(201);
    expect((await postMessage('{"text":"x"}', 'application/json; charset=UTF-8')).status).toBe(201);
  });

  it('keeps serving after the charsets', async () => {
    await referenceAlive();
  });
});

describe('request ids stay sane under all of it', () => {
  it('quotes a fresh, well-formed request id in a refused JSON bomb', async () => {
    const reply = await api('/api/messages', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Request-ID': 'bad id\u00e9' },
      body: nestedArrays(1000),
    });
    const problem = expectProblem(reply, 422);
    expect(reply.headers.get('x-request-id')).toMatch(REQUEST_ID_PATTERN);
    expect(problem.requestId).toBe(reply.headers.get('x-request-id'));
  });
});
