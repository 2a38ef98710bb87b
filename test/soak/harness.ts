/**
 * Plumbing of the soak tests: child processes driven over IPC (the soak server, the WebSocket
 * client processes), the descriptor limit, and where results are written
 * (`test-results/soak/<name>.json`). Every wait here is bounded.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type IpcChild, ipcChild } from '../../bench/lib/ipc-child.js';
import type {
  ServerCommand,
  ServerReport,
  ServerStats,
  WsClientCommand,
  WsClientOptions,
  WsClientReport,
} from './protocol.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** The soft and hard limits on open descriptors (`ulimit -n`, `ulimit -Hn`) of a child. */
export function descriptorLimits(): { soft: number; hard: number } {
  const out = spawnSync('sh', ['-c', 'ulimit -n; ulimit -Hn'], { encoding: 'utf8' }).stdout;
  const [soft, hard] = out
    .trim()
    .split('\n')
    .map((line) => (line.trim() === 'unlimited' ? Number.POSITIVE_INFINITY : Number(line)));
  return { soft: soft || 0, hard: hard || 0 };
}

/**
 * Spawns `node <args>` in the repository with IPC; with `descriptors`, under a soft limit
 * raised to that many (up to the hard limit) when the current one is lower.
 */
function spawnNode(
  args: string[],
  env: Record<string, string>,
  descriptors: number | undefined,
): ChildProcess {
  const options = {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'] as ('ignore' | 'pipe' | 'ipc')[],
  };
  if (descriptors !== undefined && descriptorLimits().soft < descriptors) {
    const script = `ulimit -n ${Math.ceil(descriptors)} && exec "$0" "$@"`;
    return spawn('sh', ['-c', script, process.execPath, ...args], options);
  }
  return spawn(process.execPath, args, options);
}

/** The soak server (test/soak/server.ts) in its own process. */
export interface SoakServer {
  port: number;
  /** Memory after a forced GC, handles, timers, connections, subscriptions, listeners. */
  stats(): Promise<ServerStats>;
  /**
   * Publishes ticks from seq `from`, one every `intervalMs`, until `count` are sent or
   * `durationMs` has passed; resolves with what was sent once it is done.
   */
  broadcast(options: {
    count: number;
    intervalMs: number;
    from: number;
    durationMs: number;
    timeoutMs: number;
  }): Promise<{ sent: number; lastSeq: number; elapsedMs: number }>;
  output(): string;
  stop(): Promise<void>;
}

/** Starts the soak server under `--expose-gc`; `descriptors`: the soft limit it needs. */
export async function startSoakServer(
  env: Record<string, string> = {},
  descriptors?: number,
): Promise<SoakServer> {
  const child = ipcChild<ServerReport, ServerCommand>(
    spawnNode(['--expose-gc', '--import', 'tsx', 'test/soak/server.ts'], env, descriptors),
    'soak server',
  );
  try {
    const { port } = await child.next('ready', 30_000);
    return {
      port,
      async stats() {
        child.send({ type: 'stats' });
        const { type: _, ...stats } = await child.next('stats', 30_000);
        return stats;
      },
      async broadcast({ count, intervalMs, from, durationMs, timeoutMs }) {
        child.send({ type: 'broadcast', count, intervalMs, from, durationMs });
        const { sent, lastSeq, elapsedMs } = await child.next('broadcast', timeoutMs);
        return { sent, lastSeq, elapsedMs };
      },
      output: child.output,
      stop: child.stop,
    };
  } catch (error) {
    await child.stop();
    throw error;
  }
}

/** One WebSocket client process (test/soak/ws-clients.ts), idle until told to `connect`. */
export type WsClients = IpcChild<WsClientReport, WsClientCommand>;

export function startWsClients(options: WsClientOptions, label: string): WsClients {
  return ipcChild<WsClientReport, WsClientCommand>(
    spawnNode(
      ['--import', 'tsx', 'test/soak/ws-clients.ts', JSON.stringify(options)],
      {},
      options.clients + 200,
    ),
    label,
  );
}

/** One poll of {@link settle}: when (ms from its start), and the memory then. */
export interface MemorySample {
  ms: number;
  rssMiB: number;
  heapUsedMiB: number;
  heapTotalMiB: number;
}

/** What {@link settle} ends with. */
export interface Settled {
  /** The last stats read. */
  stats: ServerStats;
  /** Whether `done` held before the time was up. */
  settled: boolean;
  ms: number;
  /** The memory at each poll. */
  samples: MemorySample[];
}

/** Polls `stats` every `everyMs` (bounded by `timeoutMs`) until `done` holds. */
export async function settle(
  server: SoakServer,
  done: (stats: ServerStats) => boolean,
  timeoutMs: number,
  everyMs = 250,
): Promise<Settled> {
  const start = performance.now();
  const samples: MemorySample[] = [];
  const read = async () => {
    const stats = await server.stats();
    samples.push({
      ms: Math.round(performance.now() - start),
      rssMiB: mib(stats.rss),
      heapUsedMiB: mib(stats.heapUsed),
      heapTotalMiB: mib(stats.heapTotal),
    });
    return stats;
  };
  for (let attempt = 0; attempt < Math.ceil(timeoutMs / everyMs) + 1; attempt++) {
    const stats = await read();
    const ms = performance.now() - start;
    if (done(stats)) return { stats, settled: true, ms, samples };
    if (ms >= timeoutMs) return { stats, settled: false, ms, samples };
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  return { stats: await read(), settled: false, ms: performance.now() - start, samples };
}

/**
 * Like {@link settle}, but `done` must also hold with the same `key` on two stats in a row: a
 * baseline taken while something is still being let go (a timer whose destroy hook has not
 * run yet) would never be met again.
 */
export function steady(
  server: SoakServer,
  done: (stats: ServerStats) => boolean,
  key: (stats: ServerStats) => unknown,
  timeoutMs: number,
): Promise<Settled> {
  let previous: string | undefined;
  return settle(
    server,
    (stats) => {
      const current = JSON.stringify(key(stats));
      const same = current === previous;
      previous = current;
      return same && done(stats);
    },
    timeoutMs,
  );
}

/**
 * The counts of `after` above the baseline's: what a round left behind. A count below its
 * baseline is no leak (a timer alive when the baseline was read may have ended since).
 */
export function heldOver<K extends string>(
  after: Record<K, number>,
  baseline: Record<K, number>,
): Partial<Record<K, number>> {
  const over: Partial<Record<K, number>> = {};
  for (const key of Object.keys(after) as K[]) {
    if (after[key] > baseline[key]) over[key] = after[key];
  }
  return over;
}

/** Writes `test-results/soak/<name>.json`; returns its path. */
export function writeResult(name: string, result: unknown): string {
  const dir = fileURLToPath(new URL('../../test-results/soak/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  const path = `${dir}${name}.json`;
  writeFileSync(path, `${JSON.stringify(result, null, 2)}\n`);
  return path;
}

/** Bytes as MiB, two decimals. */
export function mib(bytes: number): number {
  return Math.round((bytes / 1024 / 1024) * 100) / 100;
}
