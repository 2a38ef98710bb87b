import type { ApiKeyRecord, ApiKeyStore } from '../auth/api-key/store.js';
import {
  announceRevocation,
  apiKeyCredentialId,
  processRevocations,
  type Revocations,
} from '../auth/revocations.js';
import type { Duration } from '../core/duration.js';
import { conflict } from '../core/errors/errors.js';
import { assertKnownOptions, invalidOption } from '../internal/options.js';
import { oneSlotPrefix, type RedisCommands, redisStoreOptions } from './commands.js';
import { LuaScript, type RedisClient } from './script.js';

/**
 * Options of {@link RedisApiKeyStore}.
 *
 * @example
 * ```ts
 * const options: RedisApiKeyStoreOptions = { client: new Redis(process.env.REDIS_URL), prefix: 'app:apikey:' };
 * ```
 */
export interface RedisApiKeyStoreOptions {
  /** The client, ioredis or node-redis v5, one node or a cluster ({@link RedisClient}); it stays yours to close. */
  client: RedisClient;
  /**
   * Prefix of every key. The store's keys share one hash slot (one primary of a cluster), so
   * that a save is one atomic script: the prefix is wrapped in a hash tag
   * (`{portico:apikey:}id:…`) unless it has one (`app:{keys}:`).
   * @defaultValue `"portico:apikey:"`
   */
  prefix?: string;
  /** How long a command may take, in milliseconds, before the request is answered as if Redis were down. @defaultValue `1000` */
  timeoutMs?: Duration;
  /**
   * How many replicas a created or deleted key waits for (`WAIT`, at most `waitTimeoutMs`)
   * before the call returns, so that a failover right after neither forgets a key handed out
   * nor brings back a revoked one (Redis replicates asynchronously). Best effort: a primary
   * without a live replica takes the write after the whole wait. 0 waits for none.
   * @defaultValue `0`
   */
  waitForReplicas?: number;
  /**
   * How long a write waits for `waitForReplicas` replicas, in milliseconds.
   * @defaultValue `1_000` (1 second)
   */
  waitTimeoutMs?: Duration;
  /**
   * Where a deleted key's revocation is announced, so that the streams opened with it end
   * (give the service's cross-process bus).
   * @defaultValue `processRevocations()`
   */
  revocations?: Revocations;
}

const KNOWN_OPTIONS = [
  'client',
  'prefix',
  'timeoutMs',
  'waitForReplicas',
  'waitTimeoutMs',
  'revocations',
] as const satisfies readonly (keyof RedisApiKeyStoreOptions)[];

// Keys under the prefix (one hash slot): `id:<id>` the record's JSON, `hash:<hash>` the id holding that hash,
// `ids` every id and `owner:<owner>` an owner's ids (sorted sets scored by a sequence, `seq`,
// so lists come oldest first and a replaced record keeps its place).

// KEYS: record, hash index, all ids, owner's ids, sequence; ARGV: id, hash, JSON, owner, prefix
const SAVE = new LuaScript(`
local holder = redis.call('GET', KEYS[2])
if holder and holder ~= ARGV[1] and redis.call('EXISTS', ARGV[5] .. 'id:' .. holder) == 1 then
  return 0
end
local previous = redis.call('GET', KEYS[1])
if previous then
  local ok, old = pcall(cjson.decode, previous)
  if ok and type(old) == 'table' then
    if type(old.hash) == 'string' and old.hash ~= ARGV[2] then
      local index = ARGV[5] .. 'hash:' .. old.hash
      if redis.call('GET', index) == ARGV[1] then redis.call('DEL', index) end
    end
    if type(old.owner) == 'string' and old.owner ~= ARGV[4] then
      redis.call('ZREM', ARGV[5] .. 'owner:' .. old.owner, ARGV[1])
    end
  end
end
local score = redis.call('ZSCORE', KEYS[3], ARGV[1])
if not score then
  score = redis.call('INCR', KEYS[5])
  redis.call('ZADD', KEYS[3], score, ARGV[1])
end
redis.call('ZADD', KEYS[4], score, ARGV[1])
redis.call('SET', KEYS[1], ARGV[3])
redis.call('SET', KEYS[2], ARGV[1])
if previous and previous ~= ARGV[3] then return 2 end
return 1
`);

// KEYS: record, all ids; ARGV: id, prefix
const DELETE = new LuaScript(`
redis.call('ZREM', KEYS[2], ARGV[1])
local text = redis.call('GET', KEYS[1])
if not text then return 0 end
local ok, record = pcall(cjson.decode, text)
if ok and type(record) == 'table' then
  if type(record.hash) == 'string' then
    local index = ARGV[2] .. 'hash:' .. record.hash
    if redis.call('GET', index) == ARGV[1] then redis.call('DEL', index) end
  end
  if type(record.owner) == 'string' then
    redis.call('ZREM', ARGV[2] .. 'owner:' .. record.owner, ARGV[1])
  end
end
redis.call('DEL', KEYS[1])
return 1
`);

// KEYS: hash index; ARGV: prefix
const FIND = new LuaScript(`
local id = redis.call('GET', KEYS[1])
if not id then return false end
return redis.call('GET', ARGV[1] .. 'id:' .. id)
`);

const isNonEmptyString = (value: unknown): value is string =>
  typeof value === 'string' && value !== '';

/**
 * A frozen copy of `value` with only the fields of a record, or `undefined` when it is not
 * one (what the memory store checks, and `name` and `scopes` of the right types).
 */
