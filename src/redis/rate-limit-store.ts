import type { Redis } from 'ioredis';
import { assertKnownOptions, durationOption, invalidOption } from '../internal/options.js';
import type { RateLimitHit, RateLimitStore } from '../rate-limit/store.js';
import { guarded, LuaScript } from './script.js';

/**
 * Options of {@link RedisRateLimitStore}.
 *
 * @example
 * ```ts
 * const options: RedisRateLimitStoreOptions = { client: new Redis(process.env.REDIS_URL), prefix: 'api:rl:' };
 * ```
 */
export interface RedisRateLimitStoreOptions {
  /** The ioredis client; it stays yours to close. */
  client: Redis;
  /** Prefix of every key. @defaultValue `"portico:rl:"` */
  prefix?: string;
  /**
   * How long a count may take before the request is answered as if Redis were down, in
   * milliseconds.
   * @defaultValue `1_000` (1 second)
   */
  timeoutMs?: number;
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
  readonly #client: Redis;
  readonly #prefix: string;
  readonly #timeout: number;

  constructor(options: RedisRateLimitStoreOptions) {
    assertKnownOptions(OWNER, options, KNOWN_OPTIONS);
    const { client, prefix = 'portico:rl:' } = options ?? {};
    if (typeof client?.evalsha !== 'function') {
      throw invalidOption(`${OWNER}: \`client\` must be an ioredis client`);
    }
    if (typeof prefix !== 'string') throw invalidOption(`${OWNER}: \`prefix\` must be a string`);
    this.#client = client;
    this.#prefix = prefix;
    this.#timeout = durationOption(OWNER, 'timeoutMs', options.timeoutMs, 1_000, { min: 1 });
  }

  async increment(key: string, windowMs: number): Promise<RateLimitHit> {
    const now = Date.now();
    const reply = await guarded(this.#client, this.#timeout, () =>
      INCREMENT.run(this.#client, [this.#prefix + key], [Math.max(1, Math.ceil(windowMs))]),
    );
    const [count, ttl] = reply as [number, number];
    return { count, resetAt: now + ttl };
  }

  async peek(key: string): Promise<RateLimitHit | undefined> {
    const now = Date.now();
    const reply = await guarded(this.#client, this.#timeout, () =>
      this.#client
        .multi()
        .get(this.#prefix + key)
        .pttl(this.#prefix + key)
        .exec(),
    );
    const count = Number(reply?.[0]?.[1]);
    const ttl = Number(reply?.[1]?.[1]);
    if (!Number.isSafeInteger(count) || count < 1 || !(ttl > 0)) return undefined;
    return { count, resetAt: now + ttl };
  }

  async reset(key: string): Promise<void> {
    await guarded(this.#client, this.#timeout, () => this.#client.del(this.#prefix + key));
  }
}
