import type { Duration } from '../core/duration.js';
import { assertKnownOptions, invalidOption } from '../internal/options.js';
import type {
  AuthorizationCodeRecord,
  Consumed,
  DeviceCodeRecord,
  GrantRecord,
  OAuthStore,
  PushedAuthorizationRecord,
  RefreshTokenRecord,
} from '../oauth/store/store.js';
import { type RedisCommands, redisStoreOptions } from './commands.js';
import { LuaScript, type RedisClient } from './script.js';

/**
 * Options of {@link RedisOAuthStore}.
 *
 * @example
 * ```ts
 * const options: RedisOAuthStoreOptions = { client: new Redis(process.env.REDIS_URL), prefix: 'auth:' };
 * ```
 */
export interface RedisOAuthStoreOptions {
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
   * How many replicas a revocation (a grant, a refresh token), a refresh-token rotation and a
   * code redemption wait for (`WAIT`, at most `waitTimeoutMs`) before they count as done, so
   * that a failover right after does not forget them (Redis replicates asynchronously). Best
   * effort: a primary without a live replica takes the write after the whole wait. 0 waits
   * for none.
   * @defaultValue `0`
   */
  waitForReplicas?: number;
  /**
   * How long a write waits for `waitForReplicas` replicas, in milliseconds.
   * @defaultValue `1_000` (1 second)
   */
  waitTimeoutMs?: Duration;
}

const KNOWN = [
  'client',
  'prefix',
  'timeoutMs',
  'waitForReplicas',
  'waitTimeoutMs',
] as const satisfies readonly (keyof RedisOAuthStoreOptions)[];

// A key of another type (a prefix shared by mistake) reads as absent rather than failing.
const READ = new LuaScript(`
local v = redis.pcall('GET', KEYS[1])
if type(v) ~= 'string' then return false end
return v
`);

// One-time values are stored as {"record":…}. Consuming marks them {"usedAt":…,"record":…}
// (by prefixing the text, so the record is never re-encoded) with the time left unchanged,
// and returns the value as it was: whoever gets it unmarked is the one first use.
// KEYS: the value; ARGV: now (epoch ms)
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

// Replaces a device record that still exists (and reads as one), keeping its time left. A
// decision is never undone: a poll that read "pending" just before the user approved must not
// write it back. KEYS: device; ARGV: record JSON, its status
const UPDATE_DEVICE = new LuaScript(`
local ttl = redis.call('PTTL', KEYS[1])
if ttl <= 0 then return 0 end
local v = redis.pcall('GET', KEYS[1])
if type(v) ~= 'string' then return 0 end
local ok, old = pcall(cjson.decode, v)
if not ok or type(old) ~= 'table' then return 0 end
local was = old.status
if was ~= 'pending' and was ~= 'approved' and was ~= 'denied' then return 0 end
if ARGV[2] == 'pending' and was ~= 'pending' then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
return 1
`);

// Deletes a key only while it holds ARGV[1] (a user-code index still pointing at its device
// code). KEYS: the key; ARGV: the value
const DELETE_IF = new LuaScript(`
if redis.pcall('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`);

// A revocation is never shortened by a later one. KEYS: mark; ARGV: ttl
const REVOKE = new LuaScript(`
local left = redis.call('PTTL', KEYS[1])
if left == -1 or left >= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
return 1
`);

// A user's consents: one hash per user, a field per client holding {"record":…,"until":…}.
// The key lives as long as its longest consent; reads skip the fields past their time (they
// go with the key, or when their client's consent is saved again).
// KEYS: the user's hash; ARGV: client id, entry JSON, ttl
const SAVE_GRANT = new LuaScript(`
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then redis.call('DEL', KEYS[1]) end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local left = redis.call('PTTL', KEYS[1])
if left < tonumber(ARGV[3]) then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return 1
`);

// Every field of a user's hash (a key of another type reads as none). KEYS: the hash
const READ_GRANTS = new LuaScript(`
local v = redis.pcall('HGETALL', KEYS[1])
if type(v) ~= 'table' or v.err then return {} end
return v
`);

// Forgets the consent whose entry holds ARGV[1] (the text as read), atomically: a consent
// replaced meanwhile stays. KEYS: the hash; ARGV: entry text, client id
const DELETE_GRANT = new LuaScript(`
if redis.pcall('HGET', KEYS[1], ARGV[2]) ~= ARGV[1] then return 0 end
return redis.call('HDEL', KEYS[1], ARGV[2])
`);

