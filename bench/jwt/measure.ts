/**
 * Runs one in-process comparison: makes the inputs (`setup`), starts one child per row
 * (`<group> × <variant>`, at most one per CPU starting at a time), each of which checks its
 * implementation and warms up before it reports ready; then measures every row on every
 * workload round-robin (the order rotating every round) while the other children sit idle.
 * Every wait is bounded; a failed check or run aborts the run.
 */
import { spawn } from 'node:child_process';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { type IpcChild, ipcChild } from '../lib/ipc-child.js';
import { ROOT } from '../lib/paths.js';
import { IMPORT_THE_BUILD, nodeCommand } from '../lib/processes.js';
import { median, spread } from '../lib/stats.js';
import type { Spread } from '../lib/types.js';
import type {
  OpsCommand,
  OpsComparison,
  OpsMeasurement,
  OpsReport,
  OpsRowSummary,
  OpsSettings,
} from './types.js';

const log = (line: string) => process.stderr.write(`${line}\n`);
const START_TIMEOUT_MS = 30_000;
/** Beyond the warm-up: the checks (a few verifications) and one pass over the inputs. */
const READY_SLACK_MS = 30_000;
const RUN_SLACK_MS = 10_000;

type Child = IpcChild<OpsReport, OpsCommand>;

interface Row {
  name: string;
  group: string;
  variant: string;
  child: Child;
}

export const rowName = (group: string, variant: string) => `${group}/${variant}`;

export function childCommandLine(comparison: OpsComparison, group: string, variant: string) {
  return nodeCommand(comparison.entry, [group, variant]);
}

function startChild(comparison: OpsComparison, group: string, variant: string): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', comparison.entry, group, variant], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, ...IMPORT_THE_BUILD, NODE_ENV: 'production' },
  });
  return ipcChild<OpsReport, OpsCommand>(child, rowName(group, variant));
}

/** Starts a row's child, sends it its inputs, and waits until it is checked and warm. */
async function prepare(
  comparison: OpsComparison,
  group: string,
  variant: string,
  inputs: Promise<Readonly<Record<string, unknown>>>,
  s: OpsSettings,
  rows: Row[],
): Promise<void> {
  const child = startChild(comparison, group, variant);
  const row = { name: rowName(group, variant), group, variant, child };
  rows.push(row);
  await child.next('started', START_TIMEOUT_MS);
  child.send({ type: 'setup', inputs: (await inputs)[group], warmupMs: s.warmupMs });
  const ready = await child.next(
    'ready',
    READY_SLACK_MS + s.warmupMs * comparison.workloads.length,
  );
  const warm = Object.entries(ready.warmup)
    .map(([workload, rate]) => `${workload} ${Math.round(rate).toLocaleString('en-US')}`)
    .join(', ');
  log(`  ${row.name}: ${ready.checks.join('; ')}; warm-up ${comparison.unit.rate}: ${warm}`);
}

/**
 * Runs `task` over `items`, at most `limit` at a time; after a failure no task starts, and
 * once the running ones have settled the first failure is thrown.
 */
async function pool<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>) {
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < items.length) {
      await task(items[next++]!).catch((error: unknown) => {
        failed = true;
        throw error;
      });
    }
  };
  const settled = await Promise.allSettled(
    Array.from({ length: Math.min(limit, items.length) }, worker),
  );
  const failure = settled.find((r) => r.status === 'rejected');
  if (failure !== undefined) throw failure.reason;
}

async function runOnce(
  row: Row,
  workload: string,
  round: number,
  durationMs: number,
): Promise<OpsMeasurement> {
  row.child.send({ type: 'run', workload, round, durationMs });
  const got = await row.child.next('done', durationMs + RUN_SLACK_MS);
  if (got.workload !== workload || got.round !== round || got.ops <= 0) {
    throw new Error(`${row.name}: unexpected report ${JSON.stringify(got)}`);
  }
  return {
    row: row.name,
    workload,
    round,
    ops: got.ops,
    seconds: got.seconds,
    opsPerSec: got.ops / got.seconds,
    cpuUsPerOp: got.cpuUs / got.ops,
  };
}

export async function measureOps(
  comparison: OpsComparison,
  s: OpsSettings,
): Promise<OpsMeasurement[]> {
  const start = performance.now();
  const elapsed = () => `${((performance.now() - start) / 1000).toFixed(1)} s`;
  // Made while the first children start.
  const inputs = comparison.setup();
  const rows: Row[] = [];
  try {
    const specs = comparison.groups.flatMap((group) =>
      comparison.variants.map((v) => ({ group, variant: v.name })),
    );
    // Start-up and warm-up are not measured: one more at a time than there are CPUs.
    await pool(specs, cpus().length + 1, ({ group, variant }) =>
      prepare(comparison, group, variant, inputs, s, rows),
    );
    log(`  every row checked and warm (${elapsed()})`);
    const order = specs.map(({ group, variant }) =>
      rows.find((r) => r.name === rowName(group, variant)),
    );
    const measurements: OpsMeasurement[] = [];
    for (let round = 0; round < s.rounds; round++) {
      for (let i = 0; i < order.length; i++) {
        const row = order[(i + round) % order.length]!;
        const parts: string[] = [];
        // The workloads' order alternates too: the first run after a pause is not always one.
        const workloads =
          round % 2 === 0 ? comparison.workloads : [...comparison.workloads].reverse();
        for (const { name } of workloads) {
          const m = await runOnce(row, name, round, s.durationMs);
          measurements.push(m);
          parts.push(
            `${name} ${Math.round(m.opsPerSec).toLocaleString('en-US')} (${m.cpuUsPerOp.toFixed(1)} µs CPU)`,
          );
        }
        log(`  round ${round + 1}/${s.rounds} ${row.name}: ${parts.join(', ')}`);
      }
    }
    log(`  measured (${elapsed()})`);
    return measurements;
  } finally {
    await Promise.all(rows.map((r) => r.child.stop()));
  }
}

/** Per round, `value` of a row over the reference row's in the same round and workload. */
function ratios(
  mine: readonly OpsMeasurement[],
  all: readonly OpsMeasurement[],
  reference: string,
): Spread {
  return spread(
    mine.map((m) => {
      const ref = all.find(
        (r) => r.row === reference && r.workload === m.workload && r.round === m.round,
      );
      return ref === undefined ? Number.NaN : m.opsPerSec / ref.opsPerSec;
    }),
  );
}

export function summarizeOps(
  comparison: OpsComparison,
  measurements: readonly OpsMeasurement[],
): OpsRowSummary[] {
  return comparison.groups.flatMap((group) =>
    comparison.variants.map((variant) => {
      const name = rowName(group, variant.name);
      const workloads = Object.fromEntries(
        comparison.workloads.map(({ name: workload }) => {
          const mine = measurements.filter((m) => m.row === name && m.workload === workload);
          const secondary = comparison.secondaryBaseline;
          return [
            workload,
            {
              opsPerSec: spread(mine.map((m) => m.opsPerSec)),
              cpuUsPerOp: median(mine.map((m) => m.cpuUsPerOp)),
              ratio: ratios(mine, measurements, rowName(group, comparison.baseline)),
              ...(secondary !== undefined && {
                secondaryRatio: ratios(mine, measurements, rowName(group, secondary)),
              }),
            },
          ];
        }),
      );
      return { name, group, variant: variant.name, label: variant.label, workloads };
    }),
  );
}
