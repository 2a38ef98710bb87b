import type { Duration } from '../core/duration.js';
// The options every Redis store shares (client, prefix, timeoutMs and, where writes must
// outlive a failover, waitForReplicas / waitTimeoutMs), validated once, and the commands a
// store sends through them: bounded in time, failing fast while the client reconnects.
import { countOption, durationOption, invalidOption } from '../internal/options.js';
import { MAX_TIMER_DELAY } from '../realtime/connection-options.js';
import type { RedisCommand, RedisConnection } from './connection.js';
import { ioredisConnection, isIoredis } from './ioredis-connection.js';
import {
  isNodeRedisClient,
  isNodeRedisCluster,
  nodeRedisClientConnection,
  nodeRedisClusterConnection,
} from './node-redis-connection.js';
import { guarded, type LuaScript } from './script.js';

const connections = new WeakMap<object, RedisConnection>();

/** The connection over `client`, whichever library made it. */
function connect(client: object): RedisConnection | undefined {
  if (isIoredis(client)) return ioredisConnection(client);
  if (isNodeRedisCluster(client)) return nodeRedisClusterConnection(client);
  if (isNodeRedisClient(client)) return nodeRedisClientConnection(client);
  return undefined;
}

/**
 * The connection over `client`, made once per client and shared by the stores built on it.
 * @internal
 */
export function connectionOf(owner: string, client: unknown): RedisConnection {
  let connection =
    typeof client === 'object' && client !== null ? connections.get(client) : undefined;
  if (connection === undefined) {
    connection = typeof client === 'object' && client !== null ? connect(client) : undefined;
    if (connection === undefined) {
      throw invalidOption(
        `${owner}: \`client\` must be an ioredis client (Redis or Cluster) or a node-redis v5 client (createClient() or createCluster())`,
      );
    }
    connections.set(client as object, connection);
  }
  return connection;
}

/** The options of every Redis store. @internal */
export interface RedisStoreCommonOptions {
  client: unknown;
  prefix?: string;
  /** How long a command may take, in milliseconds. */
  timeoutMs?: Duration;
  waitForReplicas?: number;
  /** How long a write waits for its replicas, in milliseconds. */
  waitTimeoutMs?: Duration;
}

/** Commands of one store: its connection, its time bound and its replication wait. @internal */
export class RedisCommands {
  readonly connection: RedisConnection;
  readonly timeoutMs: number;
  /** Replicas that must acknowledge a write that has to outlive a failover (0: none). */
  readonly replicas: number;
  readonly waitTimeoutMs: number;

  constructor(connection: RedisConnection, timeoutMs: number, replicas = 0, waitTimeoutMs = 0) {
    this.connection = connection;
    this.timeoutMs = timeoutMs;
    this.replicas = replicas;
    this.waitTimeoutMs = waitTimeoutMs;
  }

  /** `command` bounded by the store's time, failing at once while Redis is unreachable. */
  guard<T>(command: () => Promise<T>): Promise<T> {
    return guarded(this.connection, this.timeoutMs, command);
  }

  /** One command (`command[1]` its key). */
  send(command: RedisCommand): Promise<unknown> {
    return this.guard(() => this.connection.send(String(command[1]), command));
  }

  script(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown> {
    return this.guard(() => script.run(this.connection, keys, args));
  }

  /**
   * A write that must outlive a failover: run, then `WAIT` on the same connection until
   * `waitForReplicas` replicas acknowledged it or `waitTimeoutMs` passed. Best effort, as
   * Redis's replication is: a primary without a live replica (just after a failover) still
   * takes the write, after the whole wait.
   */
  replicated(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown> {
    if (this.replicas === 0) return this.script(script, keys, args);
    return this.#waited(() =>
      script.runReplicated(this.connection, keys, args, this.replicas, this.waitTimeoutMs),
    );
  }

  /** One command (`command[1]` its key) written as {@link RedisCommands.replicated} says. */
  replicatedSend(command: RedisCommand): Promise<unknown> {
    if (this.replicas === 0) return this.send(command);
    const key = String(command[1]);
    return this.#waited(async () => {
      const [reply, acknowledged] = await this.connection.pipeline(key, [
        command,
        ['WAIT', this.replicas, this.waitTimeoutMs],
      ]);
      if (reply instanceof Error) throw reply;
      return { reply, acknowledged: Number(acknowledged) || 0 };
    });
  }

  async #waited(write: () => Promise<{ reply: unknown; acknowledged: number }>): Promise<unknown> {
    const { reply } = await guarded(this.connection, this.timeoutMs + this.waitTimeoutMs, write);
    return reply;
  }
}

/**
 * The client, prefix and time bounds of a store's options, validated: `replicated` when the
 * store takes `waitForReplicas` and `waitTimeoutMs`. @internal
 */
export function redisStoreOptions(
  owner: string,
  options: RedisStoreCommonOptions,
  defaults: { prefix: string; timeoutMs: number },
): { commands: RedisCommands; prefix: string } {
  const connection = connectionOf(owner, options?.client);
  const { prefix = defaults.prefix } = options;
  if (typeof prefix !== 'string') throw invalidOption(`${owner}: \`prefix\` must be a string`);
  const timeoutMs = durationOption(owner, 'timeoutMs', options.timeoutMs, defaults.timeoutMs, {
    min: 1,
    max: MAX_TIMER_DELAY,
    floor: 100,
  });
  const replicas = countOption(owner, 'waitForReplicas', options.waitForReplicas, 0, {
    min: 0,
    max: 16,
  });
  const waitTimeoutMs = durationOption(owner, 'waitTimeoutMs', options.waitTimeoutMs, 1_000, {
    min: 1,
    max: 60_000,
    floor: 100,
  });
  return { commands: new RedisCommands(connection, timeoutMs, replicas, waitTimeoutMs), prefix };
}

/** Redis's hash tag of `key` (what its slot is computed from), or `undefined` without one. */
function hashTag(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open < 0) return undefined;
  const close = key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : undefined;
}

/**
 * A prefix putting every key built on it on one hash slot: `prefix` itself when it holds a
 * hash tag already (`app:{apikeys}:`), else `{prefix}` (`{portico:apikey:}id:…`).
 * @internal
 */
export function oneSlotPrefix(prefix: string): string {
  if (hashTag(prefix) !== undefined) return prefix;
  const wrapped = `{${prefix}}`;
  return hashTag(wrapped) !== undefined ? wrapped : `${prefix}{portico}`;
}
