// A real local Redis Cluster per suite: six redis-server nodes (three primaries, three
// replicas) on free ports of 127.0.0.1, joined with `redis-cli --cluster create`, no
// persistence, in a temporary folder. Bounded in time: it starts within 20 s or throws.
import { Cluster } from 'ioredis';
import { ask, startClusterNodes, until } from '../../bench/lib/redis-cluster.js';
import { hasRedis } from './redis.js';

export { hasRedis };

/** A running six-node cluster. */
export interface RedisClusterServer {
  /** The nodes' ports, the first three the primaries at the start. */
  ports: number[];
  /** A new ioredis cluster client (closed by {@link RedisClusterServer.stop}). */
  client(): Cluster;
  /** The port of the primary serving `key`'s slot now. */
  primaryOf(key: string): Promise<number>;
  /** Kills the primary at `port` (SIGKILL); its replica is promoted after the node timeout. */
  killNode(port: number): Promise<void>;
  /** The ports of the nodes not killed. */
  alive(): number[];
  /** The ports of the primaries serving slots now. */
  primaries(): Promise<number[]>;
  /** How many keys each primary holds now, by port. */
  keysPerPrimary(): Promise<Map<number, number>>;
  /**
   * Kills the primary at `port` and waits (20 s at most) until a replica took its slots and
   * the cluster is ok again: the time of the promotion, as `Date.now()`.
   */
  failover(port: number): Promise<number>;
  /** Quits every client made here, stops the nodes and removes their folder. */
  stop(): Promise<void>;
}

/** `CLUSTER INFO` of the node at `port` says the cluster is ok. */
const clusterOk = (port: number) =>
  ask(port, async (probe) =>
    String(await probe.call('CLUSTER', 'INFO')).includes('cluster_state:ok'),
  );

/** Every replica of the primary at `port` has acknowledged all the primary has written. */
const replicated = (port: number) =>
  ask(port, async (probe) => {
    const info = String(await probe.call('INFO', 'replication'));
    const written = /master_repl_offset:(\d+)/.exec(info)?.[1];
    const replicas = [...info.matchAll(/^slave\d+:.*offset=(\d+)/gm)].map((m) => m[1]);
    return replicas.length > 0 && replicas.every((offset) => offset === written);
  });

/** Starts a six-node cluster (three primaries, a replica each) and waits until it is ok. */
export async function startRedisCluster(): Promise<RedisClusterServer> {
  const nodes = await startClusterNodes();
  const { ports, children } = nodes;
  const clients: Cluster[] = [];
  const kill = (port: number) =>
    new Promise<void>((resolve) => {
      const child = children.get(port);
      if (child === undefined || child.exitCode !== null || child.signalCode !== null) {
        return resolve();
      }
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  const client = () => {
    const made = new Cluster(
      ports.map((port) => ({ host: '127.0.0.1', port })),
      {
        clusterRetryStrategy: (times) => Math.min(100 * times, 1_000),
        // a primary that died: its slots move to the promoted replica within a second
        slotsRefreshInterval: 1_000,
        redisOptions: { maxRetriesPerRequest: 1 },
      },
    );
    made.on('error', () => {});
    clients.push(made);
    return made;
  };
  const alive = () =>
    ports.filter(
      (port) => children.get(port)?.exitCode === null && children.get(port)?.signalCode === null,
    );
  /** The slot ranges and the port of their primary, as a live node sees them. */
  const slotRanges = () =>
    ask(alive()[0]!, async (probe) => {
      const slots = (await probe.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
      return slots.map(([from, to, [, port]]) => ({ from, to, port }));
    });
  const primaries = async () =>
    [...new Set((await slotRanges()).map((range) => range.port))].sort();
  return {
    ports,
    client,
    async primaryOf(key) {
      const slot = Number(await ask(alive()[0]!, (probe) => probe.call('CLUSTER', 'KEYSLOT', key)));
      const range = (await slotRanges()).find(({ from, to }) => slot >= from && slot <= to);
      return range?.port ?? -1;
    },
    killNode: kill,
    alive,
    primaries,
    async keysPerPrimary() {
      const counts = new Map<number, number>();
      for (const port of await primaries()) {
        counts.set(port, await ask(port, (probe) => probe.dbsize()));
      }
      return counts;
    },
    async failover(port) {
      // replication is asynchronous: a write the primary acknowledged reaches its replica a
      // moment later. Killed before that, the promoted replica has never seen it (Redis may
      // lose such a write); the tests mean a failover of what was replicated.
      await until(Date.now() + 5_000, 'replicate every write', () => replicated(port));
      await kill(port);
      await until(Date.now() + 20_000, 'promote a replica', async () => {
        const survivors = alive();
        const states = await Promise.all(survivors.map(clusterOk));
        const ranges = await slotRanges();
        return states.every(Boolean) && ranges.every((range) => range.port !== port);
      });
      return Date.now();
    },
    async stop() {
      for (const client of clients.splice(0)) client.disconnect();
      await nodes.stop();
    },
  };
}
