/** Renders BENCHMARKS.md from every `bench/results/<name>.json`. */
import { renderImportSection } from '../import/report.js';
import type { ImportResult } from '../import/types.js';
import { renderOpsSection } from '../jwt/report.js';
import type { OpsResult } from '../jwt/types.js';
import { FANOUT_METHOD, renderFanoutSection } from '../realtime/report.js';
import type { FanoutResult } from '../realtime/types.js';
import { renderSenderSection, SENDER_METHOD } from '../senders/report.js';
import type { SenderResult } from '../senders/types.js';
import { renderSection } from './section.js';
import { renderTargets } from './targets.js';
import { type ComparisonResult, REQUESTS, type RunSettings, type Spread } from './types.js';

const int = (n: number) => Math.round(n).toLocaleString('en-US');
const ms = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(1));

const cpu = (n: number | null | undefined) => (n === null || n === undefined ? '–' : n.toFixed(0));

function ratio(spread: Spread, isBaseline: boolean): string {
  if (isBaseline) return '1.00 (baseline)';
  return `**${spread.median.toFixed(2)}** (${spread.min.toFixed(2)}–${spread.max.toFixed(2)})`;
}

function settingsLine(s: RunSettings): string {
  const warmup =
    s.warmupSeconds > 0 ? ` after a ${s.warmupSeconds} s warm-up per server (discarded)` : '';
  return (
    `${s.rounds} rounds × ${s.durationSeconds} s per server${warmup}, servers interleaved ` +
    `round-robin; ${s.connections} connections, pipelining ${s.pipelining}${s.quick ? ' (quick run)' : ''}`
  );
}

export function renderTable(result: ComparisonResult): string {
  const labelOf = (name: string) => result.servers.find((s) => s.name === name)?.label ?? name;
  const secondary = result.secondaryBaseline;
  const unit = result.unit ?? REQUESTS;
  const allowed = result.allowStatuses;
  const lines = [
    `| Server | ${unit.rate} median | min | max | p50 / p99 latency ms | server CPU µs/${unit.each} | ratio to ${labelOf(result.baseline)} |` +
      (secondary === undefined ? '' : ` ratio to ${labelOf(secondary)} |`) +
      (allowed === undefined ? '' : ` share answered ${allowed.join(' or ')} |`),
    `| --- | ---: | ---: | ---: | ---: | ---: | ---: |${secondary === undefined ? '' : ' ---: |'}${allowed === undefined ? '' : ' ---: |'}`,
  ];
  for (const s of result.servers) {
    const second =
      secondary === undefined || s.secondaryRatio === undefined
        ? ''
        : ` ${ratio(s.secondaryRatio, s.name === secondary)} |`;
    const share = allowed === undefined ? '' : ` ${((s.allowedShare ?? 0) * 100).toFixed(1)} % |`;
    lines.push(
      `| ${s.label} | ${int(s.reqPerSec.median)} | ${int(s.reqPerSec.min)} | ${int(s.reqPerSec.max)} | ` +
        `${ms(s.latencyP50Ms)} / ${ms(s.latencyP99Ms)} | ${cpu(s.serverCpuUsPerRequest)} | ${ratio(s.ratio, s.name === result.baseline)} |${second}${share}`,
    );
  }
  return lines.join('\n');
}

/**
 * Where each profiled server's CPU went (bench/lib/profile.ts): a column per server, a row per
 * category, then each server's largest functions of its own.
 */
