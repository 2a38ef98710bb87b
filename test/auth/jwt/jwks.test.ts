import { randomUUID } from 'node:crypto';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { authenticate } from '../../../src/auth/authenticate.ts';
import { jwtBearer } from '../../../src/auth/jwt/bearer.ts';
import { JwtError } from '../../../src/auth/jwt/error.ts';
import type { RemoteJwksOptions } from '../../../src/auth/jwt/jwks.ts';
import { createJwtVerifier } from '../../../src/auth/jwt/jwt.ts';
import { sendJson } from '../../../src/core/send.ts';
import { closeAll, request, serve } from '../../helpers/http.ts';
import {
  AUDIENCE,
  ISSUER,
  type KeyServer,
  makeKey,
  mint,
  startKeyServer,
  type TestKey,
} from './jwt-fixtures.ts';

let key: TestKey;
let next: TestKey;
let attacker: TestKey;
const servers: KeyServer[] = [];

beforeAll(async () => {
  [key, next, attacker] = await Promise.all([makeKey('k1'), makeKey('k2'), makeKey('evil')]);
});
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(servers.splice(0).map((s) => s.close()));
  await closeAll();
});

/**
 * `Date.now()` moved forward by `advance(ms)`, as the key cache's age, the cooldowns (jose's
 * and portico's) and the verified-token cache read it: their windows are passed at once,
 * without real waits, and are wide enough that the real time a loaded machine spends between
 * two steps never passes one. Token lifetimes (`exp`) are read from `new Date()`, unmoved.
 */
function movableClock() {
  const realNow = Date.now.bind(Date);
  let offset = 0;
  vi.spyOn(Date, 'now').mockImplementation(() => realNow() + offset);
  return {
    advance(ms: number) {
      offset += ms;
    },
  };
}

async function keyServer(keys = [key.jwk]) {
  const server = await startKeyServer(keys);
  servers.push(server);
  return server;
}

const remote = (jwksUrl: string, jwksOptions?: RemoteJwksOptions) =>
  createJwtVerifier({ jwksUrl, jwksOptions, issuer: ISSUER, audience: AUDIENCE });

async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    return error instanceof JwtError ? error.code : `unexpected: ${String(error)}`;
  }
}

/** Tokens signed by the attacker with random `kid`s. */
const randomKids = (n: number) =>
  Promise.all(Array.from({ length: n }, () => mint(attacker, {}, { kid: randomUUID() })));

