// One-time JWT ids: a DPoP proof's `jti` (RFC 9449 §11.1), a client assertion's (RFC 7523
// §3), remembered for as long as the JWT could be accepted, so that it is accepted once.
import { ExpiringMap, type ExpiringMapOptions } from '../core/expiring-map.js';

/**
 * Where the ids of accepted one-time JWTs (DPoP proofs, client assertions) are remembered,
 * so that each is accepted once. Several processes behind one address share one
 * (`RedisReplayStore` from `portico/redis`).
 */
export interface ReplayStore {
  /**
   * Records `id` for `ttlMs` milliseconds: `true` when it was new, `false` when it was
   * recorded already (a replay). When it cannot record (full, unreachable), it throws: the
   * JWT is then refused, never accepted unchecked.
   */
  remember(id: string, ttlMs: number): boolean | Promise<boolean>;
}

/**
 * The in-process {@link ReplayStore}: bounded, and failing closed when full of live entries
 * (a 503 `ERR_STORE_FULL`, never a forgotten id).
 *
 * @example
 * ```ts
 * const dpop = createDpopVerifier({ replay: new MemoryReplayStore({ maxEntries: 50_000 }) });
 * ```
 */
export class MemoryReplayStore implements ReplayStore {
  readonly #seen: ExpiringMap<true>;

  constructor(options: ExpiringMapOptions = {}) {
    this.#seen = new ExpiringMap('MemoryReplayStore', options, {
      maxEntries: 100_000,
      maxEntriesOption: 'maxEntries',
      whenFull: 'refuse',
    });
  }

  remember(id: string, ttlMs: number): boolean {
    const now = this.#seen.now();
    if (this.#seen.entry(id, now) !== undefined) return false;
    this.#seen.set(id, true, now + ttlMs, now);
    return true;
  }
}
