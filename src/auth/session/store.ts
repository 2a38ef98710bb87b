import type { Duration } from '../../core/duration.js';
import { ExpiringMap } from '../../core/expiring-map.js';
import { assertKnownOptions } from '../../internal/options.js';

/**
 * One server-side session, as {@link createSessions} keeps it. Times are epoch
 * milliseconds. The record never holds the session id: the store key is its SHA-256.
 *
 * @example
 * ```ts
 * const record = await sessions.read(req);
 * if (record) console.log(`${record.sub} signed in at ${new Date(record.createdAt).toISOString()}`);
 * ```
 */
export interface SessionRecord {
  /** The signed-in user. */
  sub: string;
  /** Display name, when known. */
  name?: string;
  /** Role, when known. */
  role?: string;
  /** Scopes granted to the session. */
  scopes: readonly string[];
  /** When the user signed in. */
  createdAt: number;
  /** When the session was last used (the idle timeout runs from here). */
  lastSeenAt: number;
  /** The absolute expiry: the session ends then, however active. */
  expiresAt: number;
  /** Application data kept with the session (never put secrets here). */
  data?: Record<string, unknown>;
}

/**
 * Where sessions live. Keys are the SHA-256 of session ids (base64url), never the ids
 * themselves, so a leaked store yields no usable cookie. `ttlMs` is how long the record
 * is worth keeping (until the nearer of its idle and absolute expiry, plus one idle period
 * in which a late request is told the session expired): a store may drop it then, as a
 * Redis store does with `PX`. Every method may answer synchronously or with a promise.
 *
 * @example
 * ```ts
 * const redisStore: SessionStore = {
 *   async get(hash) {
 *     const text = await redis.get(`session:${hash}`);
 *     return text === null ? undefined : JSON.parse(text);
 *   },
 *   async set(hash, record, ttlMs) {
 *     await redis.set(`session:${hash}`, JSON.stringify(record), 'PX', ttlMs);
 *   },
 *   async delete(hash) {
 *     await redis.del(`session:${hash}`);
 *   },
 * };
 * ```
 */
export interface SessionStore {
  /** The record stored under `hash`, or `undefined` when there is none (or it expired). */
  get(hash: string): SessionRecord | undefined | Promise<SessionRecord | undefined>;
  /** Stores `record` under `hash` for `ttlMs` milliseconds, replacing any record there. */
  set(hash: string, record: SessionRecord, ttlMs: number): void | Promise<void>;
  /** Forgets the record under `hash`, if any. */
  delete(hash: string): void | Promise<void>;
  /**
   * Records activity: sets `lastSeenAt` and extends the record's life to `ttlMs`. Without
   * it, `createSessions()` rewrites the whole record with `set`.
   */
  touch?(hash: string, lastSeenAt: number, ttlMs: number): void | Promise<void>;
}

/**
 * Options of {@link MemorySessionStore}.
 *
 * @example
 * ```ts
 * new MemorySessionStore({ maxSessions: 10_000, sweepIntervalMs: 30_000 });
 * ```
 */
export interface MemorySessionStoreOptions {
  /**
   * The most sessions held at once. A new session beyond it evicts the one used least
   * recently (that user has to sign in again), so memory stays bounded.
   * @defaultValue `100_000`
   */
  maxSessions?: number;
  /**
   * How often, at most, expired sessions are swept out, in milliseconds. Sweeping is lazy:
   * it happens on a store call once the interval has passed (no timer).
   * @defaultValue `60_000` (1 minute)
   */
  sweepIntervalMs?: Duration;
  /**
   * The clock, in epoch milliseconds; inject one to test expiry without waiting.
   * @defaultValue `Date.now`
   */
  now?: () => number;
}

const MEMORY_SESSION_STORE_OPTIONS = [
  'maxSessions',
  'sweepIntervalMs',
  'now',
] as const satisfies readonly (keyof MemorySessionStoreOptions)[];

/** A shallow copy, so callers never share a record with the store. */
function copy(record: SessionRecord): SessionRecord {
  const out: SessionRecord = { ...record, scopes: [...record.scopes] };
  if (record.data !== undefined) out.data = { ...record.data };
  return out;
}

/**
 * A {@link SessionStore} in this process's memory: a `Map` from id hash to record, ordered
 * by last use. Expired records are dropped when read and swept lazily, and `maxSessions`
 * caps the count, so memory stays bounded. Sessions are per process and lost on restart:
 * behind several instances, use a shared store.
 *
 * @example
 * ```ts
 * const sessions = createSessions({
 *   store: new MemorySessionStore({ maxSessions: 10_000 }),
 *   allowedOrigins: ['https://app.example.com'],
 * });
 * ```
 */
export class MemorySessionStore implements SessionStore {
  readonly #entries: ExpiringMap<SessionRecord>;

  constructor(options: MemorySessionStoreOptions = {}) {
    assertKnownOptions('new MemorySessionStore()', options, MEMORY_SESSION_STORE_OPTIONS);
    this.#entries = new ExpiringMap(
      'new MemorySessionStore()',
      {
        maxEntries: options.maxSessions,
        sweepIntervalMs: options.sweepIntervalMs,
        now: options.now,
      },
      { maxEntries: 100_000, maxEntriesOption: 'maxSessions' },
    );
  }

  /** The number of sessions held, expired ones not swept yet included. */
  get size(): number {
    return this.#entries.size;
  }

  /** The stored keys (id hashes), least recently used first: for tests and diagnostics. */
  keys(): string[] {
    return this.#entries.keys();
  }

  get(hash: string): SessionRecord | undefined {
    const record = this.#entries.get(hash);
    return record === undefined ? undefined : copy(record);
  }

  set(hash: string, record: SessionRecord, ttlMs: number): void {
    // Writing moves the entry last: the map stays ordered by last use.
    const now = this.#entries.now();
    if (ttlMs > 0) this.#entries.set(hash, copy(record), now + ttlMs, now);
    else this.#entries.delete(hash);
  }

  delete(hash: string): void {
    this.#entries.delete(hash);
  }

  touch(hash: string, lastSeenAt: number, ttlMs: number): void {
    const record = this.#entries.get(hash);
    if (record === undefined) return;
    this.set(hash, { ...record, lastSeenAt }, ttlMs);
  }

  /** Drops every expired session now. */
  sweep(): void {
    this.#entries.sweep();
  }

  /** Drops every session. */
  clear(): void {
    this.#entries.clear();
  }
}
