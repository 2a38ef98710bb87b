import type { Duration } from '../core/duration.js';
import { assertKnownOptions, countOption, durationOption } from '../internal/options.js';
import type {
  WebhookClaim,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointAdmission,
  WebhookEndpointFilter,
  WebhookStore,
} from '../webhook/store.js';
import { oneSlotPrefix, type RedisCommands, redisStoreOptions } from './commands.js';
import { LuaScript, type RedisClient } from './script.js';

/**
 * Options of {@link RedisWebhookStore}.
 *
 * @example
 * ```ts
 * const options: RedisWebhookStoreOptions = { client: new Redis(process.env.REDIS_URL), prefix: 'app:wh:' };
 * ```
 */
export interface RedisWebhookStoreOptions {
  /** The client, ioredis or node-redis v5, one node or a cluster ({@link RedisClient}); it stays yours to close. */
  client: RedisClient;
  /**
   * Prefix of every key. The endpoints share one hash slot (`{portico:wh:}ep:…`), each queue
   * shard another (`{portico:wh:q0:}due`); a prefix with its own hash tag (`app:{wh}:`) puts
   * them all on that one slot.
   * @defaultValue `"portico:wh:"`
   */
  prefix?: string;
  /**
   * How many queues the deliveries are spread over, each on its own hash slot (so over the
   * primaries of a cluster), an endpoint's deliveries always in the same one (its order and
   * bound hold). Claims visit every shard. Changing it strands the deliveries queued in the
   * shards it drops: drain the queue first.
   * @defaultValue `1`
   */
  shards?: number;
  /** How many finished deliveries are listed (the oldest are forgotten first). @defaultValue `10_000` */
  maxFinished?: number;
  /**
   * How long a finished delivery stays readable, in milliseconds.
   * @defaultValue `604_800_000` (7 days)
   */
  finishedTtlMs?: Duration;
  /**
   * How long a command may take, in milliseconds, before it fails as if Redis were down.
   * @defaultValue `2_000` (2 seconds)
   */
  timeoutMs?: Duration;
}

const OWNER = 'RedisWebhookStore';
const KNOWN = [
  'client',
  'prefix',
  'shards',
  'maxFinished',
  'finishedTtlMs',
  'timeoutMs',
] as const satisfies readonly (keyof RedisWebhookStoreOptions)[];

// The queue of one shard (one slot), its keys under the shard's prefix: `due` (ids by due
// time or lease end), `seq`, `d:<id>` (a delivery), `ep:<endpoint>:pending` and `:leased`,
// `finished` (ids, newest last).

// KEYS: due, seq; ARGV: shard prefix, then per delivery: id, endpointId, nextAttemptAt, json
const ENQUEUE = new LuaScript(`
for i = 2, #ARGV, 4 do
  local id, ep = ARGV[i], ARGV[i + 1]
  redis.call('SET', ARGV[1] .. 'd:' .. id, ARGV[i + 3])
  redis.call('ZADD', KEYS[1], ARGV[i + 2], id)
  redis.call('ZADD', ARGV[1] .. 'ep:' .. ep .. ':pending', redis.call('INCR', KEYS[2]), id)
end
return 1
`);

// KEYS: due; ARGV: shard prefix, now, limit, leaseMs, perEndpoint, ordered ('1'/'0')
// Leases: a claimed delivery moves to leaseUntil in the due set (taken again if its sender
// dies) and into its endpoint's leased set (counted against perEndpoint while live).
const CLAIM = new LuaScript(`
local p, now, limit, lease = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local per, ordered = tonumber(ARGV[5]), ARGV[6] == '1'
local out = {}
local candidates = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit * 20 + 100)
for _, id in ipairs(candidates) do
  if #out >= limit then break end
  local json = redis.call('GET', p .. 'd:' .. id)
  if not json then
    redis.call('ZREM', KEYS[1], id)
  else
    local ep = cjson.decode(json).endpointId
    local leased = p .. 'ep:' .. ep .. ':leased'
    local ok = redis.call('ZCOUNT', leased, '(' .. now, '+inf') < per
    if ok and ordered then
      local head = redis.call('ZRANGE', p .. 'ep:' .. ep .. ':pending', 0, 0)[1]
      ok = head == id
    end
    if ok then
      redis.call('ZREMRANGEBYSCORE', leased, '-inf', now)
      redis.call('ZADD', leased, now + lease, id)
      redis.call('ZADD', KEYS[1], now + lease, id)
      out[#out + 1] = json
    end
  end
end
return out
`);

