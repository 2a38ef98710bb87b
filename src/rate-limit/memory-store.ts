import type { Duration } from '../core/duration.js';
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
  sweepIntervalMs?: Duration;
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
  /** Sliding windows only: the count of the window before, and the window's length. */
  previous?: number;
  windowMs?: number;
}

/** The weighted two-window count of a sliding window at `now`. */
function slidingCount(window: Window, now: number): number {
  const windowMs = window.windowMs ?? 1;
  const weight = Math.max(0, (window.resetAt - now) / windowMs);
  return Math.floor((window.previous ?? 0) * weight) + window.count;
}

/**
 * A {@link RateLimitStore} in this process's memory: fixed or sliding windows in a `Map`,
 * counted synchronously (hence atomically). Expired windows are swept, and `maxKeys` caps the
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
    const now = this.#windows.now();
    const window = this.#windows.get(key);
    if (window === undefined) return undefined;
    if (window.windowMs === undefined) return { count: window.count, resetAt: window.resetAt };
    const current = this.#current(window, now);
    return { count: slidingCount(current, now), resetAt: current.resetAt };
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

  /** Counts one request for `key` in a sliding window; see {@link RateLimitStore.incrementSliding}. */
  incrementSliding(key: string, windowMs: number): RateLimitHit {
    const now = this.#windows.now();
    const held = this.#windows.get(key);
    const window =
      held?.windowMs === windowMs
        ? this.#current(held, now)
        : this.#slidingWindow(now, windowMs, 0);
    window.count++;
    // kept until the end of the next window, whose count it weighs in
    if (window !== held) this.#windows.set(key, window, window.resetAt + windowMs, now);
    return { count: slidingCount(window, now), resetAt: window.resetAt };
  }

  /** Gives back one request of `key`; see {@link RateLimitStore.decrement}. */
  decrement(key: string): void {
    const held = this.#windows.get(key);
    // a sliding window that has ended holds nothing of the current one
    if (held === undefined || this.#current(held, this.#windows.now()) !== held) return;
    if (held.count > 0) held.count--;
  }

  /** The sliding window holding `now`: `window` itself, or the next one (the previous count carried). */
  #current(window: Window, now: number): Window {
    if (window.windowMs === undefined || now < window.resetAt) return window;
    const next = window.resetAt + window.windowMs > now ? window.count : 0;
    return this.#slidingWindow(now, window.windowMs, next);
  }

  #slidingWindow(now: number, windowMs: number, previous: number): Window {
    const resetAt = (Math.floor(now / windowMs) + 1) * windowMs;
    return { count: 0, resetAt, previous, windowMs };
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
