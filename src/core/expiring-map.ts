// Not part of the public API (core/index.ts does not export it): the map behind the memory
// stores. It lives in core, not internal, because a full map answers with core's 503:
// internal/ depends on nothing in core/.
import { MapEvictor } from '../internal/map-evictor.js';
import { countOption, durationOption, invalidOption } from '../internal/options.js';
import type { Duration } from './duration.js';
import { type HttpError, serviceUnavailable } from './errors/errors.js';

/** Options of {@link ExpiringMap}, validated with the owner's name in messages. */
export interface ExpiringMapOptions {
  /** Most entries held; past it the entry written longest ago is dropped. */
  maxEntries?: number;
  /** How often expired entries are swept, in milliseconds, on the first access after each interval. */
  sweepIntervalMs?: Duration;
  /** The clock, epoch milliseconds (tests inject one). */
  now?: () => number;
}

/** The owner's fixed settings of an {@link ExpiringMap}. */
export interface ExpiringMapDefaults {
  /** `maxEntries` when the options give none. */
  maxEntries: number;
  /** The name of the owner's option for `maxEntries`, in messages. */
  maxEntriesOption: string;
  /**
   * What writing a new key does at `maxEntries`: `'evict'` drops the entry written longest
   * ago; `'refuse'` (fail closed, for what must never be forgotten early: revocations, used
   * one-time values) sweeps expired entries and, if the map is still full, throws a 503
   * `HttpError` (`ERR_STORE_FULL`, with `Retry-After`) instead of forgetting a live entry.
   * @defaultValue `'evict'`
   */
  whenFull?: 'evict' | 'refuse';
}

/** The longest `Retry-After` a full map suggests, seconds. */
const MAX_RETRY_AFTER_SECONDS = 600;

interface Slot<V> {
  value: V;
  /** Epoch ms from which the entry is gone. */
  until: number;
}

/**
 * The in-memory core of portico's memory stores: a `Map` whose entries expire, kept in
 * write order (a `set` moves an entry to the end), and swept lazily so memory stays bounded.
 * At `maxEntries` it either drops the entry written longest ago (`whenFull: 'evict'`) or,
 * failing closed, refuses the new key with a 503 (`whenFull: 'refuse'`); `setPastBound`
 * writes past the bound for what must be recorded whatever it costs (a revocation).
 */
export class ExpiringMap<V> {
  readonly #slots = new Map<string, Slot<V>>();
  readonly #evictor = new MapEvictor(this.#slots);
  readonly #maxEntries: number;
  readonly #sweepIntervalMs: number;
  readonly #refuseWhenFull: boolean;
  readonly now: () => number;
  #nextSweep: number;
  /** The earliest deadline seen by the last sweep that left the map full: no sweep before it frees anything. */
  #fullUntil = Number.NEGATIVE_INFINITY;

