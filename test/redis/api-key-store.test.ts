import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-key/api-key.js';
import { apiKeyAuth } from '../../src/auth/api-key/authenticator.js';
import { type ApiKeyRecord, createApiKey, importApiKey } from '../../src/auth/api-key/store.js';
import { authenticate } from '../../src/auth/authenticate.js';
import type { Middleware } from '../../src/core/compose.js';
import { HttpError } from '../../src/core/errors/errors.js';
import { getPrincipal } from '../../src/core/principal.js';
import { sendJson } from '../../src/core/send.js';
import { silentLogger } from '../../src/diagnostics/index.js';
import { RedisApiKeyStore } from '../../src/redis/api-key-store.js';
import { RedisUnavailableError } from '../../src/redis/script.js';
import { closeAll, json, request, serve } from '../helpers/http.js';
import { hasRedis, type RedisServer, startRedis } from '../helpers/redis.js';

const echo: Middleware = (req, res) => sendJson(res, 200, getPrincipal(req) ?? null);

function record(id: string, overrides: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  return {
    id,
    hash: hashApiKey(`secret-of-${id}`),
    owner: 'alice',
    createdAt: new Date().toISOString(),
    ...overrides,
  };
}

describe.skipIf(!hasRedis)('RedisApiKeyStore (real redis-server)', () => {
  let redis: RedisServer;
  let raw: Redis;
  let prefixes = 0;
  const prefix = () => `k${++prefixes}:`;
  const newStore = (p: string, timeoutMs?: number) =>
    new RedisApiKeyStore({ client: redis.client(), prefix: p, timeoutMs });

  /** Every key and value under `p`, as one string. */
  async function dump(p: string): Promise<string> {
    const keys = (await raw.keys(`{${p}}*`)).sort();
    const values = await Promise.all(
      keys.map(async (key) => {
        const type = await raw.type(key);
        if (type === 'string') return raw.get(key);
        if (type === 'zset') return raw.zrange(key, 0, -1);
        return type;
      }),
    );
    return JSON.stringify({ keys, values });
  }

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
  });
  afterEach(closeAll);
  afterAll(async () => {
    await closeAll();
    await redis?.stop();
  });

  it('stores the hash and never the key, and answers frozen records', async () => {
    const p = prefix();
    const store = newStore(p);
    const { key, record: created } = await createApiKey(store, {
      owner: 'alice',
      name: 'CI',
      scopes: ['read:messages'],
    });
    const found = await store.findByHash(hashApiKey(key));
    expect(found).toEqual(created);
    expect(await store.get(created.id)).toEqual(created);
    expect(await store.list()).toEqual([created]);
    for (const r of [found, await store.get(created.id), (await store.list())[0]]) {
      expect(Object.isFrozen(r)).toBe(true);
      expect(Object.isFrozen(r?.scopes)).toBe(true);
    }
    const everything = await dump(p);
    expect(everything).toContain(created.hash);
    expect(everything).not.toContain(key);
    expect(everything).not.toContain(key.slice(4, 36));
    expect((await raw.keys(`{${p}}*`)).sort()).toEqual(
      [
        `{${p}}hash:${created.hash}`,
        `{${p}}id:${created.id}`,
        `{${p}}ids`,
        `{${p}}owner:alice`,
        `{${p}}seq`,
      ].sort(),
    );
    expect(await store.findByHash(hashApiKey('another key'))).toBeUndefined();
    expect(await store.get('key_unknown')).toBeUndefined();
  });

  it('keeps only the fields of a record, copied when saved', async () => {
    const store = newStore(prefix());
    const scopes = ['read:messages'];
    const saved = { ...record('key_1', { scopes }), key: 'must not be kept' } as ApiKeyRecord;
    await store.save(saved);
    scopes.push('write:messages');
    expect((await store.get('key_1'))?.scopes).toEqual(['read:messages']);
    expect(JSON.stringify(await store.list())).not.toContain('must not be kept');
    expect(await store.get('key_1')).not.toHaveProperty('key');
    await expect(store.save({ id: 'key_2' } as ApiKeyRecord)).rejects.toThrow(TypeError);
    await expect(store.save(record('key_3', { scopes: 'read' as never }))).rejects.toThrow(
      TypeError,
    );
    await expect(store.save(null as never)).rejects.toThrow(TypeError);
    expect(await store.list()).toHaveLength(1);
  });

  it('lists by owner, oldest first, deletes by id, and refuses a second record for the same key', async () => {
    const store = newStore(prefix());
    const a = await createApiKey(store, { owner: 'alice' });
    const b = await createApiKey(store, { owner: 'bob' });
    const c = await createApiKey(store, { owner: 'alice', name: 'second' });
    expect((await store.list('alice')).map((r) => r.id)).toEqual([a.record.id, c.record.id]);
    expect((await store.list('bob')).map((r) => r.id)).toEqual([b.record.id]);
    expect((await store.list()).map((r) => r.id)).toEqual([a.record.id, b.record.id, c.record.id]);
    expect(await store.list('nobody')).toEqual([]);

    const error = await store.save({ ...a.record, id: 'key_other' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HttpError);
    expect(error).toMatchObject({ status: 409, code: 'ERR_API_KEY_EXISTS' });
    expect(await store.get('key_other')).toBeUndefined();
    expect((await store.findByHash(a.record.hash))?.id).toBe(a.record.id);

    expect(await store.delete(a.record.id)).toBe(true);
    expect(await store.delete(a.record.id)).toBe(false);
    expect(await store.findByHash(a.record.hash)).toBeUndefined();
    expect(await store.get(a.record.id)).toBeUndefined();
    expect((await store.list()).map((r) => r.id)).toEqual([b.record.id, c.record.id]);
    expect((await store.list('alice')).map((r) => r.id)).toEqual([c.record.id]);
    // once deleted, its key may be saved again under another id
    await store.save({ ...a.record, id: 'key_other' });
    expect((await store.findByHash(a.record.hash))?.id).toBe('key_other');
  });

  it('replaces a record with the same id: new hash, new owner, same place in the lists', async () => {
    const p = prefix();
    const store = newStore(p);
    await store.save(record('key_a'));
    await store.save(record('key_b'));
    const moved = record('key_a', { hash: hashApiKey('rotated'), owner: 'bob', name: 'renamed' });
    await store.save(moved);
    expect(await store.get('key_a')).toEqual(moved);
    expect(await store.findByHash(hashApiKey('rotated'))).toEqual(moved);
    expect(await store.findByHash(hashApiKey('secret-of-key_a'))).toBeUndefined();
    expect(await raw.exists(`{${p}}hash:${hashApiKey('secret-of-key_a')}`)).toBe(0);
    expect((await store.list()).map((r) => r.id)).toEqual(['key_a', 'key_b']);
    expect((await store.list('alice')).map((r) => r.id)).toEqual(['key_b']);
    expect(await store.list('bob')).toEqual([moved]);
    // the same record saved again changes nothing
    await store.save(moved);
    expect((await store.list()).map((r) => r.id)).toEqual(['key_a', 'key_b']);
    // the old hash is free for another record
    await store.save(record('key_c'));
    await store.save(record('key_d', { hash: hashApiKey('secret-of-key_a') }));
    expect((await store.findByHash(hashApiKey('secret-of-key_a')))?.id).toBe('key_d');
  });

  it('lets exactly one of many simultaneous saves of one key through, from two processes', async () => {
    const p = prefix();
    const stores = [newStore(p), newStore(p)];
    const hash = hashApiKey('contested');
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => stores[i % 2]!.save(record(`key_${i}`, { hash }))),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const refused = results.filter((r) => r.status === 'rejected');
    expect(refused).toHaveLength(19);
    for (const r of refused) expect(r.reason).toMatchObject({ status: 409 });
    expect(await stores[0]!.list()).toHaveLength(1);
    expect((await stores[1]!.findByHash(hash))?.id).toBe((await stores[0]!.list())[0]!.id);
  });

  it('shares records between two stores on two connections (two processes)', async () => {
    const p = prefix();
    const [a, b] = [newStore(p), newStore(p)];
    const { key, record: created } = await createApiKey(a, {
      owner: 'alice',
      scopes: ['read:messages'],
    });
    expect(await b.findByHash(hashApiKey(key))).toEqual(created);
    expect(await b.list('alice')).toEqual([created]);
    expect(await b.delete(created.id)).toBe(true);
    expect(await a.findByHash(hashApiKey(key))).toBeUndefined();
    expect(await a.list()).toEqual([]);
    expect(await importApiKey(a, 'demo-key-0123456789', { owner: 'alice' })).toMatchObject({
      hash: hashApiKey('demo-key-0123456789'),
    });
    await expect(importApiKey(b, 'demo-key-0123456789', { owner: 'bob' })).rejects.toThrow(
      /already exists/,
    );
    expect(await dump(p)).not.toContain('demo-key');
  });

  it('reads a value that is not a record as absent, never crashing', async () => {
    const p = prefix();
    const store = newStore(p);
    const good = record('key_good');
    await store.save(good);
    const bad = [
      'not json',
      'null',
      '[]',
      '{}',
      JSON.stringify(good), // a record, but not the one of this id
      JSON.stringify({ ...record('key_bad'), hash: 5 }),
      JSON.stringify({ ...record('key_bad'), scopes: [1] }),
      JSON.stringify({ ...record('key_bad'), name: {} }),
    ];
    for (const text of bad) {
      await raw.set(`{${p}}id:key_bad`, text);
      await raw.set(`{${p}}hash:bad-hash`, 'key_bad');
      await raw.zadd(`{${p}}ids`, 99, 'key_bad');
      expect(await store.get('key_bad')).toBeUndefined();
      expect(await store.findByHash('bad-hash')).toBeUndefined();
      expect(await store.list()).toEqual([good]);
      expect(await store.delete('key_bad')).toBe(true);
    }
    // deleting a record that held another's hash left that one's index alone
    expect(await store.findByHash(good.hash)).toEqual(good);
    // an index entry pointing to a record with another hash finds nothing
    await raw.set(`{${p}}hash:stale`, 'key_good');
    expect(await store.findByHash('stale')).toBeUndefined();
    // an id in a list whose record is gone is skipped
    await raw.zadd(`{${p}}owner:alice`, 100, 'key_gone');
    expect(await store.list('alice')).toEqual([good]);
  });

  it('authenticates through apiKeyAuth, and a deletion on one process revokes the key on the other', async () => {
    const p = prefix();
    const [a, b] = [newStore(p), newStore(p)];
    const { key, record: created } = await createApiKey(a, {
      owner: 'alice',
      scopes: ['read:messages'],
    });
    const server = await serve([authenticate([apiKeyAuth({ store: b })]), echo]);
    const reply = await request(server, '/', { headers: { 'X-API-Key': key } });
    expect(reply.status).toBe(200);
    expect(json(reply)).toEqual({
      sub: 'alice',
      scopes: ['read:messages'],
      method: 'api_key',
      keyId: created.id,
      credentialIds: [`api_key:${created.id}`],
    });
    const unknown = await request(server, '/', { headers: { 'X-API-Key': 'demo-unknown-key' } });
    expect(unknown.status).toBe(401);
    expect(json(unknown).type).toBe('urn:portico:problem:invalid-credentials');

    expect(await a.delete(created.id)).toBe(true);
    const revoked = await request(server, '/', { headers: { 'X-API-Key': key } });
    expect(revoked.status).toBe(401);
    expect(revoked.body).not.toContain(key);
  });

  it('fails fast with RedisUnavailableError while Redis is slow', async () => {
    const store = newStore(prefix(), 200);
    await store.save(record('key_1'));
    await raw.client('PAUSE', 1000, 'ALL');
    const started = Date.now();
    await expect(store.findByHash(record('key_1').hash)).rejects.toMatchObject({
      code: 'ERR_REDIS_UNAVAILABLE',
    });
    expect(Date.now() - started).toBeLessThan(800);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(await store.get('key_1')).toBeDefined();
  });

  it('answers 503 with Retry-After while Redis is down, and works again once it is back', async () => {
    const p = prefix();
    const store = newStore(p, 300);
    const { key } = await createApiKey(store, { owner: 'alice' });
    const server = await serve([authenticate([apiKeyAuth({ store })]), echo], {
      logger: silentLogger,
    });
    expect((await request(server, '/', { headers: { 'X-API-Key': key } })).status).toBe(200);

    await redis.kill();
    for (const call of [
      () => store.findByHash(hashApiKey(key)),
      () => store.save(record('key_x')),
      () => store.delete('key_x'),
      () => store.get('key_x'),
      () => store.list(),
      () => store.list('alice'),
    ]) {
      const started = Date.now();
      const error = await call().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RedisUnavailableError);
      expect(Date.now() - started).toBeLessThan(600);
    }
    await expect(createApiKey(store, { owner: 'alice' })).rejects.toBeInstanceOf(
      RedisUnavailableError,
    );
    const started = Date.now();
    const down = await request(server, '/', { headers: { 'X-API-Key': key } });
    expect(Date.now() - started).toBeLessThan(1500);
    expect(down.status).toBe(503);
    expect(down.headers['retry-after']).toMatch(/^\d+$/);
    expect(down.headers['content-type']).toBe('application/problem+json');
    expect(json(down)).toMatchObject({ status: 503 });
    expect(down.body).not.toMatch(/redis|ECONNREFUSED/i);
    expect(down.body).not.toContain(key);

    await redis.restart(); // empty: keys from before are unknown now
    await expect
      .poll(async () => (await request(server, '/', { headers: { 'X-API-Key': key } })).status, {
        timeout: 10_000,
        interval: 100,
      })
      .toBe(401);
    const fresh = await createApiKey(store, { owner: 'alice' });
    expect((await request(server, '/', { headers: { 'X-API-Key': fresh.key } })).status).toBe(200);
  });

  it('rejects bad options', () => {
    expect(() => new RedisApiKeyStore({} as never)).toThrow(TypeError);
    expect(() => new RedisApiKeyStore(undefined as never)).toThrow(TypeError);
    expect(() => new RedisApiKeyStore({ client: raw, timeoutMs: -1 })).toThrow(TypeError);
    expect(() => new RedisApiKeyStore({ client: raw, prefix: null as never })).toThrow(TypeError);
    expect(() => new RedisApiKeyStore({ client: raw, prefx: 'a:' } as never)).toThrow(
      /Did you mean `prefix`/,
    );
  });
});
