/**
 * Runs one cold-import comparison: for every row, fresh `node <entry> [specifier]` processes,
 * one at a time, each timing its own import. One discarded process per row first (it checks
 * the row imports and fills the OS file cache), then rounds of one process per row, the rows
 * interleaved round-robin with the order rotating every round. Every wait is bounded; a
 * failed process aborts the run.
 */
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { ROOT } from '../lib/paths.js';
import { median, spread } from '../lib/stats.js';
import type {
  ImportComparison,
  ImportMeasurement,
  ImportReport,
  ImportRow,
  ImportRowSummary,
  ImportSettings,
} from './types.js';

const log = (line: string) => process.stderr.write(`${line}\n`);
const PROCESS_TIMEOUT_MS = 30_000;

const childArgs = (comparison: ImportComparison, row: ImportRow) =>
  row.specifier === null ? [comparison.entry] : [comparison.entry, row.specifier];

/** The exact command a row's process runs, for BENCHMARKS.md. */
export function importCommandLine(comparison: ImportComparison, row: ImportRow): string {
  return ['node', ...childArgs(comparison, row)].join(' ');
}

/**
 * A plain node, `NODE_ENV=production`: nothing preloaded and no compile cache
 * (`NODE_OPTIONS` and `NODE_COMPILE_CACHE` dropped).
 */
function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'production' };
  delete env.NODE_OPTIONS;
  delete env.NODE_COMPILE_CACHE;
  return env;
}

/** Runs one process of `row`; resolves with its report and its spawn-to-exit time. */
function runOnce(
  comparison: ImportComparison,
  row: ImportRow,
): Promise<{ report: ImportReport; processMs: number }> {
  const started = performance.now();
  const child = spawn(process.execPath, childArgs(comparison, row), {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: childEnv(),
  });
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    const fail = (message: string) => {
      clearTimeout(timer);
      const tail = stderr.trim().split('\n').slice(-5).join('\n');
      reject(new Error(`import ${row.name}: ${message}${tail ? `\n${tail}` : ''}`));
    };
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(`no exit within ${PROCESS_TIMEOUT_MS} ms`);
    }, PROCESS_TIMEOUT_MS);
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.once('error', (err) => fail(err.message));
    child.once('close', (code, signal) => {
      const processMs = performance.now() - started;
      if (code !== 0) return fail(`exited with code ${code}, signal ${signal}`);
      let report: ImportReport;
      try {
        report = JSON.parse(stdout.trim()) as ImportReport;
      } catch {
        return fail(`printed ${JSON.stringify(stdout.trim())}, not JSON`);
      }
      if (!Number.isFinite(report.ms) || report.ms < 0) {
        return fail(`printed ${JSON.stringify(report)}`);
      }
      if (row.specifier !== null && !(report.exports > 0)) {
        return fail(`imported ${JSON.stringify(row.specifier)} with no export`);
      }
      clearTimeout(timer);
      resolve({ report, processMs });
    });
  });
}

export async function measureImports(
  comparison: ImportComparison,
  s: ImportSettings,
): Promise<ImportMeasurement[]> {
  const rows = comparison.rows;
  for (let i = 0; i < s.warmup; i++) {
    for (const row of rows) {
      const { report } = await runOnce(comparison, row);
      log(`  warm-up ${row.name}: ${report.exports} exports, ${report.ms.toFixed(1)} ms`);
    }
  }
  const measurements: ImportMeasurement[] = [];
  for (let round = 0; round < s.processes; round++) {
    const parts: string[] = [];
    for (let i = 0; i < rows.length; i++) {
      const row = rows[(i + round) % rows.length]!;
      const { report, processMs } = await runOnce(comparison, row);
      measurements.push({ row: row.name, round, importMs: report.ms, processMs });
      parts.push(`${row.name} ${report.ms.toFixed(1)}`);
    }
    log(`  round ${round + 1}/${s.processes} (import ms): ${parts.join(', ')}`);
  }
  return measurements;
}

export function summarizeImports(
  comparison: ImportComparison,
  measurements: readonly ImportMeasurement[],
): ImportRowSummary[] {
  return comparison.rows.map((row) => {
    const mine = measurements.filter((m) => m.row === row.name);
    return {
      name: row.name,
      label: row.label,
      specifier: row.specifier,
      reference: row.reference,
      importMs: spread(mine.map((m) => m.importMs)),
      processMs: median(mine.map((m) => m.processMs)),
    };
  });
}