/**
 * An {@link OAuthStore} in Redis, so that several processes act as one authorization server:
 * a code issued by one is redeemed at another, and a refresh token rotated at one is known as
 * used at all. Records are JSON under hashes of the values, expiring with `PX`. Codes and
 * refresh tokens are consumed by one Lua script, atomically: of any number of simultaneous
 * redemptions across processes exactly one sees `fresh`; the others, and every later one
 * until the value would have expired, see `used` with the time of the first use, so that a
 * replay revokes the grant (RFC 6749 §4.1.2, RFC 9700 §4.14.2). Device codes are found by
 * user code through an index key and updated keeping their expiry; a value that cannot be
 * read reads as absent. When Redis is down or slow, every method rejects at once (after
 * `timeoutMs` at most) with {@link RedisUnavailableError}. It has no bound of its own (no
 * `checkCapacity`): entries leave only when their time is up, never to make room, so a
 * revocation or a used value is never forgotten early; size Redis's memory for them, with a
 * `maxmemory-policy` of `noeviction` (an evicting policy would forget revocations).
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * const store = new RedisOAuthStore({ client: new Redis(process.env.REDIS_URL) });
 * const auth = createAuthorizationServer({ issuer, clients, keys, users, sessions, store });
 * ```
 */
export class RedisOAuthStore implements OAuthStore {
  readonly #redis: RedisCommands;
  readonly #prefix: string;

  constructor(options: RedisOAuthStoreOptions) {
    assertKnownOptions('RedisOAuthStore', options, KNOWN);
    const { commands, prefix } = redisStoreOptions('RedisOAuthStore', options, {
      prefix: 'portico:oauth:',
      timeoutMs: 1_000,
    });
    this.#redis = commands;
    this.#prefix = prefix;
  }

  saveCode(hash: string, record: AuthorizationCodeRecord, ttlMs: number): Promise<void> {
    return this.#save(`code:${hash}`, JSON.stringify({ record }), ttlMs);
  }

