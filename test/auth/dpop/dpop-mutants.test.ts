// What a caller can observe of createDpopVerifier, its proof-key cache and createDpopNonces beyond
// dpop.test.ts and dpop-nonce.test.ts: the message (and cause) of every refusal, the edges of
// iat, jti and proof length, htu and request URL forms, RFC 7638 thumbprints of keys carrying
// foreign members, private-key members, the replay TTL, the key cache's bound and option errors.
import { randomUUID } from 'node:crypto';
import {
  CompactSign,
  type CryptoKey,
  calculateJwkThumbprint,
  errors,
  exportJWK,
  generateKeyPair,
  type JWK,
  type JWTHeaderParameters,
  SignJWT,
} from 'jose';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import {
  accessTokenHash,
  createDpopVerifier,
  DpopProofError,
  type DpopRequest,
  type DpopVerifierOptions,
} from '../../../src/auth/dpop/dpop.js';
import { createDpopNonces } from '../../../src/auth/dpop/nonce.js';
import { MemoryReplayStore, type ReplayStore } from '../../../src/auth/replay/store.js';
import { thrownTypeError } from '../../helpers/errors.js';
import { b64 } from '../jwt/jwt-fixtures.js';

const URL_ = 'https://api.example.com/api/messages';
const REQUEST: DpopRequest = { method: 'GET', url: URL_ };
const TOKEN = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl';
const SECRET = 'a-dpop-nonce-secret-of-32-chars!!';
/** The verifiers' clock (epoch ms, a whole second) and the `iat` of a proof made then. */
const T0 = Date.UTC(2030, 0, 1);
const IAT = T0 / 1000;
const INVALID = { name: 'DpopProofError', error: 'invalid_dpop_proof', code: 'ERR_DPOP_INVALID' };
const SIGNATURE_REFUSED = 'The signature, key or header of the DPoP proof is not valid.';

interface Signer {
  alg: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

let es: Signer;
let rsa: Signer;
let ed: Signer;
let stranger: Signer;

async function signer(alg: string): Promise<Signer> {
  const pair = await generateKeyPair(alg, { extractable: true });
  return { alg, privateKey: pair.privateKey, jwk: await exportJWK(pair.publicKey) };
}

beforeAll(async () => {
  [es, rsa, ed, stranger] = await Promise.all([
    signer('ES256'),
    signer('RS256'),
    signer('EdDSA'),
    signer('ES256'),
  ]);
});

/** A proof for GET `URL_` made at T0 by `by`; `claims` and `header` add or replace (undefined drops). */
function sign(
  claims: Record<string, unknown> = {},
  by: Signer = es,
  header: Record<string, unknown> = {},
): Promise<string> {
  return new SignJWT({ jti: randomUUID(), htm: 'GET', htu: URL_, iat: IAT, ...claims })
    .setProtectedHeader({ alg: by.alg, typ: 'dpop+jwt', jwk: by.jwk, ...header } as never)
    .sign(by.privateKey);
}

/** A proof whose payload is `json` as written (JSON.stringify cannot write 1e400). */
function signRaw(json: string): Promise<string> {
  return new CompactSign(new TextEncoder().encode(json))
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: es.jwk } as JWTHeaderParameters)
    .sign(es.privateKey);
}

/** A valid ES256 proof padded (a `pad` claim, a `kid`) to exactly `length` characters. */
async function proofOfLength(length: number): Promise<string> {
  for (const kid of ['', 'k', 'kk', 'kkk']) {
    const header = { alg: 'ES256', typ: 'dpop+jwt', jwk: es.jwk, ...(kid && { kid }) };
    const claims = { jti: randomUUID(), htm: 'GET', htu: URL_, iat: IAT, pad: '' };
    // an ES256 signature is 86 characters; the two dots make 88
    const payloadChars = length - b64(header).length - 88;
    if (payloadChars % 4 === 1) continue; // no byte count encodes to that many characters
    claims.pad = 'p'.repeat(Math.floor((3 * payloadChars) / 4) - JSON.stringify(claims).length);
    const made = await new SignJWT(claims)
      .setProtectedHeader(header as JWTHeaderParameters)
      .sign(es.privateKey);
    expect(made).toHaveLength(length);
    return made;
  }
  throw new Error(`no proof of ${length} characters`);
}

