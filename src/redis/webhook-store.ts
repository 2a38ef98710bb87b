import type { Redis } from 'ioredis';
import {
  assertKnownOptions,
  countOption,
  durationOption,
  invalidOption,
} from '../internal/options.js';
import type {
  WebhookClaim,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointAdmission,
  WebhookEndpointFilter,
  WebhookStore,
} from '../webhook/store.js';
import { guarded, LuaScript } from './script.js';

/**
 * Options of {@link RedisWebhookStore}.
 *
 * @example
 * ```ts
 * const options: RedisWebhookStoreOptions = { client: new Redis(process.env.REDIS_URL), prefix: 'app:wh:' };
 * ```
 */
export interface RedisWebhookStoreOptions {
  /** The ioredis client; it stays yours to close. */
  client: Redis;
  /** Prefix of every key. @defaultValue `"portico:wh:"` */
  prefix?: string;
  /** How many finished deliveries are listed (the oldest are forgotten first). @defaultValue `10_000` */
  maxFinished?: number;
  /**
   * How long a finished delivery stays readable, in milliseconds.
   * @defaultValue `604_800_000` (7 days)
   */
  finishedTtlMs?: number;
  /**
   * How long a command may take, in milliseconds, before it fails as if Redis were down.
   * @defaultValue `2_000` (2 seconds)
   */
  timeoutMs?: number;
}

const OWNER = 'RedisWebhookStore';
const KNOWN = [
  'client',
  'prefix',
  'maxFinished',
  'finishedTtlMs',
  'timeoutMs',
] as const satisfies readonly (keyof RedisWebhookStoreOptions)[];

// KEYS: due, seq; ARGV: prefix, then per delivery: id, endpointId, nextAttemptAt, json
const ENQUEUE = new LuaScript(`
for i = 2, #ARGV, 4 do
  local id, ep = ARGV[i], ARGV[i + 1]
  redis.call('SET', ARGV[1] .. 'd:' .. id, ARGV[i + 3])
  redis.call('ZADD', KEYS[1], ARGV[i + 2], id)
  redis.call('ZADD', ARGV[1] .. 'ep:' .. ep .. ':pending', redis.call('INCR', KEYS[2]), id)
end
return 1
`);

// KEYS: due; ARGV: prefix, now, limit, leaseMs, perEndpoint, ordered ('1'/'0')
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

// KEYS: due, finished; ARGV: prefix, id, endpointId, state, nextAttemptAt, json, finishedTtl, maxFinished
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

// KEYS: endpoints; ARGV: prefix, id, json, owned ('1'/'0'), owner, url, maxPerOwner, credentialIds…
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