describe('remote JWKS', () => {
  it('fetches the key set once, lazily, and keeps it', async () => {
    const server = await keyServer();
    const verifier = remote(server.jwksUrl);
    expect(server.hits).toBe(0);
    expect(await outcome(verifier.verify(await mint(key)))).toBe('ok');
    expect(await outcome(verifier.verify(await mint(key, { jti: 'other' })))).toBe('ok');
    expect(server.hits).toBe(1);
  });

  it('fetches at most once per cooldown under a flood of random kids', async () => {
    const server = await keyServer();
    const verifier = remote(server.jwksUrl);
    const flood = await randomKids(200);
    const results = await Promise.all(flood.map((t) => outcome(verifier.verify(t))));
    expect(new Set(results)).toEqual(new Set(['ERR_JWT_INVALID']));
    expect(server.hits).toBe(1);
    expect(await outcome(verifier.verify(await mint(key)))).toBe('ok');
    expect(server.hits).toBe(1);
  });

  it('refetches for an unknown kid once the cooldown has passed', async () => {
    const clock = movableClock();
    const server = await keyServer();
    const verifier = remote(server.jwksUrl, { cooldownDuration: 30_000 });
    const [rotated, flood] = await Promise.all([mint(next), randomKids(50)]);
    expect(await outcome(verifier.verify(await mint(key)))).toBe('ok');
    server.keys = [key.jwk, next.jwk];
    expect(await outcome(verifier.verify(rotated))).toBe('ERR_JWT_INVALID');
    expect(server.hits).toBe(1);
    clock.advance(20_000); // still within the cooldown
    expect(await outcome(verifier.verify(rotated))).toBe('ERR_JWT_INVALID');
    expect(server.hits).toBe(1);
    clock.advance(10_001);
    expect(await outcome(verifier.verify(rotated))).toBe('ok');
    expect(server.hits).toBe(2);
    await Promise.all(flood.map((t) => verifier.verify(t).catch(() => undefined)));
    expect(server.hits).toBe(2);
  });

  it('keeps the last good keys through an outage, and does not hammer the provider', async () => {
    const clock = movableClock();
    const server = await keyServer();
    const verifier = remote(server.jwksUrl, { cacheMaxAge: 10_000, cooldownDuration: 30_000 });
    const [a, b, c, d] = await Promise.all(['a', 'b', 'c', 'd'].map((jti) => mint(key, { jti })));
    const flood = await randomKids(30);
    expect(await outcome(verifier.verify(await mint(key)))).toBe('ok');
    server.down = true;
    clock.advance(10_001); // the keys are stale: the next verification fetches them again
    expect(await outcome(verifier.verify(a!))).toBe('ok');
    expect(server.hits).toBe(2);
    await Promise.all(flood.map((t) => verifier.verify(t).catch(() => undefined)));
    expect(await outcome(verifier.verify(b!))).toBe('ok');
    expect(server.hits).toBe(2);
    clock.advance(30_001); // past the cooldown after the failed fetch
    expect(await outcome(verifier.verify(c!))).toBe('ok');
    expect(server.hits).toBe(3);
    await server.close();
    clock.advance(30_001);
    expect(await outcome(verifier.verify(d!))).toBe('ok');
  });

  it('treats a malformed key set as an outage', async () => {
    const clock = movableClock();
    const server = await keyServer();
    const verifier = remote(server.jwksUrl, { cacheMaxAge: 10_000, cooldownDuration: 10_000 });
    expect(await outcome(verifier.verify(await mint(key)))).toBe('ok');
    server.keys = 'not keys' as never;
    clock.advance(10_001);
    expect(await outcome(verifier.verify(await mint(key, { jti: 'x' })))).toBe('ok');
    // the malformed set was fetched, and the last good keys answered
    expect(server.hits).toBe(2);
  });

  it('says the keys are unavailable when none were ever fetched, once per cooldown', async () => {
    const server = await keyServer();
    server.down = true;
    const verifier = remote(server.jwksUrl);
    const tokens = await Promise.all([1, 2, 3].map((n) => mint(key, { jti: `t${n}` })));
    for (const token of tokens) {
      expect(await outcome(verifier.verify(token))).toBe('ERR_JWT_KEYS_UNAVAILABLE');
    }
    expect(server.hits).toBe(1);
  });

  it('stops serving cached tokens of a key that left the set', async () => {
    const clock = movableClock();
    const server = await keyServer([key.jwk, next.jwk]);
    const verifier = remote(server.jwksUrl, { cacheMaxAge: 10_000 });
    const [old, fresh] = await Promise.all([mint(key), mint(next)]);
    expect(await outcome(verifier.verify(old))).toBe('ok');
    expect(await outcome(verifier.verify(fresh))).toBe('ok');
    server.keys = [next.jwk];
    // while the keys are fresh, the verified token is still served (the set is not asked)
    expect(await outcome(verifier.verify(old))).toBe('ok');
    expect(server.hits).toBe(1);
    clock.advance(10_001);
    expect(await outcome(verifier.verify(old))).toBe('ERR_JWT_INVALID');
    expect(await outcome(verifier.verify(fresh))).toBe('ok');
    expect(server.hits).toBe(2);
  });

  it('refuses bad remote options', () => {
    expect(() => remote('http://127.0.0.1:1/jwks', { cooldownDuration: -1 })).toThrow(
      /cooldownDuration/,
    );
    expect(() => remote('not a url')).toThrow(/absolute URL/);
    expect(() =>
      createJwtVerifier({
        publicKey: key.pem,
        jwksOptions: {},
        issuer: ISSUER,
        audience: AUDIENCE,
      }),
    ).toThrow(/jwksOptions/);
  });

  it('serves bearer requests from the remote set over HTTP', async () => {
    const server = await keyServer();
    const app = await serve([
      authenticate([
        jwtBearer({ jwksUrl: new URL(server.jwksUrl), issuer: ISSUER, audience: AUDIENCE }),
      ]),
      (_req, res) => sendJson(res, 200, { ok: true }),
    ]);
    const good = await request(app, '/', {
      headers: { authorization: `Bearer ${await mint(key)}` },
    });
    expect(good.status).toBe(200);
    const flood = await randomKids(40);
    const replies = await Promise.all(
      flood.map((t) => request(app, '/', { headers: { authorization: `Bearer ${t}` } })),
    );
    expect(new Set(replies.map((r) => r.status))).toEqual(new Set([401]));
    expect(server.hits).toBe(1);
  });
});