const verifier = (options: DpopVerifierOptions = {}) =>
  createDpopVerifier({ now: () => T0, ...options });

/** The DpopProofError `pending` rejects with (failing the test on anything else). */
async function refusal(pending: Promise<unknown>): Promise<DpopProofError> {
  const outcome = await pending.then(
    (accepted) => ({ accepted }),
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(DpopProofError);
  return outcome as DpopProofError;
}

describe('createDpopVerifier: what a refusal says', () => {
  const cases: [string, () => Promise<unknown>, string, Partial<DpopRequest>?][] = [
    ['no proof', async () => undefined, 'A DPoP proof is required.'],
    ['an empty proof', async () => '', 'A DPoP proof is required.'],
    [
      'a proof that is not a JWS',
      async () => 'not-a-proof',
      'The DPoP proof is not a compact JWS.',
    ],
    [
      'a proof of 8193 characters',
      () => proofOfLength(8193),
      'The DPoP proof is not a compact JWS.',
    ],
    [
      'a proof signed by another key than its jwk',
      () => sign({}, { ...es, privateKey: stranger.privateKey }),
      SIGNATURE_REFUSED,
    ],
    [
      'typ application/dpop+jwt',
      () => sign({}, es, { typ: 'application/dpop+jwt' }),
      'The typ of the DPoP proof must be dpop+jwt.',
    ],
    ['a jti that is a number', () => sign({ jti: 42 }), 'The DPoP proof has no valid jti.'],
    ['an empty jti', () => sign({ jti: '' }), 'The DPoP proof has no valid jti.'],
    [
      'a jti of 257 characters',
      () => sign({ jti: 'j'.repeat(257) }),
      'The DPoP proof has no valid jti.',
    ],
    [
      'htm POST for a GET',
      () => sign({ htm: 'POST' }),
      'The htm of the DPoP proof is not the method of the request.',
    ],
    [
      'no htm, for a request whose method is unknown',
      () => sign({ htm: undefined }),
      'The htm of the DPoP proof is not the method of the request.',
      { method: undefined as unknown as string },
    ],
    [
      'htu with another path',
      () => sign({ htu: 'https://api.example.com/api/keys' }),
      'The htu of the DPoP proof is not the URL of the request.',
    ],
    [
      'htu as an array holding the URL',
      () => sign({ htu: [URL_] }),
      'The htu of the DPoP proof is not the URL of the request.',
    ],
    [
      'htu with a password and no user name',
      () => sign({ htu: 'https://:secret@api.example.com/api/messages' }),
      'The htu of the DPoP proof is not the URL of the request.',
    ],
    ['no iat', () => sign({ iat: undefined }), 'The DPoP proof has no valid iat.'],
    [
      'an iat of 1e400 (Infinity once parsed)',
      () => signRaw(`{"jti":"${randomUUID()}","htm":"GET","htu":"${URL_}","iat":1e400}`),
      'The DPoP proof has no valid iat.',
    ],
    [
      'an iat of -1e400',
      () => signRaw(`{"jti":"${randomUUID()}","htm":"GET","htu":"${URL_}","iat":-1e400}`),
      'The DPoP proof has no valid iat.',
    ],
    [
      'an iat 6 s ahead (clockTolerance is 5 s)',
      () => sign({ iat: IAT + 6 }),
      'The DPoP proof is issued in the future.',
    ],
    [
      'an iat 301 s old (maxAge is 300 s)',
      () => sign({ iat: IAT - 301 }),
      'The DPoP proof is too old.',
    ],
    [
      'the ath of another token',
      () => sign({ ath: accessTokenHash(`${TOKEN}x`) }),
      'The ath of the DPoP proof is not the hash of the access token.',
      { accessToken: TOKEN },
    ],
  ];

  it.each(cases)('refuses %s, saying why', async (_name, make, message, request = {}) => {
    const error = await refusal(verifier().verify(await make(), { ...REQUEST, ...request }));
    expect(error).toMatchObject({ ...INVALID, message });
    expect(error.nonce).toBeUndefined();
  });

  it('keeps jose’s error as the cause of a signature refusal, and sets no cause on its own refusals', async () => {
    const dpop = verifier();
    const forged = await refusal(
      dpop.verify(await sign({}, { ...es, privateKey: stranger.privateKey }), REQUEST),
    );
    expect(forged.message).toBe(SIGNATURE_REFUSED);
    expect(forged.cause).toBeInstanceOf(errors.JWSSignatureVerificationFailed);
    for (const own of ['', await sign({ jti: '' })]) {
      const error = await refusal(dpop.verify(own, REQUEST));
      expect(Object.hasOwn(error, 'cause')).toBe(false);
    }
  });

  it('asks for the nonce the request requires with use_dpop_nonce, naming it', async () => {
    const dpop = verifier();
    const request = { ...REQUEST, nonce: 'n-1' };
    for (const claims of [{}, { nonce: 'n-0' }]) {
      const error = await refusal(dpop.verify(await sign(claims), request));
      expect(error).toMatchObject({
        name: 'DpopProofError',
        error: 'use_dpop_nonce',
        code: 'ERR_DPOP_NONCE',
        message: 'The DPoP proof must carry the nonce of the server.',
        nonce: 'n-1',
      });
    }
    await expect(dpop.verify(await sign({ nonce: 'n-1' }), request)).resolves.toMatchObject({
      issuedAt: T0,
    });
  });

  it('asks for the current nonce of createDpopNonces, and takes a proof carrying it', async () => {
    const nonces = createDpopNonces({ secret: SECRET, now: () => T0 });
    const dpop = verifier({ nonces });
    const error = await refusal(dpop.verify(await sign(), REQUEST));
    expect(error).toMatchObject({
      name: 'DpopProofError',
      error: 'use_dpop_nonce',
      code: 'ERR_DPOP_NONCE',
      message: 'The DPoP proof must carry the current nonce of the server (DPoP-Nonce).',
      nonce: nonces.current(),
    });
    const made = await sign({ nonce: nonces.current() });
    const accepted = await dpop.verify(made, REQUEST);
    expect(accepted.issuedAt).toBe(T0);
  });
});

describe('createDpopVerifier: the edges of a proof', () => {
  it('accepts a proof of exactly 8192 characters', async () => {
    const made = await proofOfLength(8192);
    await expect(verifier().verify(made, REQUEST)).resolves.toMatchObject({ alg: 'ES256' });
  });

  it('accepts a jti of 256 characters', async () => {
    const jti = 'j'.repeat(256);
    await expect(verifier().verify(await sign({ jti }), REQUEST)).resolves.toMatchObject({ jti });
  });

  it('accepts an iat clockTolerance ahead and one maxAge old, to the millisecond', async () => {
    const ahead = await sign({ iat: IAT + 5 });
    await expect(verifier().verify(ahead, REQUEST)).resolves.toMatchObject({
      issuedAt: T0 + 5_000,
    });
    const old = await sign({ iat: IAT - 300 });
    await expect(verifier().verify(old, REQUEST)).resolves.toMatchObject({
      issuedAt: T0 - 300_000,
    });
    const custom = verifier({ maxAge: 60_000, clockTolerance: 0 });
    await expect(custom.verify(await sign({ iat: IAT }), REQUEST)).resolves.toBeDefined();
    await expect(custom.verify(await sign({ iat: IAT - 60 }), REQUEST)).resolves.toBeDefined();
    const late = await refusal(custom.verify(await sign({ iat: IAT + 1 }), REQUEST));
    expect(late.message).toBe('The DPoP proof is issued in the future.');
  });

  it('answers what the proof held, frozen', async () => {
    const jti = randomUUID();
    const accepted = await verifier().verify(await sign({ jti }), REQUEST);
    expect(accepted).toEqual({
      jkt: await calculateJwkThumbprint(es.jwk, 'sha256'),
      jwk: es.jwk,
      jti,
      alg: 'ES256',
      issuedAt: T0,
    });
    expect(Object.isFrozen(accepted)).toBe(true);
    expect(Object.isFrozen(accepted.jwk)).toBe(true);
  });
});

describe('createDpopVerifier: the request URL', () => {
  it('takes a URL object as the request URL, compared without its query', async () => {
    const url = new URL(`${URL_}?page=2`);
    await expect(verifier().verify(await sign(), { ...REQUEST, url })).resolves.toMatchObject({
      alg: 'ES256',
    });
  });

  it.each([
    ['a relative URL', '/api/messages'],
    ['a wss: URL', 'wss://api.example.com/api/messages'],
    ['an ftp: URL', 'ftp://api.example.com/api/messages'],
    ['a URL with user info', 'https://user:pw@api.example.com/api/messages'],
  ])('throws a TypeError for %s, whatever the htu', async (_name, url) => {
    const made = await sign({ htu: url });
    const error = await verifier()
      .verify(made, { ...REQUEST, url })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toBe('dpop.verify(): `url` must be an absolute URL');
  });
});

describe('the proof key (RFC 7638 thumbprint, public keys only)', () => {
  it('hashes only the members RFC 7638 names for the key’s type, ignoring any other', async () => {
    const extras: [Signer, Record<string, unknown>][] = [
      [rsa, {}],
      [rsa, { crv: 'P-256', x: 'AAAA', y: 'AAAA' }],
      [ed, {}],
      [ed, { y: 'AAAA', e: 'AQAB', n: 'AAAA' }],
    ];
    for (const [by, extra] of extras) {
      const jwk = { ...by.jwk, ...extra };
      const accepted = await verifier().verify(await sign({}, by, { jwk }), REQUEST);
      expect(accepted.jkt).toBe(await calculateJwkThumbprint(by.jwk, 'sha256'));
      expect(accepted.jwk).toEqual(jwk);
    }
  });

  it.each([
    ['an EC key without y', { y: undefined }],
    ['an EC key with an empty y', { y: '' }],
    ['an EC key whose y is a number', { y: 42 }],
    ['an EC key without x', { x: undefined }],
    ['an EC key without crv', { crv: undefined }],
    ['a key of an unknown type', { kty: 'XYZ' }],
  ])('refuses %s before importing it', async (_name, change) => {
    const importKey = vi.spyOn(crypto.subtle, 'importKey');
    try {
      const jwk = { ...es.jwk, ...change };
      const error = await refusal(verifier().verify(await sign({}, es, { jwk }), REQUEST));
      expect(error).toMatchObject({ ...INVALID, message: SIGNATURE_REFUSED });
      expect(error.cause).toBeInstanceOf(TypeError);
      expect((error.cause as Error).message).toBe('The jwk header of a DPoP proof is not a key.');
      expect(importKey).not.toHaveBeenCalled();
    } finally {
      importKey.mockRestore();
    }
  });

  it('refuses an OKP key without x, or with an empty crv', async () => {
    for (const change of [{ x: undefined }, { crv: '' }]) {
      const jwk = { ...ed.jwk, ...change };
      const error = await refusal(verifier().verify(await sign({}, ed, { jwk }), REQUEST));
      expect((error.cause as Error).message).toBe('The jwk header of a DPoP proof is not a key.');
    }
  });

  it.each(['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'])(
    'refuses a jwk carrying the private member %s (jose alone would take most)',
    async (member) => {
      const jwk = { ...rsa.jwk, [member]: member === 'oth' ? [] : 'AQAB' };
      const error = await refusal(verifier().verify(await sign({}, rsa, { jwk }), REQUEST));
      expect(error).toMatchObject({ ...INVALID, message: SIGNATURE_REFUSED });
      expect(error.cause).toBeInstanceOf(TypeError);
      expect((error.cause as Error).message).toBe(
        'The jwk header of a DPoP proof must be a public key.',
      );
    },
  );

  it.each([
    ['a string', 'key'],
    ['null', null],
    ['an array', ['kty', 'EC']],
  ])('refuses a jwk header that is %s as not a JSON object', async (_name, jwk) => {
    const error = await refusal(verifier().verify(await sign({}, es, { jwk }), REQUEST));
    expect(error).toMatchObject({ ...INVALID, message: SIGNATURE_REFUSED });
    expect(error.cause).toBeInstanceOf(TypeError);
    expect((error.cause as Error).message).toBe(
      'The jwk header of a DPoP proof must be a JSON object.',
    );
  });
});

describe('the proof key cache', () => {
  /** A verifier, and `verify(kid)`: a proof by `es` whose jwk carries `kid`, and the imports it made. */
  function counting() {
    const dpop = verifier();
    const importKey = vi.spyOn(crypto.subtle, 'importKey');
    return {
      async imports(kid: string): Promise<number> {
        const made = await sign({}, es, { jwk: { ...es.jwk, kid } });
        const before = importKey.mock.calls.length;
        await dpop.verify(made, REQUEST);
        return importKey.mock.calls.length - before;
      },
      restore: () => importKey.mockRestore(),
    };
  }

  it('imports a jwk once, however many proofs it signs, and keeps several', async () => {
    const cache = counting();
    try {
      expect([
        await cache.imports('a'),
        await cache.imports('a'),
        await cache.imports('a'),
      ]).toEqual([1, 0, 0]);
      expect([
        await cache.imports('b'),
        await cache.imports('a'),
        await cache.imports('b'),
      ]).toEqual([1, 0, 0]);
    } finally {
      cache.restore();
    }
  });

  it('keeps the last 1000 jwks: the 1001st evicts the oldest', { timeout: 120_000 }, async () => {
    const cache = counting();
    try {
      let imported = 0;
      for (let i = 0; i < 1000; i++) imported += await cache.imports(`k${i}`);
      expect(imported).toBe(1000);
      expect(await cache.imports('k0')).toBe(0);
      expect(await cache.imports('k999')).toBe(0);
      expect(await cache.imports('k1000')).toBe(1);
      expect(await cache.imports('k0')).toBe(1);
      expect(await cache.imports('k1000')).toBe(0);
    } finally {
      cache.restore();
    }
  });
});

describe('createDpopVerifier: the replay store', () => {
  it('remembers key and jti for maxAge plus clockTolerance', async () => {
    const remembered: [string, number][] = [];
    const replay: ReplayStore = {
      remember(id, ttlMs) {
        remembered.push([id, ttlMs]);
        return remembered.length === 1;
      },
    };
    const dpop = verifier({ maxAge: 60_000, clockTolerance: 2_000, replay });
    const made = await sign({ jti: 'jti-1' });
    const { jkt } = await dpop.verify(made, REQUEST);
    const again = await refusal(dpop.verify(made, REQUEST));
    expect(again).toMatchObject({ ...INVALID, message: 'The DPoP proof was used already.' });
    expect(remembered).toEqual([
      [`${jkt}:jti-1`, 62_000],
      [`${jkt}:jti-1`, 62_000],
    ]);
  });

  it('refuses the replay of a proof made ahead until it is too old', async () => {
    let clock = T0;
    const now = () => clock;
    const dpop = createDpopVerifier({ now, replay: new MemoryReplayStore({ now }) });
    const made = await sign({ iat: IAT + 5 });
    await dpop.verify(made, REQUEST);
    clock = T0 + 304_999; // issued at T0 + 5 s: young enough for 300 s more
    expect((await refusal(dpop.verify(made, REQUEST))).message).toBe(
      'The DPoP proof was used already.',
    );
    clock = T0 + 305_001;
    expect((await refusal(dpop.verify(made, REQUEST))).message).toBe('The DPoP proof is too old.');
  });
});

describe('createDpopVerifier: options', () => {
  it('keeps its own frozen copy of the algorithms, and takes proofs of them only', async () => {
    const algorithms = ['ES384', 'RS256'];
    const dpop = verifier({ algorithms });
    algorithms.push('ES256');
    expect(dpop.algorithms).toEqual(['ES384', 'RS256']);
    expect(Object.isFrozen(dpop.algorithms)).toBe(true);
    const es384 = await signer('ES384');
    await expect(dpop.verify(await sign({}, es384), REQUEST)).resolves.toMatchObject({
      alg: 'ES384',
    });
    await expect(dpop.verify(await sign({}, rsa), REQUEST)).resolves.toMatchObject({
      alg: 'RS256',
    });
    const es256 = await refusal(dpop.verify(await sign(), REQUEST));
    expect(es256).toMatchObject({ ...INVALID, message: SIGNATURE_REFUSED });
    expect(es256.cause).toBeInstanceOf(errors.JOSEAlgNotAllowed);
  });

  it('refuses an algorithm list that is empty, not a list or holds a symmetric one, naming those it takes', () => {
    for (const algorithms of [['ES256', 'HS256'], ['none'], [], 'ES256']) {
      const error = thrownTypeError(() => createDpopVerifier({ algorithms } as never));
      expect(error.code).toBe('ERR_INVALID_OPTION');
      expect(error.message).toBe(
        'createDpopVerifier(): `algorithms` must list asymmetric JWS algorithms (ES256, ES384, ES512, EdDSA, Ed25519, PS256, PS384, PS512, RS256, RS384, RS512)',
      );
    }
  });

  it.each([
    ['maxAge 0', { maxAge: 0 }, 'createDpopVerifier(): `maxAge` must be milliseconds, at least 1'],
    [
      'clockTolerance -1',
      { clockTolerance: -1 },
      'createDpopVerifier(): `clockTolerance` must be milliseconds, at least 0',
    ],
    [
      'a replay store without remember',
      { replay: {} },
      'createDpopVerifier(): `replay` must have a remember(id, ttlMs) method',
    ],
    ['a now that is not a function', { now: 42 }, 'createDpopVerifier(): `now` must be a function'],
    [
      'null nonces',
      { nonces: null },
      'createDpopVerifier(): `nonces` must come from createDpopNonces()',
    ],
    [
      'nonces without accepts',
      { nonces: { current: () => 'n' } },
      'createDpopVerifier(): `nonces` must come from createDpopNonces()',
    ],
  ])('refuses %s, naming the option', (_name, options, message) => {
    const error = thrownTypeError(() => createDpopVerifier(options as never));
    expect(error.code).toBe('ERR_INVALID_OPTION');
    expect(error.message).toBe(message);
  });

  it('takes a null replay as the default memory store', async () => {
    const dpop = verifier({ replay: null as never });
    const made = await sign();
    await dpop.verify(made, REQUEST);
    expect((await refusal(dpop.verify(made, REQUEST))).message).toBe(
      'The DPoP proof was used already.',
    );
  });
});

describe('createDpopNonces: options', () => {
  it.each([
    [
      'a secret of 5 characters',
      { secret: 'short' },
      'createDpopNonces(): `secret` must be a string or bytes of 32 or more',
    ],
    ['a now that is not a function', { now: 42 }, 'createDpopNonces(): `now` must be a function'],
  ])('refuses %s, naming the option', (_name, options, message) => {
    const error = thrownTypeError(() => createDpopNonces(options as never));
    expect(error.code).toBe('ERR_INVALID_OPTION');
    expect(error.message).toBe(message);
  });
});
