// RedisClientStore on a real redis-server: what it stores (the secret's hash, never the
// secret), what it refuses to store (fields that are not JSON or not of OAuthClient), stored
// data that is not a client read as absent, and Redis down answered as a 503. The contract
// it shares with MemoryClientStore runs in test/redis/contract/client.ts.
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { defineClient, type OAuthClient } from '../../src/oauth/clients/client.js';
import { clientStores } from '../../src/oauth/clients/store.js';
import { RedisClientStore } from '../../src/redis/client-store.js';
import { RedisClientStore as Exported } from '../../src/redis/index.js';
import { RedisUnavailableError } from '../../src/redis/script.js';
import { closeAll, json, request } from '../helpers/http.js';
import { hasRedis, type RedisServer, startRedis } from '../helpers/redis.js';
import { startServerOver } from '../oauth/clients/writable-store-checks.js';

const SECRET = 'stored-client-secret-42';

describe.skipIf(!hasRedis)('RedisClientStore (real redis-server)', () => {
  let redis: RedisServer;
  let raw: Redis;
  let client: OAuthClient;
  let prefixes = 0;
  const prefix = () => `cl${++prefixes}:`;
  const newStore = (p: string) => new RedisClientStore({ client: redis.client(), prefix: p });

  /** Every key and value under `p`, as one string. */
  async function dump(p: string): Promise<string> {
    const keys = (await raw.keys(`{${p}}*`)).sort();
    const values = await Promise.all(
      keys.map(async (key) => ((await raw.type(key)) === 'set' ? raw.smembers(key) : raw.get(key))),
    );
    return JSON.stringify({ keys, values });
  }

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    client = await defineClient({
      clientId: 'partner',
      secret: SECRET,
      grantTypes: ['client_credentials'],
      redirectUris: [],
      scopes: ['read:messages'],
    });
  });
  afterEach(closeAll);
  afterAll(async () => {
    await closeAll();
    await redis?.stop();
  });

  it('is exported from portico/redis', () => {
    expect(Exported).toBe(RedisClientStore);
  });

  it('stores the hash of the secret, never the secret, under keys of one hash slot', async () => {
    const p = prefix();
    await newStore(p).add(client);
    const everything = await dump(p);
    expect(JSON.parse(everything).keys).toEqual([`{${p}}id:partner`, `{${p}}ids`]);
    expect(everything).toContain(client.secretHash);
    expect(everything).not.toContain(SECRET);
    expect(JSON.parse((await raw.get(`{${p}}id:partner`))!)).toEqual({
      v: 1,
      client: { ...client },
    });
    // a prefix with a hash tag of its own is kept as it is
    await new RedisClientStore({ client: redis.client(), prefix: 'app:{clients}:' }).add(client);
    expect(await raw.exists('app:{clients}:id:partner')).toBe(1);
    // the default prefix
    const byDefault = new RedisClientStore({ client: redis.client() });
    await byDefault.add(client);
    expect(await raw.exists('{portico:client:}id:partner')).toBe(1);
    expect(await byDefault.remove('partner')).toBe(true);
  });

  it('refuses, naming it, a field that is not JSON or not of OAuthClient, and writes nothing', async () => {
    const p = prefix();
    const store = newStore(p);
    const refusals: [Record<string, unknown>, string][] = [
      [
        { ...client, check: () => true },
        'a stored client cannot hold `check` (a function, which is not JSON)',
      ],
      [
        { ...client, owner: 'alice' },
        'a stored client cannot hold `owner` (not a field of OAuthClient)',
      ],
      [
        { ...client, secret: SECRET },
        'a stored client holds the hash of its secret, never the secret: give the client defineClient() made',
      ],
      [
        { ...client, secretHash: SECRET },
        '`secretHash` must be a hash of hashPassword() (defineClient())',
      ],
      [
        { ...client, secretHash: undefined, jwksUri: new URL('https://keys.example.test/jwks') },
        '`jwksUri` must be a string (an https: URL)',
      ],
      [
        { ...client, redirectUris: [new URL('https://app.example.test/cb')] },
        '`redirectUris` must be an array of strings',
      ],
      [
        { ...client, redirectUris: ['https://app.example.test/cb#x'] },
        'not an absolute URI without fragment',
      ],
      [{ ...client, scopes: ['read messages'] }, '`read messages` is not a valid scope'],
      [{ ...client, secretHash: undefined }, 'client_credentials needs a confidential client'],
      [{ ...client, introspection: 'all' }, "`introspection` must be 'own' or 'any'"],
      [{ ...client, dpopBoundAccessTokens: 'yes' }, '`dpopBoundAccessTokens` must be a boolean'],
      [{ ...client, clientId: 'with space' }, '`clientId` must be 1–128 visible ASCII characters'],
      [
        { ...client, secretHash: undefined, jwks: { keys: [{ kty: 'oct', k: 'c2VjcmV0' }] } },
        '`jwks` keys must be RSA, EC or OKP public keys',
      ],
      [
        {
          ...client,
          secretHash: undefined,
          jwks: { keys: [{ kty: 'EC', crv: 'P-256', x: 'a', y: 'b', d: 'c' }] },
        },
        '`jwks` must hold public keys only',
      ],
    ];
    for (const [value, message] of refusals) {
      const error = await Promise.resolve()
        .then(() => store.add(value as unknown as OAuthClient))
        .then(
          () => undefined,
          (e: unknown) => e as TypeError & { code?: string },
        );
      expect(error, message).toBeInstanceOf(TypeError);
      expect(error?.code).toBe('ERR_INVALID_OPTION');
      expect(error?.message).toContain('RedisClientStore.add(): ');
      expect(error?.message).toContain(message);
    }
    await store.add(client);
    await expect(store.replace({ ...client, check: () => true } as OAuthClient)).rejects.toThrow(
      'RedisClientStore.replace(): a stored client cannot hold `check`',
    );
    expect(await store.get('partner')).toEqual(client);
    expect(await raw.scard(`{${p}}ids`)).toBe(1);
  });

  it('reads stored data that is not a client as absent, never throwing, and the server answers invalid_client', async () => {
    const p = prefix();
    const store = newStore(p);
    const key = `{${p}}id:partner`;
    const good = JSON.parse(JSON.stringify({ v: 1, client }));
    const malformed = [
      'not json',
      'null',
      '[]',
      '42',
      JSON.stringify({ client }),
      JSON.stringify({ ...good, v: 2 }),
      JSON.stringify({ v: 1, client: { ...good.client, clientId: 'someone-else' } }),
      JSON.stringify({ v: 1, client: { ...good.client, secretHash: 'clear-text-secret' } }),
      JSON.stringify({ v: 1, client: { ...good.client, scopes: 'read:messages' } }),
      JSON.stringify({ v: 1, client: { ...good.client, grantTypes: null } }),
      JSON.stringify({ v: 1, client: { ...good.client, extra: true } }),
      JSON.stringify({
        v: 1,
        client: {
          ...good.client,
          secretHash: undefined,
          jwks: { keys: [{ kty: 'oct', k: 'AAAA' }] },
        },
      }),
    ];
    const server = await startServerOver(store);
    for (const text of malformed) {
      await raw.set(key, text);
      expect(await store.get('partner'), text).toBeUndefined();
      const reply = await request(server, '/token', {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`partner:${SECRET}`).toString('base64')}`,
        },
        body: 'grant_type=client_credentials',
      });
      expect([reply.status, json(reply).error], text).toEqual([401, 'invalid_client']);
    }
    // a list where a string is kept is not a client either
    await raw.del(key);
    await raw.sadd(key, 'x');
    expect(await store.get('partner')).toBeUndefined();
    await raw.del(key);
    await raw.set(key, JSON.stringify(good));
    expect(await store.get('partner')).toEqual(client);
  });

  it('refuses bad options at construction', () => {
    const c = redis.client();
    expect(() => new RedisClientStore({} as never)).toThrow(TypeError);
    expect(() => new RedisClientStore({ client: c, maxClient: 3 } as never)).toThrow(
      'new RedisClientStore(): unknown option `maxClient`. Did you mean `maxClients`?',
    );
    expect(() => new RedisClientStore({ client: c, maxClients: 0 })).toThrow(
      'new RedisClientStore(): `maxClients` must be an integer, at least 1',
    );
    expect(() => new RedisClientStore({ client: c, timeoutMs: 0 })).toThrow(TypeError);
  });

  it('fails fast with RedisUnavailableError while Redis is down; the token endpoint answers 503 temporarily_unavailable', async () => {
    const own = await startRedis();
    const log = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const store = new RedisClientStore({ client: own.client(), timeoutMs: '300ms' });
      await store.add(client);
      const clients = clientStores([], store);
      const server = await startServerOver(clients);
      await own.kill();
      const calls: (() => Promise<unknown>)[] = [
        () => store.get('partner'),
        () => store.add({ ...client, clientId: 'other' }),
        () => store.replace(client),
        () => store.remove('partner'),
      ];
      for (const call of calls) {
        await expect(Promise.resolve().then(call)).rejects.toBeInstanceOf(RedisUnavailableError);
      }
      const reply = await request(server, '/token', {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`partner:${SECRET}`).toString('base64')}`,
        },
        body: 'grant_type=client_credentials',
      });
      expect(reply.status, reply.body).toBe(503);
      expect(json(reply).error).toBe('temporarily_unavailable');
      expect(reply.headers['retry-after']).toMatch(/^\d+$/);
      expect(reply.body).not.toMatch(/redis|ECONNREFUSED/i);
    } finally {
      log.mockRestore();
      await own.stop();
    }
  });
});
