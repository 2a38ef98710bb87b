// SIGTERM under load. reference-server.test.ts checks an idle shutdown (exit 0) and
// reference-server-ws.test.ts one WebSocket's 1001; here 50 requests are in flight (each
// dispatched by the server, its body half sent) with WebSocket clients and event streams
// open: every request gets its normal answer, every WebSocket 1001, every stream its end, and
// the process exits 0 within 10 s. With Redis, what those requests created still reaches the
// other process's clients and the webhook subscribers: nothing is lost.
import { type ClientRequest, request as httpRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { closeAll, listen, request } from '../helpers/http.js';
import { hasRedis, type RedisServer, startRedis } from '../helpers/redis.js';
import { connect as connectEvents } from '../helpers/sse.js';
import { type LiveSocket, openSocket, within } from './live-clients.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const DEMO_KEY = 'demo-key-of-the-shutdown-suite-0123456789';
const AUTH = { 'X-API-Key': DEMO_KEY };
const IN_FLIGHT = 50;

afterAll(async () => {
  await closeAll();
});

interface Held {
  text: string;
  /** Sends the rest of the body; resolves with the answer. */
  finish(): Promise<{ status: number; body: string }>;
}

/**
 * Starts a POST /api/messages and resolves once the server has dispatched it (its `100
 * Continue` came back) and the first half of the body is sent.
 */
function holdRequest(port: number, text: string): Promise<Held> {
  const body = JSON.stringify({ text });
  const half = Math.floor(body.length / 2);
  return new Promise((resolve, reject) => {
    const req: ClientRequest = httpRequest({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/api/messages',
      agent: false,
      headers: {
        ...AUTH,
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(body),
        Expect: '100-continue',
      },
    });
    const answer = new Promise<{ status: number; body: string }>((done, fail) => {
      req.on('response', (res: IncomingMessage) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => done({ status: res.statusCode ?? 0, body: text }));
        res.on('error', fail);
      });
      req.on('error', fail);
    });
    answer.catch(() => {});
    req.on('error', reject);
    req.once('continue', () => {
      req.write(body.slice(0, half));
      resolve({
        text,
        finish: () => {
          req.end(body.slice(half));
          return answer;
        },
      });
    });
    req.flushHeaders();
  });
}

/** Waits (bounded) until the server has printed `text`. */
const printed = (server: RunningServer, text: string) =>
  vi.waitFor(() => expect(server.output()).toContain(text), { timeout: 5000, interval: 20 });

/**
 * Holds IN_FLIGHT requests on `server` with `sockets` and `streams` open, sends SIGTERM, lets
 * the requests finish, and checks every part of the graceful shutdown.
 */
async function shutDownUnderLoad(server: RunningServer, texts: string[]) {
  const port = Number(new URL(server.url).port);
  const sockets: LiveSocket[] = await Promise.all(
    Array.from({ length: 5 }, () => openSocket(server.url, AUTH)),
  );
  const streams = await Promise.all(
    Array.from({ length: 3 }, () => connectEvents({ port }, '/events', AUTH)),
  );
  const held = await within(
    Promise.all(texts.map((text) => holdRequest(port, text))),
    10_000,
    'dispatching the requests',
  );
  const signalled = Date.now();
  const exit = server.stop('SIGTERM');
  await printed(server, 'SIGTERM received');
  // no new connection is taken; the live ones are told at once
  await expect(request(port, '/api/me', { headers: AUTH })).rejects.toMatchObject({
    code: 'ECONNREFUSED',
  });
  const codes = await within(Promise.all(sockets.map((s) => s.closed)), 5000, 'WebSocket close');
  expect(codes).toEqual(sockets.map(() => 1001));
  await within(Promise.all(streams.map((s) => s.ended)), 5000, 'event streams ending');
  // the requests in flight complete, with their normal answers
  const answers = await within(Promise.all(held.map((h) => h.finish())), 8000, 'in-flight answers');
  expect(answers.map((a) => a.status)).toEqual(texts.map(() => 201));
  expect(answers.map((a) => JSON.parse(a.body).text)).toEqual(texts);
  expect(await within(exit, 10_000 - (Date.now() - signalled), 'exit')).toBe(0);
  // well within the contract's 10 s, and not the forced exit of a shutdown that hung (8 s)
  expect(Date.now() - signalled).toBeLessThan(5000);
  return answers.map((a) => JSON.parse(a.body).id as string);
}

const textsOf = (prefix: string) => Array.from({ length: IN_FLIGHT }, (_, i) => `${prefix} ${i}`);

