// The Redis stores whose every command names one key, on a real local Redis Cluster (six
// nodes, three primaries): the rate-limit counters, sessions and one-time JWT ids work
// through ioredis's Cluster client, their keys spread over every primary, and a store whose
// primary was killed answers again once the replica is promoted (refusing meanwhile with
// ERR_REDIS_UNAVAILABLE, a 503), without a new client.
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

  it('answers again after the primary of a key is killed and its replica promoted', async () => {
    const store = new RedisRateLimitStore({
      client: cluster.client(),
      prefix: 'fo:',
      timeoutMs: 500,
    });
    expect((await store.increment('k', 60_000)).count).toBe(1);
    await cluster.killNode(await cluster.primaryOf('fo:k'));
    const deadline = Date.now() + 15_000;
    let answered = false;
    while (!answered && Date.now() < deadline) {
      try {
        await store.increment('k', 60_000);
        answered = true;
      } catch (error) {
        // while the slot has no primary: Redis unavailable (a 503), never a crash
        expect(error).toMatchObject({ code: 'ERR_REDIS_UNAVAILABLE' });
        await sleep(250);
      }
    }
    expect(answered).toBe(true);
  }, 30_000);
});
