import { createHmac, type KeyObject, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Duration } from '../core/duration.js';
import { durationOption, functionOption } from '../internal/options.js';
import { WebhookVerificationError } from './errors.js';
import { argError, webhookKeys } from './secret.js';

/**
 * What is signed: the `webhook-id`, the `webhook-timestamp` and the exact body bytes.
 *
 * @see {@link https://www.standardwebhooks.com/ | Standard Webhooks}
 */
export interface WebhookMessage {
  /** The message id, the same on every retry: 1–256 visible ASCII characters, no `.`. */
  id: string;
  /** When this attempt is made, in whole seconds since the Unix epoch. */
  timestamp: number;
  /** The body exactly as sent (a string is signed as its UTF-8 bytes). */
  body: string | Buffer;
}

/**
 * The three headers of a signed webhook request, from {@link webhookHeaders}.
 *
 * @see {@link https://www.standardwebhooks.com/ | Standard Webhooks}
 */
export type WebhookHeaders = {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
};

/**
 * A webhook that passed {@link verifyWebhook}.
 *
 * @see {@link https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md#verifying-signatures | Standard Webhooks: verifying signatures}
 */
export interface VerifiedWebhook<T = unknown> {
  /** The `webhook-id`: an idempotency key, the same on every retry. */
  id: string;
  /** The `webhook-timestamp` of this attempt, in seconds since the Unix epoch. */
  timestamp: number;
  /** The body, parsed as JSON. */
  payload: T;
}

/**
 * Options of {@link verifyWebhook}.
 *
 * @see {@link https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md#verifying-signatures | Standard Webhooks: verifying signatures}
 */
export interface VerifyWebhookOptions {
  /**
   * How far, in milliseconds, the `webhook-timestamp` may be from now, in either direction;
   * older is refused as a replay, newer as a clock too far off. The header counts whole
   * seconds, so is the current time (rounded down) it is compared with.
   * @defaultValue `300_000` (5 minutes)
   */
  tolerance?: Duration;
  /**
   * The current time in milliseconds since the epoch (for tests).
   * @defaultValue `Date.now`
   */
  now?: () => number;
}

/** Request headers as node, fetch or a plain record hold them. */
export type WebhookHeaderSource =
  | IncomingHttpHeaders
  | Headers
  | Readonly<Record<string, string | readonly string[] | undefined>>;

const SIGN_ID = /^[\x21-\x2d\x2f-\x7e]{1,256}$/;
const VERIFY_ID = /^[\x21-\x7e]{1,256}$/;
const TIMESTAMP = /^\d{1,15}$/;

function hmac(key: KeyObject, id: string, timestamp: number, body: string | Buffer): string {
  return createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64');
}

/**
 * The `webhook-signature` header value for one message: `v1,<base64 HMAC-SHA256 of
 * "id.timestamp.body">`, one per secret, space-separated (sign with the old and the new
 * secret while rotating). Throws a `TypeError` (`code` `ERR_INVALID_ARG_VALUE` or
 * `ERR_INVALID_ARG_TYPE`) for an invalid secret, id, timestamp or body; the message never
 * quotes a secret.
 *
 * @example
 * ```ts
 * const signature = signWebhook(secret, { id: 'msg_2KWPBg', timestamp: Math.floor(Date.now() / 1000), body });
 * ```
 * @see {@link https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md#signature-scheme | Standard Webhooks: signature scheme}
 */
export function signWebhook(secrets: string | readonly string[], message: WebhookMessage): string {
  const { id, timestamp, body } = message;
  if (typeof id !== 'string' || !SIGN_ID.test(id)) {
    throw argError('The webhook id must be 1–256 visible ASCII characters, without `.`.');
  }
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) {
    throw argError('The webhook timestamp must be a whole, non-negative number of seconds.');
  }
  if (typeof body !== 'string' && !Buffer.isBuffer(body)) {
    throw argError('The webhook body must be a string or a Buffer.', 'ERR_INVALID_ARG_TYPE');
  }
  const keys = webhookKeys(secrets);
  if (keys.length === 1) return `v1,${hmac(keys[0]!, id, timestamp, body)}`;
  return keys.map((key) => `v1,${hmac(key, id, timestamp, body)}`).join(' ');
}

/**
 * The `webhook-id`, `webhook-timestamp` and `webhook-signature` headers of a delivery, as a
 * plain record to spread into the request's headers.
 *
 * @example
 * ```ts
 * const body = JSON.stringify({ type: 'invoice.paid', data: { id: 'inv_1' } });
 * const headers = webhookHeaders(secret, { id: 'msg_1', timestamp: Math.floor(Date.now() / 1000), body });
 * await fetch(url, { method: 'POST', body, headers: { ...headers, 'content-type': 'application/json' } });
 * ```
 * @see {@link https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md#webhook-headers-sending-metadata-to-consumers | Standard Webhooks: webhook headers sending metadata to consumers}
 */
export function webhookHeaders(
  secrets: string | readonly string[],
  message: WebhookMessage,
): WebhookHeaders {
  const signature = signWebhook(secrets, message);
  return {
    'webhook-id': message.id,
    'webhook-timestamp': String(message.timestamp),
    'webhook-signature': signature,
  };
}

const NAMES = ['id', 'timestamp', 'signature'] as const;

