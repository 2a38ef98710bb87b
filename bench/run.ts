import { execFileSync } from 'node:child_process';
/**
 * `npm run bench -- [names…] [--quick] [--rounds N] [--duration S] [--report]`: runs the comparisons,
 * writes `bench/results/<name>.json` and `.svg`, and regenerates BENCHMARKS.md from every
 * result on disk.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { comparisons } from './comparisons.js';
import { importCommandLine, measureImports, summarizeImports } from './import/measure.js';
import { renderImportChart, renderImportTable } from './import/report.js';
import type { ImportComparison, ImportResult, ImportSettings } from './import/types.js';
import { childCommandLine, measureOps, summarizeOps } from './jwt/measure.js';
import { renderOpsChart, renderOpsTable } from './jwt/report.js';
import type { OpsComparison, OpsResult, OpsSettings } from './jwt/types.js';
import { type CliOptions, parseCli, USAGE } from './lib/args.js';
import { renderChart } from './lib/chart.js';
import { machineInfo } from './lib/machine.js';
import { loadCommandLine, measureComparison, summarize } from './lib/measure.js';
import { BENCHMARKS_FILE, RESULTS_DIR } from './lib/paths.js';
import { nodeCommand } from './lib/processes.js';
import { renderBenchmarks, renderTable } from './lib/report.js';
import type { Comparison, ComparisonResult, RunSettings } from './lib/types.js';
import {
  canPin,
  clientCommandLine,
  measureFanout,
  serverCommandLine,
  summarizeFanout,
} from './realtime/measure.js';
import { renderFanoutTable } from './realtime/report.js';
import type { FanoutComparison, FanoutResult, FanoutSettings } from './realtime/types.js';
import { senderCommandLine } from './senders/control.js';
import {
  measureSenders,
  receiverCommandLine,
  senderOptions,
  summarizeSenders,
} from './senders/measure.js';
import { renderSenderTable } from './senders/report.js';
import type { SenderComparison, SenderResult, SenderSettings } from './senders/types.js';

function commandLine(args: readonly string[]): string {
  const quoted = args.map((a) => (/^[\w./:=-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`));
  if (process.env.npm_lifecycle_event === 'bench') {
    return ['npm run bench', ...(quoted.length > 0 ? ['--', ...quoted] : [])].join(' ');
  }
  return nodeCommand('bench/run.ts', quoted);
}

type AnyComparison =
  | Comparison
  | FanoutComparison
  | SenderComparison
  | OpsComparison
  | ImportComparison;
type AnyResult = ComparisonResult | FanoutResult | SenderResult | OpsResult | ImportResult;

function select(names: readonly string[]): AnyComparison[] {
  if (names.length === 0) return [...comparisons];
  return names.map((name) => {
    const found = comparisons.find((c) => c.name === name);
    if (found === undefined) {
      throw new Error(
        `unknown comparison ${JSON.stringify(name)}; known: ${comparisons.map((c) => c.name).join(', ')}`,
      );
    }
    return found;
  });
}

/** Every stored result, in registry order (unknown names last). */
function storedResults(): AnyResult[] {
  const order = (name: string) => {
    const i = comparisons.findIndex((c) => c.name === name);
    return i === -1 ? comparisons.length : i;
  };
  return readdirSync(RESULTS_DIR)
    .filter((file) => file.endsWith('.json'))
    .map((file) => JSON.parse(readFileSync(join(RESULTS_DIR, file), 'utf8')) as AnyResult)
    .sort((a, b) => order(a.name) - order(b.name) || a.name.localeCompare(b.name));
}

