/**
 * Rate limits: a fixed- or sliding-window limiter keyed by client (by IP address through trusted
 * proxies, an IPv6 client by its /64), its `X-RateLimit-*` and IETF `RateLimit` fields,
 * `429` problems with `Retry-After`, the store interface with its in-memory store, and
 * express-rate-limit's stores through an adapter.
 *
 * @module portico/rate-limit
 */
export {
  type ExpressRateLimitInfo,
  type ExpressRateLimitStore,
  type FromExpressRateLimitStoreOptions,
  fromExpressRateLimitStore,
} from './express-store.js';
export type { RateLimitHandler, RateLimitInfo } from './info.js';
export {
  defaultRateLimitKey,
  ipKey,
  principalRateLimitKey,
  type RateLimitKey,
} from './key.js';
export {
  MemoryRateLimitStore,
  type MemoryRateLimitStoreOptions,
  /** @deprecated Renamed {@link MemoryRateLimitStore}; this alias goes in the next minor release. */
  MemoryStore,
  /** @deprecated Renamed {@link MemoryRateLimitStoreOptions}. */
  type MemoryStoreOptions,
} from './memory-store.js';
export {
  type RateLimitOptions,
  rateLimit,
} from './rate-limit.js';
export type { RateLimitHit, RateLimitStore } from './store.js';
