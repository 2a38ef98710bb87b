import type { IncomingMessage } from 'node:http';
import contentType from 'content-type';
import type { Middleware } from '../core/compose.js';
import { createContextKey, getContextValue, setContextValue } from '../core/context.js';
import type { Duration } from '../core/duration.js';
import { contentTooLarge, internalError, unsupportedMediaType } from '../core/errors/errors.js';
import { DEFAULT_BODY_LIMIT, readBody } from '../http/body/body.js';
import {
  assertGivenOptions,
  assertKnownOptions,
  countOption,
  durationOption,
  invalidOption,
} from '../internal/options.js';
import { webhookKeys } from './secret.js';
import { type VerifiedWebhook, verifyWithKeys } from './signature.js';

/** Options of {@link verifyWebhooks}. */
export interface WebhookReceiverOptions {
  /**
   * The signing secret (`whsec_…`), or several while the sender rotates them: a request
   * passes when one of its signatures matches one of these.
   */
  secret: string | readonly string[];
  /**
   * How far, in milliseconds, the `webhook-timestamp` may be from now, in either direction.
   * @defaultValue `300_000` (5 minutes)
   */
  tolerance?: Duration;
  /**
   * Largest body accepted, in bytes; over it the answer is a 413 problem.
   * @defaultValue `1_048_576` (1 MiB)
   */
  limit?: number;
}

const OWNER = 'verifyWebhooks()';
const KNOWN = [
  'secret',
  'tolerance',
  'limit',
] as const satisfies readonly (keyof WebhookReceiverOptions)[];
const webhookKey = createContextKey<VerifiedWebhook>('webhook');

/** Why the body is gone, for the developer (logged through the `logger`, never sent to the caller). */
const CONSUMED =
  'verifyWebhooks() needs the exact bytes of the request body, but a body parser ' +
  '(express.json(), koa-bodyparser, …) already read them. Mount the webhook receiver before ' +
  'any body parser, or keep the parsers off its path (express.raw() is fine: its Buffer is used).';

function isJson(header: string | undefined): boolean {
  if (header === undefined) return false;
  try {
    const { type, parameters } = contentType.parse(header);
    const charset = parameters.charset?.toLowerCase();
    return (
      (type === 'application/json' || type.endsWith('+json')) &&
      (charset === undefined || charset === 'utf-8' || charset === 'utf8')
    );
  } catch {
    return false;
  }
}

/** The body bytes: read here, or the Buffer `express.raw()` left in `req.body`. */
async function rawBodyOf(req: IncomingMessage, limit: number): Promise<Buffer> {
  const given = (req as { body?: unknown }).body;
  if (req.readableEnded && Buffer.isBuffer(given)) {
    if (given.length > limit) {
      throw contentTooLarge(`The request body is larger than the limit of ${limit} bytes.`);
    }
    return given;
  }
  try {
    return await readBody(req, { limit });
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'ERR_BODY_CONSUMED') throw err;
    throw internalError(undefined, { code: 'ERR_BODY_CONSUMED', cause: new Error(CONSUMED) });
  }
}

/**
 * Receives Standard Webhooks: requires a JSON `Content-Type` (else 415), reads the exact
 * body within `limit` (else 413), verifies id, timestamp and signature with
 * {@link verifyWebhook}, stores the result for {@link getWebhook} and calls `next()`. A
 * request that fails is answered with a 400 (headers missing or malformed, body not JSON)
 * or a 401 problem with `WWW-Authenticate: Webhook` (signature or timestamp), thrown as a
 * `WebhookVerificationError`.
 *
 * Mount it *before* any body parser: if the body was already consumed (`express.json()`),
 * the request fails with a 500 whose cause, logged through the `logger` and never shown to the
 * caller, says so. An invalid option or secret is a `TypeError` when the middleware is built.
 *
 * @example
 * ```ts
 * app.post('/webhooks', toExpress([
 *   verifyWebhooks({ secret: process.env.WEBHOOK_SECRET! }),
 *   (req, res) => {
 *     const { id, payload } = getWebhook(req)!;
 *     if (!seen(id)) handle(payload);
 *     res.statusCode = 204;
 *     res.end();
 *   },
 * ]));
 * app.use(express.json()); // after: the receiver needs the raw bytes
 * ```
 * @see {@link https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md#verifying-signatures | Standard Webhooks: verifying signatures}
 */
export function verifyWebhooks(options: WebhookReceiverOptions): Middleware {
  assertKnownOptions(OWNER, options, KNOWN);
  if (options === null || typeof options !== 'object') {
    throw invalidOption(`${OWNER}: options with a \`secret\` are required.`);
  }
  assertGivenOptions(OWNER, options, ['secret']);
  const keys = webhookKeys(options.secret);
  const tolerance = durationOption(OWNER, 'tolerance', options.tolerance, 300_000);
  const limit = countOption(OWNER, 'limit', options.limit, DEFAULT_BODY_LIMIT, { min: 0 });
  return async function webhookReceiver(req, _res, next) {
    if (!isJson(req.headers['content-type'])) {
      throw unsupportedMediaType('A webhook body must be JSON (Content-Type application/json).');
    }
    const body = await rawBodyOf(req, limit);
    const webhook = verifyWithKeys(keys, body, req.headersDistinct, tolerance);
    setContextValue(req, webhookKey, webhook);
    await next();
  };
}

/**
 * The webhook that {@link verifyWebhooks} verified for this request, if any.
 *
 * @example
 * ```ts
 * const webhook = getWebhook<{ type: string }>(req);
 * if (webhook?.payload.type === 'invoice.paid') markPaid(webhook.payload);
 * ```
 */
export function getWebhook<T = unknown>(req: IncomingMessage): VerifiedWebhook<T> | undefined {
  return getContextValue(req, webhookKey) as VerifiedWebhook<T> | undefined;
}