// KEYS: due, finished; ARGV: shard prefix, id, endpointId, state, nextAttemptAt, json, finishedTtl, maxFinished
const UPDATE = new LuaScript(`
local p, id, ep = ARGV[1], ARGV[2], ARGV[3]
local key = p .. 'd:' .. id
if redis.call('EXISTS', key) == 0 then return 0 end
redis.call('ZREM', p .. 'ep:' .. ep .. ':leased', id)
if ARGV[4] == 'pending' then
  redis.call('SET', key, ARGV[6])
  redis.call('ZADD', KEYS[1], ARGV[5], id)
else
  redis.call('SET', key, ARGV[6], 'PX', ARGV[7])
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZREM', p .. 'ep:' .. ep .. ':pending', id)
  redis.call('RPUSH', KEYS[2], id)
  redis.call('LTRIM', KEYS[2], -tonumber(ARGV[8]), -1)
end
return 1
`);

// The endpoints (one slot): `eps` (every id), `ep:<id>`, `owner:<owner>` (URL → id) and
// `cred:<credential>` (ids).

// KEYS: endpoints; ARGV: registry prefix, id, json, owned ('1'/'0'), owner, url, maxPerOwner, credentialIds…
// The owner's hash (URL → id) is the cap and the duplicate check, in one step with the write.
const ADD_ENDPOINT = new LuaScript(`
local p, id = ARGV[1], ARGV[2]
if ARGV[4] == '1' then
  local owned = p .. 'owner:' .. ARGV[5]
  if redis.call('HEXISTS', owned, ARGV[6]) == 1 then return 'duplicate' end
  if redis.call('HLEN', owned) >= tonumber(ARGV[7]) then return 'full' end
  redis.call('HSET', owned, ARGV[6], id)
end
for i = 8, #ARGV do redis.call('SADD', p .. 'cred:' .. ARGV[i], id) end
redis.call('SET', p .. 'ep:' .. id, ARGV[3])
redis.call('SADD', KEYS[1], id)
return 'added'
`);

// KEYS: endpoint; ARGV: json. Only an endpoint still registered is replaced.
const SAVE_ENDPOINT = new LuaScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
return 1
`);

// KEYS: due; ARGV: shard prefix, endpointId. Idempotent: every process may run it.
const DELETE_QUEUE = new LuaScript(`
local p, ep = ARGV[1], ARGV[2]
local pending = p .. 'ep:' .. ep .. ':pending'
for _, id in ipairs(redis.call('ZRANGE', pending, 0, -1)) do
  redis.call('ZREM', KEYS[1], id)
  redis.call('DEL', p .. 'd:' .. id)
end
redis.call('DEL', pending, p .. 'ep:' .. ep .. ':leased')
return 1
`);

// KEYS: endpoints; ARGV: registry prefix, endpointId. Idempotent: every process may run it.
const DELETE_ENDPOINT = new LuaScript(`
local p, ep = ARGV[1], ARGV[2]
redis.call('SREM', KEYS[1], ep)
local json = redis.call('GET', p .. 'ep:' .. ep)
if not json then return 0 end
local ok, endpoint = pcall(cjson.decode, json)
if ok and type(endpoint) == 'table' then
  if type(endpoint.owner) == 'string' and type(endpoint.url) == 'string' then
    local owned = p .. 'owner:' .. endpoint.owner
    if redis.call('HGET', owned, endpoint.url) == ep then redis.call('HDEL', owned, endpoint.url) end
  end
  if type(endpoint.credentialIds) == 'table' then
    for _, credential in ipairs(endpoint.credentialIds) do
      if type(credential) == 'string' then redis.call('SREM', p .. 'cred:' .. credential, ep) end
    end
  end
end
return redis.call('DEL', p .. 'ep:' .. ep)
`);

/** FNV-1a of `text`: the shard of an endpoint, the same in every process. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

function parse<T>(json: unknown): T | undefined {
  if (typeof json !== 'string') return undefined;
  try {
    return JSON.parse(json) as T;
  } catch {
    return undefined; // a corrupted value is as good as none
  }
}

/**
 * A {@link WebhookStore} in Redis: endpoints, and a durable delivery queue that every sender
 * process shares. Due times live in a sorted set; a claimed delivery is leased (its due time
 * moved to the lease's end), so the deliveries of a sender that crashed are taken up again by
 * another once the lease runs out: at-least-once delivery. Claims respect the per-endpoint
 * bound and order across processes (one Lua script each). Finished deliveries stay readable
 * for `finishedTtlMs`. On a Redis Cluster too: the endpoints live on one hash slot, the
 * queue on `shards` others, an endpoint's deliveries on one.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * const sender = createWebhookSender({ store: new RedisWebhookStore({ client: new Redis(process.env.REDIS_URL) }) });
 * ```
 */
