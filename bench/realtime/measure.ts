/**
 * Runs one fan-out comparison: per server, starts it (`--expose-gc`) and a client process
 * holding N connections, checks every client is connected and subscribed (a probe broadcast
 * must reach all of them), reads memory per connection, runs a discarded warm-up round;
 * then measures the servers round-robin (the order rotating every round). A round is K
 * broadcasts; every client must get every message, else the run fails.
 */
import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { processCpuSeconds } from '../lib/cpu.js';
import { nodeCommand, type RunningServer, startServer } from '../lib/processes.js';
import { median, spread } from '../lib/stats.js';
import type { Spread } from '../lib/types.js';
import {
  broadcast,
  CLIENT_SCRIPT,
  type ClientProcess,
  serverStats,
  startClients,
} from './control.js';
import type {
  ClientOptions,
  FanoutComparison,
  FanoutMeasurement,
  FanoutMemory,
  FanoutServerSpec,
  FanoutSettings,
  FanoutSummary,
  ServerStats,
} from './types.js';

const log = (line: string) => process.stderr.write(`${line}\n`);
const PROBE_TIMEOUT_MS = 30_000;
const PROBE_EVERY_MS = 250;

/** Pins every thread of `pid` to one CPU with `taskset`. */
export function pin(pid: number | undefined, cpu: number): void {
  if (pid === undefined) throw new Error('no pid to pin');
  execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
}

/**
 * Whether servers can run on CPU 0 and client processes on CPU 1 (two CPUs or more, and
 * `taskset`), so that they stop trading places on a small machine.
 */
