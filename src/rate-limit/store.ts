/**
 * The count of one key in its current window, as a {@link RateLimitStore} reports it right
 * after counting a request.
 */
export interface RateLimitHit {
  /** Requests counted for the key in the current window, this one included (1 or more). */
  count: number;
  /** When the current window ends and the count starts again from zero, in epoch ms. */
  resetAt: number;
}

/**
 * Where a rate limiter keeps its counters: fixed windows, one per key. `increment` must be
 * atomic (count the request and, for the first request of a window, start the window's
 * expiry in one step), so that concurrent requests never share a count: this is what makes
 * a limit of 5 let exactly 5 of 20 simultaneous requests through.
 *
 * A store may answer synchronously (the in-memory one does, which spares a promise per
 * request) or with a promise (a network store). A Redis store fits in one Lua script:
 *
 * ```lua
 * local count = redis.call('INCR', KEYS[1])
 * if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
 * return { count, redis.call('PTTL', KEYS[1]) } -- resetAt = now + pttl
 * ```
 *
 * @example
 * ```ts
 * const store: RateLimitStore = {
 *   increment(key, windowMs) {
 *     return redis.evalsha(sha, 1, key, windowMs).then(([count, ttl]) => ({
 *       count,
 *       resetAt: Date.now() + ttl,
 *     }));
 *   },
 * };
 * app.use(rateLimit({ store }));
 * ```
 */
export interface RateLimitStore {
  /**
   * Counts one request for `key` and answers the key's count in its current window. When
   * the key has no window, or its window has ended, a new window of `windowMs` starts with
   * a count of 1.
   */
  increment(key: string, windowMs: number): RateLimitHit | Promise<RateLimitHit>;
  /**
   * The count of `key` in its current window without counting anything, or `undefined` when
   * it has none. Optional: the rate limiter does not need it; lockouts (the device page's
   * wrong user codes) do.
   */
  peek?(key: string): RateLimitHit | undefined | Promise<RateLimitHit | undefined>;
  /**
   * Counts one request for `key` in a sliding window, the weighted two-window approximation:
   * windows of `windowMs` aligned on the epoch, and a count of `floor(previous × (1 − elapsed
   * / windowMs)) + current`, where `elapsed` is the time since the current window began;
   * `resetAt` is when the current window ends. Optional: `rateLimit({ algorithm: 'sliding' })`
   * needs it.
   */
  incrementSliding?(key: string, windowMs: number): RateLimitHit | Promise<RateLimitHit>;
  /**
   * Gives back one request counted for `key` in its current window (never below zero).
   * Optional: `skipSuccessfulRequests` and `skipFailedRequests` need it.
   */
  decrement?(key: string): void | Promise<void>;
  /**
   * The one window length the store counts with, in milliseconds, when it is fixed when the
   * store is made (an express-rate-limit store is); `rateLimit()` refuses another `windowMs`.
   */
  readonly windowMs?: number;
  /** Forgets the count of `key` (to lift a limit by hand, or in tests). */
  reset?(key: string): void | Promise<void>;
  /** Releases what the store holds (timers, connections). */
  close?(): void | Promise<void>;
}
