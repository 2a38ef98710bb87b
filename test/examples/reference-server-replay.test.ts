// Issue 37 on the reference server, from outside, with REDIS_URL: one address floods /token
// (demo-spa's made-up codes, demo-fapi's made-up refresh tokens) and /api with refused
// requests carrying valid DPoP proofs and demo-fapi assertions; Redis keeps no id of them, and
// good proofs and assertions are accepted afterwards, each kept under its own prefix. Without
// Redis, refused grants at /token spend the address's RATE_LIMIT as any refused credential.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasRedis, type RedisServer, startRedis } from '../helpers/redis.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;
interface Key {
  privateKey: KeyPair['privateKey'];
  jwk: JWK;
}

async function newKey(kid?: string): Promise<Key> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), ...(kid && { kid, alg: 'ES256' }) };
  return { privateKey, jwk };
}

const now = () => Math.floor(Date.now() / 1000);
const madeUp = () => randomUUID().replaceAll('-', '');

/** Talks to one running reference server. */
function clientOf(server: RunningServer, fapiKey: Key) {
  const proof = (key: Key, path: string, ath?: string) =>
    new SignJWT({
      htm: ath === undefined ? 'POST' : 'GET',
      htu: `${server.url}${path}`,
      jti: randomUUID(),
      iat: now(),
      ...(ath !== undefined && { ath }),
    })
      .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: key.jwk })
      .sign(key.privateKey);
  const assertion = () =>
    new SignJWT({ jti: randomUUID() })
      .setProtectedHeader({ alg: 'ES256', kid: fapiKey.jwk.kid })
      .setIssuer('demo-fapi')
      .setSubject('demo-fapi')
      .setAudience(server.url)
      .setIssuedAt(now())
      .setExpirationTime(now() + 60)
      .sign(fapiKey.privateKey);
  const post = async (path: string, form: Record<string, string>, headers = {}) =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(form),
    });
  const madeUpCode = async (key: Key) =>
    post(
      '/token',
      {
        grant_type: 'authorization_code',
        client_id: 'demo-spa',
        code: madeUp(),
        code_verifier: `${madeUp()}${madeUp()}`,
        redirect_uri: 'http://localhost:5173/callback',
      },
      { DPoP: await proof(key, '/token') },
    );
  return { proof, assertion, post, madeUpCode };
}

/** `count` requests, 16 at a time: the statuses seen, with how many of each. */
async function flood(count: number, send: () => Promise<Response>) {
  const statuses: Record<number, number> = {};
  for (let i = 0; i < count; i += 16) {
    const replies = await Promise.all(Array.from({ length: Math.min(16, count - i) }, send));
    for (const reply of replies) {
      statuses[reply.status] = (statuses[reply.status] ?? 0) + 1;
      await reply.arrayBuffer();
    }
  }
  return statuses;
}

const athOf = async (token: string) =>
  Buffer.from(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(token))).toString(
    'base64url',
  );

let dir: string;
let fapiKey: Key;

beforeAll(async () => {
  fapiKey = await newKey('fapi-ES256');
  dir = await mkdtemp(join(tmpdir(), 'portico-replay-'));
  await writeFile(join(dir, 'jwks.json'), JSON.stringify({ keys: [fapiKey.jwk] }));
});
afterAll(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe.skipIf(!hasRedis)('reference server with REDIS_URL: a flood of refused requests', () => {
  let redis: RedisServer;
  let raw: Redis;
  let server: RunningServer;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    server = await startReferenceServer({
      REDIS_URL: redis.url,
      DEMO_FAPI_JWKS: join(dir, 'jwks.json'),
      // the flood is refused credentials from 127.0.0.1: keep the guard out of its way
      RATE_LIMIT: '100000',
    });
  }, 30_000);
  afterAll(async () => {
    await server?.stop();
    await redis?.stop();
  });

  it('keeps no id of refused requests; good proofs and assertions pass after them', async () => {
    const { proof, assertion, post, madeUpCode } = clientOf(server, fapiKey);
    const keys = await Promise.all([1, 2, 3].map(() => newKey()));
    let n = 0;
    const key = () => keys[n++ % keys.length]!;
    expect(await flood(200, () => madeUpCode(key()))).toEqual({ 400: 200 });
    const api = async () => {
      const token = `${madeUp()}.${madeUp()}.${madeUp()}`;
      return fetch(`${server.url}/api/me`, {
        headers: {
          Authorization: `DPoP ${token}`,
          DPoP: await proof(key(), '/api/me', await athOf(token)),
        },
      });
    };
    expect(await flood(200, api)).toEqual({ 401: 200 });
    const fapiGrant = async () =>
      post(
        '/token',
        {
          grant_type: 'refresh_token',
          refresh_token: madeUp(),
          client_assertion_type: ASSERTION_TYPE,
          client_assertion: await assertion(),
        },
        { DPoP: await proof(key(), '/token') },
      );
    expect(await flood(200, fapiGrant)).toEqual({ 400: 200 });
    expect(await raw.keys('portico:ref:jti:*')).toEqual([]);

    // a good proof at /token and at /api, and a good assertion
    const mine = await newKey();
    const issued = await post(
      '/token',
      { grant_type: 'client_credentials' },
      {
        Authorization: `Basic ${Buffer.from('demo-service:demo-service-secret').toString('base64')}`,
        DPoP: await proof(mine, '/token'),
      },
    );
    expect(issued.status).toBe(200);
    const { access_token: token, token_type } = (await issued.json()) as Record<string, string>;
    expect(token_type).toBe('DPoP');
    const me = await fetch(`${server.url}/api/me`, {
      headers: {
        Authorization: `DPoP ${token}`,
        DPoP: await proof(mine, '/api/me', await athOf(token!)),
      },
    });
    expect(me.status).toBe(200);
    expect(((await me.json()) as { method: string }).method).toBe('dpop');
    const introspected = await post('/introspect', {
      token: 'not-a-token',
      client_assertion_type: ASSERTION_TYPE,
      client_assertion: await assertion(),
    });
    expect([introspected.status, await introspected.json()]).toEqual([200, { active: false }]);
    // each kind under its own prefix: neither fills the other's
    expect((await raw.keys('portico:ref:jti:dpop:*')).length).toBe(2);
    expect((await raw.keys('portico:ref:jti:assertion:*')).length).toBe(1);
  });
});

describe('reference server: refused grants at /token spend RATE_LIMIT', () => {
  let server: RunningServer;

  beforeAll(async () => {
    server = await startReferenceServer({ RATE_LIMIT: '3' });
  }, 30_000);
  afterAll(async () => {
    await server?.stop();
  });

  it('answers 429 to the address once it spent them, a right secret included', async () => {
    const { madeUpCode, post } = clientOf(server, fapiKey);
    const key = await newKey();
    for (let i = 0; i < 3; i++) {
      const refused = await madeUpCode(key);
      expect([refused.status, ((await refused.json()) as { error: string }).error]).toEqual([
        400,
        'invalid_grant',
      ]);
    }
    const good = await post(
      '/token',
      { grant_type: 'client_credentials' },
      {
        Authorization: `Basic ${Buffer.from('demo-service:demo-service-secret').toString('base64')}`,
      },
    );
    expect(good.status).toBe(429);
    expect(((await good.json()) as { error: string }).error).toBe('temporarily_unavailable');
    expect(Number(good.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});
