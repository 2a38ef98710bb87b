import type { SessionRecord, SessionStore } from '../auth/session/store.js';
import type { Duration } from '../core/duration.js';
import { assertKnownOptions, invalidOption } from '../internal/options.js';
import { type RedisCommands, redisStoreOptions } from './commands.js';
import { LuaScript, type RedisClient } from './script.js';

/**
 * Options of {@link RedisSessionStore}.
 *
 * @example
 * ```ts
 * const options: RedisSessionStoreOptions = { client: new Redis(process.env.REDIS_URL), prefix: 'app:sess:' };
 * ```
 */
export interface RedisSessionStoreOptions {
  /** The client, ioredis or node-redis v5, one node or a cluster ({@link RedisClient}); it stays yours to close. */
  client: RedisClient;
  /** Prefix of every key. @defaultValue `"portico:sess:"` */
  prefix?: string;
  /** How long a command may take, in milliseconds, before the request is answered as if Redis were down. @defaultValue `1000` */
  timeoutMs?: Duration;
  /**
   * How many replicas an ended session (sign-out, revocation) waits for (`WAIT`, at most
   * `waitTimeoutMs`) before it counts as ended, so that a failover right after does not bring
   * it back (Redis replicates asynchronously). Best effort: a primary without a live replica
   * takes the write after the whole wait. 0 waits for none.
   * @defaultValue `0`
   */
  waitForReplicas?: number;
  /**
   * How long an ended session waits for `waitForReplicas` replicas, in milliseconds.
   * @defaultValue `1_000` (1 second)
   */
  waitTimeoutMs?: Duration;
}

// Records are written with `lastSeenAt` first, so that activity rewrites that one number in
// place (no JSON decoding in Lua, which would turn `[]` into `{}` and round numbers). Only an
// existing record is rewritten: a session deleted meanwhile (sign-out, rotation) stays gone.
// KEYS: the record; ARGV: lastSeenAt as a JSON number, ttl in ms
const TOUCH = new LuaScript(`
local text = redis.call('GET', KEYS[1])
if not text then return 0 end
local rest = string.match(text, '^{"lastSeenAt":[-+.%deE]+(.*)$')
if not rest then return 0 end
redis.call('SET', KEYS[1], '{"lastSeenAt":' .. ARGV[1] .. rest, 'PX', ARGV[2])
return 1
`);

const optionalString = (value: unknown) => value === undefined || typeof value === 'string';

/** A stored value as a record, or `undefined` when it is missing or not one (never throws). */
function parseRecord(text: string | null): SessionRecord | undefined {
  if (text === null) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const r = value as SessionRecord;
  const ok =
    typeof r === 'object' &&
    r !== null &&
    typeof r.sub === 'string' &&
    Array.isArray(r.scopes) &&
    r.scopes.every((scope) => typeof scope === 'string') &&
    Number.isFinite(r.createdAt) &&
    Number.isFinite(r.lastSeenAt) &&
    Number.isFinite(r.expiresAt) &&
    optionalString(r.name) &&
    optionalString(r.role) &&
    (r.data === undefined ||
      (typeof r.data === 'object' && r.data !== null && !Array.isArray(r.data)));
  return ok ? r : undefined;
}

/** Whole milliseconds for `PX`, at least 1. */
const px = (ttlMs: number) => Math.max(1, Math.ceil(ttlMs));

const KNOWN_OPTIONS = [
  'client',
  'prefix',
  'timeoutMs',
  'waitForReplicas',
  'waitTimeoutMs',
] as const satisfies readonly (keyof RedisSessionStoreOptions)[];

/**
 * A {@link SessionStore} in Redis, so that every process of a service knows every session:
 * one JSON string per session under `prefix` + the id's SHA-256 (never the id itself),
 * written with `PX` so that Redis drops it when `createSessions()` no longer needs it.
 * Activity (`touch`) rewrites `lastSeenAt` and the TTL in one Lua script, and never brings
 * back a session deleted meanwhile. A value that is not a session record reads as no
 * session (a 401, not a crash). When Redis is down or slow, every call rejects at once
 * (after `timeoutMs` at most) with {@link RedisUnavailableError}, answered as a 503 problem
 * with `Retry-After`.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * const sessions = createSessions({
 *   store: new RedisSessionStore({ client: new Redis(process.env.REDIS_URL) }),
 *   allowedOrigins: ['https://app.example.com'],
 * });
 * ```
 */
export class RedisSessionStore implements SessionStore {
  readonly #redis: RedisCommands;
  readonly #prefix: string;

  constructor(options: RedisSessionStoreOptions) {
    const owner = 'new RedisSessionStore()';
    assertKnownOptions(owner, options, KNOWN_OPTIONS);
    const { commands, prefix } = redisStoreOptions(owner, options, {
      prefix: 'portico:sess:',
      timeoutMs: 1_000,
    });
    this.#redis = commands;
    this.#prefix = prefix;
  }

  async get(hash: string): Promise<SessionRecord | undefined> {
    const text = await this.#redis.send(['GET', this.#prefix + hash]);
    return parseRecord(typeof text === 'string' ? text : null);
  }

  async set(hash: string, record: SessionRecord, ttlMs: number): Promise<void> {
    if (!(ttlMs > 0)) return this.delete(hash);
    const { lastSeenAt, ...rest } = record;
    const text = JSON.stringify({ lastSeenAt, ...rest });
    await this.#redis.send(['SET', this.#prefix + hash, text, 'PX', px(ttlMs)]);
  }

  async delete(hash: string): Promise<void> {
    await this.#redis.replicatedSend(['DEL', this.#prefix + hash]);
  }

  async touch(hash: string, lastSeenAt: number, ttlMs: number): Promise<void> {
    if (!(ttlMs > 0)) return this.delete(hash);
    if (!Number.isFinite(lastSeenAt)) {
      throw invalidOption('RedisSessionStore: `lastSeenAt` must be epoch milliseconds');
    }
    await this.#redis.script(TOUCH, [this.#prefix + hash], [JSON.stringify(lastSeenAt), px(ttlMs)]);
  }
}
