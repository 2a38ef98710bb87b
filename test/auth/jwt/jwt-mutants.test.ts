// Beyond jwt.test.ts, jwt-cache.test.ts and the vectors: exact option messages and bounds, the
// length cap at its exact value, non-canonical base64url, several keys without kid, malformed
// cnf, a jose that cannot load, the 503 of unreachable keys, and the verified-token cache's
// generations and deadlines.
import { errors } from 'jose';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { cacheDeadline, VerifiedTokenCache } from '../../../src/auth/jwt/cache.ts';
import { JwtError } from '../../../src/auth/jwt/error.ts';
import { resolveKeySource } from '../../../src/auth/jwt/jwks.ts';
import { createJwtVerifier, type JwtVerifierOptions } from '../../../src/auth/jwt/jwt.ts';
import {
  type CoreVerifyOptions,
  type VerifiedJwt,
  verifyCompactJwt,
} from '../../../src/auth/jwt/verify.ts';
import { HttpError } from '../../../src/core/errors/errors.ts';
import { thrownTypeError } from '../../helpers/errors.ts';
import {
  AUDIENCE,
  ISSUER,
  makeKey,
  mint,
  now,
  startKeyServer,
  type TestKey,
} from './jwt-fixtures.ts';

const OWNER = 'createJwtVerifier()';
const INVALID = {
  name: 'JwtError',
  kind: 'invalid',
  code: 'ERR_JWT_INVALID',
  message: 'The access token is not valid.',
};

let key: TestKey;
beforeAll(async () => {
  key = await makeKey('k1');
});
afterEach(() => {
  vi.doUnmock('jose');
  vi.doUnmock('node:crypto');
  vi.resetModules();
});

const base = { issuer: ISSUER, audience: AUDIENCE };
/** A verifier of `key`'s tokens (by its PEM) with `options` on top. */
const verifier = (options: Record<string, unknown> = {}) =>
  createJwtVerifier({ ...base, publicKey: key.pem, ...options } as JwtVerifierOptions);

/** The message of the option error `options` are refused with. */
const optionError = (options: unknown) => {
  const error = thrownTypeError(() => createJwtVerifier(options as JwtVerifierOptions));
  expect(error.code).toBe('ERR_INVALID_OPTION');
  return error.message;
};

/** Asserts `error` is the generic `invalid` refusal, with `cause` (or none at all). */
function expectInvalid(error: unknown, cause?: unknown) {
  expect(error).toBeInstanceOf(JwtError);
  expect(error).toMatchObject(INVALID);
  if (cause === undefined) expect(Object.hasOwn(error as object, 'cause')).toBe(false);
  else expect((error as Error).cause).toBeInstanceOf(cause as typeof Error);
}

const rejectionOf = (promise: Promise<unknown>) =>
  promise.then(
    () => new Error('expected a rejection'),
    (error: unknown) => error,
  );

describe('createJwtVerifier: option errors, word for word', () => {
  it('refuses null and undefined options with its own message', () => {
    expect(optionError(null)).toBe(`${OWNER}: options are required`);
    expect(optionError(undefined)).toBe(`${OWNER}: options are required`);
  });

  it('names the unknown option and the one meant', () => {
    expect(optionError({ ...base, publicKey: 'x', audiance: AUDIENCE })).toBe(
      `${OWNER}: unknown option \`audiance\`. Did you mean \`audience\`?`,
    );
  });

  it('needs a URL issuer for discovery', () => {
    expect(optionError({ issuer: 'id.example.test', audience: AUDIENCE })).toBe(
      `${OWNER}: \`issuer\` must be an absolute URL`,
    );
  });

  it.each([
    ['an empty issuer', { issuer: '' }, 'issuer'],
    ['an empty string among the issuers', { issuer: [ISSUER, ''] }, 'issuer'],
    ['a number among the issuers', { issuer: [ISSUER, 42] }, 'issuer'],
    ['an empty audience', { audience: [''] }, 'audience'],
    ['a number as the audience', { audience: [42] }, 'audience'],
  ])('refuses %s', (_name, options, name) => {
    expect(optionError({ ...base, publicKey: key.pem, ...options })).toBe(
      `${OWNER}: \`${name}\` is required (a non-empty string or array of them)`,
    );
  });

  it.each([
    ['an empty typ', { typ: '' }, '`typ` must be a non-empty string'],
    ['a typ that is not a string', { typ: 42 }, '`typ` must be a non-empty string'],
    [
      'requiredClaims as one string',
      { requiredClaims: 'jti' },
      '`requiredClaims` must be an array of claim names',
    ],
    [
      'an empty claim name',
      { requiredClaims: ['sub', ''] },
      '`requiredClaims` must be an array of claim names',
    ],
    [
      'a claim name that is not a string',
      { requiredClaims: ['sub', 7] },
      '`requiredClaims` must be an array of claim names',
    ],
    [
      'a negative maxTokenAge',
      { maxTokenAge: -1 },
      '`maxTokenAge` must be milliseconds, at least 0',
    ],
    [
      'a maxTokenLength below 16',
      { maxTokenLength: 15 },
      '`maxTokenLength` must be an integer, at least 16',
    ],
  ])('refuses %s', (_name, options, message) => {
    expect(optionError({ ...base, publicKey: key.pem, ...options })).toBe(`${OWNER}: ${message}`);
  });

  it('accepts the smallest maxTokenLength (16) and a cache of size 0', () => {
    expect(() => verifier({ maxTokenLength: 16 })).not.toThrow();
    expect(() => verifier({ cache: { max: 0 } })).not.toThrow();
  });
});

