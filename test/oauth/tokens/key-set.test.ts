import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { createLocalJWKSet, jwtVerify, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { createKeySet } from '../../../src/oauth/tokens/key-set.js';

function clock(start = 1_700_000_000_000) {
  const c = { t: start, now: () => c.t };
  return c;
}

async function sign(keys: Awaited<ReturnType<typeof createKeySet>>) {
  const key = keys.signingKey();
  return new SignJWT({ sub: 'alice' })
    .setProtectedHeader({ alg: key.alg, kid: key.kid })
    .setIssuedAt()
    .setExpirationTime('15m')
    .sign(key.privateKey);
}

describe('createKeySet', () => {
  it('makes an RS256 key and publishes its public half with kid, use and alg', async () => {
    const keys = await createKeySet();
    const { keys: published } = keys.jwks();
    expect(published).toHaveLength(1);
    expect(published[0]).toMatchObject({
      kty: 'RSA',
      kid: keys.signingKey().kid,
      use: 'sig',
      alg: 'RS256',
    });
    expect(published[0]).not.toHaveProperty('d');
  });

  it('publishes a new key before signing with it, and keeps the old one for retainMs', async () => {
    const c = clock();
    const keys = await createKeySet({ now: c.now, publishAheadMs: 60_000, retainMs: 600_000 });
    const first = keys.signingKey();
    const before = await sign(keys);
    const next = await keys.rotate();
    expect(keys.jwks().keys.map((k) => k.kid)).toEqual([first.kid, next.kid]);
    expect(keys.signingKey().kid).toBe(first.kid);
    c.t += 60_000;
    expect(keys.signingKey().kid).toBe(next.kid);
    // a token signed before the rotation still verifies against the published set
    await expect(
      jwtVerify(before, createLocalJWKSet(keys.jwks()), { currentDate: new Date(c.t) }),
    ).resolves.toBeTruthy();
    c.t += 600_000;
    expect(keys.jwks().keys.map((k) => k.kid)).toEqual([next.kid]);
    await expect(
      jwtVerify(before, createLocalJWKSet(keys.jwks()), { currentDate: new Date(c.t - 1) }),
    ).rejects.toThrow();
  });

  it('rotates immediately when asked, and forgets keys no longer published', async () => {
    const c = clock();
    const keys = await createKeySet({ now: c.now, retainMs: 1_000 });
    const a = keys.signingKey();
    const b = await keys.rotate({ immediately: true });
    expect(keys.signingKey().kid).toBe(b.kid);
    c.t += 2_000;
    await keys.rotate({ immediately: true });
    expect(keys.jwks().keys.map((k) => k.kid)).not.toContain(a.kid);
  });

  it('loads PEM keys (the last signs) and refuses keys of another kind', async () => {
    const older = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    const newer = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    const keys = await createKeySet({
      keys: [older, newer.export({ type: 'pkcs8', format: 'pem' }) as string],
    });
    expect(keys.jwks().keys).toHaveLength(2);
    expect(keys.signingKey().privateKey.export({ type: 'pkcs8', format: 'pem' })).toBe(
      newer.export({ type: 'pkcs8', format: 'pem' }),
    );
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    await expect(createKeySet({ keys: [ec] })).rejects.toThrow(TypeError);
    await expect(createKeySet({ keys: [createPublicKey(older)] })).rejects.toThrow(
      /private RS256 key/,
    );
    await expect(createKeySet({ algorithm: 'HS256' as never })).rejects.toThrow(TypeError);
  });

  it('makes ES256 and EdDSA keys on request', async () => {
    for (const algorithm of ['ES256', 'EdDSA'] as const) {
      const keys = await createKeySet({ algorithm });
      const token = await sign(keys);
      const { protectedHeader } = await jwtVerify(token, createLocalJWKSet(keys.jwks()));
      expect(protectedHeader.alg).toBe(algorithm);
    }
  });
});