export class RedisWebhookStore implements WebhookStore {
  readonly #redis: RedisCommands;
  /** The endpoints' prefix (one slot). */
  readonly #r: string;
  /** Each shard's prefix (one slot each). */
  readonly #shards: readonly string[];
  readonly #maxFinished: number;
  readonly #finishedTtl: number;
  /** The shard the next claim starts at, so that no shard waits behind the others. */
  #nextClaim = 0;

  constructor(options: RedisWebhookStoreOptions) {
    assertKnownOptions(OWNER, options, KNOWN);
    const { commands, prefix } = redisStoreOptions(OWNER, options, {
      prefix: 'portico:wh:',
      timeoutMs: 2_000,
    });
    this.#redis = commands;
    this.#r = oneSlotPrefix(prefix);
    const shards = countOption(OWNER, 'shards', options.shards, 1, { max: 1_024 });
    this.#shards = Array.from({ length: shards }, (_, i) => oneSlotPrefix(`${prefix}q${i}:`));
    this.#maxFinished = countOption(OWNER, 'maxFinished', options.maxFinished, 10_000);
    this.#finishedTtl = durationOption(OWNER, 'finishedTtlMs', options.finishedTtlMs, 604_800_000, {
      min: 1,
    });
  }

  /** The prefix of the shard holding `endpointId`'s deliveries. */
  #shardOf(endpointId: string): string {
    return this.#shards[fnv1a(endpointId) % this.#shards.length]!;
  }

  async addEndpoint(
    endpoint: WebhookEndpoint,
    limits: { maxPerOwner: number },
  ): Promise<WebhookEndpointAdmission> {
    const { owner } = endpoint;
    const args = [
      this.#r,
      endpoint.id,
      JSON.stringify(endpoint),
      owner === undefined ? '0' : '1',
      owner ?? '',
      endpoint.url,
      limits.maxPerOwner,
      ...(endpoint.credentialIds ?? []),
    ];
    const reply = await this.#redis.script(ADD_ENDPOINT, [`${this.#r}eps`], args);
    return reply as WebhookEndpointAdmission;
  }

  async saveEndpoint(endpoint: WebhookEndpoint): Promise<boolean> {
    const current = await this.getEndpoint(endpoint.id);
    if (current === undefined) return false;
    // what it is indexed by stays as registered
    const { url, owner, credentialIds } = current;
    const json = JSON.stringify({ ...endpoint, url, owner, credentialIds });
    const saved = await this.#redis.script(SAVE_ENDPOINT, [`${this.#r}ep:${endpoint.id}`], [json]);
    return saved === 1;
  }

  async getEndpoint(id: string): Promise<WebhookEndpoint | undefined> {
    return parse(await this.#redis.send(['GET', `${this.#r}ep:${id}`]));
  }

  async deleteEndpoint(id: string): Promise<boolean> {
    const shard = this.#shardOf(id);
    await this.#redis.script(DELETE_QUEUE, [`${shard}due`], [shard, id]);
    const deleted = await this.#redis.script(DELETE_ENDPOINT, [`${this.#r}eps`], [this.#r, id]);
    return deleted === 1;
  }

  /** The ids of the endpoints `filter` names (through the owner or credential index). */
  #endpointIds(filter: WebhookEndpointFilter): Promise<string[]> {
    const { owner, credentialId } = filter;
    const index =
      owner !== undefined
        ? ['HVALS', `${this.#r}owner:${owner}`]
        : [
            'SMEMBERS',
            credentialId === undefined ? `${this.#r}eps` : `${this.#r}cred:${credentialId}`,
          ];
    return this.#redis.send(index) as Promise<string[]>;
  }

  async listEndpoints(filter: WebhookEndpointFilter = {}): Promise<WebhookEndpoint[]> {
    const ids = await this.#endpointIds(filter);
    if (ids.length === 0) return [];
    const values = (await this.#redis.send(['MGET', ...ids.map((id) => `${this.#r}ep:${id}`)])) as (
      | string
      | null
    )[];
    const { credentialId } = filter;
    return values
      .map((v) => parse<WebhookEndpoint>(v))
      .filter(
        (e): e is WebhookEndpoint =>
          e !== undefined &&
          (credentialId === undefined || (e.credentialIds?.includes(credentialId) ?? false)),
      )
      .sort((a, b) => a.createdAt - b.createdAt);
  }

  async enqueue(deliveries: readonly WebhookDelivery[]): Promise<void> {
    const byShard = new Map<string, (string | number)[]>();
    for (const d of deliveries) {
      const shard = this.#shardOf(d.endpointId);
      const args = byShard.get(shard) ?? [shard];
      byShard.set(shard, args);
      args.push(d.id, d.endpointId, d.nextAttemptAt, JSON.stringify(d));
    }
    await Promise.all(
      [...byShard].map(([shard, args]) =>
        this.#redis.script(ENQUEUE, [`${shard}due`, `${shard}seq`], args),
      ),
    );
  }

  /** Claims shard after shard, starting at the next one each time, until `limit` are leased. */
  async claim(claim: WebhookClaim): Promise<WebhookDelivery[]> {
    const { now, limit, leaseMs, perEndpoint, ordered } = claim;
    const claimed: WebhookDelivery[] = [];
    const start = this.#nextClaim;
    this.#nextClaim = (start + 1) % this.#shards.length;
    for (let i = 0; i < this.#shards.length && claimed.length < limit; i++) {
      const shard = this.#shards[(start + i) % this.#shards.length]!;
      const args = [shard, now, limit - claimed.length, leaseMs, perEndpoint, ordered ? '1' : '0'];
      const reply = (await this.#redis.script(CLAIM, [`${shard}due`], args)) as string[];
      for (const json of reply) {
        const delivery = parse<WebhookDelivery>(json);
        if (delivery !== undefined) claimed.push({ ...delivery, leaseUntil: now + leaseMs });
      }
    }
    return claimed;
  }

  async update(delivery: WebhookDelivery): Promise<void> {
    const stored = { ...delivery, leaseUntil: undefined };
    const shard = this.#shardOf(delivery.endpointId);
    await this.#redis.script(
      UPDATE,
      [`${shard}due`, `${shard}finished`],
      [
        shard,
        delivery.id,
        delivery.endpointId,
        delivery.state,
        delivery.nextAttemptAt,
        JSON.stringify(stored),
        this.#finishedTtl,
        this.#maxFinished,
      ],
    );
  }

  async getDelivery(id: string): Promise<WebhookDelivery | undefined> {
    const found = await Promise.all(
      this.#shards.map((shard) => this.#redis.send(['GET', `${shard}d:${id}`])),
    );
    return parse(found.find((json) => typeof json === 'string') as string | undefined);
  }

  async listDeliveries(
    filter: { endpointId?: string; state?: WebhookDelivery['state'] } = {},
  ): Promise<WebhookDelivery[]> {
    const shards =
      filter.endpointId === undefined ? this.#shards : [this.#shardOf(filter.endpointId)];
    const listed = await Promise.all(shards.map((shard) => this.#deliveriesOf(shard)));
    return listed
      .flat()
      .filter(
        (d) =>
          (filter.endpointId === undefined || d.endpointId === filter.endpointId) &&
          (filter.state === undefined || d.state === filter.state),
      )
      .sort((a, b) => a.createdAt - b.createdAt);
  }

  /** The deliveries of one shard, pending and finished. */
  async #deliveriesOf(shard: string): Promise<WebhookDelivery[]> {
    const [pending, finished] = (await Promise.all([
      this.#redis.send(['ZRANGE', `${shard}due`, 0, -1]),
      this.#redis.send(['LRANGE', `${shard}finished`, 0, -1]),
    ])) as [string[], string[]];
    const ids = [...new Set([...pending, ...finished])];
    if (ids.length === 0) return [];
    const values = (await this.#redis.send(['MGET', ...ids.map((id) => `${shard}d:${id}`)])) as (
      | string
      | null
    )[];
    return values.flatMap((v) => parse<WebhookDelivery>(v) ?? []);
  }

  async nextDue(): Promise<number | undefined> {
    const heads = (await Promise.all(
      this.#shards.map((shard) => this.#redis.send(['ZRANGE', `${shard}due`, 0, 0, 'WITHSCORES'])),
    )) as string[][];
    const due = heads.flatMap(([, score]) => (score === undefined ? [] : [Number(score)]));
    return due.length === 0 ? undefined : Math.min(...due);
  }
}
