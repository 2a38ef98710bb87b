import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Middleware, Next } from '../core/compose.js';
import type { Duration } from '../core/duration.js';
import { serviceUnavailable, tooManyRequests } from '../core/errors/errors.js';
import { published, type RateLimitedMessage } from '../diagnostics/channels.js';
import type { TrustProxy } from '../http/proxy.js';
import { setHeadLine } from '../internal/head.js';
import {
  assertKnownOptions,
  booleanOption,
  countOption,
  durationOption,
  functionOption,
  invalidOption,
} from '../internal/options.js';
import { isPromiseLike } from '../internal/promise.js';
import { type GiveBack, giveBackWhenDone } from './give-back.js';
import type { RateLimitHandler, RateLimitInfo } from './info.js';
import { defaultRateLimitKey, principalRateLimitKey, type RateLimitKey } from './key.js';
import { MemoryRateLimitStore } from './memory-store.js';
import type { RateLimitHit, RateLimitStore } from './store.js';

/**
 * Options of {@link rateLimit}.
 *
 * @see {@link https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/ | RateLimit header fields (IETF draft)}
 * @see {@link https://www.rfc-editor.org/rfc/rfc6585#section-4 | RFC 6585 §4}
 */
export interface RateLimitOptions {
  /**
   * Requests allowed per key and window; the next ones get `429 Too Many Requests`.
   * @defaultValue `100`
   */
  limit?: number;
  /**
   * The length of a window, in milliseconds.
   * @defaultValue `60_000` (1 minute)
   */
  windowMs?: Duration;
  /**
   * How windows count. `'fixed'`: a key's window starts with its first request, and its
   * count starts again from zero when the window ends (a client can send twice the limit
   * across a window's end). `'sliding'`: the weighted two-window approximation, windows
   * aligned on the epoch and the previous window's count weighed by how much of it the
   * sliding window still covers, which smooths that burst; the store needs
   * `incrementSliding` ({@link MemoryRateLimitStore} has it).
   * @defaultValue `'fixed'`
   */
  algorithm?: 'fixed' | 'sliding';
  /**
   * What to count by: a key per client (an API key, a user id, a tenant). Returning
   * `undefined` (or `''`) counts the request by client IP address instead.
   * @defaultValue the API key, else the user, of the principal `authenticate()` found
   * ({@link principalRateLimitKey}), else the client IP address ({@link defaultRateLimitKey})
   */
  key?: RateLimitKey;
  /**
   * Which proxies to believe about the client's address, when counting by IP address.
   * @defaultValue `false`: the socket's peer is the client
   */
  trustProxy?: TrustProxy;
  /**
   * Where counts are kept. Share one store across instances of the service (Redis) to
   * count across them.
   * @defaultValue a new {@link MemoryRateLimitStore}
   */
  store?: RateLimitStore;
  /**
   * Whether every limited response carries `X-RateLimit-Limit`, `X-RateLimit-Remaining` and
   * `X-RateLimit-Reset` (seconds until the window ends, as the IETF `RateLimit` field's `t`;
   * not an epoch time).
   * @defaultValue `true`
   */
  headers?: boolean;
  /**
   * Whether every limited response also carries the IETF draft fields `RateLimit-Policy`
   * (`"default";q=100;w=60`) and `RateLimit` (`"default";r=42;t=17`).
   * @defaultValue `false`
   * @see {@link https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/ | RateLimit header fields (IETF draft)}
   */
  standardHeaders?: boolean;
  /**
   * Requests for which this returns `true` are neither counted nor limited (health checks,
   * internal callers).
   * @defaultValue none: every request counts
   */
  skip?: (req: IncomingMessage) => boolean;
  /**
   * Requests for which this returns `true` are not counted, and never refused, but told where
   * their key stands: the headers are set from the store's current count (`peek`; a store
   * without one gives `X-RateLimit-Limit` alone). For requests browsers send on their own,
   * such as CORS preflights.
   * @defaultValue none
   * @example
   * ```ts
   * rateLimit({ report: isPreflightRequest }); // from portico/cors
   * ```
   */
  report?: (req: IncomingMessage) => boolean;
  /**
   * Whether a request answered below 400 is given back to the count once its response is
   * done (only failures count: a login's wrong passwords). The store needs `decrement`.
   * @defaultValue `false`
   */
  skipSuccessfulRequests?: boolean;
  /**
   * Whether a request answered 400 or above (a 429 included), or whose response never
   * finished, is given back to the count once its response is done. The store needs
   * `decrement`.
   * @defaultValue `false`
   */
  skipFailedRequests?: boolean;
  /**
   * Answers a request past the limit, the headers and `Retry-After` set.
   * @defaultValue throws a `429 Too Many Requests` problem
   * @example
   * ```ts
   * rateLimit({ handler: (_req, res, info) => sendJson(res, 429, { retryIn: info.resetSeconds }) });
   * ```
   */
  handler?: RateLimitHandler;
  /**
   * What to do when the store, or the `key` function (a throw or a rejection), fails: `false`
   * answers `503 Service Unavailable` (with `Retry-After`; the error goes to `onError` as its
   * cause), `true` lets the request through unlimited.
   * @defaultValue `false`
   */
  failOpen?: boolean;
}