async function runRequest(
  comparison: Comparison,
  cli: CliOptions,
  command: string,
): Promise<ComparisonResult> {
  const settings: RunSettings = {
    quick: cli.quick,
    rounds: cli.rounds,
    durationSeconds: cli.durationSeconds,
    warmupSeconds: cli.warmupSeconds,
    connections: cli.connections,
    pipelining: 1,
  };
  const machine = machineInfo();
  const date = new Date().toISOString();
  const { measurements, profiles, inProcess } = await measureComparison(comparison, settings);
  return {
    name: comparison.name,
    title: comparison.title,
    description: comparison.description,
    baseline: comparison.baseline,
    ...(comparison.secondaryBaseline !== undefined && {
      secondaryBaseline: comparison.secondaryBaseline,
    }),
    ...(comparison.unit !== undefined && { unit: comparison.unit }),
    ...(comparison.allowStatuses !== undefined && { allowStatuses: comparison.allowStatuses }),
    date,
    command,
    serverCommands: Object.fromEntries(
      comparison.servers.map((s) => [s.name, nodeCommand(s.entry)]),
    ),
    loadCommand: loadCommandLine(comparison, settings),
    machine,
    settings,
    request: comparison.request,
    ...(comparison.servers.some((s) => s.requestHeaders !== undefined) && {
      serverRequestHeaders: Object.fromEntries(
        comparison.servers.flatMap((s) =>
          s.requestHeaders === undefined ? [] : [[s.name, s.requestHeaders]],
        ),
      ),
    }),
    notes: comparison.notes ?? [],
    servers: summarize(comparison, measurements),
    measurements,
    ...(profiles.length > 0 && { profiles }),
    ...(inProcess !== undefined && { inProcess }),
  };
}

async function runFanout(
  comparison: FanoutComparison,
  cli: CliOptions,
  command: string,
): Promise<FanoutResult> {
  const settings: FanoutSettings = {
    quick: cli.quick,
    rounds: cli.fanoutRounds,
    clients:
      cli.clients ??
      (cli.quick ? (comparison.clients?.quick ?? 1000) : (comparison.clients?.full ?? 10_000)),
    messages: cli.messages,
    connectConcurrency: 100,
    pinned: canPin(),
  };
  const machine = machineInfo();
  const date = new Date().toISOString();
  const { memory, measurements } = await measureFanout(comparison, settings);
  return {
    kind: 'fanout',
    name: comparison.name,
    title: comparison.title,
    description: comparison.description,
    baseline: comparison.baseline,
    ...(comparison.secondaryBaseline !== undefined && {
      secondaryBaseline: comparison.secondaryBaseline,
    }),
    date,
    command,
    serverCommands: Object.fromEntries(
      comparison.servers.map((s) => [s.name, serverCommandLine(s)]),
    ),
    clientCommand: clientCommandLine(comparison, settings),
    machine,
    settings,
    notes: comparison.notes ?? [],
    servers: summarizeFanout(comparison, memory, measurements),
    memory,
    measurements,
  };
}

async function runSenders(
  comparison: SenderComparison,
  cli: CliOptions,
  command: string,
): Promise<SenderResult> {
  const settings: SenderSettings = {
    quick: cli.quick,
    rounds: cli.rounds,
    deliveries: cli.deliveries,
    concurrency: comparison.concurrency,
    pinned: canPin(),
  };
  const machine = machineInfo();
  const date = new Date().toISOString();
  const { measurements, profiles } = await measureSenders(comparison, settings);
  const options = senderOptions(comparison, 0, settings);
  return {
    kind: 'sender',
    name: comparison.name,
    title: comparison.title,
    description: comparison.description,
    baseline: comparison.baseline,
    date,
    command,
    receiverCommand: receiverCommandLine(),
    senderCommands: Object.fromEntries(
      comparison.senders.map((s) => [s.name, senderCommandLine(s, options)]),
    ),
    machine,
    settings,
    notes: comparison.notes ?? [],
    servers: summarizeSenders(comparison, measurements),
    measurements,
    ...(profiles.length > 0 && { profiles }),
  };
}

async function runOps(
  comparison: OpsComparison,
  cli: CliOptions,
  command: string,
): Promise<OpsResult> {
  const settings: OpsSettings = {
    quick: cli.quick,
    rounds: cli.rounds,
    durationMs: cli.durationGiven
      ? cli.durationSeconds * 1000
      : comparison.durationMs[cli.quick ? 'quick' : 'full'],
    warmupMs: comparison.warmupMs[cli.quick ? 'quick' : 'full'],
    inFlight: 1,
  };
  const machine = machineInfo();
  const date = new Date().toISOString();
  const measurements = await measureOps(comparison, settings);
  return {
    kind: 'ops',
    name: comparison.name,
    title: comparison.title,
    description: comparison.description,
    baseline: comparison.baseline,
    ...(comparison.secondaryBaseline !== undefined && {
      secondaryBaseline: comparison.secondaryBaseline,
    }),
    unit: comparison.unit,
    workloads: comparison.workloads,
    inputs: comparison.inputs,
    date,
    command,
    childCommands: Object.fromEntries(
      comparison.variants.map((v) => [v.name, childCommandLine(comparison, '<alg>', v.name)]),
    ),
    machine,
    settings,
    notes: comparison.notes ?? [],
    servers: summarizeOps(comparison, measurements),
    measurements,
  };
}

