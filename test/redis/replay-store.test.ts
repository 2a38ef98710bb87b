// RedisReplayStore: one-time JWT ids shared by every process (RFC 9449 §11.1, RFC 7523 §3),
// against a real redis-server: a proof accepted by one verifier is refused by another.
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDpopVerifier } from '../../src/auth/dpop/dpop.js';
import { RedisReplayStore } from '../../src/redis/replay-store.js';
import { hasRedis, type RedisServer, startRedis } from '../helpers/redis.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let counter = 0;
const prefix = () => `replay-test-${process.pid}-${++counter}:`;

describe.skipIf(!hasRedis)('RedisReplayStore (real redis-server)', () => {
  let redis: RedisServer;
  let raw: Redis;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('remembers an id once across stores, under its hash, until its time is up', async () => {
    const p = prefix();
    const one = new RedisReplayStore({ client: redis.client(), prefix: p });
    const two = new RedisReplayStore({ client: redis.client(), prefix: p });
    expect(await one.remember('client-a:jti-1', 300)).toBe(true);
    expect(await two.remember('client-a:jti-1', 300)).toBe(false);
    expect(await two.remember('client-a:jti-2', 300)).toBe(true);
    const keys = await raw.keys(`${p}*`);
    expect(keys).toHaveLength(2);
    expect(keys.join(' ')).not.toContain('jti-1');
    await sleep(400);
    expect(await one.remember('client-a:jti-1', 300)).toBe(true);
  });

  it('tells whether an id is recorded (seen) without recording it', async () => {
    const store = new RedisReplayStore({ client: redis.client(), prefix: prefix() });
    expect(await store.seen('client-a:jti-9')).toBe(false);
    expect(await store.seen('client-a:jti-9')).toBe(false);
    expect(await store.remember('client-a:jti-9', 5_000, 'client-a')).toBe(true);
    expect(await store.seen('client-a:jti-9')).toBe(true);
  });

  it('shares DPoP proofs between two verifiers: the second refuses a replay', async () => {
    const replay = new RedisReplayStore({ client: redis.client(), prefix: prefix() });
    const a = createDpopVerifier({ replay });
    const b = createDpopVerifier({ replay });
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const proof = await new SignJWT({
      jti: randomUUID(),
      htm: 'GET',
      htu: 'https://api.example.com/me',
      iat: Math.floor(Date.now() / 1000),
    })
      .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: await exportJWK(publicKey) })
      .sign(privateKey);
    const request = { method: 'GET', url: 'https://api.example.com/me' };
    await expect(a.verify(proof, request)).resolves.toMatchObject({ jti: expect.any(String) });
    await expect(b.verify(proof, request)).rejects.toMatchObject({ error: 'invalid_dpop_proof' });
  });

  it('rejects (the JWT is refused) while Redis is slow, fast', async () => {
    const store = new RedisReplayStore({
      client: redis.client(),
      prefix: prefix(),
      timeoutMs: '200ms',
    });
    await raw.client('PAUSE', 800, 'ALL');
    const started = Date.now();
    await expect(store.remember('x', 1000)).rejects.toMatchObject({
      code: 'ERR_REDIS_UNAVAILABLE',
    });
    expect(Date.now() - started).toBeLessThan(700);
    await sleep(900);
    // the refused JWT's id may have been written late: it stays burnt; new ones go through
    expect(await store.remember('y', 1000)).toBe(true);
  });

  it('refuses options it does not know and a client that is not one', () => {
    expect(() => new RedisReplayStore({ client: {} as Redis })).toThrow(
      /ioredis client .* or a node-redis v5 client/,
    );
    expect(
      () => new RedisReplayStore({ client: raw, ttl: 5 } as unknown as { client: Redis }),
    ).toThrow();
  });
});