describe('createJwtVerifier: what it keeps of the options', () => {
  it('keeps its own copy of the issuer and audience lists', async () => {
    const issuers = [ISSUER];
    const audiences = [AUDIENCE];
    const v = verifier({ issuer: issuers, audience: audiences, cache: false });
    issuers[0] = 'https://evil.example';
    audiences[0] = 'https://evil.example';
    const token = await mint(key);
    expect((await v.verify(token)).payload).toMatchObject({ iss: ISSUER, aud: AUDIENCE });
    const evil = await mint(key, { iss: 'https://evil.example', aud: 'https://evil.example' });
    expectInvalid(await rejectionOf(v.verify(evil)), errors.JWTClaimValidationFailed);
  });

  it('with cache { max: 0 } verifies every time: a new frozen result per call', async () => {
    const token = await mint(key);
    const v = verifier({ cache: { max: 0 } });
    const first = await v.verify(token);
    const second = await v.verify(token);
    expect(second).not.toBe(first);
    expect(second).toEqual(first);
    expect(Object.isFrozen(second.payload)).toBe(true);
    const cached = verifier();
    expect(await cached.verify(token)).toBe(await cached.verify(token));
  });
});

describe('createJwtVerifier: the length cap and the shape of the token', () => {
  it('accepts a token of exactly maxTokenLength and refuses it one byte under, unparsed', async () => {
    const token = await mint(key);
    const atLimit = verifier({ maxTokenLength: token.length });
    expect((await atLimit.verify(token)).payload.sub).toBe('alice');
    const under = verifier({ maxTokenLength: token.length - 1 });
    expectInvalid(await rejectionOf(under.verify(token)));
  });

  it('refuses a signature whose last character has unused bits set (4n + 2 characters)', async () => {
    const token = await mint(key);
    const signature = token.slice(token.lastIndexOf('.') + 1);
    expect(signature.length % 4).toBe(2); // 256 bytes: 4 unused bits in the last character
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = alphabet.indexOf(signature.at(-1)!);
    expect(last & 0b1111).toBe(0);
    // one of the unused bits set, but not the two lowest: decoders give the same bytes
    const variant = `${signature.slice(0, -1)}${alphabet[last | 0b100]}`;
    expect(Buffer.from(variant, 'base64url')).toEqual(Buffer.from(signature, 'base64url'));
    const v = verifier();
    expect((await v.verify(token)).payload.sub).toBe('alice');
    const forged = `${token.slice(0, token.lastIndexOf('.') + 1)}${variant}`;
    expectInvalid(await rejectionOf(v.verify(forged)));
  });
});