/** The three values, under `webhook-*` names, or `svix-*` when no `webhook-*` one is there. */
function readHeaders(source: WebhookHeaderSource): Record<(typeof NAMES)[number], string> {
  const found = new Map<string, string[]>();
  const entries =
    typeof (source as Headers).get === 'function'
      ? (source as Headers).entries() // names lower-case, repeated values joined by `, `
      : Object.entries(source);
  for (const [name, value] of entries) {
    const lower = name.toLowerCase();
    if (value !== undefined) found.set(lower, (found.get(lower) ?? []).concat(value));
  }
  const prefix = NAMES.some((n) => found.has(`webhook-${n}`)) ? 'webhook-' : 'svix-';
  const out = {} as Record<(typeof NAMES)[number], string>;
  for (const name of NAMES) {
    const values = found.get(prefix + name) ?? [];
    if (values.length > 1) failHeaders(`The webhook-${name} header appears more than once.`);
    if (!values[0]) failHeaders(`The webhook-${name} header is missing.`);
    out[name] = values[0];
  }
  return out;
}

function failHeaders(message: string): never {
  throw new WebhookVerificationError('headers', message);
}

const dropPoisonKeys = (key: string, value: unknown) =>
  key === '__proto__' || key === 'constructor' || key === 'prototype' ? undefined : value;

const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * Verifies a Standard Webhooks request: the headers are there once each and well-formed
 * (else `headers`), the timestamp is within `tolerance` of now (else `timestamp`), one of
 * the `v1` signatures matches the exact body under one of the secrets, compared in constant
 * time (else `signature`; other versions such as `v1a` are skipped), and only then that the
 * body is JSON (else `payload`). Each failure is a {@link WebhookVerificationError}, which
 * renders itself as a 400 or 401 problem. Header names are matched case-insensitively; the
 * `svix-*` names are read when no `webhook-*` header is present.
 *
 * @example
 * ```ts
 * const { id, payload } = verifyWebhook(process.env.WEBHOOK_SECRET!, rawBody, req.headers);
 * ```
 * @see {@link https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md#verifying-signatures | Standard Webhooks: verifying signatures}
 */
export function verifyWebhook<T = unknown>(
  secrets: string | readonly string[],
  rawBody: string | Buffer,
  headers: WebhookHeaderSource,
  options: VerifyWebhookOptions = {},
): VerifiedWebhook<T> {
  const keys = webhookKeys(secrets);
  const tolerance = durationOption('verifyWebhook()', 'tolerance', options.tolerance, 300_000);
  const now = functionOption('verifyWebhook()', 'now', options.now) ?? Date.now;
  return verifyWithKeys<T>(keys, rawBody, headers, tolerance, now);
}

/**
 * {@link verifyWebhook} with keys and options already resolved (`tolerance` in milliseconds).
 * @internal shared with the receiver; not part of the public API
 */
export function verifyWithKeys<T>(
  keys: readonly KeyObject[],
  rawBody: string | Buffer,
  headers: WebhookHeaderSource,
  tolerance: number,
  now: () => number = Date.now,
): VerifiedWebhook<T> {
  if (typeof rawBody !== 'string' && !Buffer.isBuffer(rawBody)) {
    throw argError('The webhook body must be a string or a Buffer.', 'ERR_INVALID_ARG_TYPE');
  }
  const { id, timestamp: stamp, signature } = readHeaders(headers);
  if (!VERIFY_ID.test(id)) failHeaders('The webhook-id header is not a valid message id.');
  if (!TIMESTAMP.test(stamp)) {
    failHeaders('The webhook-timestamp header is not a whole number of seconds.');
  }
  const candidates = signature.split(' ').filter((part) => part !== '');
  if (candidates.length === 0 || candidates.some((c) => !/^[^,]+,[^,]+$/.test(c))) {
    failHeaders('The webhook-signature header is malformed.');
  }
  const timestamp = Number(stamp);
  const seconds = Math.floor(now() / 1000);
  if (Math.abs(seconds - timestamp) * 1000 > tolerance) {
    const when = timestamp < seconds ? 'too old' : 'in the future';
    throw new WebhookVerificationError('timestamp', `The webhook timestamp is ${when}.`);
  }
  const expected = keys.map((key) => Buffer.from(hmac(key, id, timestamp, rawBody), 'latin1'));
  let matched = false;
  for (const candidate of candidates) {
    if (!candidate.startsWith('v1,')) continue;
    // UTF-8, not latin1: latin1 keeps only the low byte of each character, so a copy of the
    // signature with every character shifted by 256 (a header from a record) would match
    const given = Buffer.from(candidate.slice(3), 'utf8');
    for (const want of expected) {
      if (given.length === want.length && timingSafeEqual(given, want)) matched = true;
    }
  }
  if (!matched) {
    throw new WebhookVerificationError('signature', 'No webhook signature matches the request.');
  }
  let payload: T;
  try {
    const text = typeof rawBody === 'string' ? rawBody : decoder.decode(rawBody);
    payload = (
      /__proto__|constructor|prototype|\\u/.test(text)
        ? JSON.parse(text, dropPoisonKeys)
        : JSON.parse(text)
    ) as T;
  } catch {
    throw new WebhookVerificationError('payload', 'The webhook payload is not valid JSON.');
  }
  return { id, timestamp, payload };
}
