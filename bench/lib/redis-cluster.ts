/**
 * A real six-node Redis Cluster (three primaries, a replica each) for the comparisons that
 * need one, started by the orchestrator (in a comparison's `setup`) on free ports of 127.0.0.1
 * (their cluster bus ports, +10000, free too) with no persistence, in a temporary folder, and
 * stopped in its `teardown` (or, at the latest, when the orchestrator exits). Every wait is
 * bounded: it is up within 20 s or throws.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { type BenchRedis, REDIS_URL_VARIABLE, startBenchRedis } from './redis.js';

const run = promisify(execFile);

const READY_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 5_000;
const NODES = 6;
/** The variable (in every server's environment) holding the seeds, `127.0.0.1:p1,127.0.0.1:p2,…`. */
export const BENCH_REDIS_CLUSTER = 'BENCH_REDIS_CLUSTER';

export interface BenchRedisCluster {
  /** Every node, as `127.0.0.1:port` joined by commas (for {@link BENCH_REDIS_CLUSTER}). */
  seeds: string;
  pids: number[];
  /** Stops every node (SIGTERM, then SIGKILL) and removes their folder; safe to call twice. */
  stop(): Promise<void>;
}

/** `host:port` seeds from a {@link BENCH_REDIS_CLUSTER} value. */
export function parseSeeds(seeds: string): { host: string; port: number }[] {
  return seeds.split(',').map((seed) => {
    const at = seed.lastIndexOf(':');
    return { host: seed.slice(0, at), port: Number(seed.slice(at + 1)) };
  });
}

function binary(name: string): string {
  try {
    const found = execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
    if (found !== '') return found;
  } catch {
    // reported below
  }
  throw new Error(
    `${name} is not installed (Debian: \`apt-get install redis-server\`); ` +
      'the Redis Cluster rows need a real one',
  );
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** Six consecutive ports whose cluster bus ports (port + 10000) are free too. */
async function freePorts(): Promise<number[]> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 9_000);
    const ports = Array.from({ length: NODES }, (_, i) => base + i);
    const free = await Promise.all(ports.flatMap((p) => [isFree(p), isFree(p + 10_000)]));
    if (free.every(Boolean)) return ports;
  }
  throw new Error(`no ${NODES} free ports (and bus ports) for a Redis Cluster`);
}

function exited(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** Asks the node at `port` with a client of its own, closed after. */
export async function ask<T>(port: number, question: (probe: Redis) => Promise<T>): Promise<T> {
  const probe = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    connectTimeout: 1_000,
    commandTimeout: 2_000,
    retryStrategy: () => null,
  });
  probe.on('error', () => {});
  try {
    await probe.connect();
    return await question(probe);
  } finally {
    probe.disconnect();
  }
}

/** Resolves once `check` holds; throws once `deadline` (a `Date.now()`) has passed. */
export async function until(deadline: number, what: string, check: () => Promise<boolean>) {
  const started = Date.now();
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await sleep(100);
  }
  throw new Error(`the Redis Cluster did not ${what} within ${deadline - started} ms`);
}

/** Six nodes of a Redis Cluster (three primaries, a replica each), joined and in sync. */
export interface ClusterNodes {
  /** The nodes' ports, the first three the primaries at the start. */
  ports: number[];
  /** Each node's process, by port. */
  children: Map<number, ChildProcess>;
  /** Stops every node (SIGTERM, then SIGKILL) and removes their folder; safe to call twice. */
  stop(): Promise<void>;
}

/** Ends `child`: SIGTERM, then SIGKILL if it is still there after {@link STOP_TIMEOUT_MS}. */
async function end(child: ChildProcess): Promise<void> {
  if (await exited(child, 0)) return;
  child.kill('SIGTERM');
  if (!(await exited(child, STOP_TIMEOUT_MS))) {
    child.kill('SIGKILL');
    await exited(child, STOP_TIMEOUT_MS);
  }
}

