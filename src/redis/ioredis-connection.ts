// portico's Redis connection over ioredis: one node (`Redis`) or a cluster (`Cluster`).
import type { Cluster, Redis } from 'ioredis';
import type { RedisCommand, RedisConnection, RedisSubscriber } from './connection.js';

/** Whether `client` looks like an ioredis client (one node or a cluster). @internal */
export function isIoredis(client: object): client is Redis | Cluster {
  const c = client as Partial<Redis>;
  return (
    typeof c.evalsha === 'function' &&
    typeof c.call === 'function' &&
    typeof c.pipeline === 'function' &&
    typeof c.duplicate === 'function'
  );
}

/** @internal */
export function ioredisConnection(client: Redis | Cluster): RedisConnection {
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
