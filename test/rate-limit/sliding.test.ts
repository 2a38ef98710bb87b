import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { Middleware } from '../../src/core/compose.js';
import { sendJson } from '../../src/core/send.js';
import { silentLogger } from '../../src/diagnostics/index.js';
import { MemoryRateLimitStore } from '../../src/rate-limit/memory-store.js';
import { rateLimit } from '../../src/rate-limit/rate-limit.js';
import { RedisRateLimitStore } from '../../src/redis/rate-limit-store.js';
import { serve } from '../helpers/http.js';
import { hasRedis, type RedisServer, startRedis } from '../helpers/redis.js';

const stores: MemoryRateLimitStore[] = [];
afterEach(() => {
  for (const store of stores.splice(0)) store.close();
});

function memory(now: () => number) {
  const store = new MemoryRateLimitStore({ now });
  stores.push(store);
  return store;
}

describe('MemoryRateLimitStore sliding windows', () => {
  it('weighs the previous window by how much of it the sliding window still covers', () => {
    const start = 1_000_000 * 60_000; // aligned on a 60 s window
    const clock = { now: start + 15_000 };
    const store = memory(() => clock.now);
    for (let i = 1; i <= 8; i++) expect(store.incrementSliding('k', 60_000).count).toBe(i);
    expect(store.incrementSliding('k', 60_000).resetAt).toBe(start + 60_000);
    // 30 s into the next window: half of the 9 weighs, floor(4.5) = 4
    clock.now = start + 90_000;
    expect(store.incrementSliding('k', 60_000)).toEqual({ count: 5, resetAt: start + 120_000 });
    expect(store.peek('k')).toEqual({ count: 5, resetAt: start + 120_000 });
    store.decrement('k');
    expect(store.peek('k')?.count).toBe(4);
    // a window later, the first weighs no more, and the second holds nothing (given back)
    clock.now = start + 150_000;
    expect(store.incrementSliding('k', 60_000).count).toBe(1);
    expect(store.peek('k')?.count).toBe(1);
    // two windows of silence: nothing weighs
    clock.now = start + 400_000;
    expect(store.peek('k')).toBeUndefined();
    expect(store.incrementSliding('k', 60_000).count).toBe(1);
  });

  it('starts the next window at the very millisecond the current one ends', () => {
    const w = 60_000;
    const start = 1_000_000 * w;
    const clock = { now: start };
    const store = memory(() => clock.now);
    for (let i = 0; i < 3; i++) store.incrementSliding('k', w);
    clock.now = start + w - 1;
    expect(store.peek('k')).toEqual({ count: 3, resetAt: start + w });
    // the window [start, start + w) is over: the 3 weigh whole in the next, which ends a window on
    clock.now = start + w;
    expect(store.peek('k')).toEqual({ count: 3, resetAt: start + 2 * w });
    expect(store.incrementSliding('k', w)).toEqual({ count: 4, resetAt: start + 2 * w });
  });

  it('gives back nothing once the window the request was counted in has ended', () => {
    const w = 60_000;
    const start = 1_000_000 * w;
    const clock = { now: start + 10_000 };
    const store = memory(() => clock.now);
    for (let i = 0; i < 4; i++) store.incrementSliding('k', w);
    // half-way through the next window: floor(4 × 0.5) of the previous weighs
    clock.now = start + w + w / 2;
    expect(store.peek('k')).toEqual({ count: 2, resetAt: start + 2 * w });
    store.decrement('k'); // the current window holds nothing to give back
    expect(store.peek('k')).toEqual({ count: 2, resetAt: start + 2 * w });
    expect(store.incrementSliding('k', w).count).toBe(3);
    store.decrement('k');
    expect(store.peek('k')?.count).toBe(2);
  });

  it('evicts beyond maxKeys the key that began counting first, however much it counts since', () => {
    const w = 60_000;
    const start = 1_000_000 * w;
    const clock = { now: start };
    const store = new MemoryRateLimitStore({ now: () => clock.now, maxKeys: 2 });
    stores.push(store);
    store.incrementSliding('a', w);
    clock.now = start + 1;
    store.incrementSliding('b', w);
    clock.now = start + 2;
    store.incrementSliding('a', w); // the same window: 'a' keeps its place, first
    clock.now = start + 3;
    store.incrementSliding('c', w);
    expect(store.size).toBe(2);
    expect(store.peek('a')).toBeUndefined();
    expect(store.peek('b')?.count).toBe(1);
    expect(store.peek('c')?.count).toBe(1);
  });

  it('gives back a fixed window’s request, never below zero', () => {
    const store = memory(() => Date.now());
    store.increment('k', 60_000);
    store.increment('k', 60_000);
    store.decrement('k');
    expect(store.peek('k')?.count).toBe(1);
    store.decrement('k');
    store.decrement('k');
    expect(store.peek('k')?.count).toBe(0);
    store.decrement('nobody');
    expect(store.peek('nobody')).toBeUndefined();
  });
});

describe.skipIf(!hasRedis)(
  'RedisRateLimitStore sliding windows and decrement (real redis-server)',
  () => {
    let redis: RedisServer | undefined;
    afterAll(async () => {
      await redis?.stop();
    });

    it('counts in sliding windows on Redis’s clock, gives back, and limits over a real server', async () => {
      redis = await startRedis();
      const store = new RedisRateLimitStore({ client: redis.client(), prefix: 'slide:' });
      const first = await store.incrementSliding('a', 60_000);
      const second = await store.incrementSliding('a', 60_000);
      expect([first.count, second.count]).toEqual([1, 2]);
      expect(first.resetAt).toBeGreaterThan(Date.now());
      expect(first.resetAt).toBeLessThanOrEqual(Date.now() + 60_000);
      await store.decrement('a');
      expect((await store.incrementSliding('a', 60_000)).count).toBe(2);
      // a fixed key is given back too, never below zero
      await store.increment('f', 60_000);
      await store.decrement('f');
      await store.decrement('f');
      expect(await store.peek('f')).toBeUndefined();
      expect((await store.increment('f', 60_000)).count).toBe(1);
      // windows of 200 ms: the previous one weighs in the next
      const w = 200;
      await new Promise((resolve) => setTimeout(resolve, w - (Date.now() % w) + 5));
      for (let i = 0; i < 6; i++) await store.incrementSliding('b', w);
      await new Promise((resolve) => setTimeout(resolve, w - (Date.now() % w) + 20));
      const next = await store.incrementSliding('b', w);
      expect(next.count).toBeGreaterThan(1); // floor(6 × ~0.9) + 1
      expect(next.count).toBeLessThanOrEqual(7);

      const ok: Middleware = (_req, res) => sendJson(res, 200, { ok: true });
      const limited = await serve(
        [rateLimit({ limit: 2, store, algorithm: 'sliding', skipFailedRequests: true }), ok],
        { logger: silentLogger },
      );
      try {
        const statuses: number[] = [];
        for (let i = 0; i < 3; i++) {
          const res = await fetch(limited.url);
          await res.arrayBuffer();
          statuses.push(res.status);
        }
        expect(statuses).toEqual([200, 200, 429]);
      } finally {
        await limited.close();
      }
    });
  },
);
