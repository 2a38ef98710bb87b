import { badRequest, type HttpError, PorticoError, unauthorized } from '../core/errors/errors.js';

/**
 * The stable codes of {@link WebhookVerificationError}.
 *
 * @example
 * ```ts
 * if (err instanceof WebhookVerificationError && err.code === WEBHOOK_VERIFICATION_CODES.expired) retryLater();
 * ```
 * @see {@link https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md#verifying-signatures | Standard Webhooks: verifying signatures}
 */
export const WEBHOOK_VERIFICATION_CODES = {
  /** `webhook-id`, `webhook-timestamp` or `webhook-signature` is missing or malformed. */
  headers: 'ERR_WEBHOOK_HEADERS',
  /** The timestamp is outside the tolerance (a replay, or a clock far off). */
  timestamp: 'ERR_WEBHOOK_TIMESTAMP',
  /** No listed `v1` signature matches the body under any of the secrets. */
  signature: 'ERR_WEBHOOK_SIGNATURE',
  /** The signed body is not JSON. */
  payload: 'ERR_WEBHOOK_PAYLOAD',
} as const;

/** What failed in a webhook verification: a key of {@link WEBHOOK_VERIFICATION_CODES}. */
export type WebhookVerificationFailure = keyof typeof WEBHOOK_VERIFICATION_CODES;

/**
 * A webhook request that failed verification. The message says what failed in general terms,
 * never a secret or a signature.
 *
 * @example
 * ```ts
 * try {
 *   verifyWebhook(secret, body, req.headers);
 * } catch (err) {
 *   if (err instanceof WebhookVerificationError) return sendError(res, err.toHttpError());
 *   throw err;
 * }
 * ```
 * @see {@link https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md#verifying-signatures | Standard Webhooks: verifying signatures}
 */
export class WebhookVerificationError extends PorticoError {
  /** What failed. */
  readonly failure: WebhookVerificationFailure;
  declare readonly code: (typeof WEBHOOK_VERIFICATION_CODES)[WebhookVerificationFailure];

  constructor(failure: WebhookVerificationFailure, message: string) {
    super(message, WEBHOOK_VERIFICATION_CODES[failure]);
    this.failure = failure;
  }

  /**
   * The HTTP answer: 400 for missing headers or a body that is not JSON, 401 for a signature
   * or timestamp that does not verify (`WWW-Authenticate: Webhook`). `sendError` calls it.
   */
  toHttpError(): HttpError {
    const extra = { code: this.code, typeSlug: `webhook-${this.failure}` };
    if (this.failure === 'headers' || this.failure === 'payload') {
      return badRequest(this.message, extra);
    }
    return unauthorized(this.message, { ...extra, challenge: 'Webhook' });
  }
}

/**
 * Why an address was refused as a webhook destination.
 *
 * @example
 * ```ts
 * const reason: WebhookAddressReason = 'private';
 * ```
 */
export type WebhookAddressReason =
  /** Not an absolute `http:`/`https:` URL, or one with credentials. */
  | 'invalid-url'
  /** `http:` while `allowHttp` is off. */
  | 'insecure-scheme'
  /** Loopback, private, link-local, unique-local, multicast, unspecified, reserved, or a mapped form of one. */
  | 'private'
  /** The host name does not resolve. */
  | 'unresolvable';

/**
 * A webhook destination refused by the address guard (server-side request forgery). The
 * message names the host and the kind of address, never a path or query.
 *
 * @example
 * ```ts
 * try {
 *   await assertWebhookUrl(url);
 * } catch (err) {
 *   if (err instanceof WebhookAddressError) throw unprocessable([{ field: 'url', message: err.message }]);
 * }
 * ```
 */
export class WebhookAddressError extends PorticoError {
  /** Why the address was refused. */
  readonly reason: WebhookAddressReason;
  declare readonly code: 'ERR_WEBHOOK_ADDRESS';

  constructor(reason: WebhookAddressReason, message: string) {
    super(message, 'ERR_WEBHOOK_ADDRESS');
    this.reason = reason;
  }
}