async function runImports(
  comparison: ImportComparison,
  cli: CliOptions,
  command: string,
): Promise<ImportResult> {
  const settings: ImportSettings = {
    quick: cli.quick,
    processes: cli.roundsGiven ? cli.rounds : comparison.processes[cli.quick ? 'quick' : 'full'],
    warmup: 1,
  };
  const machine = machineInfo();
  const date = new Date().toISOString();
  const measurements = await measureImports(comparison, settings);
  return {
    kind: 'import',
    name: comparison.name,
    title: comparison.title,
    description: comparison.description,
    baseline: comparison.baseline,
    date,
    command,
    childCommands: Object.fromEntries(
      comparison.rows.map((row) => [row.name, importCommandLine(comparison, row)]),
    ),
    machine,
    settings,
    notes: comparison.notes ?? [],
    servers: summarizeImports(comparison, measurements),
    measurements,
  };
}

async function run(
  comparison: AnyComparison,
  cli: CliOptions,
  command: string,
): Promise<AnyResult> {
  if (comparison.kind === 'fanout') return runFanout(comparison, cli, command);
  if (comparison.kind === 'sender') return runSenders(comparison, cli, command);
  if (comparison.kind === 'ops') return runOps(comparison, cli, command);
  if (comparison.kind === 'import') return runImports(comparison, cli, command);
  return runRequest(comparison, cli, command);
}

function tableOf(result: AnyResult): string {
  if (result.kind === 'fanout') return renderFanoutTable(result);
  if (result.kind === 'sender') return renderSenderTable(result);
  if (result.kind === 'ops') return renderOpsTable(result);
  if (result.kind === 'import') return renderImportTable(result);
  return renderTable(result);
}

function chartOf(result: AnyResult): string {
  if (result.kind === 'ops') return renderOpsChart(result);
  if (result.kind === 'import') return renderImportChart(result);
  return renderChart(result);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const cli = parseCli(args);
  if (cli.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (cli.report) {
    const results = storedResults();
    for (const result of results) {
      writeFileSync(join(RESULTS_DIR, `${result.name}.svg`), chartOf(result));
    }
    writeFileSync(BENCHMARKS_FILE, renderBenchmarks(results));
    process.stderr.write(`rebuilt ${BENCHMARKS_FILE} from ${results.length} result(s)\n`);
    return;
  }
  const selected = select(cli.names);
  // Servers under test import portico's build, as its users do: build it first.
  process.stderr.write('building portico (npm run build)\n');
  execFileSync('npm', ['run', '--silent', 'build'], { stdio: ['ignore', 'ignore', 'inherit'] });
  const command = commandLine(args);
  mkdirSync(RESULTS_DIR, { recursive: true });
  const started = performance.now();
  for (const comparison of selected) {
    process.stderr.write(`${comparison.name}: ${comparison.title}\n`);
    const begun = performance.now();
    const result = await run(comparison, cli, command);
    const seconds = (performance.now() - begun) / 1000;
    process.stderr.write(`${comparison.name}: done in ${seconds.toFixed(0)} s\n`);
    writeFileSync(
      join(RESULTS_DIR, `${comparison.name}.json`),
      `${JSON.stringify(result, null, 2)}\n`,
    );
    writeFileSync(join(RESULTS_DIR, `${comparison.name}.svg`), chartOf(result));
    const table = tableOf(result);
    process.stdout.write(`\n${comparison.name}: ${comparison.title}\n\n${table}\n\n`);
  }
  writeFileSync(BENCHMARKS_FILE, renderBenchmarks(storedResults()));
  const total = (performance.now() - started) / 1000;
  process.stderr.write(`wrote ${BENCHMARKS_FILE} (measuring took ${total.toFixed(0)} s)\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`\nbench: ABORTED: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
