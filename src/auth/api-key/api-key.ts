import { hash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { assertKnownOptions, invalidOption } from '../../internal/options.js';

/**
 * The prefix of the API keys portico generates when none is given.
 *
 * @example
 * ```ts
 * generateApiKey().startsWith(`${DEFAULT_API_KEY_PREFIX}_`); // true
 * ```
 */
export const DEFAULT_API_KEY_PREFIX = 'ptk';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const PREFIX = /^[a-z][a-z0-9]{1,9}$/;
/** 32 base62 characters: 32 · log2(62) ≈ 190.5 bits. */
const SECRET_LENGTH = 32;
/** The CRC32 (< 2^32 < 62^6) in 6 base62 characters. */
const CHECKSUM_LENGTH = 6;

/**
 * The source of a regular expression matching portico API keys with the default prefix
 * (`ptk_` then 38 base62 characters), for secret scanners (GitHub secret scanning custom
 * patterns, gitleaks, trufflehog). The checksum lets a scanner confirm a match offline with
 * {@link isWellFormedApiKey}, so false positives stay rare.
 *
 * @example
 * ```ts
 * new RegExp(API_KEY_PATTERN, 'g').test(logLine);
 * ```
 */
export const API_KEY_PATTERN = '\\bptk_[0-9A-Za-z]{38}\\b';

/** Options of {@link generateApiKey}, {@link isWellFormedApiKey} and {@link apiKeyPattern}. */
export interface ApiKeyFormatOptions {
  /**
   * The recognisable prefix before the `_`: 2 to 10 characters, a lower-case letter then
   * lower-case letters or digits. Pick one per product (and per environment, say `ptk` and
   * `ptkt`) so that a leaked key tells at once where it belongs.
   * @defaultValue `'ptk'`
   */
  prefix?: string;
}

const FORMAT_OPTIONS = ['prefix'] as const;

function prefixOf(owner: string, options: ApiKeyFormatOptions | undefined): string {
  assertKnownOptions(owner, options, FORMAT_OPTIONS);
  const prefix = options?.prefix ?? DEFAULT_API_KEY_PREFIX;
  if (typeof prefix !== 'string' || !PREFIX.test(prefix)) {
    throw invalidOption(
      `${owner}: \`prefix\` must be 2–10 characters, a lower-case letter then lower-case letters or digits`,
    );
  }
  return prefix;
}

/**
 * `length` random base62 characters, without modulo bias: bytes of 248 or more (62 · 4) are
 * drawn again, so each character is uniform over the 62.
 *
 * @example
 * ```ts
 * const id = `key_${randomBase62(16)}`;
 * ```
 * @internal
 */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length + 8)) {
      if (byte >= 248) continue;
      out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

function checksum(body: string): string {
  const bytes = Buffer.from(body, 'latin1');
  // `zlib.crc32`: Node 20.15+, which `engines.node` (^20.19.0 || >=22.12.0) guarantees
  let crc = crc32(bytes);
  let out = '';
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = BASE62[crc % 62] + out;
    crc = Math.floor(crc / 62);
  }
  return out;
}

/**
 * Generates a new API key: `<prefix>_<secret><checksum>`, like GitHub's tokens. The secret is
 * 32 base62 characters from `crypto.randomBytes` (≈ 190 bits); the checksum is the CRC32 of
 * `<prefix>_<secret>` in 6 base62 characters, so scanners and `apiKeyAuth` can tell a
 * key from a typo or a random string without a lookup. The key is shown once; store only
 * {@link hashApiKey} of it (or use `createApiKey`, which does).
 *
 * @example
 * ```ts
 * const key = generateApiKey(); // 'ptk_…' (42 characters)
 * const staging = generateApiKey({ prefix: 'ptks' });
 * ```
 * @see {@link https://github.blog/engineering/platform-security/behind-githubs-new-authentication-token-formats/ | GitHub's authentication token formats}
 */
export function generateApiKey(options?: ApiKeyFormatOptions): string {
  const prefix = prefixOf('generateApiKey()', options);
  const body = `${prefix}_${randomBase62(SECRET_LENGTH)}`;
  return body + checksum(body);
}

/**
 * Whether `key` has the shape of a portico API key with this prefix and a correct checksum.
 * Cheap and offline: it says nothing about whether the key exists (the store does). The
 * checksum is not a secret (anyone holding the key can compute it), so a plain compare is
 * right here.
 *
 * @example
 * ```ts
 * isWellFormedApiKey(generateApiKey()); // true
 * isWellFormedApiKey('ptk_not-a-key');  // false
 * ```
 */
export function isWellFormedApiKey(key: unknown, options?: ApiKeyFormatOptions): boolean {
  const prefix = prefixOf('isWellFormedApiKey()', options);
  return typeof key === 'string' && hasValidChecksum(key, `${prefix}_`);
}

const BASE62_RUN = /^[0-9A-Za-z]+$/;

/**
 * {@link isWellFormedApiKey} for a marker (`<prefix>_`) whose prefix is already validated
 * (apiKeyAuth's, checked once when it is built): no options object per request.
 * @internal
 */
export function hasValidChecksum(key: string, marker: string): boolean {
  const length = marker.length + SECRET_LENGTH + CHECKSUM_LENGTH;
  if (key.length !== length || !key.startsWith(marker)) return false;
  if (!BASE62_RUN.test(key.slice(marker.length))) return false;
  return checksum(key.slice(0, length - CHECKSUM_LENGTH)) === key.slice(length - CHECKSUM_LENGTH);
}

/**
 * A new global regular expression matching API keys with this prefix, for scanning text
 * (logs, repositories) for leaked keys. Confirm each match with {@link isWellFormedApiKey}.
 *
 * @example
 * ```ts
 * const leaked = [...text.matchAll(apiKeyPattern())]
 *   .map((m) => m[0])
 *   .filter((k) => isWellFormedApiKey(k));
 * ```
 */
export function apiKeyPattern(options?: ApiKeyFormatOptions): RegExp {
  const prefix = prefixOf('apiKeyPattern()', options);
  return new RegExp(`\\b${prefix}_[0-9A-Za-z]{${SECRET_LENGTH + CHECKSUM_LENGTH}}\\b`, 'g');
}

/**
 * The hash under which an API key is stored and looked up: SHA-256, base64url. A fast hash
 * is the right one for generated keys: with ≈ 190 random bits there is nothing to guess,
 * so a slow password hash (scrypt) would only cost CPU on every request. Keys chosen by
 * people are another matter: import only high-entropy keys (see `importApiKey`).
 *
 * @example
 * ```ts
 * await store.findByHash(hashApiKey(presented));
 * ```
 */
export function hashApiKey(key: string): string {
  if (typeof key !== 'string') throw invalidOption('hashApiKey(): the key must be a string');
  return hash('sha256', key, 'base64url'); // one call: no Hash object per request
}
