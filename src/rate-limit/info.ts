import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Where a key stands when it goes past its limit, as the `handler` option of `rateLimit()`
 * receives it.
 *
 * @example
 * ```ts
 * const handler = (_req: IncomingMessage, res: ServerResponse, info: RateLimitInfo) =>
 *   sendJson(res, 429, { error: 'slow down', retryInSeconds: info.resetSeconds });
 * ```
 */
export interface RateLimitInfo {
  /** The key counted (`ip:…`, `key:…`, `user:…`, or the `key` option's). */
  key: string;
  /** Requests allowed per window. */
  limit: number;
  /** Requests counted in the window, this one included. */
  count: number;
  /** Requests left in the window: 0 past the limit. */
  remaining: number;
  /** When the window ends, in epoch milliseconds. */
  resetAt: number;
  /** Whole seconds until the window ends (at least 1), as `Retry-After` tells. */
  resetSeconds: number;
}

/**
 * Answers a request past the limit, in place of the default `429` problem. The rate-limit
 * headers and `Retry-After` are already set.
 *
 * @example
 * ```ts
 * const handler: RateLimitHandler = (_req, res) => sendJson(res, 429, { error: 'slow down' });
 * ```
 */
export type RateLimitHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  info: RateLimitInfo,
) => void | Promise<void>;
