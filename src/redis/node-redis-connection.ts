// portico's Redis connection over node-redis v5: a client (`createClient()`) or a cluster
// (`createCluster()`), both connected by their owner. Described by shape, so that portico's
// types never load `redis`.
import type { RedisCommand, RedisConnection, RedisSubscriber } from './connection.js';

/** What node-redis calls with each message of a subscribed channel. */
export type NodeRedisListener = (message: string, channel: string) => void;
type Listener = NodeRedisListener;

/**
 * A node-redis v5 client (`createClient()` of `redis`), connected (`await client.connect()`).
 *
 * @example
 * ```ts
 * import { createClient } from 'redis';
 * const client: NodeRedisClient = await createClient({ url: process.env.REDIS_URL }).connect();
 * ```
 */
export interface NodeRedisClient {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  sendCommand(args: string[]): Promise<unknown>;
  duplicate(): NodeRedisClient & {
    connect(): Promise<unknown>;
    close(): Promise<unknown>;
    on(event: 'error', listener: (error: Error) => void): unknown;
    subscribe(channel: string, listener: Listener): Promise<unknown>;
    unsubscribe(channel: string): Promise<unknown>;
  };
}

/**
 * A node-redis v5 cluster (`createCluster()` of `redis`), connected (`await cluster.connect()`).
 *
 * @example
 * ```ts
 * import { createCluster } from 'redis';
 * const cluster: NodeRedisCluster = await createCluster({ rootNodes: [{ url: 'redis://10.0.0.1:7000' }] }).connect();
 * ```
 */
export interface NodeRedisCluster {
  readonly isOpen: boolean;
  readonly masters: readonly { client?: { readonly isReady: boolean } | undefined }[];
  sendCommand(
    firstKey: string | undefined,
    isReadonly: boolean | undefined,
    args: string[],
  ): Promise<unknown>;
  duplicate(): NodeRedisCluster & {
    connect(): Promise<unknown>;
    close(): Promise<unknown>;
    on(event: 'error', listener: (error: Error) => void): unknown;
    sSubscribe(channel: string, listener: Listener): Promise<unknown>;
    sUnsubscribe(channel: string): Promise<unknown>;
  };
}

/** Whether `client` looks like a node-redis cluster. @internal */
export function isNodeRedisCluster(client: object): client is NodeRedisCluster {
  const c = client as Partial<NodeRedisCluster>;
  return typeof c.sendCommand === 'function' && 'masters' in c && typeof c.duplicate === 'function';
}

/** Whether `client` looks like a node-redis client. @internal */
export function isNodeRedisClient(client: object): client is NodeRedisClient {
  const c = client as Partial<NodeRedisClient>;
  return typeof c.sendCommand === 'function' && 'isReady' in c && typeof c.duplicate === 'function';
}

const strings = (command: RedisCommand) => command.map(String);

/**
 * Commands sent in one tick go out in order on the node's one connection (node-redis
 * pipelines them): a `WAIT` after a write is answered by the node that took it.
 */
async function inOrder(
  send: (command: RedisCommand) => Promise<unknown>,
  commands: readonly RedisCommand[],
) {
  const settled = await Promise.allSettled(commands.map(send));
  return settled.map((result) => (result.status === 'fulfilled' ? result.value : result.reason));
}

/**
 * A duplicated client (or cluster) as a subscriber: connected at once, each subscription made
 * once it is, every message handed to `deliver`. It reconnects on its own (and subscribes
 * again); commands report their own failures, so its `error` events are not.
 */
function connectedSubscriber(
  connection: {
    connect(): Promise<unknown>;
    close(): Promise<unknown>;
    on(event: 'error', listener: (error: Error) => void): unknown;
  },
  subscribe: (channel: string, listener: Listener) => Promise<unknown>,
  unsubscribe: (channel: string) => Promise<unknown>,
  deliver: (channel: string, text: string) => void,
): RedisSubscriber {
  connection.on('error', () => {});
  const connected = connection.connect();
  const listener: Listener = (message, channel) => deliver(channel, message);
  return {
    subscribe: async (channel) => {
      await connected;
      await subscribe(channel, listener);
    },
    unsubscribe: async (channel) => void (await unsubscribe(channel)),
    close: async () => {
      await connected.catch(() => {});
      await connection.close().catch(() => {});
    },
  };
}

/** @internal */
export function nodeRedisClientConnection(client: NodeRedisClient): RedisConnection {
  const send = (command: RedisCommand) => client.sendCommand(strings(command));
  return {
    cluster: false,
    down: () => (!client.isOpen ? 'closed' : client.isReady ? undefined : 'reconnecting'),
    send: (_key, command) => send(command),
    pipeline: (_key, commands) => inOrder(send, commands),
    subscriber(deliver) {
      const subscriber = client.duplicate();
      return connectedSubscriber(
        subscriber,
        (channel, listener) => subscriber.subscribe(channel, listener),
        (channel) => subscriber.unsubscribe(channel),
        deliver,
      );
    },
  };
}

/** node-redis's classes of error replies (a reply from Redis, not a lost connection). */
const REPLY_ERRORS = new Set(['ErrorReply', 'SimpleError', 'BlobError']);

/** At most one topology refresh asked for per this many milliseconds. */
const REDISCOVER_EVERY_MS = 1_000;

/**
 * node-redis learns a new topology only from a `MOVED` (redis/node-redis#2806): a primary that
 * died without answering keeps its slots' commands waiting on a dead connection after its
 * replica was promoted. Asks the cluster to read its topology again, from a live primary,
 * through its slot map's `rediscover` (not part of its typed API: skipped if it goes away).
 */
function rediscoverer(cluster: NodeRedisCluster): () => void {
  let last = 0;
  return () => {
    const slots = (cluster as { _slots?: { rediscover?: (from: unknown) => Promise<unknown> } })
      ._slots;
    const live = cluster.masters.find((node) => node.client?.isReady === true)?.client;
    if (typeof slots?.rediscover !== 'function' || live === undefined) return;
    if (Date.now() - last < REDISCOVER_EVERY_MS) return;
    last = Date.now();
    slots.rediscover(live).catch(() => {});
  };
}

/** @internal */
export function nodeRedisClusterConnection(cluster: NodeRedisCluster): RedisConnection {
  const rediscover = rediscoverer(cluster);
  const send = (key: string, command: RedisCommand) =>
    cluster.sendCommand(key, false, strings(command)).catch((error: unknown) => {
      // an error reply is an answer; anything else (a lost connection) is not
      if (!REPLY_ERRORS.has((error as Error | undefined)?.constructor?.name ?? '')) rediscover();
      throw error;
    });
  return {
    cluster: true,
    down: () => (cluster.isOpen ? undefined : 'closed'),
    unanswered: rediscover,
    send,
    pipeline: (key, commands) => inOrder((command) => send(key, command), commands),
    subscriber(deliver) {
      // its own connections: one sharded subscriber per primary, following failovers
      const subscriber = cluster.duplicate();
      return connectedSubscriber(
        subscriber,
        (channel, listener) => subscriber.sSubscribe(channel, listener),
        (channel) => subscriber.sUnsubscribe(channel),
        deliver,
      );
    },
  };
}