const KNOWN_OPTIONS = [
  'limit',
  'windowMs',
  'key',
  'trustProxy',
  'store',
  'headers',
  'standardHeaders',
  'skip',
  'report',
  'failOpen',
  'algorithm',
  'skipSuccessfulRequests',
  'skipFailedRequests',
  'handler',
] as const satisfies readonly (keyof RateLimitOptions)[];

const OWNER = 'rateLimit()';

/** Seconds a client is told to wait when the store fails (capped by the window). */
const STORE_RETRY_SECONDS = 5;

function windowText(windowMs: number): string {
  if (windowMs % 1000 !== 0) return `${windowMs} ms`;
  const seconds = windowMs / 1000;
  return seconds === 1 ? 'second' : `${seconds} seconds`;
}

type Count = (key: string) => RateLimitHit | Promise<RateLimitHit>;

function algorithmOption(value: unknown): 'fixed' | 'sliding' {
  if (value === undefined || value === 'fixed' || value === 'sliding') return value ?? 'fixed';
  throw invalidOption(`${OWNER}: \`algorithm\` must be 'fixed' or 'sliding'`);
}

/** Checks that `store` can do what the options ask, and answers how to count with it. */
function counterOf(
  store: RateLimitStore,
  windowMs: number,
  sliding: boolean,
  giveBack: GiveBack,
): Count {
  if (typeof store !== 'object' || store === null || typeof store.increment !== 'function') {
    throw invalidOption(`${OWNER}: \`store\` must have an \`increment(key, windowMs)\` method`);
  }
  if (store.windowMs !== undefined && store.windowMs !== windowMs) {
    throw invalidOption(
      `${OWNER}: \`windowMs\` (${windowMs}) must be the store's window (${store.windowMs})`,
    );
  }
  if ((giveBack.successful || giveBack.failed) && typeof store.decrement !== 'function') {
    throw invalidOption(
      `${OWNER}: \`skipSuccessfulRequests\` and \`skipFailedRequests\` need a store with \`decrement(key)\``,
    );
  }
  if (!sliding) return (key) => store.increment(key, windowMs);
  if (typeof store.incrementSliding !== 'function') {
    throw invalidOption(
      `${OWNER}: \`algorithm: 'sliding'\` needs a store with \`incrementSliding(key, windowMs)\``,
    );
  }
  return (key) => store.incrementSliding!(key, windowMs);
}

/**
 * Limits how many requests each client makes per window: by the key that `key` returns,
 * else by client IP address (an IPv6 client by its /64), in fixed or sliding windows. Every
 * limited response carries `X-RateLimit-Limit`, `X-RateLimit-Remaining` and
 * `X-RateLimit-Reset` (and, as an option, the IETF `RateLimit-Policy` and `RateLimit`
 * fields); a request over the limit is answered `429 Too Many Requests` as a problem, with
 * `Retry-After` in seconds, or by your `handler`.
 *
 * @example
 * ```ts
 * const app = compose([
 *   rateLimit({ limit: 100, windowMs: 60_000, trustProxy: 'loopback' }),
 *   routes,
 * ]);
 * // a login: only failures count, in a sliding window
 * const logins = rateLimit({ limit: 5, windowMs: 900_000, algorithm: 'sliding', skipSuccessfulRequests: true });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6585#section-4 | RFC 6585 §4}
 * @see {@link https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/ | RateLimit header fields (IETF draft)}
 */
