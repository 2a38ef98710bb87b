// The Redis targets the store contract runs against: one client library (ioredis, node-redis
// v5) on one topology (one node, a six-node cluster) each. Adding a target is one more entry
// here; every check of the contract then runs against it too.
import { createClient, createCluster } from 'redis';
import { startRedis } from '../../helpers/redis.js';
import { startRedisCluster } from '../../helpers/redis-cluster.js';

/** A started target: real servers, and clients made on them. */
export interface RunningTarget {
  /**
   * A new client, connected to the target, every call (two clients are two processes). The
   * target closes it in {@link RunningTarget.stop}.
   */
  client(): unknown;
  /** The port of the primary holding `key`'s slot now (cluster targets only). */
  primaryOf?(key: string): Promise<number>;
  /** Closes every client made here and stops the servers. */
  stop(): Promise<void>;
}

/** One way of reaching Redis: a client library on a topology. */
export interface RedisTarget {
  /** Shown in the test names: `<library>, <topology>`. */
  name: string;
  /** A Redis Cluster (three primaries): keys spread over slots, sharded pub/sub. */
  cluster: boolean;
  /** Starts its servers (once per suite). */
  start(): Promise<RunningTarget>;
}

/** How many node-redis clients a target connects up front (they must be connected when given). */
const POOL = 3;

/**
 * `connect()`ed node-redis clients handed out in turn: two calls in a row give two clients
 * (two processes), all closed by `stop`.
 */
async function nodeRedisPool(
  make: () => {
    connect(): Promise<unknown>;
    close(): Promise<unknown>;
    on(e: 'error', f: () => void): unknown;
  },
  stopServers: () => Promise<void>,
): Promise<Pick<RunningTarget, 'client' | 'stop'>> {
  const clients = Array.from({ length: POOL }, make);
  for (const client of clients) client.on('error', () => {});
  await Promise.all(clients.map((client) => client.connect()));
  let next = 0;
  return {
    client: () => clients[next++ % POOL],
    async stop() {
      await Promise.all(clients.map((client) => client.close().catch(() => {})));
      await stopServers();
    },
  };
}

export const targets: readonly RedisTarget[] = [
  {
    name: 'ioredis, single node',
    cluster: false,
    async start() {
      const server = await startRedis();
      return { client: () => server.client(), stop: () => server.stop() };
    },
  },
  {
    name: 'ioredis, cluster',
    cluster: true,
    async start() {
      const cluster = await startRedisCluster();
      return {
        client: () => cluster.client(),
        primaryOf: (key) => cluster.primaryOf(key),
        stop: () => cluster.stop(),
      };
    },
  },
  {
    name: 'node-redis, single node',
    cluster: false,
    async start() {
      const server = await startRedis();
      return nodeRedisPool(
        () => createClient({ url: server.url }),
        () => server.stop(),
      );
    },
  },
  {
    name: 'node-redis, cluster',
    cluster: true,
    async start() {
      const cluster = await startRedisCluster();
      const rootNodes = cluster.ports.map((port) => ({ url: `redis://127.0.0.1:${port}` }));
      const pool = await nodeRedisPool(
        () => createCluster({ rootNodes }),
        () => cluster.stop(),
      );
      return { ...pool, primaryOf: (key) => cluster.primaryOf(key) };
    },
  },
];
