// Values sealed with the deployment's keys (AES-256-GCM through jose's JWE, `dir`): the sign-in
// transaction in its cookie, and the provider's tokens kept with a session. The first key seals,
// every key opens, so that a key is rotated by putting the new one first.
import { hkdfSync } from 'node:crypto';
import { loadJose } from '../internal/lazy.js';
import { invalidOption, secretKeyOption } from '../internal/options.js';

/** One key, or several (the first seals; all open, for rotation). */
export type SealKeys = string | Uint8Array | readonly (string | Uint8Array)[];

/** Seals and opens JSON values for one purpose. */
export interface Sealer {
  /** The value as a compact JWE, opened by {@link Sealer.open} until `ttlMs` have passed. */
  seal(value: Record<string, unknown>, ttlMs: number): Promise<string>;
  /** The value sealed in `sealed`, or `undefined` when it is not ours, altered or expired. */
  open(sealed: unknown): Promise<Record<string, unknown> | undefined>;
}

const MAX_SEALED_LENGTH = 16_384;

/**
 * A sealer for `purpose` (keys derived per purpose, so that a value sealed for one purpose never
 * opens as another).
 */
export function createSealer(owner: string, name: string, keys: unknown, purpose: string): Sealer {
  const list = Array.isArray(keys) ? keys : [keys];
  if (list.length === 0 || list.some((key) => key === undefined)) {
    throw invalidOption(`${owner}: \`${name}\` is required (32 bytes or more)`);
  }
  // each key checked as every secret option is (an unset one would be a random key per process)
  const derived = list.map((key) => {
    const bytes = secretKeyOption(owner, name, key as string | Uint8Array);
    return new Uint8Array(hkdfSync('sha256', bytes, '', `portico ${purpose}`, 32));
  });
  return {
    async seal(value, ttlMs) {
      const { EncryptJWT } = await loadJose();
      return new EncryptJWT(value)
        .setProtectedHeader({ alg: 'dir', enc: 'A256GCM' })
        .setExpirationTime(new Date(Date.now() + ttlMs))
        .encrypt(derived[0] as Uint8Array);
    },
    async open(sealed) {
      if (typeof sealed !== 'string' || sealed === '' || sealed.length > MAX_SEALED_LENGTH) {
        return undefined;
      }
      const { jwtDecrypt } = await loadJose();
      for (const key of derived) {
        try {
          const { payload } = await jwtDecrypt(sealed, key, {
            keyManagementAlgorithms: ['dir'],
            contentEncryptionAlgorithms: ['A256GCM'],
            requiredClaims: ['exp'],
          });
          const { exp: _exp, ...value } = payload;
          return value;
        } catch {
          // another key, or not ours
        }
      }
      return undefined;
    },
  };
}
