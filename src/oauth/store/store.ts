import { ExpiringMap } from '../../core/expiring-map.js';
import { assertKnownOptions, invalidOption } from '../../internal/options.js';

/** The outcome of consuming (or reading) a one-time value. */
export type Consumed<R> =
  | { state: 'fresh'; record: R }
  | { state: 'used'; record: R; usedAt: number }
  | undefined;

/** A record found by a secondary key or in a group, with its id. */
export type FoundRecord<R> = NonNullable<Consumed<R>> & { id: string };

/**
 * A stored record as the store hands it back: a plain JSON object (the typed access of each
 * kind narrows it).
 */
export type StoredRecord = Record<string, unknown>;

/**
 * The secondary keys a record is saved with: `lookup`, unique within its kind, finds one
 * record (a device code by its user code); `group` gathers several (a user's consents).
 */
export interface RecordKeys {
  /** Finds the record with {@link RecordStore.findByKey}; unique within the kind. */
  lookup?: string;
  /** Lists the record with {@link RecordStore.list}, with every live record of the same group. */
  group?: string;
}

/**
 * What a conditional {@link RecordStore.replace} or {@link RecordStore.destroy} requires of the
 * stored record: each named top-level field holds exactly this value.
 */
export type RecordCondition = Readonly<Record<string, string | number | boolean>>;

/**
 * Where the authorization server keeps its records (authorization codes, refresh tokens,
 * device codes, pushed requests, remembered consents) and its revoked grants. One shape for
 * every kind of record: the kind is a name (`'code'`, `'device'`…), the id the hash of the
 * value (never the value), the record a plain JSON object, saved with a lifetime. One-time
 * values are consumed atomically: of two concurrent {@link consume}s only one sees `fresh`;
 * a consumed record stays known (as `used`, with the time of its first use) until its
 * lifetime ends, so that a replay is detected. A store fails closed: it never forgets a live
 * record or revocation to make room, and refuses new ones (a 503 `HttpError`) rather than do
 * so. Implementations: {@link MemoryRecordStore}, and `RedisRecordStore` of `portico/redis`.
 *
 * @example
 * ```ts
 * const store: RecordStore = new MemoryRecordStore();
 * await store.save('code', hashToken(code), { clientId: 'web', sub: 'alice' }, 60_000);
 * const first = await store.consume('code', hashToken(code)); // { state: 'fresh', record }
 * const again = await store.consume('code', hashToken(code)); // { state: 'used', record, usedAt }
 * ```
 */
export interface RecordStore {
  /**
   * Saves `record` as `id` of `kind` for `ttlMs` milliseconds, inserting or replacing (a
   * replaced record is fresh again); a lifetime already over removes it. `keys` are its
   * secondary keys. Throws a 503 `HttpError` (`ERR_STORE_FULL`) when a bounded store is full.
   */
  save(
    kind: string,
    id: string,
    record: object,
    ttlMs: number,
    keys?: RecordKeys,
  ): void | Promise<void>;
  /** Reads a live record without consuming it, with its state (`used` once consumed). */
  find(kind: string, id: string): Consumed<StoredRecord> | Promise<Consumed<StoredRecord>>;
  /** The live record saved with the `lookup` key `key`, with its id. */
  findByKey(
    kind: string,
    key: string,
  ): FoundRecord<StoredRecord> | undefined | Promise<FoundRecord<StoredRecord> | undefined>;
  /** Every live record saved with the `group` key `group`, with their ids. */
  list(
    kind: string,
    group: string,
  ): readonly FoundRecord<StoredRecord>[] | Promise<readonly FoundRecord<StoredRecord>[]>;
  /**
   * Marks a record used, atomically, and returns its state before: `fresh` for exactly one
   * caller, `used` (with the time of that first use) for every later one until the record's
   * lifetime ends, which consuming leaves unchanged.
   */
  consume(kind: string, id: string): Consumed<StoredRecord> | Promise<Consumed<StoredRecord>>;
  /**
   * Replaces a live, unused record, keeping its lifetime and its secondary keys, when every
   * field of `when` holds the given value in the stored one (atomically); true when it did.
   */
  replace(
    kind: string,
    id: string,
    record: object,
    when?: RecordCondition,
  ): boolean | Promise<boolean>;
  /**
   * Removes a live record (used or not) with its secondary keys, when every field of `when`
   * holds the given value; true for the one caller that removed it.
   */
  destroy(kind: string, id: string, when?: RecordCondition): boolean | Promise<boolean>;
  /**
   * Revokes a grant: its refresh tokens fail, its access tokens read as revoked. Never lost:
   * a store with a bound records it past the bound, and never shortens an earlier one.
   */
  revokeGrant(grantId: string, ttlMs: number): void | Promise<void>;
  /** Whether {@link revokeGrant} was called for `grantId` and its time is not up. */
  isGrantRevoked(grantId: string): boolean | Promise<boolean>;
  /**
   * Throws a 503 `HttpError` (`ERR_STORE_FULL`, with `Retry-After`) while the store cannot
   * take a new record of `kind` without forgetting something it must keep (a bounded store
   * whose revoked grants, or records of that kind, reached the bound). The token endpoint
   * asks before every grant, so that no code is spent nor refresh token rotated for tokens
   * that cannot be saved. A store without a bound (Redis) leaves it out.
   */
  checkCapacity?(kind: string): void | Promise<void>;
}

