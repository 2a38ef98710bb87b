import type { Duration } from '../../core/duration.js';
// One-time JWT ids: a DPoP proof's `jti` (RFC 9449 §11.1), a client assertion's (RFC 7523
// §3), remembered for as long as the JWT could be accepted, so that it is accepted once.
import { ExpiringMap } from '../../core/expiring-map.js';
import { countOption, invalidOption } from '../../internal/options.js';
import { ReplayPartitions } from './partitions.js';

/**
 * Where the ids of accepted one-time JWTs (DPoP proofs, client assertions) are remembered,
 * so that each is accepted once. Several processes behind one address share one
 * (`RedisReplayStore` from `portico/redis`). Give DPoP proofs and client assertions a store
 * each: they then never share one capacity.
 */
export interface ReplayStore {
  /**
   * Records `id` for `ttlMs` milliseconds: `true` when it was new, `false` when it was
   * recorded already (a replay). When it cannot record (full, unreachable), it throws: the
   * JWT is then refused, never accepted unchecked. `partition` names who the id is charged to
   * (the thumbprint of a DPoP proof's key, the id of a client): a bounded store gives each
   * partition a share of its capacity, so that one caller cannot fill it for every other.
   */
  remember(id: string, ttlMs: number, partition?: string): boolean | Promise<boolean>;
  /**
   * Whether `id` is recorded now, recording nothing: a caller that records an id only once
   * the rest of its request holds refuses a known replay early with it (the later `remember`
   * still decides a race). Optional: without it, such a caller records the id at once.
   */
  seen?(id: string): boolean | Promise<boolean>;
}

/**
 * Options of {@link MemoryReplayStore}.
 *
 * @example
 * ```ts
 * const options: MemoryReplayStoreOptions = { maxEntries: 50_000, maxEntriesPerPartition: 2_000 };
 * ```
 */
export interface MemoryReplayStoreOptions {
  /**
   * Most live ids held; past it every new one is refused (a 503 `ERR_STORE_FULL` with
   * `Retry-After`), never an older one forgotten.
   * @defaultValue `100_000`
   */
  maxEntries?: number;
  /**
   * Most live ids of one partition (one DPoP key, one client): past it that partition's new
   * ids are refused (a 429 `ERR_REPLAY_SHARE_SPENT` with `Retry-After`, for that caller
   * only) while every other partition keeps its room. Ids recorded without a partition count
   * against `maxEntries` only.
   * @defaultValue a tenth of `maxEntries` (`10_000`), at least 1
   */
  maxEntriesPerPartition?: number;
  /** How often expired ids are swept, in milliseconds. @defaultValue `60_000` */
  sweepIntervalMs?: Duration;
  /** The clock, epoch milliseconds (tests inject one). @defaultValue `Date.now` */
  now?: () => number;
}

const OWNER = 'MemoryReplayStore';

/**
 * The in-process {@link ReplayStore}: bounded, and failing closed when full of live entries
 * (a 503 `ERR_STORE_FULL`, never a forgotten id); each partition (a DPoP key, a client) holds
 * at most `maxEntriesPerPartition` of them (past it, a 429 for that partition alone).
 *
 * @example
 * ```ts
 * const dpop = createDpopVerifier({ replay: new MemoryReplayStore({ maxEntries: 50_000 }) });
 * ```
 */
export class MemoryReplayStore implements ReplayStore {
  readonly #seen: ExpiringMap<true>;
  readonly #partitions: ReplayPartitions;

  constructor(options: MemoryReplayStoreOptions = {}) {
    if (typeof options !== 'object' || options === null) {
      throw invalidOption(`${OWNER}: the options must be an object`);
    }
    const { maxEntriesPerPartition, ...map } = options;
    this.#seen = new ExpiringMap(OWNER, map, {
      maxEntries: 100_000,
      maxEntriesOption: 'maxEntries',
      whenFull: 'refuse',
    });
    const maxEntries = countOption(OWNER, 'maxEntries', options.maxEntries, 100_000);
    const share = countOption(
      OWNER,
      'maxEntriesPerPartition',
      maxEntriesPerPartition,
      Math.max(1, Math.floor(maxEntries / 10)),
    );
    this.#partitions = new ReplayPartitions(share, this.#seen.sweepIntervalMs);
  }

  seen(id: string): boolean {
    return this.#seen.entry(id) !== undefined;
  }

  remember(id: string, ttlMs: number, partition?: string): boolean {
    const now = this.#seen.now();
    if (this.#seen.entry(id, now) !== undefined) return false;
    if (partition !== undefined) {
      this.#seen.assertRoom(now); // a full store is a 503 for all, before any share
      this.#partitions.assertRoom(partition, now);
    }
    const until = now + ttlMs;
    this.#seen.set(id, true, until, now);
    if (partition !== undefined) this.#partitions.charge(partition, until);
    return true;
  }
}
