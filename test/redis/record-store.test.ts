import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createSessions } from '../../src/auth/session/session.js';
import { silentLogger } from '../../src/diagnostics/index.js';
import { createRouter } from '../../src/http/routing/router.js';
import { defineClient } from '../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../src/oauth/clients/store.js';
import { createAuthorizationServer } from '../../src/oauth/server.js';
import {
  codes,
  deviceCodes,
  pushedRequests,
  refreshTokens,
} from '../../src/oauth/store/records.js';
import type { RecordStore } from '../../src/oauth/store/store.js';
import { hashToken } from '../../src/oauth/tokens/issue.js';
import { createKeySet } from '../../src/oauth/tokens/key-set.js';
import { RedisRecordStore } from '../../src/redis/record-store.js';
import { RedisUnavailableError } from '../../src/redis/script.js';
import { hiddenInputs, sessionCookie } from '../helpers/browser.js';
import { closeAll, json, type Listening, type Reply, request, serve } from '../helpers/http.js';
import { hasRedis, type RedisServer, startRedis } from '../helpers/redis.js';
import { code, device, refreshRecord } from '../oauth/store/store-contract.js';

// ---- the Redis store ------------------------------------------------------------------------

describe.skipIf(!hasRedis)('RedisRecordStore (real redis-server)', () => {
  let redis: RedisServer;
  let prefixes = 0;
  const prefix = () => `t${++prefixes}:`;

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterEach(closeAll);
  afterAll(async () => {
    await redis?.stop();
  });

  it('keeps JSON records under one key family each, expiring with PX', async () => {
    const client = redis.client();
    const store = new RedisRecordStore({ client });
    await codes(store).save('c1', code, 60_000);
    await refreshTokens(store).save('r1', refreshRecord(), 120_000);
    await deviceCodes(store).save('d1', device, 600_000);
    await store.revokeGrant('g1', 30_000);
    const keys = (await client.keys('portico:oauth:*')).sort();
    expect(keys).toEqual([
      'portico:oauth:code:c1',
      'portico:oauth:device.key:ABCDEFGH',
      'portico:oauth:device:d1',
      'portico:oauth:revoked:g1',
      'portico:oauth:rt:r1',
    ]);
    expect(JSON.parse((await client.get('portico:oauth:code:c1'))!)).toEqual({ record: code });
    expect(await client.get('portico:oauth:device.key:ABCDEFGH')).toBe('d1');
    expect(JSON.parse((await client.get('portico:oauth:device:d1'))!)).toEqual({
      record: device,
      lookup: 'ABCDEFGH',
    });
    const ttl = async (key: string) => client.pttl(`portico:oauth:${key}`);
    expect(await ttl('code:c1')).toBeGreaterThan(59_000);
    expect(await ttl('code:c1')).toBeLessThanOrEqual(60_000);
    expect(await ttl('rt:r1')).toBeGreaterThan(119_000);
    expect(await ttl('device:d1')).toBeGreaterThan(599_000);
    const [index, record] = [await ttl('device.key:ABCDEFGH'), await ttl('device:d1')];
    expect(Math.abs(index - record)).toBeLessThan(100);
    expect(await ttl('revoked:g1')).toBeGreaterThan(29_000);

    // consuming keeps the record and its time left
    await codes(store).consume('c1');
    const used = JSON.parse((await client.get('portico:oauth:code:c1'))!);
    expect(used).toEqual({ usedAt: expect.any(Number), record: code });
    expect(await ttl('code:c1')).toBeGreaterThan(59_000);
    await deviceCodes(store).replace('d1', { ...device, interval: 10_000 });
    expect(await ttl('device:d1')).toBeGreaterThan(599_000);
    await client.del(keys);
  });

  it('reads values it cannot make sense of as absent, never failing', async () => {
    const client = redis.client();
    const p = prefix();
    const store = new RedisRecordStore({ client, prefix: p });
    const garbage: [string, string][] = [
      ['code:text', 'not json'],
      ['code:array', '[1,2]'],
      ['code:empty', '{}'],
      ['code:partial', JSON.stringify({ record: { clientId: 'c' } })],
      ['code:bad-used', JSON.stringify({ usedAt: 'yesterday', record: code })],
      ['code:null-used', JSON.stringify({ usedAt: null, record: code })],
      ['rt:text', '{"record":'],
      ['rt:scope', JSON.stringify({ record: { ...refreshRecord(), scope: 'openid' } })],
      ['code:record-array', JSON.stringify({ record: [code] })],
      ['code:bad-lookup', JSON.stringify({ record: code, lookup: 5 })],
      ['code:bad-group', JSON.stringify({ record: code, group: ['x'] })],
      ['device:text', '\u0000\u0001'],
      ['device:bare', JSON.stringify(device)],
      ['device:status', JSON.stringify({ record: { ...device, status: 'maybe' } })],
      ['device:expiry', JSON.stringify({ record: { ...device, expiresAt: 'soon' } })],
      ['device.key:AAAAAAAA', 'text'],
      ['device.key:BBBBBBBB', 'elsewhere'],
      ['device.key:EEEEEEEE', 'status'],
      ['par:text', 'not json'],
      ['par:partial', JSON.stringify({ record: { clientId: 'c' } })],
      ['par:params', JSON.stringify({ record: { clientId: 'c', params: [['scope']] } })],
    ];
    for (const [key, value] of garbage) await client.set(p + key, value, 'PX', 60_000);
    await client.hset(`${p}code:hash`, 'a', '1');
    await client.rpush(`${p}device:list`, 'x');
    await client.sadd(`${p}device.key:CCCCCCCC`, 'x');

    const malformed = ['text', 'array', 'empty', 'partial', 'bad-used', 'null-used', 'hash'];
    for (const hash of [...malformed, 'record-array', 'bad-lookup', 'bad-group']) {
      expect(await codes(store).find(hash), hash).toBeUndefined();
      expect(await codes(store).consume(hash), hash).toBeUndefined();
    }
    for (const hash of ['text', 'scope']) {
      expect(await refreshTokens(store).find(hash)).toBeUndefined();
      expect(await refreshTokens(store).consume(hash)).toBeUndefined();
    }
    for (const hash of ['text', 'bare', 'list']) {
      expect(await deviceCodes(store).get(hash)).toBeUndefined();
      expect(await deviceCodes(store).destroy(hash)).toBe(false);
      expect(await deviceCodes(store).replace(hash, device)).toBe(false); // no record to life
      expect(await deviceCodes(store).get(hash)).toBeUndefined();
    }
    // a record of the wrong shape for its kind (another version's, another app's) reads as absent
    expect(await deviceCodes(store).get('status')).toBeUndefined();
    expect(await deviceCodes(store).find('status')).toBeUndefined();
    expect(await deviceCodes(store).consume('status')).toBeUndefined();
    for (const hash of ['text', 'partial', 'params']) {
      expect(await pushedRequests(store).get(hash), hash).toBeUndefined();
      expect(await pushedRequests(store).take(hash), hash).toBeUndefined();
    }
    await client.hset(`${p}par:hash`, 'a', '1');
    expect(await pushedRequests(store).get('hash')).toBeUndefined();
    // an expiry that is not a number: no record (and so never exchanged)
    expect(await deviceCodes(store).get('expiry')).toBeUndefined();
    // (removing it, which the grant never does without reading it first, only clears the key)
    expect(await deviceCodes(store).destroy('expiry')).toBe(true);
    expect(await client.exists(`${p}device:expiry`)).toBe(0);
    for (const userCode of ['AAAAAAAA', 'BBBBBBBB', 'CCCCCCCC', 'EEEEEEEE']) {
      expect(await deviceCodes(store).findByKey(userCode)).toBeUndefined();
    }
    // an index pointing at another authorization is no match
    await deviceCodes(store).save('x', { ...device, userCode: 'DDDDDDDD' }, 60_000);
    await client.set(`${p}device.key:ABCDEFGH`, 'x');
    expect(await deviceCodes(store).findByKey('ABCDEFGH')).toBeUndefined();
    // an index of another type does not stop the device code from being consumed
    await client.del(`${p}device.key:DDDDDDDD`);
    await client.sadd(`${p}device.key:DDDDDDDD`, 'x');
    expect(await deviceCodes(store).destroy('x')).toBe(true);
  });

  it('stores nothing for a time to live already over, and never shortens a revocation', async () => {
    const client = redis.client();
    const p = prefix();
    const store = new RedisRecordStore({ client, prefix: p });
    await codes(store).save('c', code, 60_000);
    await codes(store).save('c', code, 0);
    expect(await codes(store).consume('c')).toBeUndefined();
    await refreshTokens(store).save('r', refreshRecord(), -5);
    await deviceCodes(store).save('d', device, 0);
    await store.revokeGrant('g0', 0);
    expect(await client.keys(`${p}*`)).toEqual([]);

    await codes(store).save('frac', code, 0.4);
    expect(await client.pttl(`${p}code:frac`)).toBeLessThanOrEqual(1);
    await store.revokeGrant('g', 60_000);
    await store.revokeGrant('g', 1_000);
    expect(await client.pttl(`${p}revoked:g`)).toBeGreaterThan(59_000);
    await store.revokeGrant('g', 120_000);
    expect(await client.pttl(`${p}revoked:g`)).toBeGreaterThan(119_000);
  });

  it('fails fast with RedisUnavailableError while Redis is down, and works again after', async () => {
    const own = await startRedis();
    try {
      const store = new RedisRecordStore({ client: own.client(), timeoutMs: '300ms' });
      await codes(store).save('c', code, 60_000);
      await own.kill();
      const started = Date.now();
      const calls: (() => unknown)[] = [
        () => codes(store).save('c', code, 60_000),
        () => codes(store).find('c'),
        () => codes(store).consume('c'),
        () => refreshTokens(store).consume('r'),
        () => refreshTokens(store).find('r'),
        () => refreshTokens(store).destroy('r'),
        () => deviceCodes(store).save('d', device, 60_000),
        () => deviceCodes(store).get('d'),
        () => deviceCodes(store).findByKey('ABCDEFGH'),
        () => deviceCodes(store).replace('d', device),
        () => deviceCodes(store).destroy('d'),
        () => store.revokeGrant('g', 60_000),
        () => store.isGrantRevoked('g'),
      ];
      for (const call of calls) {
        await expect(Promise.resolve().then(call)).rejects.toBeInstanceOf(RedisUnavailableError);
      }
      expect(Date.now() - started).toBeLessThan(calls.length * 300);
      await own.restart();
      await expect
        .poll(() => store.isGrantRevoked('g').catch(() => 'down'), { timeout: 10_000 })
        .toBe(false);
      await codes(store).save('c', code, 60_000);
      expect((await codes(store).consume('c'))?.state).toBe('fresh');
    } finally {
      await own.stop();
    }
  });

  it('rejects bad options', () => {
    expect(() => new RedisRecordStore({} as never)).toThrow(TypeError);
    expect(() => new RedisRecordStore(undefined as never)).toThrow(TypeError);
    const client = redis.client();
    expect(() => new RedisRecordStore({ client, timeoutMs: 0 })).toThrow(TypeError);
    expect(() => new RedisRecordStore({ client, prefix: 1 as never })).toThrow(TypeError);
    expect(() => new RedisRecordStore({ client, prefx: 'a:' } as never)).toThrow(
      /Did you mean `prefix`/,
    );
  });

  // ---- two authorization servers on one Redis ---------------------------------------------

  describe('two authorization servers sharing one Redis', () => {
    const ISSUER = 'https://auth.example.test';
    const WEB_CB = 'https://app.example.com/cb';
    const VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
    const CHALLENGE = createHash('sha256').update(VERIFIER).digest('base64url');
    const WEB = `Basic ${Buffer.from('web:web-secret-123').toString('base64')}`;
    const FORM = 'application/x-www-form-urlencoded';

    /** Two "processes" of one service: same issuer, clients, keys and form key; own connections. */
    async function twoServers(on: RedisServer, timeoutMs = 1000) {
      const clients = new MemoryClientStore([
        await defineClient({
          clientId: 'web',
          secret: 'web-secret-123',
          grantTypes: ['authorization_code', 'refresh_token'],
          redirectUris: [WEB_CB],
          scopes: ['openid', 'profile', 'offline_access'],
        }),
        await defineClient({
          clientId: 'other',
          secret: 'other-secret-123',
          grantTypes: ['authorization_code'],
          redirectUris: [WEB_CB],
          scopes: ['openid'],
        }),
        await defineClient({
          clientId: 'tv',
          grantTypes: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
          redirectUris: [],
          scopes: ['openid', 'offline_access'],
        }),
      ]);
      const keys = await createKeySet();
      const formKey = 'one-form-key-for-every-process-of-the-service';
      const p = prefix();
      return Promise.all(
        [0, 1].map(async () => {
          const client: Redis = on.client();
          const store = new RedisRecordStore({ client, prefix: p, timeoutMs });
          const server = createAuthorizationServer({
            issuer: ISSUER,
            clients,
            keys,
            formKey,
            users: {
              verify: (username, password) =>
                username === 'alice' && password === 'alice-password'
                  ? { sub: 'alice', name: 'Alice' }
                  : undefined,
              get: (sub) => (sub === 'alice' ? { sub, name: 'Alice' } : undefined),
            },
            sessions: createSessions({ allowedOrigins: [ISSUER], cookie: { secure: false } }),
            store,
            devicePollInterval: 0, // no slow_down between the polls of the tests
          });
          const http = await serve([createRouter(server.routes)], { logger: silentLogger });
          return { http, store };
        }),
      ) as Promise<[Node, Node]>;
    }
    type Node = { http: Listening; store: RedisRecordStore };

    const post = (on: Listening, path: string, fields: [string, string][], headers = {}) =>
      request(on, path, {
        method: 'POST',
        headers: { 'Content-Type': FORM, ...headers },
        body: new URLSearchParams(fields).toString(),
      });

    /** Signs alice in at `on`: the consent page and the session cookie. */
    async function signIn(on: Listening): Promise<{ consent: Reply; cookie: string }> {
      const query = new URLSearchParams({
        response_type: 'code',
        client_id: 'web',
        redirect_uri: WEB_CB,
        scope: 'openid offline_access',
        state: 's',
        code_challenge: CHALLENGE,
        code_challenge_method: 'S256',
        // the consent page every time, remembered consent or not
        prompt: 'consent',
      });
      const page = await request(on, `/authorize?${query}`);
      expect(page.status).toBe(200);
      const consent = await post(on, '/authorize', [
        ...hiddenInputs(page.body),
        ['username', 'alice'],
        ['password', 'alice-password'],
      ]);
      expect(consent.status).toBe(200);
      return { consent, cookie: sessionCookie(consent.headers)! };
    }

    const approve = (on: Listening, { consent, cookie }: { consent: Reply; cookie: string }) =>
      post(on, '/authorize', [...hiddenInputs(consent.body), ['decision', 'approve']], {
        Cookie: cookie,
      });

    /** Signs alice in at `on` and approves: the authorization code. */
    async function authorize(on: Listening): Promise<string> {
      const done = await approve(on, await signIn(on));
      expect(done.status).toBe(303);
      return new URL(done.headers.location!).searchParams.get('code')!;
    }

    const redeem = (on: Listening, authCode: string) =>
      post(
        on,
        '/token',
        [
          ['grant_type', 'authorization_code'],
          ['code', authCode],
          ['redirect_uri', WEB_CB],
          ['code_verifier', VERIFIER],
        ],
        { Authorization: WEB },
      );
    const refresh = (on: Listening, token: string, client: 'web' | 'tv' = 'web') =>
      post(
        on,
        '/token',
        [
          ['grant_type', 'refresh_token'],
          ['refresh_token', token],
          ...(client === 'tv' ? [['client_id', 'tv'] as [string, string]] : []),
        ],
        client === 'web' ? { Authorization: WEB } : {},
      );
    const tokens = (reply: Reply) => {
      expect(reply.status, reply.body).toBe(200);
      return json<{ access_token: string; refresh_token: string; id_token: string }>(reply);
    };
    const grantOf = async (store: RecordStore, refreshToken: string) =>
      (await refreshTokens(store).find(hashToken(refreshToken)))!.record.grantId;

    it('redeems at B a code issued at A; a replay at A revokes the grant', async () => {
      const [a, b] = await twoServers(redis);
      const authCode = await authorize(a.http);
      const issued = tokens(await redeem(b.http, authCode));
      expect(issued.id_token).toBeDefined();
      const grantId = await grantOf(a.store, issued.refresh_token);

      const replay = await redeem(a.http, authCode);
      expect([replay.status, json(replay).error]).toEqual([400, 'invalid_grant']);
      expect(await b.store.isGrantRevoked(grantId)).toBe(true);
      expect(json(await refresh(b.http, issued.refresh_token)).error).toBe('invalid_grant');
    });

    it('keeps a request_uri pushed at A that another client presents at B for its own client', async () => {
      const [a, b] = await twoServers(redis);
      const pushed = await post(
        a.http,
        '/par',
        [
          ['response_type', 'code'],
          ['redirect_uri', WEB_CB],
          ['scope', 'openid'],
          ['state', 's'],
          ['code_challenge', CHALLENGE],
          ['code_challenge_method', 'S256'],
          ['prompt', 'consent'],
        ],
        { Authorization: WEB },
      );
      expect(pushed.status, pushed.body).toBe(201);
      const uri = encodeURIComponent(json<{ request_uri: string }>(pushed).request_uri);
      const stolen = await request(b.http, `/authorize?client_id=other&request_uri=${uri}`);
      expect([stolen.status, stolen.headers.location]).toEqual([400, undefined]);
      expect(stolen.body).toContain('pushed by another application');
      // its own client takes it at A: sign-in, consent, a code redeemed at B
      const own = `/authorize?client_id=web&request_uri=${uri}`;
      const page = await request(a.http, own);
      expect(page.status).toBe(200);
      const consent = await post(a.http, '/authorize', [
        ...hiddenInputs(page.body),
        ['username', 'alice'],
        ['password', 'alice-password'],
      ]);
      expect(consent.status, consent.body).toBe(200);
      const done = await approve(a.http, { consent, cookie: sessionCookie(consent.headers)! });
      expect(done.status).toBe(303);
      const authCode = new URL(done.headers.location!).searchParams.get('code')!;
      tokens(await redeem(b.http, authCode));
      // taken once
      expect((await request(b.http, own)).status).toBe(400);
    });

    it('rotates at B a refresh token issued at A; reuse at A revokes the family', async () => {
      const [a, b] = await twoServers(redis);
      const first = tokens(await redeem(a.http, await authorize(a.http)));
      const second = tokens(await refresh(b.http, first.refresh_token));
      expect(second.refresh_token).not.toBe(first.refresh_token);
      const third = tokens(await refresh(a.http, second.refresh_token));

      const reuse = await refresh(a.http, first.refresh_token);
      expect([reuse.status, json(reuse).error]).toEqual([400, 'invalid_grant']);
      expect(await b.store.isGrantRevoked(await grantOf(b.store, first.refresh_token))).toBe(true);
      // the legitimate successor fails too, at either server, and its access token is inactive
      expect(json(await refresh(b.http, third.refresh_token)).error).toBe('invalid_grant');
      const introspection = await post(b.http, '/introspect', [['token', third.access_token]], {
        Authorization: WEB,
      });
      expect(json(introspection)).toEqual({ active: false });
    });

    it('lets one of 20 simultaneous refreshes across both servers through, and revokes', async () => {
      const [a, b] = await twoServers(redis);
      const first = tokens(await redeem(a.http, await authorize(a.http)));
      const replies = await Promise.all(
        Array.from({ length: 20 }, (_, i) => refresh((i % 2 ? a : b).http, first.refresh_token)),
      );
      expect(replies.filter((r) => r.status === 200).length).toBeLessThanOrEqual(1);
      expect(replies.every((r) => r.status === 200 || json(r).error === 'invalid_grant')).toBe(
        true,
      );
      expect(await a.store.isGrantRevoked(await grantOf(a.store, first.refresh_token))).toBe(true);
    });

    it('runs the device flow across both: started at A, approved at A, polled at B', async () => {
      const [a, b] = await twoServers(redis);
      const started = json<{ device_code: string; user_code: string }>(
        await post(a.http, '/device', [
          ['client_id', 'tv'],
          ['scope', 'openid offline_access'],
        ]),
      );
      const poll = (on: Listening) =>
        post(on, '/token', [
          ['grant_type', 'urn:ietf:params:oauth:grant-type:device_code'],
          ['device_code', started.device_code],
          ['client_id', 'tv'],
        ]);
      expect(json(await poll(b.http)).error).toBe('authorization_pending');

      const first = await request(a.http, `/device/verify?user_code=${started.user_code}`);
      const page = await post(a.http, '/device/verify', [
        ...hiddenInputs(first.body),
        ['username', 'alice'],
        ['password', 'alice-password'],
      ]);
      expect(page.body).toContain('name="decision" value="approve"');
      const done = await post(
        a.http,
        '/device/verify',
        [...hiddenInputs(page.body), ['user_code', started.user_code], ['decision', 'approve']],
        { Cookie: sessionCookie(page.headers)! },
      );
      expect(done.status).toBe(200);

      const issued = tokens(await poll(b.http));
      expect(issued.refresh_token).toBeDefined();
      expect(json(await poll(a.http)).error).toBe('invalid_grant');
      tokens(await refresh(a.http, issued.refresh_token, 'tv'));
    });

    /** A 503 problem with Retry-After that says nothing of Redis. */
    const expectUnavailable = (reply: Reply) => {
      expect(reply.status, reply.body).toBe(503);
      expect(reply.headers['content-type']).toBe('application/problem+json');
      expect(reply.headers['retry-after']).toMatch(/^\d+$/);
      expect(reply.body).not.toMatch(/redis|ECONNREFUSED/i);
    };

    /**
     * The same 503 from an OAuth endpoint (token, revocation, introspection), in the RFC 6749
     * §5.2 format its clients read: `temporarily_unavailable`, Retry-After, no-store.
     */
    const expectOAuthUnavailable = (reply: Reply) => {
      expect(reply.status, reply.body).toBe(503);
      expect(reply.headers['content-type']).toBe('application/json');
      expect(reply.headers['cache-control']).toBe('no-store');
      expect(reply.headers['retry-after']).toMatch(/^\d+$/);
      expect(json(reply).error).toBe('temporarily_unavailable');
      expect(reply.body).not.toMatch(/redis|ECONNREFUSED/i);
    };

    it('answers 503 problems while Redis is down, without hanging, and works again once it is back', async () => {
      const own = await startRedis();
      const log = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
      try {
        const [a, b] = await twoServers(own, 300);
        const issued = tokens(await redeem(a.http, await authorize(a.http)));
        const authCode = await authorize(a.http);
        const signedIn = await signIn(a.http);
        await own.kill();
        const started = Date.now();
        expectUnavailable(await approve(a.http, signedIn));
        expectOAuthUnavailable(
          await post(b.http, '/revoke', [['token', issued.refresh_token]], { Authorization: WEB }),
        );
        expectOAuthUnavailable(
          await post(a.http, '/introspect', [['token', issued.refresh_token]], {
            Authorization: WEB,
          }),
        );
        expectOAuthUnavailable(await redeem(b.http, authCode));
        expectOAuthUnavailable(await refresh(a.http, issued.refresh_token));
        expect(Date.now() - started).toBeLessThan(2_000);

        await own.restart(); // empty: what was stored is gone, and a new sign-in works
        await expect
          .poll(() => a.store.isGrantRevoked('g').catch(() => 'down'), { timeout: 10_000 })
          .toBe(false);
        const again = tokens(await redeem(b.http, await authorize(a.http)));
        tokens(await refresh(a.http, again.refresh_token));
      } finally {
        log.mockRestore();
        await own.stop();
      }
    });

    // The token endpoint answers the store's RedisUnavailableError in the OAuth error format.
    it('answers a token request with a 503 temporarily_unavailable while Redis is down', async () => {
      const own = await startRedis();
      const log = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
      try {
        const [a, b] = await twoServers(own, 300);
        const authCode = await authorize(a.http);
        await own.kill();
        expectOAuthUnavailable(await redeem(b.http, authCode));
      } finally {
        log.mockRestore();
        await own.stop();
      }
    });
  });
});
