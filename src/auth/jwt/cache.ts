import { hash } from 'node:crypto';
import { MapEvictor } from '../../internal/map-evictor.js';
import type { VerifiedJwt } from './verify.js';

/** Options of the verified-token cache. */
export interface JwtCacheOptions {
  /** How many verified tokens are kept; the least recently used go first. @defaultValue `10_000` */
  max?: number;
}

interface Entry {
  value: VerifiedJwt;
  /** Epoch milliseconds after which the entry is never used. */
  deadline: number;
  /** The key-set generation the token was verified under. */
  generation: number;
}

/**
 * A bounded LRU of verified tokens, so that the same token presented again costs a hash and
 * a map lookup instead of a signature check. Keys are the SHA-256 of the token (base64url):
 * the cache never holds a usable token. An entry is dropped at its deadline (never later than
 * the token's `exp`, nor `iat + maxTokenAge`), and the whole cache when the key set changes.
 */
export class VerifiedTokenCache {
  readonly #max: number;
  readonly #entries = new Map<string, Entry>();
  readonly #evictor = new MapEvictor(this.#entries);
  /** The most recently used key: a hit on it needs no move to the back of the map. */
  #newest: string | undefined;
  #generation = 0;

  constructor(max: number) {
    this.#max = max;
  }

  /** How many tokens are cached. */
  get size(): number {
    return this.#entries.size;
  }

  /** The cache key of a token: `crypto.hash`, one call, no Hash object per request. */
  static keyOf(token: string): string {
    return hash('sha256', token, 'base64url');
  }

  /** Empties the cache if the key set has moved to another generation since it was filled. */
  sync(generation: number): void {
    if (generation !== this.#generation) {
      this.#entries.clear();
      this.#generation = generation;
    }
  }

  /** The verified token, if cached, still before its deadline and of this generation. */
  get(key: string, generation: number, now: number): VerifiedJwt | undefined {
    this.sync(generation);
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (now >= entry.deadline || entry.generation !== generation) {
      this.#entries.delete(key);
      return undefined;
    }
    // Least recently used goes first: a hit moves to the back, unless it is there already
    // (a delete and set per hit on one key leaves V8's hash chain full of dead entries).
    if (key !== this.#newest) {
      this.#entries.delete(key);
      this.#entries.set(key, entry);
      this.#newest = key;
    }
    return entry.value;
  }

  /** Keeps a verified token until `deadline` (epoch ms); a deadline already past is ignored. */
  set(key: string, value: VerifiedJwt, deadline: number, generation: number, now: number): void {
    this.sync(generation);
    if (!(deadline > now) || this.#max <= 0) return;
    this.#entries.delete(key);
    this.#entries.set(key, { value, deadline, generation });
    this.#newest = key;
    while (this.#entries.size > this.#max) this.#evictor.dropOldest();
  }

  /** Drops every entry. */
  clear(): void {
    this.#entries.clear();
  }
}

/**
 * When a verified token stops being servable from the cache: its `exp`, or `iat +
 * maxTokenAge` (`maxTokenAge` in milliseconds) when that is sooner (epoch ms). Without `exp`
 * nothing is cached.
 */
export function cacheDeadline(payload: VerifiedJwt['payload'], maxTokenAge?: number): number {
  if (typeof payload.exp !== 'number') return 0;
  let deadline = payload.exp * 1000;
  if (maxTokenAge !== undefined) {
    if (typeof payload.iat !== 'number') return 0;
    deadline = Math.min(deadline, payload.iat * 1000 + maxTokenAge);
  }
  return deadline;
}
