// DPoP proofs (RFC 9449 §4) for outgoing requests: one ES256 key pair per token source, a
// proof per request naming its method and URL, bound to the access token by `ath`.
import { hash, randomUUID, type webcrypto } from 'node:crypto';
import { loadJose } from '../internal/lazy.js';

/** Signs the proofs of one key pair. */
export interface ProofSigner {
  /** The key pair (openid-client makes the token request's proofs with it). */
  readonly keyPair: webcrypto.CryptoKeyPair;
  /** A proof for `method` at `url` (its query and fragment left out), for `accessToken`. */
  proof(method: string, url: string | URL, accessToken?: string): Promise<string>;
}

/** A new ES256 key pair and its proof signer. */
export async function createProofSigner(): Promise<ProofSigner> {
  const jose = await loadJose();
  const keyPair = (await jose.generateKeyPair('ES256', {
    extractable: true,
  })) as webcrypto.CryptoKeyPair;
  const { kty, crv, x, y } = await jose.exportJWK(keyPair.publicKey);
  const jwk = { kty, crv, x, y };
  return {
    keyPair,
    async proof(method, url, accessToken) {
      const target = new URL(url);
      target.search = '';
      target.hash = '';
      const claims: Record<string, unknown> = {
        htm: method.toUpperCase(),
        htu: target.href,
        jti: randomUUID(),
      };
      if (accessToken !== undefined) {
        claims.ath = hash('sha256', accessToken, 'base64url');
      }
      return new jose.SignJWT(claims)
        .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk })
        .setIssuedAt()
        .sign(keyPair.privateKey);
    },
  };
}
