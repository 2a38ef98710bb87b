import type { Duration } from '../core/duration.js';
import { assertKnownOptions } from '../internal/options.js';
import {
  assertKindName,
  assertTtl,
  type Consumed,
  type FoundRecord,
  type RecordCondition,
  type RecordKeys,
  type RecordStore,
  type StoredRecord,
} from '../oauth/store/store.js';
import { type RedisCommands, redisStoreOptions } from './commands.js';
import { LuaScript, type RedisClient } from './script.js';

/**
 * Options of {@link RedisRecordStore}.
 *
 * @example
 * ```ts
 * const options: RedisRecordStoreOptions = { client: new Redis(process.env.REDIS_URL), prefix: 'auth:' };
 * ```
 */
export interface RedisRecordStoreOptions {
  /** The client, ioredis or node-redis v5, one node or a cluster ({@link RedisClient}); it stays yours to close. */
  client: RedisClient;
  /** Prefix of every key. @defaultValue `"portico:oauth:"` */
  prefix?: string;
  /**
   * How long a command may take before the request is answered as if Redis were down, in
   * milliseconds. @defaultValue `1_000` (1 second)
   */
  timeoutMs?: Duration;
  /**
   * How many replicas a revocation, a consumption (a refresh-token rotation, a code
   * redemption) and a removal wait for (`WAIT`, at most `waitTimeoutMs`) before they count as
   * done, so that a failover right after does not forget them (Redis replicates
   * asynchronously). Best effort: a primary without a live replica takes the write after the
   * whole wait. 0 waits for none.
   * @defaultValue `0`
   */
  waitForReplicas?: number;
  /**
   * How long a write waits for `waitForReplicas` replicas, in milliseconds.
   * @defaultValue `1_000` (1 second)
   */
  waitTimeoutMs?: Duration;
}

const OWNER = 'RedisRecordStore';

const KNOWN = [
  'client',
  'prefix',
  'timeoutMs',
  'waitForReplicas',
  'waitTimeoutMs',
] as const satisfies readonly (keyof RedisRecordStoreOptions)[];

// Every script names one key: nothing crosses a slot on a cluster.

// A key of another type (a prefix shared by mistake) reads as absent rather than failing.
const READ = new LuaScript(`
local v = redis.pcall('GET', KEYS[1])
if type(v) ~= 'string' then return false end
return v
`);

// Records are stored as {"record":…[,"lookup":…][,"group":…]}. Consuming marks them
// {"usedAt":…,"record":…} (by prefixing the text, so the record is never re-encoded) with the
// time left unchanged, and returns the value as it was: whoever gets it unmarked is the one
// first use. KEYS: the record; ARGV: now (epoch ms)
const CONSUME = new LuaScript(`
local v = redis.pcall('GET', KEYS[1])
if type(v) ~= 'string' or string.sub(v, 1, 1) ~= '{' then return false end
local ok, entry = pcall(cjson.decode, v)
if not ok or type(entry) ~= 'table' or type(entry.record) ~= 'table' then return false end
if entry.usedAt == nil then
  local ttl = redis.call('PTTL', KEYS[1])
  local marked = '{"usedAt":' .. ARGV[1] .. ',' .. string.sub(v, 2)
  if ttl > 0 then redis.call('SET', KEYS[1], marked, 'PX', ttl)
  else redis.call('SET', KEYS[1], marked) end
end
return v
`);

// The stored entry, when it reads as one (the shape entryOf checks in JS) whose record meets
// the condition: a decoded table.
const ENTRY = `
local function entryOf(v, condition)
  if type(v) ~= 'string' then return nil end
  local ok, entry = pcall(cjson.decode, v)
  if not ok or type(entry) ~= 'table' or type(entry.record) ~= 'table' then return nil end
  if entry.usedAt ~= nil and type(entry.usedAt) ~= 'number' then return nil end
  if entry.lookup ~= nil and type(entry.lookup) ~= 'string' then return nil end
  if entry.group ~= nil and type(entry.group) ~= 'string' then return nil end
  local okc, when = pcall(cjson.decode, condition)
  if not okc or type(when) ~= 'table' then return nil end
  for field, value in pairs(when) do
    if entry.record[field] ~= value then return nil end
  end
  return entry
end
`;

// Replaces a live, unused record that meets the condition, keeping its time left and its
// secondary keys. KEYS: the record; ARGV: record JSON, condition JSON
const REPLACE = new LuaScript(`${ENTRY}
local entry = entryOf(redis.pcall('GET', KEYS[1]), ARGV[2])
if entry == nil or entry.usedAt ~= nil then return 0 end
local ttl = redis.call('PTTL', KEYS[1])
if ttl <= 0 then return 0 end
local out = '{"record":' .. ARGV[1]
if type(entry.lookup) == 'string' then out = out .. ',"lookup":' .. cjson.encode(entry.lookup) end
if type(entry.group) == 'string' then out = out .. ',"group":' .. cjson.encode(entry.group) end
redis.call('SET', KEYS[1], out .. '}', 'PX', ttl)
return 1
`);