/** Names a kind may have: short, lower case (they are part of Redis keys). */
const KIND_NAME = /^[a-z][a-z0-9-]{0,31}$/;

/**
 * Throws unless `kind` is a valid kind name: 1 to 32 of `a-z`, `0-9`, `-`, starting with a
 * letter, and not `revoked` (the revocations' own family). @internal
 */
export function assertKindName(owner: string, kind: string): void {
  if (typeof kind !== 'string' || !KIND_NAME.test(kind) || kind === 'revoked') {
    throw invalidOption(
      `${owner}: a record kind is 1 to 32 characters of a-z, 0-9 and '-' (not 'revoked'), got ${JSON.stringify(kind)}`,
    );
  }
}

/** Throws unless `ttlMs` is a number of milliseconds (a lifetime over is allowed). @internal */
export function assertTtl(owner: string, ttlMs: number): void {
  if (typeof ttlMs !== 'number' || Number.isNaN(ttlMs)) {
    throw invalidOption(`${owner}: a time to live must be a number of milliseconds`);
  }
}

/** Whether `record` satisfies `when` (every named field holds exactly the value). @internal */
export function meetsCondition(record: StoredRecord, when: RecordCondition | undefined): boolean {
  if (when === undefined) return true;
  return Object.entries(when).every(([field, value]) => record[field] === value);
}

/** Options of {@link MemoryRecordStore}. */
export interface MemoryRecordStoreOptions {
  /**
   * Most entries of each kind of record (and of each kind's secondary keys), and of revoked
   * grants. Past it the store refuses new ones with a 503 rather than forget a live one;
   * revocations are recorded past it, and while they are over it no new record is taken.
   * @defaultValue `100_000`
   */
  maxEntries?: number;
  /** The clock, epoch ms. @defaultValue `Date.now` */
  now?: () => number;
}

const MEMORY_STORE_OPTIONS = [
  'maxEntries',
  'now',
] as const satisfies readonly (keyof MemoryRecordStoreOptions)[];

/** A record as the memory store holds it. */
interface Held {
  record: StoredRecord;
  usedAt?: number;
  lookup?: string;
  group?: string;
}

/** The maps of one kind: its records, its lookup keys, its groups (id → deadline). */
interface KindMaps {
  records: ExpiringMap<Held>;
  lookups: ExpiringMap<string>;
  groups: ExpiringMap<Map<string, number>>;
}

const OWNER = 'MemoryRecordStore';

function state(held: Held): NonNullable<Consumed<StoredRecord>> {
  const record = structuredClone(held.record);
  return held.usedAt === undefined
    ? { state: 'fresh', record }
    : { state: 'used', record, usedAt: held.usedAt };
}

/**
 * A {@link RecordStore} in this process's memory, bounded and swept. One process only:
 * behind several instances use a shared store (`RedisRecordStore`). It fails closed: at
 * `maxEntries` records of a kind, saving one more is refused with a 503 `HttpError`
 * (`ERR_STORE_FULL`, with `Retry-After`) rather than forgetting a live one (a forgotten used
 * value would let its replay go unnoticed). A revocation is always recorded, past the bound
 * if need be, and while revocations are over the bound {@link checkCapacity} and
 * {@link save} refuse: nobody can flood revocations until an old one is forgotten. Records
 * are copied in and out (`structuredClone`).
 *
 * @example
 * ```ts
 * const server = createAuthorizationServer({ issuer, clients, keys, store: new MemoryRecordStore() });
 * ```
 */
export class MemoryRecordStore implements RecordStore {
  readonly #kinds = new Map<string, KindMaps>();
  readonly #revoked: ExpiringMap<true>;
  readonly #make: <V>() => ExpiringMap<V>;
  readonly #now: () => number;

  constructor(options: MemoryRecordStoreOptions = {}) {
    assertKnownOptions(OWNER, options, MEMORY_STORE_OPTIONS);
    this.#make = <V>() =>
      new ExpiringMap<V>(
        OWNER,
        { maxEntries: options.maxEntries, now: options.now },
        { maxEntries: 100_000, maxEntriesOption: 'maxEntries', whenFull: 'refuse' },
      );
    this.#revoked = this.#make();
    this.#now = this.#revoked.now;
  }