  constructor(owner: string, options: ExpiringMapOptions, defaults: ExpiringMapDefaults) {
    if (options.now !== undefined && typeof options.now !== 'function') {
      throw invalidOption(`${owner}: \`now\` must be a function returning epoch milliseconds`);
    }
    this.now = options.now ?? Date.now;
    this.#maxEntries = countOption(
      owner,
      defaults.maxEntriesOption,
      options.maxEntries,
      defaults.maxEntries,
    );
    this.#sweepIntervalMs = durationOption(
      owner,
      'sweepIntervalMs',
      options.sweepIntervalMs,
      60_000,
      {
        min: 1,
      },
    );
    this.#nextSweep = this.now() + this.#sweepIntervalMs;
    if (defaults.whenFull !== undefined && !['evict', 'refuse'].includes(defaults.whenFull)) {
      throw invalidOption(`${owner}: \`whenFull\` must be 'evict' or 'refuse'`);
    }
    this.#refuseWhenFull = defaults.whenFull === 'refuse';
  }

  /** How often expired entries are swept, in milliseconds, as validated. */
  get sweepIntervalMs(): number {
    return this.#sweepIntervalMs;
  }

  /** Entries held, expired ones not swept yet included. */
  get size(): number {
    return this.#slots.size;
  }

  /** Keys in write order, oldest first. */
  keys(): string[] {
    return [...this.#slots.keys()];
  }

  /** The live entry of `key` (value and deadline), dropping it if it has expired. */
  entry(key: string, now = this.#tick()): Slot<V> | undefined {
    const slot = this.#slots.get(key);
    if (slot === undefined) return undefined;
    if (slot.until <= now) {
      this.#slots.delete(key);
      return undefined;
    }
    return slot;
  }

  /** The live value of `key`. */
  get(key: string): V | undefined {
    return this.entry(key)?.value;
  }

  /**
   * Writes `value` until `until` (epoch ms), as the newest entry; a past deadline deletes.
   * A new key at `maxEntries` evicts the oldest entry, or throws the 503 of {@link assertRoom}
   * when the map refuses when full (nothing is written then).
   */
  set(key: string, value: V, until: number, now = this.#tick()): void {
    if (until <= now) {
      this.#slots.delete(key);
      return;
    }
    if (!this.#slots.has(key)) this.#makeRoom(now);
    this.#write(key, value, until);
  }

  /**
   * Writes `value` until `until` (epoch ms) even past `maxEntries`, evicting nothing: for what
   * must never be lost (a revocation). Whoever calls it bounds the growth otherwise (the store
   * refuses new grants while this map is over its bound, see {@link hasRoom}).
   */
  setPastBound(key: string, value: V, until: number, now = this.#tick()): void {
    if (until <= now) this.#slots.delete(key);
    else this.#write(key, value, until);
  }

  /** Whether a new key can be written now without going past `maxEntries` (expired entries swept first). */
  hasRoom(now = this.#tick()): boolean {
    if (this.#slots.size < this.#maxEntries) return true;
    if (now < this.#fullUntil) return false;
    this.sweep();
    return this.#slots.size < this.#maxEntries;
  }

  /** Throws a 503 `HttpError` (`ERR_STORE_FULL`, with `Retry-After`) unless {@link hasRoom}. */
  assertRoom(now = this.#tick()): void {
    if (!this.hasRoom(now)) throw this.#full(now);
  }

  /** Forgets `key`; true when it was held. */
  delete(key: string): boolean {
    return this.#slots.delete(key);
  }

  /** Drops every expired entry now. */
  sweep(): void {
    const now = this.now();
    this.#nextSweep = now + this.#sweepIntervalMs;
    let earliest = Number.POSITIVE_INFINITY;
    for (const [key, slot] of this.#slots) {
      if (slot.until <= now) this.#slots.delete(key);
      else earliest = Math.min(earliest, slot.until);
    }
    // full after a sweep: none frees anything before the earliest deadline
    this.#fullUntil = this.#slots.size >= this.#maxEntries ? earliest : Number.NEGATIVE_INFINITY;
  }

  /** Drops every entry. */
  clear(): void {
    this.#slots.clear();
  }

  #write(key: string, value: V, until: number): void {
    this.#slots.delete(key); // a rewrite moves the entry to the end
    this.#slots.set(key, { value, until });
    this.#fullUntil = Math.min(this.#fullUntil, until);
  }

  /** Frees a place for a new key: evicts the oldest, or refuses (fail closed). */
  #makeRoom(now: number): void {
    if (this.#refuseWhenFull) {
      this.assertRoom(now);
      return;
    }
    while (this.#slots.size >= this.#maxEntries) this.#evictor.dropOldest();
  }

  #full(now: number): HttpError {
    const wait = Math.ceil((this.#fullUntil - now) / 1000);
    return serviceUnavailable(
      Math.min(Math.max(wait, 1), MAX_RETRY_AFTER_SECONDS),
      'The server holds as many pending credentials as it can; try again later.',
      { code: 'ERR_STORE_FULL' },
    );
  }

  /** The current time, sweeping first when the interval has passed. */
  #tick(): number {
    const now = this.now();
    if (now >= this.#nextSweep) this.sweep();
    return now;
  }
}
