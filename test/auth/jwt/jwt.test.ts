import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { JwtError } from '../../../src/auth/jwt/error.ts';
import { createJwtVerifier, type JwtVerifierOptions } from '../../../src/auth/jwt/jwt.ts';
import { AUDIENCE, ISSUER, makeKey, mint, now, type TestKey } from './jwt-fixtures.ts';

vi.mock('jose', async (importOriginal) => {
  const jose = await importOriginal<typeof import('jose')>();
  return { ...jose, jwtVerify: vi.fn(jose.jwtVerify) };
});
const verifications = () => vi.mocked(jwtVerify).mock.calls.length;

let key: TestKey;
let other: TestKey;
const secret = 'a-shared-secret-of-at-least-32-bytes!';
const secretBytes = new TextEncoder().encode(secret);

beforeAll(async () => {
  key = await makeKey('k1');
  other = await makeKey('k2');
});
afterEach(() => {
  vi.useRealTimers();
});

const base = { issuer: ISSUER, audience: AUDIENCE };
const sources = ['secret', 'publicKey', 'jwks', 'jwksUrl'] as const;
/** A verifier of `key`'s tokens unless `options` names another key source. */
const verifier = (options: Partial<JwtVerifierOptions> = {}) =>
  createJwtVerifier({
    ...base,
    ...(sources.some((name) => name in options) ? {} : { publicKey: key.pem }),
    ...options,
  } as JwtVerifierOptions);

async function refusal(promise: Promise<unknown>): Promise<JwtError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(JwtError);
  return error as JwtError;
}

describe('createJwtVerifier: options', () => {
  const bad: [string, Record<string, unknown>, RegExp][] = [
    ['discovery with a key source', { ...base, secret, discovery: true }, /discovery/],
    [
      'discovery for several issuers',
      { ...base, issuer: [ISSUER, 'https://b.example'] },
      /one URL/,
    ],
    ['two key sources', { ...base, secret, publicKey: 'x' }, /exactly one/],
    ['alg none', { ...base, secret, algorithms: ['none'] }, /none/],
    ['HS256 with a public key', { ...base, publicKey: 'PEM', algorithms: ['HS256'] }, /PEM|HMAC/],
    ['RS256 with a secret', { ...base, secret, algorithms: ['RS256'] }, /HS256/],
    ['a short secret', { ...base, secret: 'short' }, /32 bytes/],
    ['HS512 with a 32-byte secret', { ...base, secret, algorithms: ['HS512'] }, /64 bytes/],
    ['an unknown algorithm', { ...base, secret, algorithms: ['HS1'] }, /unknown algorithm/],
    ['no issuer', { audience: AUDIENCE, secret }, /issuer/],
    ['no audience', { issuer: ISSUER, secret }, /audience/],
    ['an empty issuer list', { ...base, issuer: [], secret }, /issuer/],
    ['a negative tolerance', { ...base, secret, clockTolerance: -1 }, /clockTolerance/],
    ['a bad cache size', { ...base, secret, cache: { max: -1 } }, /cache/],
    ['a typo', { ...base, secret, audiance: 'x' }, /Did you mean `audience`/],
    ['jwks with a secret key', { ...base, jwks: { keys: [{ kty: 'oct', k: 'AAAA' }] } }, /public/],
    ['an ftp jwksUrl', { ...base, jwksUrl: 'ftp://example.test/jwks' }, /https/],
  ];
  it.each(bad)('refuses %s with a TypeError', (_name, options, message) => {
    let thrown: unknown;
    try {
      createJwtVerifier(options as unknown as JwtVerifierOptions);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(TypeError);
    expect((thrown as { code: string }).code).toBe('ERR_INVALID_OPTION');
    expect((thrown as Error).message).toMatch(message);
    expect((thrown as Error).message).not.toContain(secret);
  });

  it('refuses private keys and HMAC algorithms for asymmetric keys', () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pkcs8 = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    expect(() => verifier({ publicKey: pkcs8 })).toThrow(/SPKI/);
    expect(() => verifier({ publicKey: privateKey })).toThrow(/public key/);
    expect(() => verifier({ publicKey: { ...key.jwk, d: 'AAAA' } })).toThrow(/private/);
    expect(() => verifier({ publicKey: key.jwk, algorithms: ['HS256'] })).toThrow(/HMAC/);
    expect(() => verifier({ algorithms: ['ES256'] })).toThrow(/does not fit/);
    expect(() => verifier({ jwks: { keys: [key.jwk] }, algorithms: ['HS256'] })).toThrow(/HMAC/);
  });

  it('never mutates the options', async () => {
    const options = Object.freeze({ ...base, publicKey: key.pem, requiredClaims: ['sub'] });
    const v = createJwtVerifier(options);
    await v.verify(await mint(key));
    expect(options.requiredClaims).toEqual(['sub']);
  });
});

