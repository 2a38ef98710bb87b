import { hash } from 'node:crypto';
import type { ReplayStore } from '../auth/replay/store.js';
import type { Duration } from '../core/duration.js';
import { assertKnownOptions } from '../internal/options.js';
import { type RedisCommands, redisStoreOptions } from './commands.js';
import type { RedisClient } from './script.js';

/**
 * Options of {@link RedisReplayStore}.
 *
 * @example
 * ```ts
 * const options: RedisReplayStoreOptions = { client: new Redis(process.env.REDIS_URL), prefix: 'app:jti:' };
 * ```
 */
export interface RedisReplayStoreOptions {
  /** The client, ioredis or node-redis v5, one node or a cluster ({@link RedisClient}); it stays yours to close. */
  client: RedisClient;
  /** Prefix of every key. @defaultValue `"portico:jti:"` */
  prefix?: string;
  /**
   * How long a command may take, in milliseconds, before the JWT is refused as if Redis were
   * down. @defaultValue `1000`
   */
  timeoutMs?: Duration;
}

const KNOWN_OPTIONS = [
  'client',
  'prefix',
  'timeoutMs',
] as const satisfies readonly (keyof RedisReplayStoreOptions)[];

/**
 * A {@link ReplayStore} in Redis, so that a DPoP proof or a client assertion accepted by one
 * process is refused by every other: one `SET … NX PX` per id, under `prefix` and the id's
 * SHA-256, gone when the JWT could no longer be accepted anyway. When Redis is down or slow
 * (past `timeoutMs`), `remember` rejects with `RedisUnavailableError` (a 503 with
 * `Retry-After`): the JWT is refused, never accepted unchecked.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * const replay = new RedisReplayStore({ client: new Redis(process.env.REDIS_URL) });
 * const auth = createAuthorizationServer({ ...options, replay });
 * const api = jwtBearer({ ...jwt, dpop: { origin, verifier: createDpopVerifier({ replay }) } });
 * ```
 */
export class RedisReplayStore implements ReplayStore {
  readonly #redis: RedisCommands;
  readonly #prefix: string;

  constructor(options: RedisReplayStoreOptions) {
    const owner = 'new RedisReplayStore()';
    assertKnownOptions(owner, options, KNOWN_OPTIONS);
    const { commands, prefix } = redisStoreOptions(owner, options, {
      prefix: 'portico:jti:',
      timeoutMs: 1_000,
    });
    this.#redis = commands;
    this.#prefix = prefix;
  }

  /**
   * Records `id` (`SET … NX PX`): `true` when it was new. `partition` is not counted: Redis
   * holds as many ids as its memory allows (give it a `maxmemory` policy of `noeviction`, so
   * that a full Redis refuses rather than forgets).
   */
  async remember(id: string, ttlMs: number, _partition?: string): Promise<boolean> {
    const ms = Math.max(1, Math.ceil(ttlMs));
    const set = await this.#redis.send(['SET', this.#key(id), '1', 'PX', ms, 'NX']);
    return set === 'OK';
  }

  /** Whether `id` is recorded now (`EXISTS`), recording nothing. */
  async seen(id: string): Promise<boolean> {
    return Number(await this.#redis.send(['EXISTS', this.#key(id)])) === 1;
  }

  #key(id: string): string {
    return this.#prefix + hash('sha256', id, 'base64url');
  }
}
