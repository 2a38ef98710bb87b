// The per-connection message rate limit of the channel protocol: a token bucket.

/** A {@link ChannelRateLimit} once checked: its `interval` in milliseconds. */
export interface CheckedRateLimit {
  readonly messages: number;
  readonly interval: number;
}

/** The state of one connection's bucket. */
export interface TokenBucket {
  /** Tokens left. */
  tokens: number;
  /** When they were last refilled (`performance.now()`). */
  refilledAt: number;
}

/**
 * Takes one token from `bucket`, refilled at `limit.messages` per `limit.interval`
 * milliseconds up to `limit.messages`; `false` when none is left (always `true` without a
 * limit).
 */
export function takeToken(bucket: TokenBucket, limit: CheckedRateLimit | false): boolean {
  if (limit === false) return true;
  const now = performance.now();
  const refill = ((now - bucket.refilledAt) * limit.messages) / limit.interval;
  bucket.tokens = Math.min(limit.messages, bucket.tokens + refill);
  bucket.refilledAt = now;
  if (bucket.tokens < 1) return false;
  bucket.tokens -= 1;
  return true;
}
