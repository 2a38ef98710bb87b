// The public key a DPoP proof carries in its `jwk` header (RFC 9449 §4.2), imported once per
// distinct key: a client signs every proof with the same key, and importing a JWK (and
// hashing its thumbprint through WebCrypto) cost more than verifying the signature.
import { hash, type webcrypto } from 'node:crypto';
import type { FlattenedJWSInput, JWTHeaderParameters, KeyObject } from 'jose';
import { loadJose } from '../../internal/lazy.js';
import { MapEvictor } from '../../internal/map-evictor.js';

type PublicKey = webcrypto.CryptoKey | KeyObject;

/** A proof's key, imported, with its RFC 7638 thumbprint. */
interface ImportedKey {
  readonly key: PublicKey;
  readonly jkt: string;
}

/** Private key members (RFC 7518 §6): a proof's `jwk` must be a public key. */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
const MAX_KEYS = 1_000;

const isString = (value: unknown): value is string => typeof value === 'string' && value !== '';

/**
 * The members RFC 7638 §3.2 hashes, in lexicographic order, as the JSON the thumbprint is
 * taken over; `undefined` for a key type a proof cannot use or a member missing.
 */
function thumbprintInput(jwk: Record<string, unknown>): string | undefined {
  const { kty, crv, x, y, e, n } = jwk;
  if (kty === 'EC' && isString(crv) && isString(x) && isString(y)) {
    return JSON.stringify({ crv, kty, x, y });
  }
  if (kty === 'RSA' && isString(e) && isString(n)) return JSON.stringify({ e, kty, n });
  if (kty === 'OKP' && isString(crv) && isString(x)) return JSON.stringify({ crv, kty, x });
  return undefined;
}

/**
 * Resolves the key of proofs for `jose.jwtVerify` with jose's own `EmbeddedJWK` (the `jwk`
 * header must be a public key, its `use` and `alg` fitting the proof's), keeping what it
 * imported by algorithm and the `jwk` exactly as sent: every distinct header goes through
 * jose's checks once. Bounded; the oldest key goes first.
 */
export function createProofKeys() {
  const imported = new Map<string, ImportedKey>();
  const evictor = new MapEvictor(imported);

  /** jose's `EmbeddedJWK` (its checks of `use`, `alg` and a public key), and the thumbprint. */
  async function importKey(header: JWTHeaderParameters, token: FlattenedJWSInput) {
    const jwk = header.jwk as Record<string, unknown>;
    if (PRIVATE_MEMBERS.some((member) => member in jwk)) {
      throw new TypeError('The jwk header of a DPoP proof must be a public key.');
    }
    const input = thumbprintInput(jwk);
    if (input === undefined) throw new TypeError('The jwk header of a DPoP proof is not a key.');
    const { EmbeddedJWK } = await loadJose();
    const key: PublicKey = await EmbeddedJWK(header, token);
    return { key, jkt: hash('sha256', input, 'base64url') };
  }

  /** A resolver for one verification, and the thumbprint of the key it gave. */
  return function proofKey() {
    let jkt: string | undefined;
    return {
      thumbprint: () => jkt,
      async resolve(header: JWTHeaderParameters, token: FlattenedJWSInput): Promise<PublicKey> {
        const { jwk, alg } = header;
        if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk) || !isString(alg)) {
          throw new TypeError('The jwk header of a DPoP proof must be a JSON object.');
        }
        const cacheKey = `${alg} ${JSON.stringify(jwk)}`;
        let entry = imported.get(cacheKey);
        if (entry === undefined) {
          entry = await importKey(header, token);
          if (imported.size >= MAX_KEYS) evictor.dropOldest();
          imported.set(cacheKey, entry);
        }
        jkt = entry.jkt;
        return entry.key;
      },
    };
  };
}
