// createKeySet() without keys generates one of the algorithm asked: an ES256 P-256 key, an
// EdDSA Ed25519 key, each published in the JWK Set and signing.
import { describe, expect, it } from 'vitest';
import { createKeySet } from '../../../src/oauth/tokens/key-set.js';

describe('createKeySet() generating its key', () => {
  it.each([
    ['ES256', { kty: 'EC', crv: 'P-256', alg: 'ES256' }],
    ['EdDSA', { kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA' }],
  ] as const)('generates a %s key', async (algorithm, jwk) => {
    const keys = await createKeySet({ algorithm });
    expect(keys.signingKey().alg).toBe(algorithm);
    expect(keys.jwks().keys).toHaveLength(1);
    expect(keys.jwks().keys[0]).toMatchObject(jwk);
  });
});