export function rateLimit(options: RateLimitOptions = {}): Middleware {
  assertKnownOptions(OWNER, options, KNOWN_OPTIONS);
  const limit = countOption(OWNER, 'limit', options.limit, 100);
  const windowMs = durationOption(OWNER, 'windowMs', options.windowMs, 60_000, { min: 1 });
  const customKey = functionOption(OWNER, 'key', options.key);
  const skip = functionOption(OWNER, 'skip', options.skip);
  const report = functionOption(OWNER, 'report', options.report);
  const handler = functionOption(OWNER, 'handler', options.handler);
  const legacyHeaders = booleanOption(OWNER, 'headers', options.headers, true);
  const standardHeaders = booleanOption(OWNER, 'standardHeaders', options.standardHeaders, false);
  const failOpen = booleanOption(OWNER, 'failOpen', options.failOpen, false);
  const giveBack: GiveBack = {
    successful: booleanOption(
      OWNER,
      'skipSuccessfulRequests',
      options.skipSuccessfulRequests,
      false,
    ),
    failed: booleanOption(OWNER, 'skipFailedRequests', options.skipFailedRequests, false),
  };
  const sliding = algorithmOption(options.algorithm) === 'sliding';
  const store = options.store ?? new MemoryRateLimitStore();
  const count = counterOf(store, windowMs, sliding, giveBack);
  const givesBack = giveBack.successful || giveBack.failed;
  const ipKeyOf = defaultRateLimitKey(options.trustProxy ?? false);

  const limitValue = String(limit);
  const windowSeconds = Math.max(1, Math.ceil(windowMs / 1000));
  const policyValue = `"default";q=${limit};w=${windowSeconds}`;
  const requests = limit === 1 ? 'request' : 'requests';
  const detail = `Rate limit exceeded: at most ${limit} ${requests} per ${windowText(windowMs)}.`;
  const storeRetrySeconds = Math.min(STORE_RETRY_SECONDS, windowSeconds);

  const storeFailed = (error: unknown, next: Next): Promise<void> => {
    if (failOpen) return next();
    throw serviceUnavailable(storeRetrySeconds, 'Rate limiting is unavailable for now.', {
      cause: error,
    });
  };

  const refuse = async (
    req: IncomingMessage,
    res: ServerResponse,
    info: RateLimitInfo,
  ): Promise<void> => {
    if (published.rateLimited.hasSubscribers) {
      const { key, limit, resetAt } = info;
      published.rateLimited.publish({ req, key, limit, resetAt } satisfies RateLimitedMessage);
    }
    if (handler === undefined) throw tooManyRequests(info.resetSeconds, detail);
    setHeadLine(res, 'Retry-After', 'retry-after', info.resetSeconds);
    await handler(req, res, info);
  };

  const answer = (
    hit: RateLimitHit,
    key: string,
    req: IncomingMessage,
    res: ServerResponse,
    next: Next,
    enforce = true,
  ): Promise<void> => {
    const count = hit.count;
    const remaining = count < limit ? limit - count : 0;
    const resetSeconds = Math.max(0, Math.ceil((hit.resetAt - Date.now()) / 1000));
    if (legacyHeaders) {
      setHeadLine(res, 'X-RateLimit-Limit', 'x-ratelimit-limit', limitValue);
      setHeadLine(res, 'X-RateLimit-Remaining', 'x-ratelimit-remaining', remaining);
      setHeadLine(res, 'X-RateLimit-Reset', 'x-ratelimit-reset', resetSeconds);
    }
    if (standardHeaders) {
      setHeadLine(res, 'RateLimit-Policy', 'ratelimit-policy', policyValue);
      setHeadLine(res, 'RateLimit', 'ratelimit', `"default";r=${remaining};t=${resetSeconds}`);
    }
    if (count <= limit || !enforce) return next();
    const resetAt = hit.resetAt;
    return refuse(req, res, {
      key,
      limit,
      count,
      remaining,
      resetAt,
      resetSeconds: Math.max(1, resetSeconds),
    });
  };

  /** Sets the headers from the key's current count, counting nothing; never refuses. */
  const reportOnly = async (
    storeKey: string,
    req: IncomingMessage,
    res: ServerResponse,
    next: Next,
  ): Promise<void> => {
    let hit: RateLimitHit | undefined;
    try {
      hit = await store.peek?.(storeKey);
    } catch {
      return next(); // only a report: a failing store refuses nothing
    }
    if (store.peek === undefined) {
      if (legacyHeaders) setHeadLine(res, 'X-RateLimit-Limit', 'x-ratelimit-limit', limitValue);
      return next();
    }
    const current = hit ?? { count: 0, resetAt: Date.now() + windowMs };
    return answer(current, storeKey, req, res, next, false);
  };

  const limitBy = (
    key: string | undefined,
    req: IncomingMessage,
    res: ServerResponse,
    next: Next,
  ): Promise<void> => {
    const storeKey = key === undefined || key === '' ? ipKeyOf(req) : key;
    if (report?.(req)) return reportOnly(storeKey, req, res, next);
    let hit: RateLimitHit | Promise<RateLimitHit>;
    try {
      hit = count(storeKey);
    } catch (error) {
      return storeFailed(error, next);
    }
    if (isPromiseLike(hit)) {
      return hit.then(
        (h) => {
          if (givesBack) giveBackWhenDone(res, store, storeKey, giveBack);
          return answer(h, storeKey, req, res, next);
        },
        (error: unknown) => storeFailed(error, next),
      );
    }
    if (givesBack) giveBackWhenDone(res, store, storeKey, giveBack);
    return answer(hit, storeKey, req, res, next);
  };

  return function rateLimitMiddleware(req, res, next) {
    if (skip?.(req)) return next();
    if (customKey === undefined) return limitBy(principalRateLimitKey(req), req, res, next);
    // a key that cannot be found (its lookup failed) counts nothing: the store's failure path
    let key: ReturnType<RateLimitKey>;
    try {
      key = customKey(req);
    } catch (error) {
      return storeFailed(error, next);
    }
    if (isPromiseLike(key)) {
      return key.then(
        (k) => limitBy(k, req, res, next),
        (error: unknown) => storeFailed(error, next),
      );
    }
    return limitBy(key, req, res, next);
  };
}
