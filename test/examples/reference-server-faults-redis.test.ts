// Redis stopped and started again under a running reference server (REDIS_URL): /api/* answers
// 503 problems fast while it is away, and the service recovers without a restart, live fan-out
// (/events, /ws) included. reference-server-redis.test.ts covers the two-process sharing and
// a first 503; this suite covers timing, every kind of /api call and the live channels.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { hasRedis, type RedisServer, startRedis } from '../helpers/redis.js';
import { connect as connectEvents, parseEvents } from '../helpers/sse.js';
import { openSocket } from './live-clients.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

// users live in the process, API keys and sessions in Redis (lost with it): sign in with Basic
const BOB = { Authorization: `Basic ${Buffer.from('bob:bob-password').toString('base64')}` };
/** How long an answer may take while Redis is away. */
const FAST_MS = 3000;

describe.skipIf(!hasRedis)('reference server: Redis goes away and comes back', () => {
  let redis: RedisServer;
  let server: RunningServer;

  beforeAll(async () => {
    redis = await startRedis();
    server = await startReferenceServer({ REDIS_URL: redis.url, RATE_LIMIT: '10000' });
  });
  afterAll(async () => {
    await server?.stop();
    await redis?.stop();
  });

  const post = (text: string) =>
    fetch(`${server.url}/api/messages`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...BOB },
      body: JSON.stringify({ text }),
    });

  /** A request and how long it took, never more than 10 s. */
  async function timed(path: string, init: RequestInit = {}) {
    const started = performance.now();
    const res = await fetch(`${server.url}${path}`, {
      ...init,
      headers: { ...BOB, ...(init.headers as Record<string, string>) },
      signal: AbortSignal.timeout(10_000),
    });
    const body = await res.text();
    return { res, body, ms: performance.now() - started };
  }

  it('answers 503 problems quickly while Redis is down, then serves REST and fan-out again', async () => {
    // live clients from before the outage: an event stream and a subscribed WebSocket
    const port = Number(new URL(server.url).port);
    const stream = await connectEvents({ port }, '/events', BOB);
    expect(stream.status).toBe(200);
    const socket = await openSocket(server.url, BOB);
    socket.ws.send(JSON.stringify({ type: 'subscribe', channel: 'general', recover: true }));
    await socket.next('subscribed');
    expect((await post('before')).status).toBe(201);
    await stream.until((t) => t.includes('"before"'), 5000);
    expect(await socket.next('push')).toMatchObject({ data: { text: 'before' } });

    await redis.kill();
    // every kind of /api call, ten at once, twice (the second round after ioredis gave up once)
    for (let round = 0; round < 2; round++) {
      const answers = await Promise.all([
        timed('/api/me'),
        timed('/api/messages'),
        timed('/api/messages/some-id'),
        timed('/api/messages', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: '{"text":"while down"}',
        }),
        timed('/api/keys'),
        ...Array.from({ length: 5 }, () => timed('/api/messages')),
      ]);
      for (const { res, body, ms } of answers) {
        expect(res.status, body).toBe(503);
        expect(res.headers.get('content-type')).toBe('application/problem+json');
        expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
        expect(JSON.parse(body)).toMatchObject({ status: 503, title: expect.any(String) });
        expect(ms).toBeLessThan(FAST_MS);
      }
      await new Promise((resolve) => setTimeout(resolve, 1500));
    }
    // what needs no Redis still works: discovery, JWKS
    expect((await fetch(`${server.url}/.well-known/jwks.json`)).status).toBe(200);

    await redis.restart(); // empty, as after a failover without persistence
    await vi.waitFor(async () => expect((await timed('/api/messages')).res.status).toBe(200), {
      timeout: 15_000,
      interval: 200,
    });
    expect(server.child.exitCode).toBeNull();
    // a message is stored, served and fanned out to the clients that stayed connected ...
    const created = await post('after');
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    expect((await timed(`/api/messages/${id}`)).res.status).toBe(200);
    await stream.until((t) => t.includes('"after"'), 5000);
    expect(await socket.next('push')).toMatchObject({ data: { text: 'after' } });
    // ... and to new ones
    const fresh = await connectEvents({ port }, '/events', BOB);
    const freshSocket = await openSocket(server.url, BOB);
    freshSocket.ws.send(JSON.stringify({ type: 'subscribe', channel: 'general', recover: true }));
    await freshSocket.next('subscribed');
    expect((await post('later')).status).toBe(201);
    const [event] = parseEvents(await fresh.until((t) => t.includes('"later"'), 5000));
    expect(JSON.parse(event!.data!)).toMatchObject({ data: { text: 'later' } });
    expect(await freshSocket.next('push')).toMatchObject({ data: { text: 'later' } });
    expect(await socket.next('push')).toMatchObject({ data: { text: 'later' } });
    // nothing posted during the outage was half-created
    const list = JSON.parse((await timed('/api/messages')).body) as { text: string }[];
    expect(list.map((m) => m.text)).not.toContain('while down');
    for (const client of [stream, fresh]) client.destroy();
    for (const s of [socket, freshSocket]) s.ws.close();
  }, 30_000);
});
