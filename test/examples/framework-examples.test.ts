// examples/{node-http,express,koa,fastify,hono}/server.ts, the same small API on five hosts,
// run in-process over real sockets: one suite for the five, so they stay alike.
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import * as expressExample from '../../examples/express/server.js';
import * as fastifyExample from '../../examples/fastify/server.js';
import {
  AUDIENCE,
  DEMO_API_KEY,
  DEMO_JWT_SECRET,
  ISSUER,
  ORIGIN,
} from '../../examples/frameworks/shared.js';
import * as honoExample from '../../examples/hono/server.js';
import * as koaExample from '../../examples/koa/server.js';
import * as nodeExample from '../../examples/node-http/server.js';
import { expectProblem, json, type Listening, listen, request } from '../helpers/http.js';
import { nodeServerAnswer, sendRaw, variantsOf } from '../helpers/path-variants.js';
import { connect as connectStream, parseEvents } from '../helpers/sse.js';

const WAIT_MS = 2000;

/** Rejects once `ms` have passed without `promise` settling. */
function within<T>(promise: Promise<T>, what: string, ms = WAIT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const mintToken = (sub: string) =>
  new SignJWT({})
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(sub)
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(new TextEncoder().encode(DEMO_JWT_SECRET));

describe.each([
  ['node:http', nodeExample],
  ['Express', expressExample],
  ['Koa', koaExample],
  ['Fastify', fastifyExample],
  ['Hono', honoExample],
])('the %s example', (name, example) => {
  let app: Awaited<ReturnType<typeof example.createApp>>;
  let listening: Listening;

  beforeAll(async () => {
    app = await example.createApp();
    listening = await listen(app.server);
  });
  afterAll(async () => {
    if (app.server.listening) await app.close();
  });

  const get = (path: string, headers: Record<string, string> = {}) =>
    within(request(listening, path, { headers }), `GET ${path}`);
  const postMessage = (text: string) =>
    within(
      request(listening, '/api/messages', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': DEMO_API_KEY },
        body: JSON.stringify({ text }),
      }),
      'POST /api/messages',
    );

  /** A WebSocket client: its status (101 or the refusal), its messages, its close code. */
  function socket(headers: Record<string, string>, port = listening.port) {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`, { headers });
    const messages: Record<string, unknown>[] = [];
    ws.on('message', (data) => messages.push(JSON.parse(String(data))));
    ws.on('error', () => {});
    const opened = within(
      new Promise<number>((resolve) => {
        ws.once('open', () => resolve(101));
        ws.once('unexpected-response', (_req, res) => {
          resolve(res.statusCode ?? 0);
          res.resume();
          ws.terminate();
        });
      }),
      'WebSocket handshake',
    );
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    return { ws, messages, opened, closed };
  }

  it.each([...variantsOf('/api/events'), ...variantsOf('/api/hello')])(
    'never serves %s to an anonymous caller (a path another reader routes to /api)',
    async (variant) => {
      const reply = await within(sendRaw(listening.port, variant), `GET ${variant}`);
      const own = name === 'Hono' ? nodeServerAnswer(variant) : undefined;
      if (own !== undefined) {
        // refused by @hono/node-server before any handler runs: its own empty answer (chunked)
        expect([reply.status, reply.body]).toEqual([own, '0\r\n\r\n']);
        return;
      }
      expect([400, 401, 404], reply.statusLine).toContain(reply.status);
      // Fastify answers a URL it cannot decode (`%` alone) itself, before any hook: a 400 too
      if (!(reply.status === 400 && reply.body.includes('FST_ERR_BAD_URL'))) {
        expect(reply.headers['content-type']).toBe('application/problem+json');
      }
      expect(reply.body).not.toContain('"hello":');
      expect(reply.body).not.toContain('event:');
    },
  );

  it('answers 401 with a challenge per mechanism when no credential is sent', async () => {
    const reply = await get('/api/hello');
    expectProblem(reply, 401);
    const challenges = String(reply.headers['www-authenticate']);
    expect(challenges).toMatch(/ApiKey/);
    expect(challenges).toMatch(/Bearer/);
    expectProblem(await get('/api/hello', { 'x-api-key': 'wrong-key' }), 401);
  });

  it('greets the owner of the API key', async () => {
    const reply = await get('/api/hello', { 'x-api-key': DEMO_API_KEY });
    expect(reply.status, reply.body).toBe(200);
    expect(json(reply)).toEqual({ hello: 'demo' });
    expect(reply.headers['x-content-type-options']).toBe('nosniff');
  });

  it('greets the subject of a bearer token', async () => {
    const reply = await get('/api/hello', { authorization: `Bearer ${await mintToken('alice')}` });
    expect(reply.status, reply.body).toBe(200);
    expect(json(reply)).toEqual({ hello: 'alice' });
  });

  it('answers an unknown path with a 404 problem', async () => {
    expectProblem(await get('/nowhere'), 404);
  });

  it('answers bad input with a 422 problem', async () => {
    expectProblem(await postMessage(''), 422);
  });

  it('answers CORS preflights for its one origin only', async () => {
    const preflight = (origin: string) =>
      within(
        request(listening, '/api/hello', {
          method: 'OPTIONS',
          headers: {
            origin,
            'access-control-request-method': 'GET',
            'access-control-request-headers': 'authorization',
          },
        }),
        'preflight',
      );
    const allowed = await preflight(ORIGIN);
    expect(allowed.status).toBe(204);
    expect(allowed.headers['access-control-allow-origin']).toBe(ORIGIN);
    expect(String(allowed.headers['access-control-allow-headers'])).toMatch(/authorization/i);
    const other = await preflight('https://evil.example');
    expect(other.status).toBe(204);
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
    const simple = await get('/api/hello', { origin: ORIGIN, 'x-api-key': DEMO_API_KEY });
    expect(simple.headers['access-control-allow-origin']).toBe(ORIGIN);
  });

  it('streams a posted message to an event stream', async () => {
    const stream = await within(
      connectStream(listening, '/api/events', { 'x-api-key': DEMO_API_KEY }),
      'event stream',
    );
    try {
      expect(stream.status).toBe(200);
      expect(String(stream.headers['content-type'])).toMatch(/^text\/event-stream/);
      expect((await postMessage('hello, stream')).status).toBe(201);
      const events = parseEvents(await stream.until((t) => parseEvents(t).length > 0, WAIT_MS));
      expect(events).toMatchObject([
        { event: 'message', data: '{"from":"demo","text":"hello, stream"}' },
      ]);
    } finally {
      stream.destroy();
    }
  });

  it('refuses a WebSocket without credentials before the upgrade', async () => {
    expect(await socket({}).opened).toBe(401);
    expect(await socket({ 'x-api-key': DEMO_API_KEY, origin: 'https://evil.example' }).opened).toBe(
      403,
    );
  });

  it('pushes a posted message to a subscribed WebSocket', async () => {
    const client = socket({ 'x-api-key': DEMO_API_KEY, origin: ORIGIN });
    try {
      expect(await client.opened).toBe(101);
      // `recover` asks for a `subscribed` answer once the subscription is live
      client.ws.send(JSON.stringify({ type: 'subscribe', channel: 'messages', recover: true }));
      await expect
        .poll(() => client.messages[0], { timeout: WAIT_MS })
        .toMatchObject({ type: 'subscribed', channel: 'messages' });
      expect((await postMessage('hello, socket')).status).toBe(201);
      await expect
        .poll(() => client.messages.at(-1), { timeout: WAIT_MS })
        .toMatchObject({
          type: 'push',
          channel: 'messages',
          event: 'message',
          data: { from: 'demo', text: 'hello, socket' },
        });
    } finally {
      client.ws.close();
    }
  });

  it('throttles guessing: 10 wrong keys, then the right one is 429 on /api and at /ws', async () => {
    const fresh = await example.createApp();
    const server = await listen(fresh.server);
    try {
      for (let i = 0; i < 10; i++) {
        const wrong = await request(server, '/api/hello', {
          headers: { 'x-api-key': `guess-${i}` },
        });
        expectProblem(wrong, 401);
      }
      const right = await request(server, '/api/hello', { headers: { 'x-api-key': DEMO_API_KEY } });
      expectProblem(right, 429);
      expect(Number(right.headers['retry-after'])).toBeGreaterThan(0);
      const client = socket({ 'x-api-key': DEMO_API_KEY, origin: ORIGIN }, server.port);
      expect(await client.opened).toBe(429);
    } finally {
      await fresh.close();
    }
  });

  it('ends streams, sockets and the server on close()', async () => {
    const stream = await within(
      connectStream(listening, '/api/events', { 'x-api-key': DEMO_API_KEY }),
      'event stream',
    );
    const client = socket({ 'x-api-key': DEMO_API_KEY });
    expect(await client.opened).toBe(101);
    await within(app.close(), 'close()');
    expect(await within(client.closed, 'WebSocket close')).toBe(1001);
    await within(stream.ended, 'event stream end');
    expect(app.server.listening).toBe(false);
  });
});
