// DPoP proofs (RFC 9449 §4.3): a valid proof is accepted once, and a hostile corpus is
// refused with invalid_dpop_proof (or use_dpop_nonce), never accepted and never a crash.
import { createHash, generateKeyPairSync, randomUUID, type webcrypto } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  accessTokenHash,
  createDpopVerifier,
  DpopProofError,
} from '../../../src/auth/dpop/dpop.js';
import { MemoryReplayStore } from '../../../src/auth/replay/store.js';
import { HttpError } from '../../../src/core/errors/http-error.js';

const URL_ = 'https://api.example.com/api/messages';
const TOKEN = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl';
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

type CryptoKey = webcrypto.CryptoKey;

let key: CryptoKey;
let jwk: JWK;
let otherKey: CryptoKey;

beforeAll(async () => {
  const pair = await generateKeyPair('ES256', { extractable: true });
  key = pair.privateKey;
  jwk = await exportJWK(pair.publicKey);
  const other = await generateKeyPair('ES256', { extractable: true });
  otherKey = other.privateKey;
});

interface ProofParts {
  header?: Record<string, unknown>;
  claims?: Record<string, unknown>;
  signWith?: CryptoKey;
  alg?: string;
}

/** A proof for GET `URL_` with `TOKEN`, now; `header` and `claims` replace or add fields (undefined removes). */
async function proof({ header = {}, claims = {}, signWith = key, alg = 'ES256' }: ProofParts = {}) {
  const payload: Record<string, unknown> = {
    jti: randomUUID(),
    htm: 'GET',
    htu: URL_,
    iat: Math.floor(Date.now() / 1000),
    ath: accessTokenHash(TOKEN),
    ...claims,
  };
  for (const [k, v] of Object.entries(payload)) if (v === undefined) delete payload[k];
  const protectedHeader: Record<string, unknown> = { alg, typ: 'dpop+jwt', jwk, ...header };
  for (const [k, v] of Object.entries(protectedHeader))
    if (v === undefined) delete protectedHeader[k];
  return new SignJWT(payload).setProtectedHeader(protectedHeader as { alg: string }).sign(signWith);
}

const request = { method: 'GET', url: URL_, accessToken: TOKEN };

describe('createDpopVerifier: a valid proof', () => {
  it('is accepted with its key thumbprint, once', async () => {
    const dpop = createDpopVerifier();
    const made = await proof();
    const accepted = await dpop.verify(made, request);
    expect(accepted.jkt).toBe(await calculateJwkThumbprint(jwk, 'sha256'));
    expect(accepted.jwk).toMatchObject({ kty: 'EC', crv: 'P-256' });
    await expect(dpop.verify(made, request)).rejects.toMatchObject({
      error: 'invalid_dpop_proof',
      message: expect.stringContaining('used already'),
    });
  });

  it('compares htu without query and fragment, scheme and host case-insensitively, default port dropped', async () => {
    const dpop = createDpopVerifier();
    const pairs: [string, string][] = [
      ['https://API.example.com:443/api/messages', URL_],
      ['https://api.example.com/api/messages?page=2', `${URL_}?page=3#x`],
      ['https://api.example.com/api/./messages', URL_],
    ];
    for (const [htu, url] of pairs) {
      await expect(
        dpop.verify(await proof({ claims: { htu } }), { ...request, url }),
      ).resolves.toBeDefined();
    }
  });

  it('takes a proof without ath when no token comes with it (the token endpoint)', async () => {
    const dpop = createDpopVerifier();
    const made = await proof({
      claims: { ath: undefined, htm: 'POST', htu: 'https://api.example.com/token' },
    });
    await expect(
      dpop.verify(made, { method: 'POST', url: 'https://api.example.com/token' }),
    ).resolves.toBeDefined();
  });

  it('accepts RS256 and EdDSA keys when allowed', async () => {
    const dpop = createDpopVerifier();
    for (const alg of ['RS256', 'EdDSA']) {
      const pair = await generateKeyPair(alg, { extractable: true });
      const made = await proof({
        alg,
        signWith: pair.privateKey,
        header: { jwk: await exportJWK(pair.publicKey) },
      });
      await expect(dpop.verify(made, request)).resolves.toBeDefined();
    }
  });
});

