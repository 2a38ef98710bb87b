import { randomBytes } from 'node:crypto';

/**
 * The characters of user codes: consonants only (no vowels, so no words; no 0/O or 1/I
 * confusion), as RFC 8628 §6.1 suggests. 20⁸ ≈ 2.6 × 10¹⁰ codes.
 *
 * @example
 * ```ts
 * /^[BCDFGHJKLMNPQRSTVWXZ]{8}$/.test(generateUserCode()); // true: USER_CODE_ALPHABET only
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8628#section-6.1 | RFC 8628 §6.1}
 */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
const USER_CODE_LENGTH = 8;
const USER_CODE_SHAPE = new RegExp(`^[${USER_CODE_ALPHABET}]{${USER_CODE_LENGTH}}$`);
/** Bytes at or above this are dropped, so that `byte % 20` is uniform. */
const SAMPLE_LIMIT = 256 - (256 % USER_CODE_ALPHABET.length);

/**
 * A new user code: 8 characters of {@link USER_CODE_ALPHABET}, each uniform (rejection
 * sampling on `randomBytes`), in normalised form (no dash).
 *
 * @example
 * ```ts
 * formatUserCode(generateUserCode()); // 'WDJB-MJHT'
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8628#section-6.1 | RFC 8628 §6.1}
 */
export function generateUserCode(): string {
  let code = '';
  while (code.length < USER_CODE_LENGTH) {
    for (const byte of randomBytes(16)) {
      if (byte >= SAMPLE_LIMIT) continue;
      code += USER_CODE_ALPHABET[byte % USER_CODE_ALPHABET.length];
      if (code.length === USER_CODE_LENGTH) break;
    }
  }
  return code;
}

/**
 * A user code as typed (any case, dashes and spaces anywhere) in normalised form, or
 * `undefined` when it cannot be one.
 *
 * @example
 * ```ts
 * normalizeUserCode('wdjb-mjht'); // 'WDJBMJHT'
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8628#section-6.1 | RFC 8628 §6.1}
 */
export function normalizeUserCode(input: string): string | undefined {
  if (typeof input !== 'string' || input.length > 64) return undefined;
  const code = input.replace(/[\s-]/g, '').toUpperCase();
  return USER_CODE_SHAPE.test(code) ? code : undefined;
}

/**
 * A normalised user code as shown to people: `XXXX-XXXX`.
 *
 * @example
 * ```ts
 * formatUserCode('WDJBMJHT'); // 'WDJB-MJHT'
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8628#section-6.1 | RFC 8628 §6.1}
 */
export function formatUserCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}
