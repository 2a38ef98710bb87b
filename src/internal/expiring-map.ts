import { MapEvictor } from './map-evictor.js';
import { invalidOption } from './options.js';

/** Options of {@link ExpiringMap}, validated with the owner's name in messages. */
export interface ExpiringMapOptions {
  /** Most entries held; past it the entry written longest ago is dropped. */
  maxEntries?: number;
  /** How often expired entries are swept, on the first access after each interval. */
  sweepIntervalMs?: number;
  /** The clock, epoch milliseconds (tests inject one). */
  now?: () => number;
}

interface Slot<V> {
  value: V;
  /** Epoch ms from which the entry is gone. */
  until: number;
}

function positiveInteger(owner: string, name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw invalidOption(`${owner}: \`${name}\` must be a positive integer`);
  }
  return value;
}

/**
 * The in-memory core of portico's memory stores: a `Map` whose entries expire, kept in
 * write order (a `set` moves an entry to the end) so that the entry written longest ago is
 * the one dropped when `maxEntries` is reached, and swept lazily so memory stays bounded.
 */
export class ExpiringMap<V> {
  readonly #slots = new Map<string, Slot<V>>();
  readonly #evictor = new MapEvictor(this.#slots);
  readonly #maxEntries: number;
  readonly #sweepIntervalMs: number;
  readonly now: () => number;
  #nextSweep: number;

  constructor(
    owner: string,
    options: ExpiringMapOptions,
    defaults: { maxEntries: number; maxEntriesOption: string },
  ) {
    if (options.now !== undefined && typeof options.now !== 'function') {
      throw invalidOption(`${owner}: \`now\` must be a function returning epoch milliseconds`);
    }
    this.now = options.now ?? Date.now;
    this.#maxEntries = positiveInteger(
      owner,
      defaults.maxEntriesOption,
      options.maxEntries,
      defaults.maxEntries,
    );
    this.#sweepIntervalMs = positiveInteger(
      owner,
      'sweepIntervalMs',
      options.sweepIntervalMs,
      60_000,
    );
    this.#nextSweep = this.now() + this.#sweepIntervalMs;
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

  /** Writes `value` until `until` (epoch ms), as the newest entry; a past deadline deletes. */
  set(key: string, value: V, until: number, now = this.#tick()): void {
    if (!this.#slots.delete(key)) {
      while (this.#slots.size >= this.#maxEntries) this.#evictor.dropOldest();
    }
    if (until > now) this.#slots.set(key, { value, until });
  }

  /** Forgets `key`; true when it was held. */
  delete(key: string): boolean {
    return this.#slots.delete(key);
  }

  /** Drops every expired entry now. */
  sweep(): void {
    const now = this.now();
    this.#nextSweep = now + this.#sweepIntervalMs;
    for (const [key, slot] of this.#slots) if (slot.until <= now) this.#slots.delete(key);
  }

  /** Drops every entry. */
  clear(): void {
    this.#slots.clear();
  }

  /** The current time, sweeping first when the interval has passed. */
  #tick(): number {
    const now = this.now();
    if (now >= this.#nextSweep) this.sweep();
    return now;
  }
}