describe('createJwtVerifier: keys', () => {
  it('verifies RS256 with a PEM, a KeyObject, a JWK and a local JWKS', async () => {
    const token = await mint(key);
    for (const source of [
      { publicKey: key.pem },
      { publicKey: createPublicKey(key.pem) },
      { publicKey: key.jwk },
      { jwks: { keys: [other.jwk, key.jwk] } },
    ]) {
      const { payload, protectedHeader } = await verifier(source).verify(token);
      expect(payload.sub).toBe('alice');
      expect(protectedHeader.alg).toBe('RS256');
    }
  });

  it('verifies HS256 with a secret string or bytes', async () => {
    const token = await mint(secretBytes);
    expect((await verifier({ secret }).verify(token)).payload.sub).toBe('alice');
    const bytes = verifier({ secret: secretBytes });
    expect((await bytes.verify(token)).payload.iss).toBe(ISSUER);
  });

  it('takes the algorithm an EC key implies', async () => {
    const ec = await makeKey('ec', 'ES256');
    const token = await mint(ec.privateKey, {}, { alg: 'ES256' });
    expect((await verifier({ publicKey: ec.pem }).verify(token)).protectedHeader.alg).toBe('ES256');
  });

  it('refuses a token signed by another key', async () => {
    const error = await refusal(verifier().verify(await mint(other)));
    expect(error.code).toBe('ERR_JWT_INVALID');
    expect(error.kind).toBe('invalid');
    expect(error.message).toBe('The access token is not valid.');
  });

  it('tries each matching key when a JWKS has several and the token no kid', async () => {
    const v = verifier({
      jwks: {
        keys: [
          { ...other.jwk, kid: undefined },
          { ...key.jwk, kid: undefined },
        ],
      },
    });
    expect((await v.verify(await mint(key.privateKey))).payload.sub).toBe('alice');
    await refusal(v.verify(await mint((await makeKey('x')).privateKey)));
  });
});

describe('createJwtVerifier: claims', () => {
  it('requires exp, iss and aud', async () => {
    for (const claims of [{ exp: undefined }, { iss: undefined }, { aud: undefined }]) {
      expect((await refusal(verifier().verify(await mint(key, claims)))).kind).toBe('invalid');
    }
    await refusal(verifier().verify(await mint(key, { iss: 'https://evil.test' })));
    await refusal(verifier().verify(await mint(key, { aud: 'https://other.test' })));
  });

  it('accepts any of several issuers and audiences', async () => {
    const v = verifier({ issuer: ['https://a.test', ISSUER], audience: ['x', AUDIENCE] });
    expect((await v.verify(await mint(key, { aud: [AUDIENCE, 'y'] }))).payload.sub).toBe('alice');
  });

  it('tells expired from invalid, with the clock tolerance (5 s by default)', async () => {
    const t = now();
    const expired = await refusal(verifier().verify(await mint(key, { exp: t - 60 })));
    expect(expired.code).toBe('ERR_JWT_EXPIRED');
    expect(expired.kind).toBe('expired');
    expect(expired.message).toBe('The access token expired.');
    expect((await verifier().verify(await mint(key, { exp: t - 2 }))).payload.sub).toBe('alice');
    await refusal(verifier({ clockTolerance: 0 }).verify(await mint(key, { exp: t - 2 })));
  });

  it('refuses nbf and iat in the future beyond the tolerance', async () => {
    const t = now();
    const notYet = await refusal(verifier().verify(await mint(key, { nbf: t + 60 })));
    expect(notYet.code).toBe('ERR_JWT_INVALID');
    const future = await refusal(verifier().verify(await mint(key, { iat: t + 60 })));
    expect(future.code).toBe('ERR_JWT_INVALID');
    expect(
      (await verifier().verify(await mint(key, { iat: t + 3, nbf: t + 3 }))).payload,
    ).toBeTruthy();
    await refusal(verifier().verify(await mint(key, { iat: 'yesterday' })));
  });

  it('enforces typ, required claims and the maximum age', async () => {
    const at = verifier({ typ: 'at+jwt' });
    expect((await at.verify(await mint(key, {}, { typ: 'at+jwt' }))).payload).toBeTruthy();
    expect(
      (await at.verify(await mint(key, {}, { typ: 'application/AT+JWT' }))).payload,
    ).toBeTruthy();
    await refusal(at.verify(await mint(key, {}, { typ: 'JWT' })));
    await refusal(at.verify(await mint(key)));
    await refusal(verifier({ requiredClaims: ['jti'] }).verify(await mint(key)));
    const aged = verifier({ maxTokenAge: 60_000 });
    const old = await refusal(aged.verify(await mint(key, { iat: now() - 120 })));
    expect(old.kind).toBe('expired');
    await refusal(aged.verify(await mint(key, { iat: undefined })));
  });

  it('refuses oversized tokens before parsing', async () => {
    const v = verifier({ maxTokenLength: 1024 });
    const token = await mint(key, { pad: 'x'.repeat(1200) });
    const before = verifications();
    expect((await refusal(v.verify(token))).code).toBe('ERR_JWT_INVALID');
    expect(verifications()).toBe(before);
    await refusal(v.verify(undefined as unknown as string));
  });
});

