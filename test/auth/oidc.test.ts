import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JwtError } from '../../src/auth/jwt/error.ts';
import { createIdTokenVerifier, type IdTokenVerifierOptions } from '../../src/auth/oidc.ts';
import {
  type KeyServer,
  makeKey,
  mint,
  now,
  startKeyServer,
  type TestKey,
} from './jwt/jwt-fixtures.ts';

const CLIENT = 'client-123';
let key: TestKey;
let provider: KeyServer;

beforeAll(async () => {
  key = await makeKey('k1');
  provider = await startKeyServer([key.jwk]);
});
afterAll(() => provider.close());

/** An ID token from `provider` for CLIENT. */
const idToken = (claims: Record<string, unknown> = {}, signer: TestKey = key) =>
  mint(signer, { iss: provider.url, aud: CLIENT, sub: 'user-1', ...claims }, { typ: 'JWT' });

const verifier = (options: Partial<IdTokenVerifierOptions> = {}) =>
  createIdTokenVerifier({ issuer: provider.url, clientId: CLIENT, ...options });

async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    return error instanceof JwtError ? error.code : `unexpected: ${String(error)}`;
  }
}

describe('createIdTokenVerifier', () => {
  it('finds the keys through discovery, once, and returns typed claims', async () => {
    const before = provider.discoveryHits;
    const v = verifier();
    expect(provider.discoveryHits).toBe(before);
    const claims = await v.verify(
      await idToken({
        email: 'ada@example.test',
        email_verified: true,
        name: 'Ada',
        picture: 'https://example.test/ada.png',
      }),
    );
    expect(claims).toMatchObject({
      iss: provider.url,
      sub: 'user-1',
      aud: CLIENT,
      email: 'ada@example.test',
      email_verified: true,
      name: 'Ada',
      picture: 'https://example.test/ada.png',
    });
    expect(typeof claims.exp).toBe('number');
    await v.verify(await idToken());
    expect(provider.discoveryHits).toBe(before + 1);
  });

  it('tolerates odd claim types without trusting them', async () => {
    const claims = await verifier().verify(
      await idToken({ email_verified: 'true', email: 42, amr: 'pwd', name: ['x'] }),
    );
    expect(claims.email_verified).toBe(true);
    expect(claims.email).toBeUndefined();
    expect(claims.amr).toBeUndefined();
    expect(claims.name).toBeUndefined();
  });

  it('refuses a discovery document naming another issuer', async () => {
    const liar = await startKeyServer([key.jwk], 'https://evil.test');
    try {
      const v = createIdTokenVerifier({ issuer: liar.url, clientId: CLIENT });
      const token = await mint(key, { iss: liar.url, aud: CLIENT });
      expect(await outcome(v.verify(token))).toBe('ERR_JWT_KEYS_UNAVAILABLE');
      expect(liar.hits).toBe(0);
    } finally {
      await liar.close();
    }
  });

  it('takes the keys given instead of discovering them', async () => {
    const before = provider.discoveryHits;
    expect(await outcome(verifier({ jwks: { keys: [key.jwk] } }).verify(await idToken()))).toBe(
      'ok',
    );
    expect(await outcome(verifier({ jwksUrl: provider.jwksUrl }).verify(await idToken()))).toBe(
      'ok',
    );
    expect(provider.discoveryHits).toBe(before);
  });

  it('checks iss, aud, exp, iat, sub and the signature', async () => {
    const v = verifier();
    const other = await makeKey('k1');
    const t = now();
    for (const [claims, code] of [
      [{ iss: 'https://evil.test' }, 'ERR_JWT_INVALID'],
      [{ aud: 'another-client' }, 'ERR_JWT_INVALID'],
      [{ exp: t - 60 }, 'ERR_JWT_EXPIRED'],
      [{ exp: undefined }, 'ERR_JWT_INVALID'],
      [{ iat: undefined }, 'ERR_JWT_INVALID'],
      [{ iat: t + 600 }, 'ERR_JWT_INVALID'],
      [{ sub: undefined }, 'ERR_JWT_INVALID'],
    ] as const) {
      expect(await outcome(v.verify(await idToken(claims)))).toBe(code);
    }
    expect(await outcome(v.verify(await idToken({}, other)))).toBe('ERR_JWT_INVALID');
    const hs = await new SignJWT({ iss: provider.url, aud: CLIENT, sub: 'u', iat: t, exp: t + 60 })
      .setProtectedHeader({ alg: 'HS256' })
      .sign(new TextEncoder().encode('client-secret-client-secret-client-secret'));
    expect(await outcome(v.verify(hs))).toBe('ERR_JWT_INVALID');
  });

  it('applies the azp rule to several audiences and untrusted ones', async () => {
    const v = verifier({ trustedAudiences: ['api'] });
    expect(await outcome(v.verify(await idToken({ aud: [CLIENT, 'api'], azp: CLIENT })))).toBe(
      'ok',
    );
    expect(await outcome(v.verify(await idToken({ aud: [CLIENT, 'api'] })))).toBe(
      'ERR_JWT_INVALID',
    );
    expect(await outcome(v.verify(await idToken({ aud: [CLIENT, 'api'], azp: 'api' })))).toBe(
      'ERR_JWT_INVALID',
    );
    expect(await outcome(v.verify(await idToken({ azp: 'someone-else' })))).toBe('ERR_JWT_INVALID');
    expect(
      await outcome(verifier().verify(await idToken({ aud: [CLIENT, 'api'], azp: CLIENT }))),
    ).toBe('ERR_JWT_INVALID');
  });

  it('checks the nonce when asked', async () => {
    const v = verifier();
    const token = await idToken({ nonce: 'n-0S6_WzA2Mj' });
    expect(await outcome(v.verify(token, { nonce: 'n-0S6_WzA2Mj' }))).toBe('ok');
    expect(await outcome(v.verify(token, { nonce: 'n-0S6_WzA2Mk' }))).toBe('ERR_JWT_INVALID');
    expect(await outcome(v.verify(await idToken(), { nonce: 'n' }))).toBe('ERR_JWT_INVALID');
    expect(await outcome(v.verify(token))).toBe('ok');
  });

  it('checks auth_time against max_age when asked', async () => {
    const v = verifier();
    const t = now();
    expect(await outcome(v.verify(await idToken({ auth_time: t - 30 }), { maxAge: 60_000 }))).toBe(
      'ok',
    );
    expect(await outcome(v.verify(await idToken({ auth_time: t - 120 }), { maxAge: 60_000 }))).toBe(
      'ERR_JWT_EXPIRED',
    );
    expect(await outcome(v.verify(await idToken(), { maxAge: 60_000 }))).toBe('ERR_JWT_INVALID');
    expect(await outcome(v.verify(await idToken({ auth_time: t - 120 })))).toBe('ok');
  });

  it('never reveals the token in its errors', async () => {
    const token = await idToken({ aud: 'x' });
    const error = (await verifier()
      .verify(token)
      .catch((e: unknown) => e)) as JwtError;
    expect(error.message).toBe('The ID token is not valid.');
    expect(JSON.stringify(error)).not.toContain(token.slice(0, 20));
  });

  it('validates its options', () => {
    expect(() => createIdTokenVerifier({ issuer: provider.url } as never)).toThrow(/clientId/);
    expect(() => verifier({ algorithms: ['HS256'] })).toThrow(/HMAC/);
    expect(() => verifier({ algorithms: ['none'] })).toThrow(/none/);
    expect(() => verifier({ jwks: { keys: [key.jwk] }, discovery: true })).toThrow(/not both/);
    expect(() => verifier({ discovery: false })).toThrow(/jwks/);
    expect(() => verifier({ clientID: 'x' } as never)).toThrow(/Did you mean `clientId`/);
    expect(() => createIdTokenVerifier({ issuer: 'not a url', clientId: CLIENT })).toThrow(/URL/);
  });
});
