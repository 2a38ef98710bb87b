/** The table, chart and BENCHMARKS.md section of a cold-import comparison (`import`). */
import { chartFooter, renderBarChart } from '../lib/chart.js';
import { commandList, renderSection } from '../lib/section.js';
import type { ImportResult, ImportSettings } from './types.js';

const ms = (n: number) => (n < 1 ? n.toFixed(2) : n.toFixed(1));

export function renderImportTable(result: ImportResult): string {
  const lines = [
    '| Import | import ms median | min | max | whole process ms (median) |',
    '| --- | ---: | ---: | ---: | ---: |',
  ];
  for (const s of result.servers) {
    const label = s.name === result.baseline ? `${s.label} (baseline)` : s.label;
    lines.push(
      `| ${label} | **${ms(s.importMs.median)}** | ${ms(s.importMs.min)} | ` +
        `${ms(s.importMs.max)} | ${ms(s.processMs)} |`,
    );
  }
  return lines.join('\n');
}

/** Median import time per row, with its min–max whisker; reference rows grey. */
export function renderImportChart(result: ImportResult): string {
  return renderBarChart({
    title: result.title,
    rate: 'ms',
    rounds: result.settings.processes,
    bars: result.servers.map((s) => ({
      label: s.label.replace(/`/g, ''),
      value: s.importMs,
      baseline: s.reference,
    })),
    footer: chartFooter(result),
  });
}

function settingsLine(s: ImportSettings): string {
  return (
    `${s.processes} processes per row after ${s.warmup} discarded per row (it checks the ` +
    'import and fills the OS file cache), rows interleaved round-robin, the order rotating ' +
    `every round; one process at a time${s.quick ? ' (quick run)' : ''}`
  );
}

export function renderImportSection(result: ImportResult): string {
  return renderSection({
    ...result,
    table: renderImportTable(result),
    how: [
      `Runs: ${settingsLine(result.settings)}`,
      'Processes (each a fresh `node` from the repository root, `NODE_ENV=production`, ' +
        '`NODE_OPTIONS` and `NODE_COMPILE_CACHE` unset; the specifier resolves from `bench/import/`):\n' +
        commandList(result.childCommands),
      'Each process takes `performance.now()` just before `import(specifier)` and again once ' +
        'its promise has settled, and prints the difference; "whole process" is spawn to exit ' +
        'as the orchestrator sees it (node’s own start-up included).',
    ],
  });
}