// Removes a record that meets the condition and returns its text (its secondary keys go
// after). KEYS: the record; ARGV: condition JSON
const DESTROY = new LuaScript(`${ENTRY}
local v = redis.pcall('GET', KEYS[1])
if entryOf(v, ARGV[1]) == nil then return false end
redis.call('DEL', KEYS[1])
return v
`);

// Deletes a key only while it holds ARGV[1] (a lookup key still pointing at its record).
// KEYS: the key; ARGV: the value
const DELETE_IF = new LuaScript(`
if redis.pcall('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`);

// A group: a sorted set of ids scored by their deadline (epoch ms), living as long as its
// longest member; members past their time are dropped as one is added.
// KEYS: the group; ARGV: id, deadline, ttl, now
const GROUP_ADD = new LuaScript(`
if redis.call('TYPE', KEYS[1]).ok ~= 'zset' then redis.call('DEL', KEYS[1]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[4])
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
local left = redis.call('PTTL', KEYS[1])
if left < tonumber(ARGV[3]) then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return 1
`);

// The ids of a group still live at ARGV[1] (a key of another type reads as none).
// KEYS: the group; ARGV: now
const GROUP_READ = new LuaScript(`
local v = redis.pcall('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf')
if type(v) ~= 'table' or v.err then return {} end
return v
`);

// A revocation is never shortened by a later one. KEYS: mark; ARGV: ttl
const REVOKE = new LuaScript(`
local left = redis.call('PTTL', KEYS[1])
if left == -1 or left >= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
return 1
`);

/** A stored entry, as every kind shares it. */
interface Entry {
  record: StoredRecord;
  usedAt?: number;
  lookup?: string;
  group?: string;
}

/**
 * A {@link RecordStore} in Redis, so that several processes act as one authorization server:
 * a code issued by one is redeemed at another, and a refresh token rotated at one is known as
 * used at all. Each record is one JSON string key, `<prefix><kind>:<id>`, expiring with `PX`;
 * a lookup key is `<prefix><kind>.key:<key>` (holding the id), a group a sorted set
 * `<prefix><kind>.group:<group>`, a revocation `<prefix>revoked:<grant id>`. Every command and
 * Lua script names one key, so it works on a Redis Cluster as on one node. Consuming is one
 * Lua script, atomic: of any number of simultaneous consumptions across processes exactly one
 * sees `fresh`; the others, and every later one until the record would have expired, see
 * `used` with the time of the first use, so that a replay revokes the grant (RFC 6749 §4.1.2,
 * RFC 9700 §4.14.2). `replace` and `destroy` are atomic too, conditions included. A value that
 * cannot be read as a record (not JSON, not an object, another type of key) reads as absent.
 * When Redis is down or slow, every method rejects at once (after `timeoutMs` at most) with
 * {@link RedisUnavailableError}. It has no bound of its own (no `checkCapacity`): entries
 * leave only when their time is up, never to make room, so a revocation or a used value is
 * never forgotten early; size Redis's memory for them, with a `maxmemory-policy` of
 * `noeviction` (an evicting policy would forget revocations).
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * const store = new RedisRecordStore({ client: new Redis(process.env.REDIS_URL) });
 * const auth = createAuthorizationServer({ issuer, clients, keys, users, sessions, store });
 * ```
 */
export class RedisRecordStore implements RecordStore {
  readonly #redis: RedisCommands;
  readonly #prefix: string;

  constructor(options: RedisRecordStoreOptions) {
    assertKnownOptions(OWNER, options, KNOWN);
    const { commands, prefix } = redisStoreOptions(OWNER, options, {
      prefix: 'portico:oauth:',
      timeoutMs: 1_000,
    });
    this.#redis = commands;
    this.#prefix = prefix;
  }

