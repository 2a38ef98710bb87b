// A real local Redis Cluster per suite: six redis-server nodes (three primaries, three
// replicas) on free ports of 127.0.0.1, joined with `redis-cli --cluster create`, no
// persistence, in a temporary folder. Bounded in time: it starts within 20 s or throws.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import { hasRedis } from './redis.js';

const run = promisify(execFile);

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

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** Six ports whose cluster bus ports (port + 10000) are free too. */
async function freePorts(): Promise<number[]> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 9_000);
    const ports = [0, 1, 2, 3, 4, 5].map((i) => base + i);
    const free = await Promise.all(ports.flatMap((p) => [isFree(p), isFree(p + 10_000)]));
    if (free.every(Boolean)) return ports;
  }
  throw new Error('no six free ports for a Redis Cluster');
}

async function until(what: string, check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the Redis Cluster did not ${what} within ${ms} ms`);
}

/** Asks the node at `port` with a client of its own, closed after. */
async function ask<T>(port: number, question: (probe: Redis) => Promise<T>): Promise<T> {
  const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
  probe.on('error', () => {});
  try {
    await probe.connect();
    return await question(probe);
  } finally {
    probe.disconnect();
  }
}

/** The node at `port` answers. */
const answers = (port: number) => ask(port, async (probe) => (await probe.ping()) === 'PONG');

/** `CLUSTER INFO` of the node at `port` says the cluster is ok. */
const clusterOk = (port: number) =>
  ask(port, async (probe) =>
    String(await probe.call('CLUSTER', 'INFO')).includes('cluster_state:ok'),
  );

/** The node at `port` is a primary, or a replica whose link to its primary is up. */
const linked = (port: number) =>
  ask(port, async (probe) => {
    const info = await probe.info('replication');
    return info.includes('role:master') || info.includes('master_link_status:up');
  });

/** Starts a six-node cluster (three primaries, a replica each) and waits until it is ok. */
export async function startRedisCluster(): Promise<RedisClusterServer> {
  const ports = await freePorts();
  const dir = mkdtempSync(join(tmpdir(), 'portico-redis-cluster-'));
  const children = new Map<number, ChildProcess>();
  for (const port of ports) {
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
        '--cluster-node-timeout',
        '2000',
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        'no',
      ],
      { stdio: 'ignore' },
    );
    children.set(port, child);
  }
  await Promise.all(ports.map((port) => until('start its nodes', () => answers(port))));
  await run(
    'redis-cli',
    [
      '--cluster',
      'create',
      ...ports.map((p) => `127.0.0.1:${p}`),
      '--cluster-replicas',
      '1',
      '--cluster-yes',
    ],
    { timeout: 20_000 },
  );
  await until('come up', async () => (await Promise.all(ports.map(clusterOk))).every(Boolean));
  // a replica takes over only once it has synced with its primary: wait for every link
  await until('sync its replicas', async () =>
    (await Promise.all(ports.map(linked))).every(Boolean),
  );

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
      await kill(port);
      await until('promote a replica', async () => {
        const survivors = alive();
        const states = await Promise.all(survivors.map(clusterOk));
        const ranges = await slotRanges();
        return states.every(Boolean) && ranges.every((range) => range.port !== port);
      });
      return Date.now();
    },
    async stop() {
      for (const client of clients.splice(0)) client.disconnect();
      await Promise.all(ports.map(kill));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