export function renderProfiles(result: ComparisonResult): string {
  const profiles = result.profiles ?? [];
  if (profiles.length === 0) return '';
  const labelOf = (name: string) => result.servers.find((s) => s.name === name)?.label ?? name;
  const us = (n: number | undefined) => (n === undefined ? '–' : n.toFixed(1));
  const names = [...new Set(profiles.flatMap((p) => p.categories.map((c) => c.name)))];
  const lines = [
    `| µs per request, from a CPU profile | ${profiles.map((p) => labelOf(p.server)).join(' | ')} |`,
    `| --- |${' ---: |'.repeat(profiles.length)}`,
    ...names.map(
      (name) =>
        `| ${name} | ${profiles.map((p) => us(p.categories.find((c) => c.name === name)?.usPerRequest)).join(' | ')} |`,
    ),
    `| **all of it** (idle time and module loading left out) | ${profiles.map((p) => `**${us(p.busyUsPerRequest)}**`).join(' | ')} |`,
  ];
  const own = profiles
    .filter((p) => p.functions.length > 0)
    .map(
      (p) =>
        `- ${labelOf(p.server)}, ${int(p.requests)} requests: ` +
        p.functions.map((f) => `\`${f.name}\` (${f.where}) ${us(f.usPerRequest)}`).join(', '),
    );
  return [
    '',
    '',
    'Where the CPU goes: the servers below were started once more after the rounds, under ' +
      '`node --cpu-prof`, warmed up and loaded round-robin as in the rounds; their main ' +
      'threads’ samples taken during those loads, by where they fell, over the requests they ' +
      'answered (the profiler’s own cost included, so these compare with each other, not with ' +
      'the table above).',
    '',
    ...lines,
    ...(own.length === 0
      ? []
      : ['', 'Their own functions with the largest self time (µs per request):', '', ...own]),
  ].join('\n');
}

const headerList = (headers: Readonly<Record<string, string>>) =>
  Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}`)
    .join(', ');

function renderRequestSection(result: ComparisonResult): string {
  const servers = Object.entries(result.serverCommands)
    .map(([name, command]) => {
      const own = result.serverRequestHeaders?.[name];
      const sent = own === undefined ? '' : `, sent \`${headerList(own)}\``;
      return `  - ${name}: \`${command}\`${sent}`;
    })
    .join('\n');
  const { method, path, headers, body } = result.request;
  const headerText = headerList(headers);
  const bodyText = body === undefined ? '' : ` and body \`${body}\``;
  return renderSection({
    ...result,
    table: renderTable(result) + renderProfiles(result),
    how: [
      `Load: ${settingsLine(result.settings)}; request \`${method} ${path}\`` +
        `${headerText ? ` with \`${headerText}\`` : ''}${bodyText}`,
      `Servers (each its own process, on 127.0.0.1, \`NODE_ENV=production\`):\n${servers}`,
      `Load generator (autocannon, one process per measurement): \`${result.loadCommand}\``,
    ],
  });
}

export function renderBenchmarks(
  results: readonly (ComparisonResult | FanoutResult | SenderResult | OpsResult | ImportResult)[],
): string {
  const sections = results
    .map((r) =>
      r.kind === 'fanout'
        ? renderFanoutSection(r)
        : r.kind === 'sender'
          ? renderSenderSection(r)
          : r.kind === 'ops'
            ? renderOpsSection(r)
            : r.kind === 'import'
              ? renderImportSection(r)
              : renderRequestSection(r),
    )
    .join('\n');
  return `# Benchmarks

Generated by \`npm run bench\` ([\`bench/run.ts\`](bench/run.ts)); rerun it rather than editing
this file. Run one comparison with \`npm run bench -- <name>\`, a short run with \`--quick\`,
set \`--rounds N\` / \`--duration S\` as needed, and \`--report\` to rebuild this file from
\`bench/results/\` without measuring.

How the numbers are made: every server under test runs in its own child process and the load
generator ([autocannon](https://github.com/mcollina/autocannon)) in another, started afresh for
each measurement, so the orchestrator stays idle. Each server is checked to answer the request
as expected, warmed up, then measured over several rounds with the servers interleaved
round-robin (the order rotating every round) so machine noise spreads over all of them. A
round's req/s is completed requests over measured seconds; the tables give the median, min and
max over rounds; the medians of each round's p50 and p99 latency (autocannon records whole
milliseconds) and of the server process's CPU time per request (user + system, from
\`/proc\`; machine noise disturbs it less than req/s); and the ratio to the baseline (and to a
second reference, where a comparison names one), taken per round against that server's
measurement in the same round: median (min–max). Any non-2xx answer or connection error
aborts the run. Numbers from a shared machine are noisy: compare ratios, not absolute req/s
across machines.

## Targets at a glance

Each target of the project, read from the tables below: the ratio column a target names, or,
between two rows that are not a table's reference, the quotient of their median ratios; a
target in milliseconds reads the median time of the row it names.

${renderTargets(results)}

${FANOUT_METHOD}

${SENDER_METHOD}

${sections}`;
}