  #record(kind: string, id: string): string {
    assertKindName(OWNER, kind);
    return `${this.#prefix}${kind}:${id}`;
  }

  #lookup(kind: string, key: string): string {
    return `${this.#prefix}${kind}.key:${key}`;
  }

  #group(kind: string, group: string): string {
    return `${this.#prefix}${kind}.group:${group}`;
  }

  /**
   * Several keys, each in its own slot on a cluster: the secondary keys first, then the
   * record. A secondary key without its record (a failure between the two, or a record saved
   * again with other keys) finds nothing: reads check the record names it back.
   */
  async save(
    kind: string,
    id: string,
    record: object,
    ttlMs: number,
    keys: RecordKeys = {},
  ): Promise<void> {
    const key = this.#record(kind, id);
    assertTtl(OWNER, ttlMs);
    const ttl = expiry(ttlMs);
    if (ttl === undefined) {
      await this.destroy(kind, id);
      return;
    }
    const entry: Entry = { record: record as StoredRecord };
    if (keys.lookup !== undefined) {
      entry.lookup = keys.lookup;
      await this.#redis.send(['SET', this.#lookup(kind, keys.lookup), id, 'PX', ttl]);
    }
    if (keys.group !== undefined) {
      entry.group = keys.group;
      const now = Date.now();
      await this.#redis.script(
        GROUP_ADD,
        [this.#group(kind, keys.group)],
        [id, now + ttl, ttl, now],
      );
    }
    await this.#redis.send(['SET', key, JSON.stringify(entry), 'PX', ttl]);
  }

  async find(kind: string, id: string): Promise<Consumed<StoredRecord>> {
    return consumed(entryOf(await this.#redis.script(READ, [this.#record(kind, id)], [])));
  }

  async findByKey(kind: string, key: string): Promise<FoundRecord<StoredRecord> | undefined> {
    assertKindName(OWNER, kind);
    const id = await this.#redis.script(READ, [this.#lookup(kind, key)], []);
    if (typeof id !== 'string') return undefined;
    const entry = entryOf(await this.#redis.script(READ, [this.#record(kind, id)], []));
    // a lookup key left pointing at a record saved again with another one is no match
    const found = entry?.lookup === key ? consumed(entry) : undefined;
    return found === undefined ? undefined : { id, ...found };
  }

  async list(kind: string, group: string): Promise<FoundRecord<StoredRecord>[]> {
    assertKindName(OWNER, kind);
    const ids = await this.#redis.script(GROUP_READ, [this.#group(kind, group)], [Date.now()]);
    const names = Array.isArray(ids)
      ? ids.filter((id): id is string => typeof id === 'string')
      : [];
    const texts = await Promise.all(
      names.map((id) => this.#redis.script(READ, [this.#record(kind, id)], [])),
    );
    const found: FoundRecord<StoredRecord>[] = [];
    names.forEach((id, i) => {
      const entry = entryOf(texts[i]);
      const state = entry?.group === group ? consumed(entry) : undefined;
      if (state !== undefined) found.push({ id, ...state });
    });
    return found;
  }

  async consume(kind: string, id: string): Promise<Consumed<StoredRecord>> {
    const key = this.#record(kind, id);
    return consumed(entryOf(await this.#redis.replicated(CONSUME, [key], [Date.now()])));
  }

  async replace(
    kind: string,
    id: string,
    record: object,
    when: RecordCondition = {},
  ): Promise<boolean> {
    const key = this.#record(kind, id);
    const args = [JSON.stringify(record), JSON.stringify(when)];
    return Number(await this.#redis.script(REPLACE, [key], args)) === 1;
  }

  async destroy(kind: string, id: string, when: RecordCondition = {}): Promise<boolean> {
    const key = this.#record(kind, id);
    const text = await this.#redis.replicated(DESTROY, [key], [JSON.stringify(when)]);
    if (typeof text !== 'string') return false;
    const entry = entryOf(text);
    if (entry?.lookup !== undefined) {
      await this.#redis.script(DELETE_IF, [this.#lookup(kind, entry.lookup)], [id]);
    }
    if (entry?.group !== undefined) {
      await this.#redis.send(['ZREM', this.#group(kind, entry.group), id]);
    }
    return true;
  }

  async revokeGrant(grantId: string, ttlMs: number): Promise<void> {
    assertTtl(OWNER, ttlMs);
    const ttl = expiry(ttlMs);
    if (ttl === undefined) return;
    await this.#redis.replicated(REVOKE, [`${this.#prefix}revoked:${grantId}`], [ttl]);
  }

  async isGrantRevoked(grantId: string): Promise<boolean> {
    const count = await this.#redis.send(['EXISTS', `${this.#prefix}revoked:${grantId}`]);
    return count === 1;
  }
}

/** Whole milliseconds ≥ 1 for `PX`, or `undefined` when the value would already be gone. */
function expiry(ttlMs: number): number | undefined {
  const ms = Math.ceil(Math.min(ttlMs, Number.MAX_SAFE_INTEGER));
  return ms > 0 ? ms : undefined;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The one shape check of every kind: a JSON object whose `record` is an object, whose
 * `usedAt` (when there) is a time and whose secondary keys (when there) are strings.
 * Anything else reads as absent.
 */
function entryOf(text: unknown): Entry | undefined {
  if (typeof text !== 'string') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObject(value) || !isObject(value.record)) return undefined;
  const { usedAt, lookup, group } = value;
  if (usedAt !== undefined && !Number.isFinite(usedAt)) return undefined;
  if (lookup !== undefined && typeof lookup !== 'string') return undefined;
  if (group !== undefined && typeof group !== 'string') return undefined;
  return value as unknown as Entry;
}

function consumed(entry: Entry | undefined): Consumed<StoredRecord> {
  if (entry === undefined) return undefined;
  const { record, usedAt } = entry;
  return usedAt === undefined ? { state: 'fresh', record } : { state: 'used', record, usedAt };
}
