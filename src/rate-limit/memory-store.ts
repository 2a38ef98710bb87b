import { assertKnownOptions, invalidOption } from '../internal/options.js';
import type { RateLimitHit, RateLimitStore } from './store.js';

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
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

const KNOWN_OPTIONS = ['sweepIntervalMs', 'maxKeys', 'now'] as const;

interface Window {
  count: number;
  resetAt: number;
}

function positiveInteger(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw invalidOption(`MemoryStore: \`${name}\` must be a positive integer`);
  }
  return value;
}

/**
 * A {@link RateLimitStore} in this process's memory: fixed windows in a `Map`, counted
 * synchronously (hence atomically). Expired windows are swept, and `maxKeys` caps the
 * count of keys, so memory stays bounded. Counts are per process: behind several
 * instances, use a shared store.
 *
 * @example
 * ```ts
 * const store = new MemoryStore({ maxKeys: 100_000 });
 * app.use(rateLimit({ limit: 100, store }));
 * // on shutdown
 * store.close();
 * ```
 */
export class MemoryStore implements RateLimitStore {
  readonly #windows = new Map<string, Window>();
  readonly #now: () => number;
  readonly #maxKeys: number;
  readonly #sweepIntervalMs: number;
  #nextSweep: number;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(options: MemoryStoreOptions = {}) {
    assertKnownOptions('MemoryStore', options, KNOWN_OPTIONS);
    if (options.now !== undefined && typeof options.now !== 'function') {
      throw invalidOption('MemoryStore: `now` must be a function returning epoch milliseconds');
    }
    this.#now = options.now ?? Date.now;
    this.#maxKeys = positiveInteger('maxKeys', options.maxKeys, 1_000_000);
    this.#sweepIntervalMs = positiveInteger('sweepIntervalMs', options.sweepIntervalMs, 60_000);
    this.#nextSweep = this.#now() + this.#sweepIntervalMs;
    this.#timer = setInterval(() => this.sweep(), this.#sweepIntervalMs);
    this.#timer.unref();
  }

  /** The number of keys held, expired windows not yet swept included. */
  get size(): number {
    return this.#windows.size;
  }

  /** Counts one request for `key`; see {@link RateLimitStore.increment}. */
  increment(key: string, windowMs: number): RateLimitHit {
    const now = this.#now();
    if (now >= this.#nextSweep) this.sweep();
    const windows = this.#windows;
    let window = windows.get(key);
    if (window === undefined || window.resetAt <= now) {
      // Re-inserting keeps the map ordered by window start, oldest first.
      if (window !== undefined) windows.delete(key);
      else if (windows.size >= this.#maxKeys) this.#evictOldest();
      window = { count: 0, resetAt: now + windowMs };
      windows.set(key, window);
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
    const now = this.#now();
    this.#nextSweep = now + this.#sweepIntervalMs;
    for (const [key, window] of this.#windows) {
      if (window.resetAt <= now) this.#windows.delete(key);
    }
  }

  /** Stops the sweep timer and drops every count. */
  close(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#windows.clear();
  }

  #evictOldest(): void {
    for (const key of this.#windows.keys()) {
      this.#windows.delete(key);
      return;
    }
  }
}
