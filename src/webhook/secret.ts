import { createSecretKey, type KeyObject, randomBytes } from 'node:crypto';

const PREFIX = 'whsec_';
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const MIN_SECRET_BYTES = 24;
/** Visible ASCII; the spec asks senders to keep `.` out of ids (the signed text is `id.ts.body`). */

/** A `TypeError` with a Node-style `code`, for a bad argument. */
export function argError(message: string, code = 'ERR_INVALID_ARG_VALUE'): TypeError {
  return Object.assign(new TypeError(message), { code });
}

const keys = new Map<string, KeyObject>();
const KEY_CACHE_SIZE = 64;
/** The secret used last (at the back of `keys`). */
let newest: string | undefined;

/** The HMAC key of one secret, decoded once and kept in a small LRU cache. */
function keyOf(secret: unknown, what: string): KeyObject {
  if (typeof secret !== 'string') {
    throw argError(`The webhook ${what} must be a string.`, 'ERR_INVALID_ARG_TYPE');
  }
  const cached = keys.get(secret);
  if (cached !== undefined) {
    // least recently used goes first: a hit moves to the back, unless it is there already
    // (a delete and set per message would rebuild the map's table every few messages)
    if (secret !== newest) {
      keys.delete(secret);
      keys.set(secret, cached);
      newest = secret;
    }
    return cached;
  }
  const text = secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret;
  const bytes = BASE64.test(text) ? Buffer.from(text, 'base64') : undefined;
  if (bytes === undefined || bytes.length < MIN_SECRET_BYTES) {
    bytes?.fill(0);
    throw argError(
      `The webhook ${what} must be \`whsec_\` followed by the base64 of ${MIN_SECRET_BYTES} bytes or more.`,
    );
  }
  const key = createSecretKey(bytes);
  bytes.fill(0);
  keys.set(secret, key);
  newest = secret;
  if (keys.size > KEY_CACHE_SIZE) keys.delete(keys.keys().next().value as string);
  return key;
}

/**
 * The HMAC keys of one secret or a list of them (validated, cached).
 * @internal shared with the receiver; not part of the public API
 */
export function webhookKeys(secrets: string | readonly string[]): readonly KeyObject[] {
  if (typeof secrets === 'string') return [keyOf(secrets, 'secret')];
  if (!Array.isArray(secrets) || secrets.length === 0) {
    throw argError('Give a webhook secret, or a non-empty list of them.', 'ERR_INVALID_ARG_TYPE');
  }
  return secrets.map((secret, i) => keyOf(secret, `secret at index ${i}`));
}

/**
 * A new signing secret: `whsec_` and the base64 of 32 random bytes. Give it to the receiver
 * once, over a secure channel; store it as you would a password you must be able to read.
 *
 * @example
 * ```ts
 * const secret = generateWebhookSecret(); // 'whsec_3q2+7w…'
 * ```
 * @see {@link https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md#signature-scheme | Standard Webhooks: signature scheme}
 */
export function generateWebhookSecret(): string {
  return PREFIX + randomBytes(32).toString('base64');
}