function toRecord(value: unknown): ApiKeyRecord | undefined {
  const r = value as ApiKeyRecord;
  if (
    typeof r !== 'object' ||
    r === null ||
    !isNonEmptyString(r.id) ||
    !isNonEmptyString(r.hash) ||
    typeof r.owner !== 'string' ||
    typeof r.createdAt !== 'string' ||
    (r.name !== undefined && typeof r.name !== 'string') ||
    (r.scopes !== undefined &&
      !(Array.isArray(r.scopes) && r.scopes.every((scope) => typeof scope === 'string')))
  ) {
    return undefined;
  }
  const copy: { -readonly [K in keyof ApiKeyRecord]: ApiKeyRecord[K] } = {
    id: r.id,
    hash: r.hash,
    owner: r.owner,
    createdAt: r.createdAt,
  };
  if (r.name !== undefined) copy.name = r.name;
  if (r.scopes !== undefined) copy.scopes = Object.freeze([...r.scopes]);
  return Object.freeze(copy);
}

/** A stored value as a record, or `undefined` when it is missing or not one (never throws). */
function parseRecord(text: string | null): ApiKeyRecord | undefined {
  if (text === null) return undefined;
  try {
    return toRecord(JSON.parse(text));
  } catch {
    return undefined;
  }
}

/**
 * An {@link ApiKeyStore} in Redis, shared by every process of a service: each record as JSON
 * (the key's hash, never the key), an index from hash to id for the lookup of every request
 * (one round trip), and sorted sets of ids, all and per owner, so that listing needs no
 * `KEYS` or `SCAN`. Saving and deleting are single Lua scripts, so the index never points to
 * a deleted record and two processes saving the same key cannot both succeed. Records come
 * back frozen; a stored value that is not a record reads as absent. There is no cache:
 * deleting a record revokes its key on every process from the next request. When Redis is
 * down or slow, every call rejects at once (after `timeoutMs` at most) with
 * {@link RedisUnavailableError}, answered as a 503 problem with `Retry-After`.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * const store = new RedisApiKeyStore({ client: new Redis(process.env.REDIS_URL) });
 * const { key } = await createApiKey(store, { owner: 'alice', scopes: ['read:messages'] });
 * app.use(authenticate([apiKeyAuth({ store })]));
 * ```
 */
export class RedisApiKeyStore implements ApiKeyStore {
  readonly #redis: RedisCommands;
  readonly #prefix: string;
  readonly #revocations: Revocations;

  constructor(options: RedisApiKeyStoreOptions) {
    const owner = 'new RedisApiKeyStore()';
    assertKnownOptions(owner, options, KNOWN_OPTIONS);
    const { commands, prefix } = redisStoreOptions(owner, options, {
      prefix: 'portico:apikey:',
      timeoutMs: 1_000,
    });
    this.#revocations = options.revocations ?? processRevocations();
    this.#redis = commands;
    this.#prefix = oneSlotPrefix(prefix);
  }

  async findByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    const text = await this.#redis.script(FIND, [`${this.#prefix}hash:${hash}`], [this.#prefix]);
    const record = parseRecord(typeof text === 'string' ? text : null);
    return record?.hash === hash ? record : undefined;
  }

  async save(record: ApiKeyRecord): Promise<void> {
    const frozen = toRecord(record);
    if (frozen === undefined) {
      throw invalidOption(
        'ApiKeyStore: a record needs string `id`, `hash`, `owner` and `createdAt` (and `scopes` of strings)',
      );
    }
    const p = this.#prefix;
    const saved = await this.#redis.replicated(
      SAVE,
      [
        `${p}id:${frozen.id}`,
        `${p}hash:${frozen.hash}`,
        `${p}ids`,
        `${p}owner:${frozen.owner}`,
        `${p}seq`,
      ],
      [frozen.id, frozen.hash, JSON.stringify(frozen), frozen.owner, p],
    );
    if (saved === 0) {
      throw conflict('This API key already exists.', { code: 'ERR_API_KEY_EXISTS' });
    }
    // a record changed under its id: the streams opened with the old one end
    if (Number(saved) === 2)
      await announceRevocation(this.#revocations, [apiKeyCredentialId(frozen.id)]);
  }

  async delete(id: string): Promise<boolean> {
    const deleted = await this.#redis.replicated(
      DELETE,
      [`${this.#prefix}id:${id}`, `${this.#prefix}ids`],
      [id, this.#prefix],
    );
    if (deleted === 1) await announceRevocation(this.#revocations, [apiKeyCredentialId(id)]);
    return deleted === 1;
  }

  async get(id: string): Promise<ApiKeyRecord | undefined> {
    const text = await this.#redis.send(['GET', `${this.#prefix}id:${id}`]);
    const record = parseRecord(typeof text === 'string' ? text : null);
    return record?.id === id ? record : undefined;
  }

  async list(owner?: string): Promise<ApiKeyRecord[]> {
    const p = this.#prefix;
    const ids = (await this.#redis.send([
      'ZRANGE',
      owner === undefined ? `${p}ids` : `${p}owner:${owner}`,
      0,
      -1,
    ])) as string[];
    // one slot: the records come in one MGET
    const texts =
      ids.length === 0
        ? []
        : ((await this.#redis.send(['MGET', ...ids.map((id) => `${p}id:${id}`)])) as (
            | string
            | null
          )[]);
    const records: ApiKeyRecord[] = [];
    texts.forEach((text, i) => {
      const record = parseRecord(text);
      // an id deleted between the two commands, or a value that is not its record, is skipped
      if (
        record !== undefined &&
        record.id === ids[i] &&
        (owner === undefined || record.owner === owner)
      ) {
        records.push(record);
      }
    });
    return records;
  }
}
