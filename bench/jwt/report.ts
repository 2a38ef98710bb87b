/** The tables, chart and BENCHMARKS.md section of an in-process comparison (`jwt`). */
import { chartFooter, renderBarChart } from '../lib/chart.js';
import { commandList, renderSection } from '../lib/section.js';
import type { Spread } from '../lib/types.js';
import type { OpsResult, OpsSettings } from './types.js';

const int = (n: number) => Math.round(n).toLocaleString('en-US');
const cpu = (n: number) => (n >= 10 ? n.toFixed(0) : n.toFixed(2));

function ratio(spread: Spread | undefined, isBaseline: boolean): string {
  if (isBaseline) return '1.00 (baseline)';
  if (spread === undefined) return '–';
  return `**${spread.median.toFixed(2)}** (${spread.min.toFixed(2)}–${spread.max.toFixed(2)})`;
}

/** One table per workload: a row per group and variant. */
export function renderOpsTable(result: OpsResult): string {
  const labelOf = (variant: string) =>
    result.servers.find((s) => s.variant === variant)?.label ?? variant;
  const secondary = result.secondaryBaseline;
  const { rate, each } = result.unit;
  return result.workloads
    .map(({ name, label }) => {
      const lines = [
        `**${label}**`,
        '',
        `| Algorithm | Verifier | ${rate} median | min | max | CPU µs/${each} | ` +
          `ratio to ${labelOf(result.baseline)} |` +
          (secondary === undefined ? '' : ` ratio to ${labelOf(secondary)} |`),
        `| --- | --- | ---: | ---: | ---: | ---: | ---: |${secondary === undefined ? '' : ' ---: |'}`,
      ];
      for (const s of result.servers) {
        const w = s.workloads[name];
        if (w === undefined) continue;
        const second =
          secondary === undefined ? '' : ` ${ratio(w.secondaryRatio, s.variant === secondary)} |`;
        lines.push(
          `| ${s.group} | ${s.label} | ${int(w.opsPerSec.median)} | ${int(w.opsPerSec.min)} | ` +
            `${int(w.opsPerSec.max)} | ${cpu(w.cpuUsPerOp)} | ` +
            `${ratio(w.ratio, s.variant === result.baseline)} |${second}`,
        );
      }
      return lines.join('\n');
    })
    .join('\n\n');
}

/** Every row on every workload (workload first), on a log axis: rates span 100×. */
export function renderOpsChart(result: OpsResult): string {
  return renderBarChart({
    title: result.title,
    rate: result.unit.rate,
    rounds: result.settings.rounds,
    bars: result.workloads.flatMap(({ name }) =>
      result.servers.flatMap((s) => {
        const w = s.workloads[name];
        return w === undefined
          ? []
          : [
              {
                label: `${s.group} ${s.label} · ${name}`,
                value: w.opsPerSec,
                baseline: s.variant === result.baseline,
              },
            ];
      }),
    ),
    footer: chartFooter(result),
    log: true,
  });
}

function settingsLine(s: OpsSettings): string {
  return (
    `${s.rounds} rounds × ${s.durationMs} ms per workload per row, after a discarded warm-up ` +
    `of ${s.warmupMs} ms per workload (and at least one pass over its tokens); rows interleaved ` +
    `round-robin, the order rotating every round; one verification in flight, each awaited ` +
    `before the next${s.quick ? ' (quick run)' : ''}`
  );
}

export function renderOpsSection(result: OpsResult): string {
  return renderSection({
    ...result,
    table: renderOpsTable(result),
    how: [
      `Load: ${settingsLine(result.settings)}`,
      `Inputs (made once in the orchestrator, sent to every child over IPC): ${result.inputs}`,
      'Verifiers (each row its own process, `NODE_ENV=production`, started once and driven ' +
        'over IPC; `<alg>` is RS256, ES256 or HS256):\n' +
        commandList(result.childCommands),
      'Each row’s process times its own loop (`performance.now()`) and takes its CPU time ' +
        '(user + system, `process.cpuUsage()`) over it; ratios are taken per round against ' +
        'the reference row of the same algorithm and workload, then median (min–max). The ' +
        'other rows’ processes sit idle meanwhile.',
    ],
  });
}
