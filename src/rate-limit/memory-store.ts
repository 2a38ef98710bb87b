import { ExpiringMap } from '../core/expiring-map.js';
import { assertKnownOptions } from '../internal/options.js';
import type { RateLimitHit, RateLimitStore } from './store.js';

/** Options of {@link MemoryRateLimitStore}. */
export interface MemoryRateLimitStoreOptions {
  /**
   * How often expired windows are swept out of memory, in milliseconds: on the first
   * `increment` after each interval, and by a timer (`unref()`'d, so it never keeps the
   * process alive) while the store is idle.
   * @defaultValue `60_000`
   */
  sweepIntervalMs?: number;
  /**
   * The most keys held at once. A new key beyond it evicts the key whose window started
   * first (the closest to its reset), so memory stays bounded even under a flood of
   * distinct clients.
   * @defaultValue `1_000_000`
   */
  maxKeys?: number;
  /**
   * The clock, in epoch milliseconds; inject one to test window resets without waiting.
   * @defaultValue `Date.now`
   */
  now?: () => number;
}

const OWNER = 'new MemoryRateLimitStore()';

const KNOWN_OPTIONS = [
  'sweepIntervalMs',
  'maxKeys',
  'now',
] as const satisfies readonly (keyof MemoryRateLimitStoreOptions)[];

interface Window {
  count: number;
  resetAt: number;
}

/**
 * A {@link RateLimitStore} in this process's memory: fixed windows in a `Map`, counted
 * synchronously (hence atomically). Expired windows are swept, and `maxKeys` caps the
 * count of keys, so memory stays bounded. Counts are per process: behind several
 * instances, use a shared store.
 *
 * @example
 * ```ts
 * const store = new MemoryRateLimitStore({ maxKeys: 100_000 });
 * app.use(rateLimit({ limit: 100, store }));
 * // on shutdown
 * store.close();
 * ```
 */
export class MemoryRateLimitStore implements RateLimitStore {
  readonly #windows: ExpiringMap<Window>;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(options: MemoryRateLimitStoreOptions = {}) {
    assertKnownOptions(OWNER, options, KNOWN_OPTIONS);
    this.#windows = new ExpiringMap(
      OWNER,
      { maxEntries: options.maxKeys, sweepIntervalMs: options.sweepIntervalMs, now: options.now },
      { maxEntries: 1_000_000, maxEntriesOption: 'maxKeys' },
    );
    this.#timer = setInterval(() => this.sweep(), this.#windows.sweepIntervalMs);
    this.#timer.unref();
  }

  /** The number of keys held, expired windows not yet swept included. */
  get size(): number {
    return this.#windows.size;
  }

  /** The count of `key` without counting; see {@link RateLimitStore.peek}. */
  peek(key: string): RateLimitHit | undefined {
    const window = this.#windows.get(key);
    return window === undefined ? undefined : { count: window.count, resetAt: window.resetAt };
  }

  /** Counts one request for `key`; see {@link RateLimitStore.increment}. */
  increment(key: string, windowMs: number): RateLimitHit {
    let window = this.#windows.get(key);
    if (window === undefined) {
      // A new window is written last: the map stays ordered by window start, oldest first.
      const now = this.#windows.now();
      window = { count: 0, resetAt: now + windowMs };
      this.#windows.set(key, window, window.resetAt, now);
    }
    window.count++;
    return { count: window.count, resetAt: window.resetAt };
  }

  /** Forgets the count of `key`. */
  reset(key: string): void {
    this.#windows.delete(key);
  }

  /** Drops every expired window now; called on its own every `sweepIntervalMs`. */
  sweep(): void {
    this.#windows.sweep();
  }

  /** Stops the sweep timer and drops every count. */
  close(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#windows.clear();
  }
}

/**
 * The former name of {@link MemoryRateLimitStore}, kept for one release.
 *
 * @deprecated Use {@link MemoryRateLimitStore} (the `Memory…Store` / `Redis…Store` pattern).
 * @example
 * ```ts
 * const store = new MemoryRateLimitStore(); // rather than new MemoryStore()
 * ```
 */
export const MemoryStore: typeof MemoryRateLimitStore = MemoryRateLimitStore;
/** The former name of {@link MemoryRateLimitStore}, kept for one release. @deprecated Use {@link MemoryRateLimitStore}. */
export type MemoryStore = MemoryRateLimitStore;
/** The former name of {@link MemoryRateLimitStoreOptions}. @deprecated Use {@link MemoryRateLimitStoreOptions}. */
export type MemoryStoreOptions = MemoryRateLimitStoreOptions;