describe('createDpopVerifier: the hostile corpus', () => {
  const now = Math.floor(Date.now() / 1000);
  const hmac = new Uint8Array(32).fill(7);
  const rsaPrivate = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
  const privateJwk = rsaPrivate.export({ format: 'jwk' });
  const cases: [string, () => Promise<unknown>, (Partial<typeof request> & { nonce?: string })?][] =
    [
      ['no proof', async () => undefined],
      ['an empty proof', async () => ''],
      ['two proofs joined (two DPoP headers)', async () => `${await proof()}, ${await proof()}`],
      ['an array of proofs', async () => [await proof(), await proof()]],
      ['not a JWS', async () => 'not-a-proof'],
      ['two parts', async () => (await proof()).split('.').slice(0, 2).join('.')],
      ['a JWE (five parts)', async () => `${await proof()}.AAAA.BBBB`],
      ['an empty signature', async () => `${(await proof()).split('.').slice(0, 2).join('.')}.`],
      ['an oversized proof', async () => `${'A'.repeat(9000)}.${'B'.repeat(10)}.${'C'.repeat(10)}`],
      [
        'a header that is not JSON',
        async () => {
          const [, p, s] = (await proof()).split('.');
          return `${Buffer.from('{nope').toString('base64url')}.${p}.${s}`;
        },
      ],
      [
        'alg none',
        async () =>
          `${b64({ alg: 'none', typ: 'dpop+jwt', jwk })}.${b64({ jti: 'x', htm: 'GET', htu: URL_, iat: now })}.c2ln`,
      ],
      [
        'HS256 with a symmetric jwk',
        async () =>
          new SignJWT({
            jti: randomUUID(),
            htm: 'GET',
            htu: URL_,
            iat: now,
            ath: accessTokenHash(TOKEN),
          })
            .setProtectedHeader({
              alg: 'HS256',
              typ: 'dpop+jwt',
              // a symmetric key in the header: what the verifier must refuse
              jwk: { kty: 'oct', k: Buffer.from(hmac).toString('base64url') } as unknown as JWK,
            })
            .sign(hmac),
      ],
      [
        'an algorithm not allowed (ES384)',
        async () => {
          const pair = await generateKeyPair('ES384', { extractable: true });
          return proof({
            alg: 'ES384',
            signWith: pair.privateKey,
            header: { jwk: await exportJWK(pair.publicKey) },
          });
        },
      ],
      ['no typ', async () => proof({ header: { typ: undefined } })],
      ['typ JWT', async () => proof({ header: { typ: 'JWT' } })],
      ['typ application/dpop+jwt', async () => proof({ header: { typ: 'application/dpop+jwt' } })],
      ['no jwk', async () => proof({ header: { jwk: undefined } })],
      ['a jwk that is a string', async () => proof({ header: { jwk: 'key' } })],
      [
        'a private jwk (d present)',
        async () =>
          new SignJWT({
            jti: randomUUID(),
            htm: 'GET',
            htu: URL_,
            iat: now,
            ath: accessTokenHash(TOKEN),
          })
            .setProtectedHeader({ alg: 'RS256', typ: 'dpop+jwt', jwk: privateJwk as JWK })
            .sign(rsaPrivate),
      ],
      ['a jwk for another key than the signature’s', async () => proof({ signWith: otherKey })],
      ['a jwk with use enc', async () => proof({ header: { jwk: { ...jwk, use: 'enc' } } })],
      ['a jwk whose alg differs', async () => proof({ header: { jwk: { ...jwk, alg: 'ES384' } } })],
      [
        'a tampered payload',
        async () => {
          const [h, , s] = (await proof()).split('.');
          return `${h}.${b64({ jti: 'x', htm: 'GET', htu: URL_, iat: now, ath: accessTokenHash(TOKEN) })}.${s}`;
        },
      ],
      ['no jti', async () => proof({ claims: { jti: undefined } })],
      ['a jti that is a number', async () => proof({ claims: { jti: 42 } })],
      ['an overlong jti', async () => proof({ claims: { jti: 'j'.repeat(300) } })],
      ['no htm', async () => proof({ claims: { htm: undefined } })],
      ['htm POST for a GET', async () => proof({ claims: { htm: 'POST' } })],
      ['htm in lower case', async () => proof({ claims: { htm: 'get' } })],
      ['no htu', async () => proof({ claims: { htu: undefined } })],
      [
        'htu on another host',
        async () => proof({ claims: { htu: 'https://evil.example/api/messages' } }),
      ],
      [
        'htu with another path',
        async () => proof({ claims: { htu: 'https://api.example.com/api/keys' } }),
      ],
      [
        'htu over http',
        async () => proof({ claims: { htu: 'http://api.example.com/api/messages' } }),
      ],
      [
        'htu on another port',
        async () => proof({ claims: { htu: 'https://api.example.com:8443/api/messages' } }),
      ],
      ['a relative htu', async () => proof({ claims: { htu: '/api/messages' } })],
      [
        'htu with user info',
        async () => proof({ claims: { htu: 'https://user@api.example.com/api/messages' } }),
      ],
      ['htu that is not a string', async () => proof({ claims: { htu: { href: URL_ } } })],
      ['no iat', async () => proof({ claims: { iat: undefined } })],
      ['iat as a string', async () => proof({ claims: { iat: String(now) } })],
      ['iat ten minutes ago', async () => proof({ claims: { iat: now - 600 } })],
      ['iat a minute ahead', async () => proof({ claims: { iat: now + 60 } })],
      ['no ath with a token', async () => proof({ claims: { ath: undefined } })],
      [
        'ath of another token',
        async () => proof({ claims: { ath: accessTokenHash(`${TOKEN}x`) } }),
      ],
      [
        'ath as the token’s hex SHA-256',
        async () => proof({ claims: { ath: createHash('sha256').update(TOKEN).digest('hex') } }),
      ],
    ];

  it('holds at least 30 cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(30);
  });

  it.each(cases)('refuses %s with invalid_dpop_proof', async (_name, make) => {
    const dpop = createDpopVerifier();
    const refusal = await dpop.verify(await make(), request).then(
      () => 'accepted',
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(DpopProofError);
    expect(refusal).toMatchObject({ error: 'invalid_dpop_proof', code: 'ERR_DPOP_INVALID' });
  });

  it('asks for the server’s nonce with use_dpop_nonce', async () => {
    const dpop = createDpopVerifier();
    const nonceRequest = { ...request, nonce: 'n-1' };
    await expect(dpop.verify(await proof(), nonceRequest)).rejects.toMatchObject({
      error: 'use_dpop_nonce',
      code: 'ERR_DPOP_NONCE',
    });
    await expect(
      dpop.verify(await proof({ claims: { nonce: 'n-0' } }), nonceRequest),
    ).rejects.toMatchObject({
      error: 'use_dpop_nonce',
    });
    await expect(
      dpop.verify(await proof({ claims: { nonce: 'n-1' } }), nonceRequest),
    ).resolves.toBeDefined();
  });
});