// KEYS: endpoints, due; ARGV: prefix, endpointId. Idempotent: every process may run it.
const DELETE_ENDPOINT = new LuaScript(`
local p, ep = ARGV[1], ARGV[2]
local pending = p .. 'ep:' .. ep .. ':pending'
for _, id in ipairs(redis.call('ZRANGE', pending, 0, -1)) do
  redis.call('ZREM', KEYS[2], id)
  redis.call('DEL', p .. 'd:' .. id)
end
redis.call('DEL', pending, p .. 'ep:' .. ep .. ':leased')
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

function parse<T>(json: string | null | undefined): T | undefined {
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
 * for `finishedTtlMs`. For a single Redis (not Redis Cluster).
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * const sender = createWebhookSender({ store: new RedisWebhookStore({ client: new Redis(process.env.REDIS_URL) }) });
 * ```
 */
export class RedisWebhookStore implements WebhookStore {
  readonly #client: Redis;
  readonly #p: string;
  readonly #maxFinished: number;
  readonly #finishedTtl: number;
  readonly #timeout: number;

  constructor(options: RedisWebhookStoreOptions) {
    assertKnownOptions(OWNER, options, KNOWN);
    const { client, prefix = 'portico:wh:' } = options ?? {};
    if (typeof client?.evalsha !== 'function') {
      throw invalidOption(`${OWNER}: \`client\` must be an ioredis client`);
    }
    this.#client = client;
    this.#p = prefix;
    this.#maxFinished = countOption(OWNER, 'maxFinished', options.maxFinished, 10_000);
    this.#finishedTtl = durationOption(OWNER, 'finishedTtlMs', options.finishedTtlMs, 604_800_000, {
      min: 1,
    });
    this.#timeout = durationOption(OWNER, 'timeoutMs', options.timeoutMs, 2_000, { min: 1 });
  }

  #run<T>(command: () => Promise<T>): Promise<T> {
    return guarded(this.#client, this.#timeout, command);
  }

  async addEndpoint(
    endpoint: WebhookEndpoint,
    limits: { maxPerOwner: number },
  ): Promise<WebhookEndpointAdmission> {
    const { owner } = endpoint;
    const args = [
      this.#p,
      endpoint.id,
      JSON.stringify(endpoint),
      owner === undefined ? '0' : '1',
      owner ?? '',
      endpoint.url,
      limits.maxPerOwner,
      ...(endpoint.credentialIds ?? []),
    ];
    const reply = await this.#run(() => ADD_ENDPOINT.run(this.#client, [`${this.#p}eps`], args));
    return reply as WebhookEndpointAdmission;
  }

  async saveEndpoint(endpoint: WebhookEndpoint): Promise<boolean> {
    const current = await this.getEndpoint(endpoint.id);
    if (current === undefined) return false;
    // what it is indexed by stays as registered
    const { url, owner, credentialIds } = current;
    const json = JSON.stringify({ ...endpoint, url, owner, credentialIds });
    const saved = await this.#run(() =>
      SAVE_ENDPOINT.run(this.#client, [`${this.#p}ep:${endpoint.id}`], [json]),
    );
    return saved === 1;
  }

  async getEndpoint(id: string): Promise<WebhookEndpoint | undefined> {
    return parse(await this.#run(() => this.#client.get(`${this.#p}ep:${id}`)));
  }

  async deleteEndpoint(id: string): Promise<boolean> {
    const deleted = await this.#run(() =>
      DELETE_ENDPOINT.run(this.#client, [`${this.#p}eps`, `${this.#p}due`], [this.#p, id]),
    );
    return deleted === 1;
  }

  /** The ids of the endpoints `filter` names (through the owner or credential index). */
  #endpointIds(filter: WebhookEndpointFilter): Promise<string[]> {
    const { owner, credentialId } = filter;
    if (owner !== undefined) return this.#run(() => this.#client.hvals(`${this.#p}owner:${owner}`));
    if (credentialId !== undefined) {
      return this.#run(() => this.#client.smembers(`${this.#p}cred:${credentialId}`));
    }
    return this.#run(() => this.#client.smembers(`${this.#p}eps`));
  }

  async listEndpoints(filter: WebhookEndpointFilter = {}): Promise<WebhookEndpoint[]> {
    const ids = await this.#endpointIds(filter);
    if (ids.length === 0) return [];
    const values = await this.#run(() => this.#client.mget(ids.map((id) => `${this.#p}ep:${id}`)));
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
    if (deliveries.length === 0) return;
    const args: (string | number)[] = [this.#p];
    for (const d of deliveries) args.push(d.id, d.endpointId, d.nextAttemptAt, JSON.stringify(d));
    await this.#run(() => ENQUEUE.run(this.#client, [`${this.#p}due`, `${this.#p}seq`], args));
  }

  async claim(claim: WebhookClaim): Promise<WebhookDelivery[]> {
    const { now, limit, leaseMs, perEndpoint, ordered } = claim;
    const reply = (await this.#run(() =>
      CLAIM.run(
        this.#client,
        [`${this.#p}due`],
        [this.#p, now, limit, leaseMs, perEndpoint, ordered ? '1' : '0'],
      ),
    )) as string[];
    return reply.flatMap((json) => {
      const delivery = parse<WebhookDelivery>(json);
      return delivery === undefined ? [] : [{ ...delivery, leaseUntil: now + leaseMs }];
    });
  }

  async update(delivery: WebhookDelivery): Promise<void> {
    const stored = { ...delivery, leaseUntil: undefined };
    await this.#run(() =>
      UPDATE.run(
        this.#client,
        [`${this.#p}due`, `${this.#p}finished`],
        [
          this.#p,
          delivery.id,
          delivery.endpointId,
          delivery.state,
          delivery.nextAttemptAt,
          JSON.stringify(stored),
          this.#finishedTtl,
          this.#maxFinished,
        ],
      ),
    );
  }

  async getDelivery(id: string): Promise<WebhookDelivery | undefined> {
    return parse(await this.#run(() => this.#client.get(`${this.#p}d:${id}`)));
  }

  async listDeliveries(
    filter: { endpointId?: string; state?: WebhookDelivery['state'] } = {},
  ): Promise<WebhookDelivery[]> {
    const [pending, finished] = await this.#run(() =>
      Promise.all([
        this.#client.zrange(`${this.#p}due`, 0, -1),
        this.#client.lrange(`${this.#p}finished`, 0, -1),
      ]),
    );
    const ids = [...new Set([...pending, ...finished])];
    if (ids.length === 0) return [];
    const values = await this.#run(() => this.#client.mget(ids.map((id) => `${this.#p}d:${id}`)));
    return values
      .map((v) => parse<WebhookDelivery>(v))
      .filter(
        (d): d is WebhookDelivery =>
          d !== undefined &&
          (filter.endpointId === undefined || d.endpointId === filter.endpointId) &&
          (filter.state === undefined || d.state === filter.state),
      )
      .sort((a, b) => a.createdAt - b.createdAt);
  }

  async nextDue(): Promise<number | undefined> {
    const [, score] = await this.#run(() =>
      this.#client.zrange(`${this.#p}due`, 0, 0, 'WITHSCORES'),
    );
    return score === undefined ? undefined : Number(score);
  }
}