/** Spawns one cluster-enabled node on `port`, its files in `dir`. */
function spawnNode(server: string, port: number, dir: string): ChildProcess {
  return spawn(
    server,
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
}

/** Waits until the nodes answer, joins them, then until the cluster is ok and in sync. */
async function joinNodes(cli: string, nodes: ClusterNodes): Promise<void> {
  const { ports, children } = nodes;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  const running = async () => {
    const gone = [...children.values()].find((c) => c.exitCode !== null || c.signalCode !== null);
    if (gone !== undefined) throw new Error(`a redis-server exited (code ${gone.exitCode})`);
    return true;
  };
  await until(deadline, 'start its nodes', async () => {
    await running();
    const pongs = await Promise.all(ports.map((port) => ask(port, (probe) => probe.ping())));
    return pongs.every((pong) => pong === 'PONG');
  }).catch(async (error) => {
    await running(); // a node that exited says more than the timeout
    throw error;
  });
  await run(
    cli,
    [
      '--cluster',
      'create',
      ...ports.map((port) => `127.0.0.1:${port}`),
      '--cluster-replicas',
      '1',
      '--cluster-yes',
    ],
    { timeout: Math.max(1_000, deadline - Date.now()) },
  );
  await until(deadline, 'come up (cluster_state:ok on every node)', async () => {
    const infos = await Promise.all(
      ports.map((port) => ask(port, (probe) => probe.call('CLUSTER', 'INFO'))),
    );
    return infos.every((info) => String(info).includes('cluster_state:ok'));
  });
  // a replica serves a failover (and WAIT) only once it has synced with its primary
  await until(deadline, 'sync its replicas', async () => {
    const infos = await Promise.all(ports.map((port) => ask(port, (p) => p.info('replication'))));
    const replicas = infos.filter((info) => info.includes('role:slave'));
    return (
      replicas.length === NODES / 2 &&
      replicas.every((info) => info.includes('master_link_status:up'))
    );
  });
}

/**
 * Starts six `redis-server --cluster-enabled yes --cluster-node-timeout 2000 --save ''
 * --appendonly no` on free ports of 127.0.0.1 and joins them with `redis-cli --cluster create
 * … --cluster-replicas 1`; resolves within 20 s once every node says `cluster_state:ok` and
 * every replica's link is up, else stops them and throws. The nodes never outlive the process.
 */
export async function startClusterNodes(): Promise<ClusterNodes> {
  const server = binary('redis-server');
  const cli = binary('redis-cli');
  const ports = await freePorts();
  const dir = mkdtempSync(join(tmpdir(), 'portico-redis-cluster-'));
  const children = new Map(ports.map((port) => [port, spawnNode(server, port, dir)]));
  const killOnExit = () => {
    for (const child of children.values()) child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  let stopped = false;
  const nodes: ClusterNodes = {
    ports,
    children,
    async stop() {
      if (stopped) return;
      stopped = true;
      process.removeListener('exit', killOnExit);
      await Promise.all([...children.values()].map(end));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await joinNodes(cli, nodes);
  } catch (error) {
    await nodes.stop();
    throw error;
  }
  return nodes;
}

/** The cluster of a bench run: {@link startClusterNodes}, with its seeds for the servers. */
export async function startBenchRedisCluster(): Promise<BenchRedisCluster> {
  const { ports, children, stop } = await startClusterNodes();
  return {
    seeds: ports.map((port) => `127.0.0.1:${port}`).join(','),
    pids: [...children.values()].map((child) => child.pid ?? 0),
    stop,
  };
}

/**
 * The problems with the counters under `prefix` in the cluster at `seeds` (every primary
 * scanned): none when at least one key holds a positive count and expires within `windowMs`
 * (a rate limit really counted there). The cluster's equivalent of `checkRedisCounter`.
 */
export async function checkRedisClusterCounter(
  seeds: string,
  prefix: string,
  windowMs: number,
): Promise<string[]> {
  const nodes = parseSeeds(seeds);
  try {
    // the primaries serving slots now, as the first node answering sees them
    let primaries: number[] | undefined;
    for (const { port } of nodes) {
      try {
        const slots = (await ask(port, (probe) => probe.call('CLUSTER', 'SLOTS'))) as [
          number,
          number,
          [string, number],
        ][];
        primaries = [...new Set(slots.map(([, , [, primary]]) => primary))];
        break;
      } catch {
        // the next seed
      }
    }
    if (primaries === undefined || primaries.length === 0) {
      return [`Redis Cluster at ${seeds}: no node answered CLUSTER SLOTS`];
    }
    for (const port of primaries) {
      const found = await ask(port, async (probe) => {
        let cursor = '0';
        do {
          const [next, keys] = await probe.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
          const key = keys[0];
          if (key !== undefined) {
            const [count, ttl] = await Promise.all([probe.get(key), probe.pttl(key)]);
            return { key, count, ttl };
          }
          cursor = next;
        } while (cursor !== '0');
        return undefined;
      });
      if (found === undefined) continue;
      const { key, count, ttl } = found;
      const problems: string[] = [];
      if (!(Number(count) >= 1)) {
        problems.push(`Redis Cluster key ${key} (primary :${port}) holds ${JSON.stringify(count)}`);
      }
      if (!(ttl > 0 && ttl <= windowMs)) {
        problems.push(`Redis Cluster key ${key} (primary :${port}) expires in ${ttl} ms`);
      }
      return problems;
    }
    return [
      `no key matching ${JSON.stringify(`${prefix}*`)} on any of the ${primaries.length} ` +
        'primaries of the Redis Cluster',
    ];
  } catch (error) {
    return [`Redis Cluster at ${seeds}: ${error instanceof Error ? error.message : String(error)}`];
  }
}

/**
 * The `setup` and `teardown` of a comparison that needs one redis-server and one six-node
 * cluster: both started in `setup` (the first stopped again if the second fails), their
 * addresses handed to the servers as {@link REDIS_URL_VARIABLE} and {@link BENCH_REDIS_CLUSTER},
 * both stopped in `teardown`.
 */
export function redisAndCluster(): {
  setup(): Promise<Readonly<Record<string, string>>>;
  teardown(): Promise<void>;
} {
  let redis: BenchRedis | undefined;
  let cluster: BenchRedisCluster | undefined;
  return {
    async setup() {
      redis = await startBenchRedis();
      try {
        cluster = await startBenchRedisCluster();
      } catch (error) {
        await redis.stop();
        redis = undefined;
        throw error;
      }
      return { [REDIS_URL_VARIABLE]: redis.url, [BENCH_REDIS_CLUSTER]: cluster.seeds };
    },
    async teardown() {
      await Promise.all([redis?.stop(), cluster?.stop()]);
      redis = undefined;
      cluster = undefined;
    },
  };
}