describe('the replay store', () => {
  it('fails closed when full of live proofs: a 503, not an accepted replay', async () => {
    const replay = new MemoryReplayStore({ maxEntries: 2, maxEntriesPerPartition: 2 });
    const dpop = createDpopVerifier({ replay });
    await dpop.verify(await proof(), request);
    await dpop.verify(await proof(), request);
    const full = await dpop.verify(await proof(), request).catch((error: unknown) => error);
    expect(full).toBeInstanceOf(HttpError);
    expect(full).toMatchObject({ status: 503, code: 'ERR_STORE_FULL' });
  });

  it('forgets a jti once a proof with it could no longer be accepted', async () => {
    let clock = Date.now();
    const replay = new MemoryReplayStore({ now: () => clock });
    expect(replay.remember('k:1', 1_000)).toBe(true);
    expect(replay.remember('k:1', 1_000)).toBe(false);
    clock += 1_001;
    expect(replay.remember('k:1', 1_000)).toBe(true);
  });

  it('refuses options that would weaken the check', () => {
    expect(() => createDpopVerifier({ algorithms: ['HS256'] })).toThrow(TypeError);
    expect(() => createDpopVerifier({ algorithms: ['none'] })).toThrow(TypeError);
    expect(() => createDpopVerifier({ algorithms: [] })).toThrow(TypeError);
    expect(() => createDpopVerifier({ maxAge: 0 })).toThrow(TypeError);
    expect(() => createDpopVerifier({ replay: {} as never })).toThrow(TypeError);
    expect(() => createDpopVerifier({ cache: true } as never)).toThrow(TypeError);
  });
});
