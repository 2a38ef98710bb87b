import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rateLimit } from '../../src/rate-limit/rate-limit.js';
import { RedisRateLimitStore } from '../../src/redis/rate-limit-store.js';
import { RedisUnavailableError } from '../../src/redis/script.js';
import { closeAll, request, serve } from '../helpers/http.js';
import { hasRedis, type RedisServer, startRedis } from '../helpers/redis.js';

describe.skipIf(!hasRedis)('RedisRateLimitStore (real redis-server)', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await closeAll();
    await redis?.stop();
  });

  it('counts per key in fixed windows, with the time left', async () => {
    const store = new RedisRateLimitStore({ client: redis.client(), prefix: 't1:' });
    const before = Date.now();
    const first = await store.increment('alice', 60_000);
    const second = await store.increment('alice', 60_000);
    const other = await store.increment('bob', 60_000);
    expect([first.count, second.count, other.count]).toEqual([1, 2, 1]);
    expect(first.resetAt).toBeGreaterThanOrEqual(before + 59_000);
    expect(first.resetAt).toBeLessThanOrEqual(Date.now() + 60_000);
    expect(await store.peek('alice')).toEqual({ count: 2, resetAt: expect.any(Number) });
    expect(await store.peek('nobody')).toBeUndefined();
    await store.reset('alice');
    expect((await store.increment('alice', 60_000)).count).toBe(1);
    const short = await store.increment('short', 50);
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect((await store.increment('short', 50)).count).toBe(short.count);
  });

  it('lets exactly `limit` of many simultaneous requests through two "processes"', async () => {
    // two stores on two connections: what two processes sharing one Redis see
    const stores = [
      new RedisRateLimitStore({ client: redis.client(), prefix: 't2:' }),
      new RedisRateLimitStore({ client: redis.client(), prefix: 't2:' }),
    ];
    const apps = await Promise.all(
      stores.map((store) =>
        serve([
          rateLimit({ limit: 10, windowMs: 60_000, store, key: () => 'shared' }),
          (_req, res) => void res.end('ok'),
        ]),
      ),
    );
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) => request(apps[i % 2]!, '/')),
    );
    const statuses = replies.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(10);
  });

  it('answers 503 with Retry-After while Redis is down (or lets through, failing open), and recovers', async () => {
    const client = redis.client();
    const store = new RedisRateLimitStore({ client, prefix: 't3:', timeoutMs: '300ms' });
    const closed = await serve([
      rateLimit({ limit: 100, windowMs: 60_000, store }),
      (_req, res) => void res.end('ok'),
    ]);
    const open = await serve([
      rateLimit({ limit: 100, windowMs: 60_000, store, failOpen: true }),
      (_req, res) => void res.end('ok'),
    ]);
    expect((await request(closed, '/')).status).toBe(200);

    await redis.kill();
    const down = await request(closed, '/');
    expect(down.status).toBe(503);
    expect(down.headers['retry-after']).toMatch(/^\d+$/);
    expect(down.headers['content-type']).toBe('application/problem+json');
    expect(down.body).not.toMatch(/redis|ECONNREFUSED/i);
    expect((await request(open, '/')).status).toBe(200);
    await expect(store.increment('x', 1000)).rejects.toBeInstanceOf(RedisUnavailableError);

    await redis.restart();
    await expect
      .poll(async () => (await request(closed, '/')).status, { timeout: 10_000, interval: 100 })
      .toBe(200);
  });

  it('gives a request back only in its current sliding window, as the memory store does', async () => {
    const client = redis.client();
    const store = new RedisRateLimitStore({ client, prefix: 't3:' });
    // the windows align on Redis's clock: start just after one begins, so that the increment
    // and the decrement below fall in the same window (across its end, nothing is given back)
    const probe = await store.incrementSliding('probe', 400);
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, probe.resetAt - Date.now()) + 20),
    );
    await store.incrementSliding('now', 400);
    await store.decrement('now');
    expect(await client.hget('t3:now', 'c')).toBe('0');
    const first = await store.incrementSliding('old', 400);
    await store.incrementSliding('old', 400);
    // past the window's end (Redis's clock aligns the windows): nothing is given back, so the
    // two requests keep weighing on the next window
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, first.resetAt - Date.now()) + 50),
    );
    await store.decrement('old');
    expect(await client.hmget('t3:old', 'c', 'p')).toEqual(['2', '0']);
  });

  it('rejects bad options', () => {
    expect(() => new RedisRateLimitStore({} as never)).toThrow(TypeError);
    expect(() => new RedisRateLimitStore({ client: redis.client(), timeoutMs: 0 })).toThrow(
      TypeError,
    );
  });
});