  #of(kind: string): KindMaps {
    let maps = this.#kinds.get(kind);
    if (maps === undefined) {
      assertKindName(OWNER, kind);
      maps = { records: this.#make(), lookups: this.#make(), groups: this.#make() };
      this.#kinds.set(kind, maps);
    }
    return maps;
  }

  save(kind: string, id: string, record: object, ttlMs: number, keys: RecordKeys = {}): void {
    assertTtl(OWNER, ttlMs);
    const maps = this.#of(kind);
    const now = this.#now();
    const until = now + ttlMs;
    if (until <= now) {
      this.destroy(kind, id);
      return;
    }
    this.#revoked.assertRoom(now);
    const { lookup, group } = keys;
    // all or nothing: every map must have room before anything is written
    if (maps.records.entry(id, now) === undefined) maps.records.assertRoom(now);
    if (lookup !== undefined && maps.lookups.entry(lookup, now) === undefined) {
      maps.lookups.assertRoom(now);
    }
    if (group !== undefined && maps.groups.entry(group, now) === undefined) {
      maps.groups.assertRoom(now);
    }
    const copy = structuredClone(record) as StoredRecord;
    const before = maps.records.entry(id, now)?.value;
    if (before !== undefined) this.#unindex(maps, id, before, { lookup, group });
    maps.records.set(id, { record: copy, lookup, group }, until, now);
    if (lookup !== undefined) maps.lookups.set(lookup, id, until, now);
    if (group !== undefined) {
      const members = new Map(
        [...(maps.groups.entry(group, now)?.value ?? [])].filter(([, end]) => end > now),
      );
      members.set(id, until);
      maps.groups.set(group, members, Math.max(...members.values()), now);
    }
  }

  find(kind: string, id: string): Consumed<StoredRecord> {
    const held = this.#of(kind).records.get(id);
    return held === undefined ? undefined : state(held);
  }

  findByKey(kind: string, key: string): FoundRecord<StoredRecord> | undefined {
    const maps = this.#of(kind);
    const id = maps.lookups.get(key);
    const held = id === undefined ? undefined : maps.records.get(id);
    return id === undefined || held?.lookup !== key ? undefined : { id, ...state(held) };
  }

  list(kind: string, group: string): FoundRecord<StoredRecord>[] {
    const maps = this.#of(kind);
    const now = this.#now();
    const found: FoundRecord<StoredRecord>[] = [];
    for (const [id, until] of maps.groups.entry(group, now)?.value ?? []) {
      if (until <= now) continue;
      const held = maps.records.entry(id, now)?.value;
      if (held?.group === group) found.push({ id, ...state(held) });
    }
    return found;
  }

  consume(kind: string, id: string): Consumed<StoredRecord> {
    const maps = this.#of(kind);
    const held = maps.records.get(id);
    if (held === undefined) return undefined;
    const before = state(held);
    if (held.usedAt === undefined) held.usedAt = this.#now();
    return before;
  }

  replace(kind: string, id: string, record: object, when?: RecordCondition): boolean {
    const maps = this.#of(kind);
    const entry = maps.records.entry(id);
    if (entry === undefined || entry.value.usedAt !== undefined) return false;
    if (!meetsCondition(entry.value.record, when)) return false;
    const copy = structuredClone(record) as StoredRecord;
    maps.records.set(id, { ...entry.value, record: copy }, entry.until);
    return true;
  }

  destroy(kind: string, id: string, when?: RecordCondition): boolean {
    const maps = this.#of(kind);
    const held = maps.records.get(id);
    if (held === undefined || !meetsCondition(held.record, when)) return false;
    maps.records.delete(id);
    this.#unindex(maps, id, held, {});
    return true;
  }

  /** Drops the secondary keys of `held` (saved as `id`) that `kept` does not name again. */
  #unindex(maps: KindMaps, id: string, held: Held, kept: RecordKeys): void {
    if (held.lookup !== undefined && held.lookup !== kept.lookup) {
      if (maps.lookups.get(held.lookup) === id) maps.lookups.delete(held.lookup);
    }
    if (held.group !== undefined && held.group !== kept.group) {
      const members = maps.groups.get(held.group);
      members?.delete(id);
      if (members?.size === 0) maps.groups.delete(held.group);
    }
  }

  revokeGrant(grantId: string, ttlMs: number): void {
    assertTtl(OWNER, ttlMs);
    const earlier = this.#revoked.entry(grantId)?.until ?? 0;
    const until = Math.max(earlier, this.#revoked.now() + ttlMs);
    this.#revoked.setPastBound(grantId, true, until);
  }

  isGrantRevoked(grantId: string): boolean {
    return this.#revoked.get(grantId) === true;
  }

  /**
   * Throws a 503 `HttpError` (`ERR_STORE_FULL`) while revoked grants are at or over the bound,
   * or records of `kind` at it: a new grant would then have to forget something.
   */
  checkCapacity(kind: string): void {
    this.#revoked.assertRoom();
    this.#of(kind).records.assertRoom();
  }
}