describe('verifyCompactJwt: refused before jose', () => {
  const core = (maxTokenLength: number): CoreVerifyOptions => ({
    subject: 'access token',
    maxTokenLength,
    clockTolerance: 5_000,
    jose: { algorithms: ['RS256'], issuer: ISSUER, audience: AUDIENCE, requiredClaims: ['exp'] },
  });
  const publicKey = () => resolveKeySource('test', { publicKey: key.pem }).source.key;

  it('takes a token of exactly maxTokenLength and refuses one a byte longer', async () => {
    const token = await mint(key);
    const { payload } = await verifyCompactJwt(token, publicKey(), core(token.length));
    expect(payload.sub).toBe('alice');
    expectInvalid(await rejectionOf(verifyCompactJwt(token, publicKey(), core(token.length - 1))));
  });

  it('refuses anything before or after the three parts before jose reads it (no cause)', async () => {
    const token = await mint(key);
    // a fourth canonical part (4 base64url characters) before or after, and stray characters
    for (const shaped of [`AAAA.${token}`, `${token}.AAAA`, `!.${token}`, `${token}\n`]) {
      expectInvalid(await rejectionOf(verifyCompactJwt(shaped, publicKey(), core(8192))));
    }
  });

  it('refuses a String object holding a good token', async () => {
    const token = await mint(key);
    const boxed = new String(token);
    expectInvalid(await rejectionOf(verifyCompactJwt(boxed, publicKey(), core(8192))));
  });

  it('fails closed, as invalid with the load error as cause, when jose cannot be loaded', async () => {
    vi.resetModules();
    vi.doMock('jose', () => {
      throw new Error('jose is missing');
    });
    const fresh = await import('../../../src/auth/jwt/verify.ts');
    const { JwtError: FreshJwtError } = await import('../../../src/auth/jwt/error.ts');
    const error = await rejectionOf(
      fresh.verifyCompactJwt(await mint(key), publicKey(), core(8192)),
    );
    expect(error).toBeInstanceOf(FreshJwtError);
    expect(error).toMatchObject(INVALID);
    // the import error (vitest wraps the factory's), never a TypeError of portico's own
    const loadError = (error as Error).cause as Error;
    expect(loadError.cause).toEqual(new Error('jose is missing'));
  });
});

describe('createJwtVerifier: a JWKS whose keys have no kid', () => {
  let keys: TestKey[];
  beforeAll(async () => {
    keys = await Promise.all([1, 2, 3, 4, 5].map((n) => makeKey(`ec${n}`, 'ES256')));
  });
  const es256 = (signer: TestKey, claims: Record<string, unknown> = {}) =>
    mint(signer.privateKey, claims, { alg: 'ES256' });
  const withoutKid = (set: TestKey[]) =>
    createJwtVerifier({
      ...base,
      jwks: { keys: set.map((k) => ({ ...k.jwk, kid: undefined })) },
      algorithms: ['ES256'],
    } as JwtVerifierOptions);

  it('tries the first four matching keys, and no more', async () => {
    const v = withoutKid(keys);
    expect((await v.verify(await es256(keys[3]!))).payload.sub).toBe('alice');
    const error = await rejectionOf(v.verify(await es256(keys[4]!)));
    expectInvalid(error, errors.JWKSMultipleMatchingKeys);
  });

  it('stops at the key whose signature fits: an expired token is expired, not invalid', async () => {
    const v = withoutKid(keys.slice(0, 3));
    const error = await rejectionOf(v.verify(await es256(keys[1]!, { exp: now() - 60 })));
    expect(error).toBeInstanceOf(JwtError);
    expect(error).toMatchObject({
      kind: 'expired',
      code: 'ERR_JWT_EXPIRED',
      message: 'The access token expired.',
    });
    expect((error as Error).cause).toBeInstanceOf(errors.JWTExpired);
  });
});

describe('createJwtVerifier: cnf it cannot honour', () => {
  it.each<[string, unknown, Record<string, string>]>([
    ['null', null, {}],
    ['empty', {}, { certificateThumbprint: 'thumb', dpopKeyThumbprint: 'thumb' }],
    ['a raw key (jwk)', { jwk: { kty: 'oct', k: 'AAAA' } }, { certificateThumbprint: 'thumb' }],
    ['a numeric x5t#S256', { 'x5t#S256': 42 }, { certificateThumbprint: '42' }],
    ['a numeric jkt', { jkt: 42 }, { dpopKeyThumbprint: '42' }],
  ])('refuses a cnf that is %s as invalid', async (_name, cnf, context) => {
    const v = verifier();
    const token = await mint(key, { cnf });
    expectInvalid(await rejectionOf(v.verify(token, context)));
    expectInvalid(await rejectionOf(v.verify(token, context))); // and again, from the cache
  });
});

