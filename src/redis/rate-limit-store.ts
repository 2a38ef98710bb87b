import type { Duration } from '../core/duration.js';
import { assertKnownOptions } from '../internal/options.js';
import type { RateLimitHit, RateLimitStore } from '../rate-limit/store.js';
import { type RedisCommands, redisStoreOptions } from './commands.js';
import { LuaScript, type RedisClient } from './script.js';

/**
 * Options of {@link RedisRateLimitStore}.
 *
 * @example
 * ```ts
 * const options: RedisRateLimitStoreOptions = { client: new Redis(process.env.REDIS_URL), prefix: 'api:rl:' };
 * ```
 */
export interface RedisRateLimitStoreOptions {
  /** The client, ioredis or node-redis v5, one node or a cluster ({@link RedisClient}); it stays yours to close. */
  client: RedisClient;
  /** Prefix of every key. @defaultValue `"portico:rl:"` */
  prefix?: string;
  /**
   * How long a count may take before the request is answered as if Redis were down, in
   * milliseconds.
   * @defaultValue `1_000` (1 second)
   */
  timeoutMs?: Duration;
}

const KNOWN_OPTIONS = [
  'client',
  'prefix',
  'timeoutMs',
] as const satisfies readonly (keyof RedisRateLimitStoreOptions)[];

const OWNER = 'new RedisRateLimitStore()';

// One step: count, start the window on the first request, and tell how long it has left.
const INCREMENT = new LuaScript(`
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if count == 1 or ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return { count, ttl }
`);

// One step: roll the sliding window (aligned on Redis's clock) and count in it; a hash holds
// the window's index `w`, its count `c`, the count of the window before `p` and the window's
// length `ms`.
const INCREMENT_SLIDING = new LuaScript(`
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local w = tonumber(ARGV[1])
local idx = math.floor(now / w)
local held = redis.call('HMGET', KEYS[1], 'w', 'c', 'p')
local c = tonumber(held[2]) or 0
local p = tonumber(held[3]) or 0
if tonumber(held[1]) ~= idx then
  if tonumber(held[1]) == idx - 1 then p = c else p = 0 end
  c = 0
end
c = c + 1
redis.call('HSET', KEYS[1], 'w', string.format('%.0f', idx), 'c', c, 'p', p, 'ms', w)
redis.call('PEXPIREAT', KEYS[1], string.format('%.0f', (idx + 2) * w))
return { c, p, (idx + 1) * w - now }
`);

// Gives one request back, never below zero, in a fixed (string) or sliding (hash) window: a
// sliding window that has ended gives nothing back (its count now weighs the next one).
const DECREMENT = new LuaScript(`
if redis.replicate_commands then redis.replicate_commands() end
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'string' then
  if (tonumber(redis.call('GET', KEYS[1])) or 0) > 0 then redis.call('DECR', KEYS[1]) end
elseif kind == 'hash' then
  local held = redis.call('HMGET', KEYS[1], 'w', 'c', 'ms')
  local ms = tonumber(held[3])
  if ms then
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    if tonumber(held[1]) ~= math.floor(now / ms) then return 0 end
  end
  if (tonumber(held[2]) or 0) > 0 then redis.call('HINCRBY', KEYS[1], 'c', -1) end
end
return 0
`);

// A fixed window's count and time left, read together; a key of another type reads as none.
const PEEK = new LuaScript(`
local count = redis.pcall('GET', KEYS[1])
if type(count) ~= 'string' then return { false, -2 } end
return { count, redis.call('PTTL', KEYS[1]) }
`);

/**
 * A {@link RateLimitStore} in Redis: fixed windows counted by one Lua script per request
 * (atomic, so a limit of 10 lets exactly 10 of 20 simultaneous requests through whichever
 * process they reach), expiring on their own. When Redis is down or slow, `increment`
 * rejects at once (after `timeoutMs` at most) and the limiter answers 503 with
 * `Retry-After`, or lets the request through with `failOpen: true`.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * const store = new RedisRateLimitStore({ client: new Redis(process.env.REDIS_URL) });
 * app.use(rateLimit({ limit: 100, windowMs: 60_000, store }));
 * ```
 */
export class RedisRateLimitStore implements RateLimitStore {
  readonly #redis: RedisCommands;
  readonly #prefix: string;

  constructor(options: RedisRateLimitStoreOptions) {
    assertKnownOptions(OWNER, options, KNOWN_OPTIONS);
    const { commands, prefix } = redisStoreOptions(OWNER, options, {
      prefix: 'portico:rl:',
      timeoutMs: 1_000,
    });
    this.#redis = commands;
    this.#prefix = prefix;
  }

  async increment(key: string, windowMs: number): Promise<RateLimitHit> {
    const now = Date.now();
    const reply = await this.#redis.script(
      INCREMENT,
      [this.#prefix + key],
      [Math.max(1, Math.ceil(windowMs))],
    );
    const [count, ttl] = reply as [number, number];
    return { count, resetAt: now + ttl };
  }

  /**
   * Counts one request in a sliding window (the weighted two-window approximation, windows
   * aligned on Redis's clock); see {@link RateLimitStore.incrementSliding}. A sliding key is a
   * hash: keep fixed and sliding limiters under different prefixes (`peek` reads fixed ones).
   */
  async incrementSliding(key: string, windowMs: number): Promise<RateLimitHit> {
    const now = Date.now();
    const w = Math.max(1, Math.ceil(windowMs));
    const reply = await this.#redis.script(INCREMENT_SLIDING, [this.#prefix + key], [w]);
    const [current, previous, left] = (reply as [number, number, number]).map(Number) as [
      number,
      number,
      number,
    ];
    return { count: Math.floor((previous * left) / w) + current, resetAt: now + left };
  }

  /** Gives back one request of `key`; see {@link RateLimitStore.decrement}. */
  async decrement(key: string): Promise<void> {
    await this.#redis.script(DECREMENT, [this.#prefix + key], []);
  }

  async peek(key: string): Promise<RateLimitHit | undefined> {
    const now = Date.now();
    const [count, ttl] = (await this.#redis.script(PEEK, [this.#prefix + key], [])) as [
      unknown,
      unknown,
    ];
    const counted = Number(count);
    const left = Number(ttl);
    if (!Number.isSafeInteger(counted) || counted < 1 || !(left > 0)) return undefined;
    return { count: counted, resetAt: now + left };
  }

  async reset(key: string): Promise<void> {
    await this.#redis.send(['DEL', this.#prefix + key]);
  }
}
