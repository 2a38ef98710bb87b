// The Redis stores whose every command names one key, on a real local Redis Cluster (six
// nodes, three primaries): the rate-limit counters, sessions and one-time JWT ids work
// through ioredis's Cluster client, their keys spread over every primary, and a store whose
// primary was killed answers again once the replica is promoted (refusing meanwhile with
// ERR_REDIS_UNAVAILABLE, a 503), without a new client, through ioredis and node-redis (which
// portico asks to read the topology again when a command goes unanswered).
import { createCluster } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

import { RedisRateLimitStore } from '../../src/redis/rate-limit-store.js';
import { RedisReplayStore } from '../../src/redis/replay-store.js';
import { RedisSessionStore } from '../../src/redis/session-store.js';
import { hasRedis, type RedisClusterServer, startRedisCluster } from '../helpers/redis-cluster.js';

describe.skipIf(!hasRedis)('single-key stores on a Redis Cluster (six real nodes)', () => {
  let cluster: RedisClusterServer;

  beforeAll(async () => {
    cluster = await startRedisCluster();
  }, 40_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('counts rate limits across keys spread over every primary', async () => {
    const store = new RedisRateLimitStore({ client: cluster.client(), prefix: 'rl:' });
    const keys = Array.from({ length: 30 }, (_, i) => `ip:10.0.0.${i}`);
    for (const key of keys) {
      expect((await store.increment(key, 60_000)).count).toBe(1);
      expect((await store.increment(key, 60_000)).count).toBe(2);
    }
    const primaries = new Set(await Promise.all(keys.map((k) => cluster.primaryOf(`rl:${k}`))));
    expect(primaries.size).toBe(3);
  });

  it('keeps sessions and refuses a replayed jti through the cluster client', async () => {
    const sessions = new RedisSessionStore({ client: cluster.client(), prefix: 'sess:' });
    const now = Date.now();
    const record = {
      sub: 'alice',
      scopes: ['read:messages'],
      createdAt: now,
      lastSeenAt: now,
      expiresAt: now + 60_000,
    };
    await sessions.set('h1', record, 60_000);
    await sessions.touch('h1', now + 5, 60_000);
    expect(await sessions.get('h1')).toMatchObject({ sub: 'alice', lastSeenAt: now + 5 });
    const replay = new RedisReplayStore({ client: cluster.client(), prefix: 'jti:' });
    expect(await replay.remember('client:jti-1', 60_000)).toBe(true);
    expect(await replay.remember('client:jti-1', 60_000)).toBe(false);
  });

  /** Increments until the store answers again after its key's primary died: how long that took. */
  async function answeredAfterFailover(store: RedisRateLimitStore, key: string): Promise<number> {
    expect((await store.increment(key, 60_000)).count).toBe(1);
    const promotedAt = await cluster.failover(await cluster.primaryOf(`fo:${key}`));
    while (Date.now() - promotedAt < 15_000) {
      try {
        // the count acknowledged before the failure survived (the replica had it)
        expect((await store.increment(key, 60_000)).count).toBeGreaterThanOrEqual(2);
        return Date.now() - promotedAt;
      } catch (error) {
        // while the slot has no primary: Redis unavailable (a 503), never a crash
        expect(error).toMatchObject({ code: 'ERR_REDIS_UNAVAILABLE' });
        await sleep(100);
      }
    }
    return Number.POSITIVE_INFINITY;
  }

  it('answers again after the primary of a key is killed and its replica promoted (ioredis)', async () => {
    const store = new RedisRateLimitStore({
      client: cluster.client(),
      prefix: 'fo:',
      timeoutMs: '500ms',
    });
    expect(await answeredAfterFailover(store, 'io')).toBeLessThan(15_000);
  }, 40_000);

  it('answers again after a failover through node-redis too', async () => {
    const client = createCluster({
      rootNodes: (await cluster.primaries()).map((port) => ({ url: `redis://127.0.0.1:${port}` })),
    });
    client.on('error', () => {});
    await client.connect();
    try {
      const store = new RedisRateLimitStore({ client, prefix: 'fo:', timeoutMs: '500ms' });
      // a key on a primary that still has its replica: one of the first three, not killed
      const first = cluster.ports.slice(0, 3).filter((port) => cluster.alive().includes(port));
      let key = 'nr0';
      for (let i = 1; !first.includes(await cluster.primaryOf(`fo:${key}`)); i++) key = `nr${i}`;
      expect(await answeredAfterFailover(store, key)).toBeLessThan(15_000);
    } finally {
      await client.close().catch(() => {});
    }
  }, 40_000);
});