describe('JwtError: cause and the 503 of unreachable keys', () => {
  it('has no cause at all when nothing underlies it, a hidden one otherwise', async () => {
    const token = await mint(key);
    const tooLong = await rejectionOf(verifier({ maxTokenLength: 16 }).verify(token));
    expectInvalid(tooLong);
    expect(Object.keys(tooLong as object)).not.toContain('cause');
    const other = await makeKey('other');
    const forged = await rejectionOf(verifier().verify(await mint(other)));
    expectInvalid(forged, errors.JWSSignatureVerificationFailed);
    expect(Object.keys(forged as object)).not.toContain('cause');
  });

  it('answers 503 with Retry-After and its own code when the JWKS was never reachable', async () => {
    const server = await startKeyServer([key.jwk]);
    server.down = true;
    try {
      const v = createJwtVerifier({ ...base, jwksUrl: server.jwksUrl } as JwtVerifierOptions);
      const error = await rejectionOf(v.verify(await mint(key)));
      expect(error).toBeInstanceOf(JwtError);
      const message = 'The keys to verify the token are unavailable; try again later.';
      expect(error).toMatchObject({
        kind: 'unavailable',
        code: 'ERR_JWT_KEYS_UNAVAILABLE',
        message,
      });
      const http = (error as JwtError).toHttpError();
      expect(http).toBeInstanceOf(HttpError);
      expect(http).toMatchObject({
        status: 503,
        code: 'ERR_JWT_KEYS_UNAVAILABLE',
        detail: message,
        headers: { 'Retry-After': '30' },
      });
      expect(http.cause).toBe(error);
    } finally {
      await server.close();
    }
  });
});

describe('VerifiedTokenCache and cacheDeadline', () => {
  const verified = (sub: string) =>
    ({ payload: { sub, exp: 2_000_000_000 }, protectedHeader: { alg: 'RS256' } }) as VerifiedJwt;
  const LATER = 1_000_000;

  it('keys a token by its SHA-256 in base64url', () => {
    // FIPS 180-2 B.1: SHA-256("abc") = ba7816bf 8f01cfea 414140de 5dae2223 b00361a3 ...
    expect(VerifiedTokenCache.keyOf('abc')).toBe('ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0');
  });

  it('empties itself as soon as the key set moves to another generation', () => {
    const cache = new VerifiedTokenCache(10);
    cache.set('a', verified('a'), LATER, 0, 0);
    cache.set('b', verified('b'), LATER, 0, 0);
    expect(cache.get('a', 1, 1)).toBeUndefined();
    expect(cache.size).toBe(0); // b went too
    cache.set('c', verified('c'), LATER, 1, 2);
    cache.set('d', verified('d'), LATER, 2, 3);
    expect(cache.size).toBe(1);
    expect(cache.get('c', 2, 4)).toBeUndefined();
    expect(cache.get('d', 2, 4)?.payload.sub).toBe('d');
  });

  it('never keeps a token whose deadline is now, so it cannot push out a live one', () => {
    const cache = new VerifiedTokenCache(1);
    cache.set('live', verified('live'), LATER, 0, 0);
    cache.set('dead', verified('dead'), 100, 0, 100);
    expect(cache.size).toBe(1);
    expect(cache.get('live', 0, 101)?.payload.sub).toBe('live');
  });

  it('keeps nothing with a max of 0 or less', () => {
    for (const max of [0, -1]) {
      const cache = new VerifiedTokenCache(max);
      cache.set('a', verified('a'), LATER, 0, 0);
      expect(cache.size).toBe(0);
      expect(cache.get('a', 0, 1)).toBeUndefined();
    }
  });

  it('clear() drops every entry', () => {
    const cache = new VerifiedTokenCache(10);
    cache.set('a', verified('a'), LATER, 0, 0);
    cache.set('b', verified('b'), LATER, 0, 0);
    cache.clear();
    expect(cache.size).toBe(0);
    expect(cache.get('a', 0, 1)).toBeUndefined();
  });

  it('gives no deadline (0) without a numeric exp, nor without iat under maxTokenAge', () => {
    expect(cacheDeadline({ sub: 'a' })).toBe(0);
    expect(cacheDeadline({ exp: '2000' as unknown as number })).toBe(0);
    expect(cacheDeadline({ exp: 2000 })).toBe(2_000_000);
    expect(cacheDeadline({ exp: 2000 }, 60_000)).toBe(0);
    expect(cacheDeadline({ exp: 2000, iat: 1000 }, 60_000)).toBe(1_060_000);
    expect(cacheDeadline({ exp: 2000, iat: 1990 }, 60_000)).toBe(2_000_000);
  });
});
