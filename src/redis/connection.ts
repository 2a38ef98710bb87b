// What portico's Redis stores need of a client, whichever library and topology: one command
// or a few on one connection (routed by a key to its slot's primary on a cluster), whether
// the client is between reconnections, and a subscriber for pub/sub (sharded on a cluster).
import type { Cluster, Redis } from 'ioredis';
import { invalidOption } from '../internal/options.js';

/** Arguments of one Redis command, its name first. */
export type RedisCommand = readonly (string | number)[];

/** A connection in subscriber mode, made from the client the user passed. @internal */
export interface RedisSubscriber {
  subscribe(channel: string): Promise<void>;
  unsubscribe(channel: string): Promise<void>;
  close(): Promise<void>;
}

/** One client seen through what the stores use. @internal */
export interface RedisConnection {
  /** A Redis Cluster: publish with `SPUBLISH`, subscribe with `SSUBSCRIBE`. */
  readonly cluster: boolean;
  /** Why commands cannot be sent now (between reconnections, closed), or `undefined`. */
  down(): string | undefined;
  /** One command; `key` routes it (the slot of a key it names). */
  send(key: string, command: RedisCommand): Promise<unknown>;
  /**
   * Commands sent together on the connection of `key`'s node, in order (a keyless `WAIT`
   * after a write is answered by the node that took the write). Each reply, or its error.
   */
  pipeline(key: string, commands: readonly RedisCommand[]): Promise<unknown[]>;
  /** A new connection in subscriber mode, handing every message to `deliver`. */
  subscriber(deliver: (channel: string, text: string) => void): RedisSubscriber;
}

const connections = new WeakMap<object, RedisConnection>();

/**
 * The connection of `client`, made once per client and shared by the stores built on it.
 * @internal
 */
export function connectionOf(owner: string, client: unknown): RedisConnection {
  if (typeof client !== 'object' || client === null) throw notAClient(owner);
  let connection = connections.get(client);
  if (connection === undefined) {
    connection = isIoredis(client) ? ioredisConnection(client) : undefined;
    if (connection === undefined) throw notAClient(owner);
    connections.set(client, connection);
  }
  return connection;
}

const notAClient = (owner: string) =>
  invalidOption(`${owner}: \`client\` must be an ioredis client (Redis or Cluster)`);

function isIoredis(client: object): client is Redis | Cluster {
  const c = client as Partial<Redis>;
  return (
    typeof c.evalsha === 'function' &&
    typeof c.call === 'function' &&
    typeof c.pipeline === 'function' &&
    typeof c.duplicate === 'function'
  );
}

function ioredisConnection(client: Redis | Cluster): RedisConnection {
  const cluster = (client as { isCluster?: boolean }).isCluster === true;
  const call = (command: RedisCommand) =>
    client.call(String(command[0]), ...command.slice(1)) as Promise<unknown>;
  return {
    cluster,
    down: () =>
      client.status === 'reconnecting' || client.status === 'close' || client.status === 'end'
        ? client.status
        : undefined,
    send: (_key, command) => call(command),
    async pipeline(_key, commands) {
      const batch = client.pipeline();
      for (const command of commands) batch.call(String(command[0]), ...command.slice(1));
      const replies = (await batch.exec()) ?? [];
      return replies.map(([error, reply]) => error ?? reply);
    },
    subscriber: (deliver) =>
      cluster
        ? ioredisShardedSubscriber(client as Cluster, deliver)
        : ioredisSubscriber(client as Redis, deliver),
  };
}

function ioredisSubscriber(
  client: Redis,
  deliver: (channel: string, text: string) => void,
): RedisSubscriber {
  // no ready check: its INFO would be refused once a SUBSCRIBE queued before the connection
  // was up has put it in subscriber mode (two subscriptions at start)
  const subscriber = client.duplicate({ enableReadyCheck: false });
  // it reconnects on its own (and subscribes again); commands report their own failures
  subscriber.on('error', () => {});
  subscriber.on('message', deliver);
  return {
    subscribe: async (channel) => void (await subscriber.subscribe(channel)),
    unsubscribe: async (channel) => void (await subscriber.unsubscribe(channel)),
    close: () => quit(subscriber),
  };
}

function ioredisShardedSubscriber(
  client: Cluster,
  deliver: (channel: string, text: string) => void,
): RedisSubscriber {
  // one subscriber connection per primary, each following its slots through failovers
  const subscriber = client.duplicate([], { shardedSubscribers: true });
  subscriber.on('error', () => {});
  subscriber.on('smessage', deliver);
  return {
    subscribe: async (channel) => void (await subscriber.ssubscribe(channel)),
    unsubscribe: async (channel) => void (await subscriber.sunsubscribe(channel)),
    close: () => quit(subscriber),
  };
}

async function quit(client: Redis | Cluster): Promise<void> {
  await client.quit().catch(() => client.disconnect());
}