describe('reference server: SIGTERM under load', () => {
  it('in memory: answers every request in flight, closes WebSockets 1001, ends streams, exits 0', async () => {
    const server = await startReferenceServer({ DEMO_API_KEY: DEMO_KEY, RATE_LIMIT: '10000' });
    try {
      await shutDownUnderLoad(server, textsOf('in flight'));
      // a graceful shutdown is not an error: nothing failed on the way out
      const afterSignal = server.output().split('SIGTERM received')[1]!;
      expect(afterSignal).not.toMatch(/fail|error/i);
    } finally {
      await server.stop('SIGKILL');
    }
  }, 30_000);

  it('closes a keep-alive connection reused while draining: Connection: close, then the end', async () => {
    const server = await startReferenceServer({ DEMO_API_KEY: DEMO_KEY });
    try {
      const socket = connect(Number(new URL(server.url).port), '127.0.0.1');
      let received = '';
      socket.setEncoding('latin1');
      socket.on('data', (chunk: string) => {
        received += chunk;
      });
      socket.on('error', () => {});
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      socket.write(`GET /events HTTP/1.1\r\nHost: x\r\nX-API-Key: ${DEMO_KEY}\r\n\r\n`);
      await vi.waitFor(() => expect(received).toContain('200 OK'), { timeout: 5000 });
      // a request in flight keeps the server draining while the connection is reused
      const held = await holdRequest(Number(new URL(server.url).port), 'still in flight');
      const exit = server.stop('SIGTERM');
      // the stream ends (the last chunk), leaving the connection idle, and it is reused at once
      await vi.waitFor(() => expect(received).toContain('\r\n0\r\n\r\n'), { timeout: 5000 });
      const before = received.length;
      socket.write(`GET /api/me HTTP/1.1\r\nHost: x\r\nX-API-Key: ${DEMO_KEY}\r\n\r\n`);
      await within(closed, 5000, 'the connection closing');
      expect((await held.finish()).status).toBe(201);
      const after = received.slice(before);
      // answered, and told that the connection ends (it then does)
      expect(after).toMatch(/^HTTP\/1\.1 200 /);
      expect(after).toMatch(/\r\nConnection: close\r\n/i);
      expect(await within(exit, 10_000, 'exit')).toBe(0);
    } finally {
      await server.stop('SIGKILL');
    }
  }, 30_000);

  describe.skipIf(!hasRedis)('with Redis and a second process', () => {
    let redis: RedisServer;
    afterAll(async () => {
      await redis?.stop();
    });

    it('fans out and queues webhooks for every message made while shutting down', async () => {
      redis = await startRedis();
      const env = {
        DEMO_API_KEY: DEMO_KEY,
        RATE_LIMIT: '10000',
        REDIS_URL: redis.url,
        BASE_URL: 'http://portico.test',
        WEBHOOK_ALLOW_PRIVATE: '1',
        WEBHOOK_RETRY_SCHEDULE: '0.2,0.2',
      };
      const [leaving, staying] = await Promise.all([
        startReferenceServer(env),
        startReferenceServer(env),
      ]);
      try {
        const delivered = new Set<string>();
        const receiver = await listen((req, res) => {
          let body = '';
          req.on('data', (chunk: Buffer) => {
            body += chunk;
          });
          req.on('end', () => {
            delivered.add(JSON.parse(body).data.text);
            res.writeHead(204).end();
          });
        });
        const hook = await fetch(`${staying.url}/api/webhooks`, {
          method: 'POST',
          headers: { ...AUTH, 'Content-Type': 'application/json' },
          body: JSON.stringify({ url: `${receiver.url}/hook` }),
        });
        expect(hook.status).toBe(201);
        const watcher = await openSocket(staying.url, AUTH);
        watcher.ws.send(JSON.stringify({ type: 'subscribe', channel: 'general', recover: true }));
        await watcher.next('subscribed');

        const texts = textsOf('leaving');
        await shutDownUnderLoad(leaving, texts);
        // the other process's WebSocket client got every one of them, and so did the webhook
        await vi.waitFor(
          () => {
            const pushed = watcher.received.filter((m) => m.type === 'push');
            expect(pushed.map((m) => (m.data as { text: string }).text).sort()).toEqual(
              [...texts].sort(),
            );
            expect([...delivered].sort()).toEqual([...texts].sort());
          },
          { timeout: 10_000, interval: 100 },
        );
        watcher.ws.close();
      } finally {
        await Promise.all([leaving.stop('SIGKILL'), staying.stop()]);
      }
    }, 40_000);
  });
});
