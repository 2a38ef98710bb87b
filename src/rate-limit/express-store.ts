import type { Duration } from '../core/duration.js';
import { assertKnownOptions, durationOption, invalidOption } from '../internal/options.js';
import { isPromiseLike } from '../internal/promise.js';
import type { RateLimitHit, RateLimitStore } from './store.js';

/**
 * What an express-rate-limit store answers for a key (its `ClientRateLimitInfo`).
 *
 * @example
 * ```ts
 * const info: ExpressRateLimitInfo = { totalHits: 3, resetTime: new Date(Date.now() + 60_000) };
 * ```
 */
export interface ExpressRateLimitInfo {
  totalHits: number;
  resetTime: Date | undefined;
}

/**
 * The store contract of express-rate-limit (v7 and v8), as its stores implement it
 * (`rate-limit-redis`, `rate-limit-postgresql`, `@acpr/rate-limit-postgresql`, …): a window
 * fixed by `init({ windowMs })`, and `increment(key)`.
 *
 * @example
 * ```ts
 * import { RedisStore } from 'rate-limit-redis';
 * const store: ExpressRateLimitStore = new RedisStore({ sendCommand: (...args) => redis.call(...args) });
 * ```
 */
export interface ExpressRateLimitStore {
  init?(options: { windowMs: number }): void | Promise<void>;
  increment(key: string): ExpressRateLimitInfo | Promise<ExpressRateLimitInfo>;
  decrement?(key: string): void | Promise<void>;
  resetKey?(key: string): void | Promise<void>;
  get?(key: string): ExpressRateLimitInfo | undefined | Promise<ExpressRateLimitInfo | undefined>;
  shutdown?(): void | Promise<void>;
  prefix?: string;
  localKeys?: boolean;
}

/**
 * Options of {@link fromExpressRateLimitStore}.
 *
 * @example
 * ```ts
 * const options: FromExpressRateLimitStoreOptions = { windowMs: 15 * 60_000 };
 * ```
 */
export interface FromExpressRateLimitStoreOptions {
  /**
   * The window the store counts in, in milliseconds, given to its `init`; `rateLimit()`
   * must have the same `windowMs`.
   * @defaultValue `60_000` (1 minute, as `rateLimit()`)
   */
  windowMs?: Duration;
}

const OWNER = 'fromExpressRateLimitStore()';

const KNOWN_OPTIONS = [
  'windowMs',
] as const satisfies readonly (keyof FromExpressRateLimitStoreOptions)[];

function hitOf(info: ExpressRateLimitInfo, windowMs: number): RateLimitHit {
  const resetAt = info.resetTime?.getTime();
  return { count: info.totalHits, resetAt: resetAt ?? Date.now() + windowMs };
}

/** Calls `init` once; answers a promise of it when it is asynchronous (a rejection kept for each call). */
function initialize(store: ExpressRateLimitStore, windowMs: number): Promise<void> | undefined {
  const done = store.init?.({ windowMs });
  if (!isPromiseLike(done)) return undefined;
  const ready = Promise.resolve(done);
  ready.catch(() => {}); // reported by each count that waits on it
  return ready;
}

/**
 * Adapts a store of express-rate-limit's ecosystem (Redis, Memcached, PostgreSQL, MongoDB…)
 * to a {@link RateLimitStore}, as it is: its `init` is called once, now, with `{ windowMs }`;
 * counts wait for an asynchronous `init` (whose failure fails them: 503, or through with
 * `failOpen`). `decrement`, `get` (as `peek`), `resetKey` and `shutdown` (as `close`) are
 * passed on when the store has them. Fixed windows only: its window is the store's.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { RedisStore } from 'rate-limit-redis';
 * const redis = new Redis(process.env.REDIS_URL);
 * const store = fromExpressRateLimitStore(
 *   new RedisStore({ sendCommand: (command: string, ...args: string[]) => redis.call(command, ...args) as never }),
 *   { windowMs: 60_000 },
 * );
 * app.use(rateLimit({ limit: 100, windowMs: 60_000, store }));
 * ```
 */
export function fromExpressRateLimitStore(
  store: ExpressRateLimitStore,
  options: FromExpressRateLimitStoreOptions = {},
): RateLimitStore {
  assertKnownOptions(OWNER, options, KNOWN_OPTIONS);
  if (typeof store?.increment !== 'function') {
    throw invalidOption(`${OWNER}: the store must have an \`increment(key)\` method`);
  }
  const windowMs = durationOption(OWNER, 'windowMs', options.windowMs, 60_000, { min: 1 });
  const ready = initialize(store, windowMs);
  const after = <T>(run: () => T | Promise<T>): T | Promise<T> =>
    ready === undefined ? run() : ready.then(run);
  const adapted: RateLimitStore = {
    windowMs,
    increment(key) {
      const info = after(() => store.increment(key));
      return isPromiseLike(info) ? info.then((i) => hitOf(i, windowMs)) : hitOf(info, windowMs);
    },
  };
  return Object.assign(adapted, optionalMethods(store, windowMs, after));
}

type After = <T>(run: () => T | Promise<T>) => T | Promise<T>;

/** The optional methods of the adapted store, present only when the store has their like. */
function optionalMethods(
  store: ExpressRateLimitStore,
  windowMs: number,
  after: After,
): Partial<RateLimitStore> {
  const methods: Partial<RateLimitStore> = {};
  const { decrement, resetKey, get, shutdown } = store;
  if (decrement !== undefined) methods.decrement = (key) => after(() => decrement.call(store, key));
  if (resetKey !== undefined) methods.reset = (key) => after(() => resetKey.call(store, key));
  if (shutdown !== undefined) methods.close = () => shutdown.call(store);
  if (get !== undefined) {
    methods.peek = async (key) => {
      const info = await after(() => get.call(store, key));
      return info === undefined || info.totalHits < 1 ? undefined : hitOf(info, windowMs);
    };
  }
  return methods;
}