export function canPin(): boolean {
  if (availableParallelism() < 2) return false;
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

interface Running {
  spec: FanoutServerSpec;
  /** Its server processes (one unless `spec.processes`); broadcasts go through the first. */
  servers: RunningServer[];
  clients: ClientProcess;
  /** Round ids are unique per server: probes and warm-up too. */
  nextRound: number;
}

function clientOptions(
  spec: FanoutServerSpec,
  ports: readonly number[],
  s: FanoutSettings,
): ClientOptions {
  const scheme = spec.client === 'ws' ? 'ws' : 'http';
  const urls = ports.map((port) => `${scheme}://127.0.0.1:${port}${spec.path}`);
  return {
    kind: spec.client,
    url: urls[0]!,
    ...(urls.length > 1 && { urls }),
    ...(spec.subscribe !== undefined && { subscribe: spec.subscribe }),
    clients: s.clients,
    concurrency: s.connectConcurrency,
    connectTimeoutMs: 20_000 + s.clients * 10,
  };
}

/** Node's options for the servers under test: `gc()` for the memory readings. */
const SERVER_NODE_ARGS = ['--expose-gc'];

/** A server's command line as run. */
export const serverCommandLine = (spec: FanoutServerSpec) =>
  ['node', ...SERVER_NODE_ARGS, '--import', 'tsx', spec.entry].join(' ') +
  ((spec.processes ?? 1) > 1 ? ` (${spec.processes} processes)` : '');

/** The client process's command line as run (its port varies). */
export function clientCommandLine(comparison: FanoutComparison, settings: FanoutSettings): string {
  const spec = comparison.servers[0]!;
  const example = JSON.stringify(clientOptions(spec, [0], settings)).replace(':0/', ':<port>/');
  return nodeCommand(CLIENT_SCRIPT, [`'${example}'`]);
}

/** Broadcasts probes until every client has received one: all are connected and subscribed. */
async function probe(r: Running): Promise<void> {
  const id = r.nextRound++;
  r.clients.send({ type: 'probe', round: id, timeoutMs: PROBE_TIMEOUT_MS });
  const probed = r.clients.next('probed', PROBE_TIMEOUT_MS + 5_000);
  let done = false;
  const settle = () => {
    done = true;
  };
  probed.then(settle, settle);
  while (!done) {
    await broadcast(r.servers[0]!.port, id, 1, 10_000);
    await Promise.race([probed.catch(() => {}), sleep(PROBE_EVERY_MS)]);
  }
  const { reached, timedOut } = await probed;
  if (timedOut) {
    throw new Error(
      `${r.spec.name}: only ${reached} clients got a probe within ${PROBE_TIMEOUT_MS} ms`,
    );
  }
}

/** One round of K broadcasts; throws on any lost delivery or closed connection. */
async function runRound(r: Running, round: number, s: FanoutSettings): Promise<FanoutMeasurement> {
  const id = r.nextRound++;
  const timeoutMs = 30_000 + (s.clients * s.messages) / 5; // at least 5,000 deliveries/s
  r.clients.send({ type: 'arm', round: id, messages: s.messages, timeoutMs });
  await r.clients.next('armed', 10_000);
  const cpuBefore = cpuSeconds(r.servers);
  const { sendMs } = await broadcast(r.servers[0]!.port, id, s.messages, timeoutMs);
  const got = await r.clients.next('round', timeoutMs + 10_000);
  const cpuAfter = cpuSeconds(r.servers);
  if (
    got.timedOut ||
    got.delivered !== got.expected ||
    got.incompleteClients > 0 ||
    got.closedClients > 0
  ) {
    throw new Error(
      `${r.spec.name}: ${got.delivered} of ${got.expected} deliveries, ${got.incompleteClients} ` +
        `clients without every message, ${got.closedClients} connections closed` +
        (got.timedOut ? `, not done within ${timeoutMs} ms` : ''),
    );
  }
  return {
    server: r.spec.name,
    round,
    deliveries: got.delivered,
    deliveriesPerSec: got.delivered / (got.spanMs / 1000),
    spanMs: got.spanMs,
    latencyP50Ms: got.latencyP50Ms,
    latencyP99Ms: got.latencyP99Ms,
    latencyMaxMs: got.latencyMaxMs,
    serverSendMs: sendMs,
    serverCpuUsPerDelivery:
      cpuBefore === undefined || cpuAfter === undefined
        ? null
        : ((cpuAfter - cpuBefore) * 1e6) / got.delivered,
  };
}

/** CPU time (user + system) of every process of a server; undefined without procfs. */
function cpuSeconds(servers: readonly RunningServer[]): number | undefined {
  let total = 0;
  for (const server of servers) {
    const seconds = processCpuSeconds(server.pid);
    if (seconds === undefined) return undefined;
    total += seconds;
  }
  return total;
}

/** Memory and connections of every process of a server, added up. */
async function statsOf(servers: readonly RunningServer[]): Promise<ServerStats> {
  const all = await Promise.all(servers.map((server) => serverStats(server.port)));
  return all.reduce((a, b) => ({
    rss: a.rss + b.rss,
    heapUsed: a.heapUsed + b.heapUsed,
    connections: a.connections + b.connections,
  }));
}

/** Starts one server (its processes) and its clients, checks them, and reads memory per connection. */
async function prepare(
  spec: FanoutServerSpec,
  s: FanoutSettings,
  env: Readonly<Record<string, string>>,
  running: Running[],
): Promise<FanoutMemory> {
  const servers: RunningServer[] = [];
  const before = await (async () => {
    for (let i = 0; i < (spec.processes ?? 1); i++) {
      const server = await startServer(
        { name: spec.name, label: spec.label, entry: spec.entry },
        SERVER_NODE_ARGS,
        env,
      );
      servers.push(server);
      if (s.pinned) pin(server.pid, 0);
    }
    return statsOf(servers);
  })().catch(async (error: unknown) => {
    await Promise.all(servers.map((server) => server.stop()));
    throw error;
  });
  const options = clientOptions(
    spec,
    servers.map((server) => server.port),
    s,
  );
  const r: Running = { spec, servers, clients: startClients(spec.name, options), nextRound: 1 };
  running.push(r);
  if (s.pinned) pin(r.clients.pid, 1);
  const { ms: connectMs } = await r.clients.next('connected', options.connectTimeoutMs + 30_000);
  await probe(r);
  let after = await statsOf(servers);
  for (let i = 0; i < 20 && after.connections !== s.clients; i++) {
    await sleep(250);
    after = await statsOf(servers);
  }
  if (after.connections !== s.clients) {
    throw new Error(
      `${spec.name}: the server holds ${after.connections} of ${s.clients} connections`,
    );
  }
  const memory: FanoutMemory = {
    server: spec.name,
    clients: s.clients,
    before,
    after,
    rssPerConnectionBytes: (after.rss - before.rss) / s.clients,
    heapPerConnectionBytes: (after.heapUsed - before.heapUsed) / s.clients,
    connectMs,
  };
  const kib = (n: number) => (n / 1024).toFixed(1);
  log(
    `  ${spec.name}: ${s.clients} clients connected and subscribed in ${(connectMs / 1000).toFixed(1)} s; ` +
      `${kib(memory.rssPerConnectionBytes)} KiB RSS, ${kib(memory.heapPerConnectionBytes)} KiB heap per connection`,
  );
  const warm = await runRound(r, -1, s);
  log(`  warm-up ${spec.name}: ${Math.round(warm.deliveriesPerSec)} deliveries/s (discarded)`);
  return memory;
}

export async function measureFanout(
  comparison: FanoutComparison,
  s: FanoutSettings,
): Promise<{ memory: FanoutMemory[]; measurements: FanoutMeasurement[] }> {
  const env = (await comparison.setup?.()) ?? {};
  try {
    return await measureWith(comparison, s, env);
  } finally {
    await comparison.teardown?.();
  }
}

async function measureWith(
  comparison: FanoutComparison,
  s: FanoutSettings,
  env: Readonly<Record<string, string>>,
): Promise<{ memory: FanoutMemory[]; measurements: FanoutMeasurement[] }> {
  const running: Running[] = [];
  try {
    const memory: FanoutMemory[] = [];
    for (const spec of comparison.servers) memory.push(await prepare(spec, s, env, running));
    const measurements: FanoutMeasurement[] = [];
    for (let round = 0; round < s.rounds; round++) {
      for (let i = 0; i < running.length; i++) {
        const r = running[(i + round) % running.length]!;
        const m = await runRound(r, round, s);
        measurements.push(m);
        log(
          `  round ${round + 1}/${s.rounds} ${r.spec.name}: ${Math.round(m.deliveriesPerSec)} deliveries/s, ` +
            `p50 ${m.latencyP50Ms.toFixed(1)} ms, p99 ${m.latencyP99Ms.toFixed(1)} ms, send loop ` +
            `${m.serverSendMs.toFixed(0)} ms` +
            (m.serverCpuUsPerDelivery === null
              ? ''
              : `, server CPU ${m.serverCpuUsPerDelivery.toFixed(2)} µs/delivery`),
        );
      }
    }
    return { memory, measurements };
  } finally {
    for (const r of running) await r.clients.stop();
    await Promise.all(running.flatMap((r) => r.servers.map((server) => server.stop())));
  }
}

/** Per round, each measurement's deliveries/s over `reference`'s in the same round. */
function ratiosTo(
  reference: string,
  own: readonly FanoutMeasurement[],
  all: readonly FanoutMeasurement[],
): Spread {
  const byRound = new Map<number, number>();
  for (const m of all) if (m.server === reference) byRound.set(m.round, m.deliveriesPerSec);
  return spread(own.map((m) => m.deliveriesPerSec / (byRound.get(m.round) ?? Number.NaN)));
}

export function summarizeFanout(
  comparison: FanoutComparison,
  memory: readonly FanoutMemory[],
  measurements: readonly FanoutMeasurement[],
): FanoutSummary[] {
  const secondary = comparison.secondaryBaseline;
  const memoryOf = (name: string) => memory.find((m) => m.server === name);
  const baseRss = memoryOf(comparison.baseline)?.rssPerConnectionBytes ?? Number.NaN;
  return comparison.servers.map((spec) => {
    const own = measurements.filter((m) => m.server === spec.name);
    const mem = memoryOf(spec.name);
    const cpu = own.map((m) => m.serverCpuUsPerDelivery);
    return {
      name: spec.name,
      label: spec.label,
      deliveriesPerSec: spread(own.map((m) => m.deliveriesPerSec)),
      latencyP50Ms: median(own.map((m) => m.latencyP50Ms)),
      latencyP99Ms: median(own.map((m) => m.latencyP99Ms)),
      serverCpuUsPerDelivery: cpu.every((c) => c !== null) ? median(cpu as number[]) : null,
      rssPerConnectionBytes: mem?.rssPerConnectionBytes ?? Number.NaN,
      heapPerConnectionBytes: mem?.heapPerConnectionBytes ?? Number.NaN,
      ratio: ratiosTo(comparison.baseline, own, measurements),
      ...(secondary !== undefined && { secondaryRatio: ratiosTo(secondary, own, measurements) }),
      memoryRatio: (mem?.rssPerConnectionBytes ?? Number.NaN) / baseRss,
    };
  });
}