describe('createJwtVerifier: cache of verified tokens', () => {
  it('verifies a token once, then answers from the cache', async () => {
    const v = verifier();
    const token = await mint(key);
    const before = verifications();
    const first = await v.verify(token);
    const second = await v.verify(token);
    expect(second).toBe(first);
    expect(verifications()).toBe(before + 1);
    expect(Object.isFrozen(first.payload)).toBe(true);
    const uncached = verifier({ cache: false });
    await uncached.verify(token);
    await uncached.verify(token);
    expect(verifications()).toBe(before + 3);
  });

  it('keeps at most `max` tokens, least recently used first out', async () => {
    const v = verifier({ cache: { max: 2 } });
    const [a, b, c] = await Promise.all([1, 2, 3].map((n) => mint(key, { jti: `t${n}` })));
    for (const token of [a, b, a, c]) await v.verify(token!);
    const before = verifications();
    await v.verify(a!);
    await v.verify(c!);
    expect(verifications()).toBe(before);
    await v.verify(b!);
    expect(verifications()).toBe(before + 1);
  });

  it('never serves a token past its exp, nor past iat + maxTokenAge', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const start = Date.now();
    const v = verifier({ clockTolerance: 0, maxTokenAge: 120_000 });
    const token = await mint(key, { exp: now() + 60 });
    await v.verify(token);
    vi.setSystemTime(start + 59_000);
    const before = verifications();
    await v.verify(token);
    expect(verifications()).toBe(before);
    vi.setSystemTime(start + 61_000);
    expect((await refusal(v.verify(token))).kind).toBe('expired');

    vi.setSystemTime(start);
    const long = await mint(key, { exp: now() + 600 });
    await v.verify(long);
    vi.setSystemTime(start + 121_000);
    expect((await refusal(v.verify(long))).kind).toBe('expired');
  });

  it('still checks the certificate binding on a cache hit', async () => {
    const v = verifier();
    const token = await mint(key, { cnf: { 'x5t#S256': 'thumb-of-alice' } });
    await v.verify(token, { certificateThumbprint: 'thumb-of-alice' });
    const before = verifications();
    await refusal(v.verify(token, { certificateThumbprint: 'thumb-of-mallory' }));
    await refusal(v.verify(token));
    expect((await v.verify(token, { certificateThumbprint: 'thumb-of-alice' })).payload.sub).toBe(
      'alice',
    );
    expect(verifications()).toBe(before);
  });

  it('refuses confirmation methods it cannot check (a DPoP jkt)', async () => {
    const token = await mint(key, { cnf: { jkt: 'abc' } });
    await refusal(verifier().verify(token, { certificateThumbprint: 'abc' }));
  });

  it('does not cache a failure', async () => {
    const v = verifier();
    const token = await new SignJWT({ sub: 'alice', iss: ISSUER, aud: AUDIENCE, exp: now() + 60 })
      .setProtectedHeader({ alg: 'RS256' })
      .sign(other.privateKey);
    await refusal(v.verify(token));
    const before = verifications();
    await refusal(v.verify(token));
    expect(verifications()).toBe(before + 1);
  });
});

describe('createJwtVerifier: discovery from the issuer', () => {
  it('finds the keys through the issuer metadata, once, when no key source is given', async () => {
    const { startKeyServer } = await import('./jwt-fixtures.ts');
    const key = await makeKey('disc');
    const server = await startKeyServer([key.jwk]);
    try {
      const verifier = createJwtVerifier({ issuer: server.url, audience: AUDIENCE });
      const token = await mint(key, { iss: server.url });
      await expect(verifier.verify(token)).resolves.toMatchObject({ payload: { iss: server.url } });
      await verifier.verify(await mint(key, { iss: server.url, sub: 'other' }));
      expect(server.discoveryHits).toBe(1);
    } finally {
      await server.close();
    }
  });

  it('answers keys-unavailable when the metadata names another issuer', async () => {
    const { startKeyServer } = await import('./jwt-fixtures.ts');
    const key = await makeKey('disc2');
    const server = await startKeyServer([key.jwk], 'https://someone-else.example');
    try {
      const verifier = createJwtVerifier({ issuer: server.url, audience: AUDIENCE });
      const error = await verifier
        .verify(await mint(key, { iss: server.url }))
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(JwtError);
      expect((error as JwtError).kind).toBe('unavailable');
    } finally {
      await server.close();
    }
  });
});
