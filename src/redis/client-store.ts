import type { Duration } from '../core/duration.js';
import { assertKnownOptions, countOption } from '../internal/options.js';
import type { OAuthClient } from '../oauth/clients/client.js';
import {
  clientExists,
  clientStoreFull,
  DEFAULT_MAX_CLIENTS,
  type WritableClientStore,
} from '../oauth/clients/store.js';
import { readStoredClient, storedClientJson } from '../oauth/clients/stored.js';
import { oneSlotPrefix, type RedisCommands, redisStoreOptions } from './commands.js';
import { LuaScript, type RedisClient } from './script.js';

/**
 * Options of {@link RedisClientStore}.
 *
 * @example
 * ```ts
 * const options: RedisClientStoreOptions = { client: new Redis(process.env.REDIS_URL), maxClients: 1_000 };
 * ```
 */
export interface RedisClientStoreOptions {
  /** The client, ioredis or node-redis v5, one node or a cluster ({@link RedisClient}); it stays yours to close. */
  client: RedisClient;
  /**
   * Prefix of every key. The store's keys share one hash slot (one primary of a cluster), so
   * that adding a client and counting the clients are one atomic script: the prefix is
   * wrapped in a hash tag (`{portico:client:}id:…`) unless it has one (`app:{clients}:`).
   * @defaultValue `"portico:client:"`
   */
  prefix?: string;
  /**
   * The most clients the store holds. Once full, an `add` is refused with a 503
   * (`ERR_CLIENT_STORE_FULL`): no client is ever forgotten to make room.
   * @defaultValue `10_000`
   */
  maxClients?: number;
  /** How long a command may take, in milliseconds, before the request is answered as if Redis were down. @defaultValue `1000` */
  timeoutMs?: Duration;
  /**
   * How many replicas a write waits for (`WAIT`, at most `waitTimeoutMs`) before the call
   * returns, so that a failover right after neither forgets a client added nor brings back
   * one removed (Redis replicates asynchronously). Best effort. 0 waits for none.
   * @defaultValue `0`
   */
  waitForReplicas?: number;
  /**
   * How long a write waits for `waitForReplicas` replicas, in milliseconds.
   * @defaultValue `1_000` (1 second)
   */
  waitTimeoutMs?: Duration;
}

const KNOWN_OPTIONS = [
  'client',
  'prefix',
  'maxClients',
  'timeoutMs',
  'waitForReplicas',
  'waitTimeoutMs',
] as const satisfies readonly (keyof RedisClientStoreOptions)[];

// Keys under the prefix (one hash slot): `id:<clientId>` a client's JSON (stored.ts), `ids`
// the set of the ids held, which bounds their number.

// KEYS: client, ids; ARGV: id, JSON, most clients. 1 added, 0 the id is taken, -1 full.
const ADD = new LuaScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 0 and redis.call('SCARD', KEYS[2]) >= tonumber(ARGV[3]) then
  return -1
end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[1])
return 1
`);

// KEYS: client, ids; ARGV: id, JSON. 1 replaced, 0 no such client.
const REPLACE = new LuaScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[1])
return 1
`);

// KEYS: client. Its JSON, or false: a key of another type is no client (a plain GET would fail).
const GET = new LuaScript(`
if redis.call('TYPE', KEYS[1]).ok ~= 'string' then return false end
return redis.call('GET', KEYS[1])
`);

// KEYS: client, ids; ARGV: id. 1 removed, 0 there was none.
const REMOVE = new LuaScript(`
redis.call('SREM', KEYS[2], ARGV[1])
return redis.call('DEL', KEYS[1])
`);

/**
 * A {@link WritableClientStore} in Redis, shared by every process of a service: clients added,
 * changed and removed while the server runs (what dynamic client registration stores), seen
 * by every process from its next request (there is no cache). Each client is JSON of the
 * fields of `OAuthClient` (the scrypt hash of its secret, never the secret; its public keys or
 * their URL; its redirect URIs, grants and scopes), and reads back as the same frozen client; a
 * field that is not JSON (a function, a `URL` object) or not a field of `OAuthClient` is
 * refused with a `TypeError` naming it. A stored value that is not such a client reads as
 * absent. Adding is one Lua script that checks the id and the bound together: of two `add`s
 * of one id, exactly one wins, and a full store (`maxClients`) refuses with a 503. When Redis
 * is down or slow, every call rejects at once (after `timeoutMs` at most) with
 * {@link RedisUnavailableError}, answered as a 503 (`temporarily_unavailable` at the token
 * endpoint).
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * const clients = clientStores(
 *   [await defineClient({ clientId: 'web', … })],
 *   new RedisClientStore({ client: new Redis(process.env.REDIS_URL), maxClients: 1_000 }),
 * );
 * const server = createAuthorizationServer({ clients, … });
 * await clients.add(await defineClient({ clientId: 'partner', … }));
 * ```
 */
export class RedisClientStore implements WritableClientStore {
  readonly #redis: RedisCommands;
  readonly #prefix: string;
  readonly #max: number;

  constructor(options: RedisClientStoreOptions) {
    const owner = 'new RedisClientStore()';
    assertKnownOptions(owner, options, KNOWN_OPTIONS);
    const { commands, prefix } = redisStoreOptions(owner, options, {
      prefix: 'portico:client:',
      timeoutMs: 1_000,
    });
    this.#max = countOption(owner, 'maxClients', options.maxClients, DEFAULT_MAX_CLIENTS);
    this.#redis = commands;
    this.#prefix = oneSlotPrefix(prefix);
  }

  #keys(clientId: string): string[] {
    return [`${this.#prefix}id:${clientId}`, `${this.#prefix}ids`];
  }

  async add(client: OAuthClient): Promise<void> {
    const { clientId, json } = storedClientJson('RedisClientStore.add()', client);
    const added = Number(
      await this.#redis.replicated(ADD, this.#keys(clientId), [clientId, json, this.#max]),
    );
    if (added === 0) throw clientExists(clientId);
    if (added === -1) throw clientStoreFull();
  }

  async replace(client: OAuthClient): Promise<boolean> {
    const { clientId, json } = storedClientJson('RedisClientStore.replace()', client);
    return (
      Number(await this.#redis.replicated(REPLACE, this.#keys(clientId), [clientId, json])) === 1
    );
  }

  async remove(clientId: string): Promise<boolean> {
    if (typeof clientId !== 'string') return false;
    return Number(await this.#redis.replicated(REMOVE, this.#keys(clientId), [clientId])) === 1;
  }

  async get(clientId: string): Promise<OAuthClient | undefined> {
    if (typeof clientId !== 'string') return undefined;
    const text = await this.#redis.script(GET, [`${this.#prefix}id:${clientId}`], []);
    return readStoredClient(text, clientId);
  }
}
