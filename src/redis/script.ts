import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { type HttpError, PorticoError, serviceUnavailable } from '../core/errors/errors.js';
import type { RedisCommand, RedisConnection } from './connection.js';
import type { NodeRedisClient, NodeRedisCluster } from './node-redis-connection.js';

/**
 * The Redis client a store is given, connected, and yours to close: ioredis (`Redis`, or
 * `Cluster`) or node-redis v5 (`createClient()`, or `createCluster()`). A cluster client routes
 * each command to the primary of its key's slot and follows MOVED and ASK; every script of the
 * stores names keys of one slot.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * const client: RedisClient = new Redis(process.env.REDIS_URL);
 * ```
 */
export type RedisClient = Redis | Cluster | NodeRedisClient | NodeRedisCluster;

/**
 * Redis is not answering: not connected, or a command took longer than its bound. Stores turn
 * it into a 503 problem with `Retry-After` (a rate limiter may fail open instead).
 *
 * @example
 * ```ts
 * try {
 *   await store.get(id);
 * } catch (err) {
 *   if (err instanceof RedisUnavailableError) metrics.count('redis.unavailable');
 *   throw err; // sendError answers 503 with `Retry-After: 5`
 * }
 * ```
 */
export class RedisUnavailableError extends PorticoError {
  constructor(message = 'Redis is unavailable.', cause?: unknown) {
    super(message, 'ERR_REDIS_UNAVAILABLE', cause === undefined ? undefined : { cause });
  }

  /** The HTTP answer: 503 with `Retry-After: 5`, its detail saying nothing of Redis. `sendError` calls it. */
  toHttpError(): HttpError {
    return serviceUnavailable(
      5,
      'A service this request needs is unavailable; try again shortly.',
      {
        code: this.code,
        cause: this,
      },
    );
  }
}

/**
 * Runs `command` unless the client is between reconnection attempts, failing after `timeoutMs` rather than
 * waiting in the client's offline queue: a request that needs Redis answers fast, up or down.
 * @internal
 */
export function guarded<T>(
  connection: RedisConnection,
  timeoutMs: number,
  command: () => Promise<T>,
): Promise<T> {
  // Between reconnection attempts fail at once; while (re)connecting, wait up to the bound.
  const down = connection.down();
  if (down !== undefined) {
    return Promise.reject(new RedisUnavailableError(`Redis is unavailable (${down}).`));
  }
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      connection.unanswered?.();
      reject(new RedisUnavailableError(`Redis did not answer within ${timeoutMs} ms.`));
    }, timeoutMs);
  });
  return Promise.race([
    command().catch((error: unknown) => {
      throw error instanceof RedisUnavailableError
        ? error
        : new RedisUnavailableError(undefined, error);
    }),
    timeout,
  ]).finally(() => clearTimeout(timer));
}

const isNoScript = (error: unknown) =>
  error instanceof Error && error.message.startsWith('NOSCRIPT');

/**
 * A Lua script run with `EVALSHA`, loaded with `EVAL` the first time a server does not know it
 * (`NOSCRIPT`, after a restart or on a new cluster node). One round trip in the usual case.
 * On a cluster every key it names must hash to one slot.
 * @internal
 */
export class LuaScript {
  readonly #source: string;
  readonly #sha: string;

  constructor(source: string) {
    this.#source = source;
    this.#sha = createHash('sha1').update(source).digest('hex');
  }

  /** The `EVALSHA` (or, `loaded` false, `EVAL`) command running it. */
  command(
    keys: readonly string[],
    args: readonly (string | number)[],
    loaded = true,
  ): RedisCommand {
    return [
      loaded ? 'EVALSHA' : 'EVAL',
      loaded ? this.#sha : this.#source,
      keys.length,
      ...keys,
      ...args,
    ];
  }

  async run(
    connection: RedisConnection,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown> {
    const key = keys[0] ?? '';
    try {
      return await connection.send(key, this.command(keys, args));
    } catch (error) {
      if (!isNoScript(error)) throw error;
      return connection.send(key, this.command(keys, args, false));
    }
  }

  /**
   * Runs it, then `WAIT`s on the same connection for `replicas` replicas to acknowledge the
   * write, at most `timeoutMs`: the reply and how many replicas acknowledged it.
   */
  async runReplicated(
    connection: RedisConnection,
    keys: readonly string[],
    args: readonly (string | number)[],
    replicas: number,
    timeoutMs: number,
  ): Promise<{ reply: unknown; acknowledged: number }> {
    const key = keys[0] ?? '';
    const wait: RedisCommand = ['WAIT', replicas, timeoutMs];
    let [reply, acknowledged] = await connection.pipeline(key, [this.command(keys, args), wait]);
    if (isNoScript(reply)) {
      [reply, acknowledged] = await connection.pipeline(key, [
        this.command(keys, args, false),
        wait,
      ]);
    }
    if (reply instanceof Error) throw reply;
    return { reply, acknowledged: Number(acknowledged) || 0 };
  }
}