  async getCode(hash: string): Promise<Consumed<AuthorizationCodeRecord>> {
    return oneTime(await this.#read(`code:${hash}`), isCodeRecord);
  }

  async consumeCode(hash: string): Promise<Consumed<AuthorizationCodeRecord>> {
    return oneTime(await this.#consume(`code:${hash}`), isCodeRecord);
  }

  saveRefreshToken(hash: string, record: RefreshTokenRecord, ttlMs: number): Promise<void> {
    return this.#save(`rt:${hash}`, JSON.stringify({ record }), ttlMs);
  }

  async rotateRefreshToken(hash: string): Promise<Consumed<RefreshTokenRecord>> {
    return oneTime(await this.#consume(`rt:${hash}`), isRefreshRecord);
  }

  async getRefreshToken(hash: string): Promise<Consumed<RefreshTokenRecord>> {
    return oneTime(await this.#read(`rt:${hash}`), isRefreshRecord);
  }

  async deleteRefreshToken(hash: string): Promise<void> {
    await this.#redis.replicatedSend(['DEL', `${this.#prefix}rt:${hash}`]);
  }

  /**
   * Two keys, one per slot on a cluster: the record, then the index from its user code. An
   * index without its record (a failure between the two) finds nothing and expires with it.
   */
  async saveDeviceCode(hash: string, record: DeviceCodeRecord, ttlMs: number): Promise<void> {
    const device = `${this.#prefix}device:${hash}`;
    const index = `${this.#prefix}user-code:${record.userCode}`;
    const ttl = expiry(ttlMs);
    if (ttl === undefined) {
      await this.#redis.send(['DEL', device]);
      await this.#redis.script(DELETE_IF, [index], [hash]);
      return;
    }
    await this.#redis.send(['SET', device, JSON.stringify(record), 'PX', ttl]);
    await this.#redis.send(['SET', index, hash, 'PX', ttl]);
  }

  async getDeviceCode(hash: string): Promise<DeviceCodeRecord | undefined> {
    return deviceRecord(await this.#read(`device:${hash}`));
  }

  async findDeviceCode(
    userCode: string,
  ): Promise<{ hash: string; record: DeviceCodeRecord } | undefined> {
    const hash = await this.#read(`user-code:${userCode}`);
    if (typeof hash !== 'string') return undefined;
    const record = deviceRecord(await this.#read(`device:${hash}`));
    // an index left pointing at another authorization is no match
    return record?.userCode === userCode ? { hash, record } : undefined;
  }

  async updateDeviceCode(hash: string, record: DeviceCodeRecord): Promise<void> {
    await this.#redis.script(
      UPDATE_DEVICE,
      [`${this.#prefix}device:${hash}`],
      [JSON.stringify(record), record.status],
    );
  }

  async consumeDeviceCode(hash: string): Promise<boolean> {
    const record = await this.getDeviceCode(hash);
    if (record === undefined) return false;
    // exactly one caller deletes the device code; the index goes after, if still pointing there
    if ((await this.#redis.replicatedSend(['DEL', `${this.#prefix}device:${hash}`])) !== 1) {
      return false;
    }
    await this.#redis.script(DELETE_IF, [`${this.#prefix}user-code:${record.userCode}`], [hash]);
    return true;
  }

  savePushedRequest(hash: string, record: PushedAuthorizationRecord, ttlMs: number): Promise<void> {
    return this.#save(`par:${hash}`, JSON.stringify(record), ttlMs);
  }

  async getPushedRequest(hash: string): Promise<PushedAuthorizationRecord | undefined> {
    const record = parse(await this.#read(`par:${hash}`));
    return isPushedRecord(record) ? record : undefined;
  }

  async consumePushedRequest(hash: string): Promise<PushedAuthorizationRecord | undefined> {
    const text = await this.#redis.send(['GETDEL', `${this.#prefix}par:${hash}`]);
    const record = parse(text);
    return isPushedRecord(record) ? record : undefined;
  }

  async saveGrant(record: GrantRecord, ttlMs: number): Promise<void> {
    const ttl = expiry(ttlMs);
    if (ttl === undefined) return;
    const entry = JSON.stringify({ record, until: Date.now() + ttl });
    await this.#redis.script(
      SAVE_GRANT,
      [this.#grantsKey(record.sub)],
      [record.clientId, entry, ttl],
    );
  }

  async getGrant(sub: string, clientId: string): Promise<GrantRecord | undefined> {
    return (await this.#grants(sub)).find((held) => held.record.clientId === clientId)?.record;
  }

  async listGrants(sub: string): Promise<GrantRecord[]> {
    return (await this.#grants(sub))
      .map((held) => held.record)
      .sort((a, b) => a.createdAt - b.createdAt);
  }

  async deleteGrant(sub: string, id: string): Promise<GrantRecord | undefined> {
    const held = (await this.#grants(sub)).find((grant) => grant.record.id === id);
    if (held === undefined) return undefined;
    const args = [held.text, held.record.clientId];
    const deleted = await this.#redis.script(DELETE_GRANT, [this.#grantsKey(sub)], args);
    return Number(deleted) === 1 ? held.record : undefined;
  }

  #grantsKey(sub: string): string {
    return `${this.#prefix}grants:${sub}`;
  }

  /** The live consents of `sub`, with the text each was read as. */
  async #grants(sub: string): Promise<{ record: GrantRecord; text: string }[]> {
    const fields = (await this.#redis.script(READ_GRANTS, [this.#grantsKey(sub)], [])) as unknown[];
    const now = Date.now();
    const live: { record: GrantRecord; text: string }[] = [];
    for (let i = 1; i < fields.length; i += 2) {
      const text = fields[i];
      const entry = parse(text);
      if (entry === undefined || !isGrantRecord(entry.record, sub, fields[i - 1])) continue;
      if (typeof entry.until === 'number' && entry.until > now) {
        live.push({ record: entry.record, text: text as string });
      }
    }
    return live;
  }

  async revokeGrant(grantId: string, ttlMs: number): Promise<void> {
    const ttl = expiry(ttlMs);
    if (ttl === undefined) return;
    await this.#redis.replicated(REVOKE, [`${this.#prefix}revoked:${grantId}`], [ttl]);
  }

  async isGrantRevoked(grantId: string): Promise<boolean> {
    const count = await this.#redis.send(['EXISTS', `${this.#prefix}revoked:${grantId}`]);
    return count === 1;
  }

  async #save(key: string, value: string, ttlMs: number): Promise<void> {
    const ttl = expiry(ttlMs);
    const full = this.#prefix + key;
    await this.#redis.send(ttl === undefined ? ['DEL', full] : ['SET', full, value, 'PX', ttl]);
  }

  #read(key: string): Promise<unknown> {
    return this.#redis.script(READ, [this.#prefix + key], []);
  }

  /** Codes and refresh tokens: the first use waits for the replicas. */
  #consume(key: string): Promise<unknown> {
    return this.#redis.replicated(CONSUME, [this.#prefix + key], [Date.now()]);
  }
}

/** Whole milliseconds ≥ 1 for `PX`, or `undefined` when the value would already be gone. */
function expiry(ttlMs: number): number | undefined {
  if (typeof ttlMs !== 'number' || Number.isNaN(ttlMs)) {
    throw invalidOption('RedisOAuthStore: a time to live must be a number of milliseconds');
  }
  const ms = Math.ceil(Math.min(ttlMs, Number.MAX_SAFE_INTEGER));
  return ms > 0 ? ms : undefined;
}

function parse(text: unknown): Record<string, unknown> | undefined {
  if (typeof text !== 'string') return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** A stored one-time value as the store reads it: anything else reads as absent. */
function oneTime<R>(text: unknown, isRecord: (value: unknown) => value is R): Consumed<R> {
  const entry = parse(text);
  if (entry === undefined || !isRecord(entry.record)) return undefined;
  const { record, usedAt } = entry;
  if (usedAt === undefined) return { state: 'fresh', record };
  return Number.isFinite(usedAt) ? { state: 'used', record, usedAt: usedAt as number } : undefined;
}

function deviceRecord(text: unknown): DeviceCodeRecord | undefined {
  const record = parse(text);
  return isDeviceRecord(record) ? record : undefined;
}

const isString = (value: unknown): value is string => typeof value === 'string';
const isScope = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every(isString);
const isNumber = (value: unknown): value is number => Number.isFinite(value);

function isCodeRecord(value: unknown): value is AuthorizationCodeRecord {
  const r = value as Partial<Record<keyof AuthorizationCodeRecord, unknown>> | undefined;
  return (
    typeof r === 'object' &&
    r !== null &&
    isString(r.clientId) &&
    isString(r.redirectUri) &&
    isString(r.sub) &&
    isScope(r.scope) &&
    isNumber(r.authTime) &&
    isString(r.grantId) &&
    (r.dpopJkt === undefined || isString(r.dpopJkt))
  );
}

function isRefreshRecord(value: unknown): value is RefreshTokenRecord {
  const r = value as Partial<Record<keyof RefreshTokenRecord, unknown>> | undefined;
  return (
    typeof r === 'object' &&
    r !== null &&
    isString(r.clientId) &&
    isString(r.sub) &&
    isScope(r.scope) &&
    isString(r.grantId) &&
    isNumber(r.familyExpiresAt) &&
    (r.jkt === undefined || isString(r.jkt))
  );
}

function isDeviceRecord(value: unknown): value is DeviceCodeRecord {
  const r = value as Partial<Record<keyof DeviceCodeRecord, unknown>> | undefined;
  return (
    typeof r === 'object' &&
    r !== null &&
    isString(r.clientId) &&
    isScope(r.scope) &&
    isString(r.userCode) &&
    (r.status === 'pending' || r.status === 'approved' || r.status === 'denied') &&
    isNumber(r.interval) &&
    isString(r.grantId) &&
    (r.expiresAt === undefined || isNumber(r.expiresAt))
  );
}

function isPushedRecord(value: unknown): value is PushedAuthorizationRecord {
  const r = value as Partial<Record<keyof PushedAuthorizationRecord, unknown>> | undefined;
  return (
    typeof r?.clientId === 'string' &&
    Array.isArray(r.params) &&
    r.params.every(
      (pair) =>
        Array.isArray(pair) &&
        pair.length === 2 &&
        typeof pair[0] === 'string' &&
        typeof pair[1] === 'string',
    )
  );
}

/** A consent as saved for `sub` under the field `clientId`: anything else reads as absent. */
function isGrantRecord(value: unknown, sub: string, clientId: unknown): value is GrantRecord {
  if (typeof value !== 'object' || value === null) return false;
  const grant = value as Record<string, unknown>;
  return (
    isString(grant.id) &&
    grant.sub === sub &&
    grant.clientId === clientId &&
    isScope(grant.scope) &&
    Number.isFinite(grant.createdAt)
  );
}
