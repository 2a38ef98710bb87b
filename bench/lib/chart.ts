import type { FanoutResult } from '../realtime/types.js';
import type { SenderResult } from '../senders/types.js';
import { type ComparisonResult, type MachineInfo, REQUESTS, type Spread } from './types.js';

const xmlText = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const WIDTH = 860;
const LABEL = 340;
const VALUE = 150;
const ROW = 30;
const TOP = 36;

/** One bar: a median with its min–max whisker. */
export interface Bar {
  label: string;
  value: Spread;
  /** Drawn grey: the reference the ratios are taken against. */
  baseline: boolean;
}

/** What {@link renderBarChart} draws. */
export interface BarChart {
  title: string;
  /** The unit after each value (`req/s`). */
  rate: string;
  rounds: number;
  bars: readonly Bar[];
  /** The small print under the bars (date, machine). */
  footer: string;
  /** A logarithmic axis (said in the footer), for values spanning orders of magnitude. @defaultValue false */
  log?: boolean;
}

/** A horizontal bar chart of medians with min–max whiskers: plain SVG, no external service. */
export function renderBarChart({
  title,
  rate,
  rounds,
  bars,
  footer,
  log = false,
}: BarChart): string {
  const plot = WIDTH - LABEL - VALUE;
  const top = Math.max(...bars.map((s) => s.value.max), 1);
  // On a log axis, from half the smallest minimum: the shortest bar is still seen.
  const floor = Math.min(...bars.map((s) => s.value.min), top) / 2;
  const x = log
    ? (value: number) =>
        LABEL + (Math.log(Math.max(value, floor) / floor) / Math.log(top / floor)) * plot
    : (value: number) => LABEL + (value / top) * plot;
  const height = TOP + bars.length * ROW + 24;
  const rows = bars.map((bar, i) => {
    const y = TOP + i * ROW;
    const mid = y + ROW / 2 - 4;
    const fill = bar.baseline ? '#9aa5b1' : '#3b82f6';
    const value = `${Math.round(bar.value.median).toLocaleString('en-US')} ${rate}`;
    return [
      `<text x="${LABEL - 8}" y="${mid + 4}" text-anchor="end">${xmlText(bar.label)}</text>`,
      `<rect x="${LABEL}" y="${y}" width="${(x(bar.value.median) - LABEL).toFixed(1)}" height="${ROW - 8}" fill="${fill}"/>`,
      `<line x1="${x(bar.value.min).toFixed(1)}" x2="${x(bar.value.max).toFixed(1)}" y1="${mid}" y2="${mid}" stroke="#111" stroke-width="1.5"/>`,
      `<text x="${(x(bar.value.max) + 6).toFixed(1)}" y="${mid + 4}">${value}</text>`,
    ].join('\n  ');
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="system-ui, sans-serif" font-size="13">
  <rect width="100%" height="100%" fill="#fff"/>
  <text x="${LABEL}" y="20" font-weight="bold">${xmlText(title)}: ${rate}, median of ${rounds} rounds (whisker: min–max)</text>
  ${rows.join('\n  ')}
  <text x="${LABEL}" y="${height - 6}" fill="#555" font-size="11">${xmlText(`${log ? 'Log scale. ' : ''}${footer}`)}</text>
</svg>
`;
}

/** The chart's small print: the run's date and machine. */
export const chartFooter = (result: { date: string; machine: MachineInfo }) =>
  `${result.date.slice(0, 10)}, ${result.machine.cpus} × ${result.machine.cpuModel}, Node ${result.machine.node}`;

/**
 * A horizontal bar chart of the median throughput per server (req/s, or deliveries/s for a
 * fan-out or sender comparison), with a min–max whisker.
 */
export function renderChart(result: ComparisonResult | FanoutResult | SenderResult): string {
  const rate =
    result.kind === 'fanout' || result.kind === 'sender'
      ? 'deliveries/s'
      : (result.unit ?? REQUESTS).rate;
  return renderBarChart({
    title: result.title,
    rate,
    rounds: result.settings.rounds,
    bars: result.servers.map((s) => ({
      label: s.label,
      value: 'deliveriesPerSec' in s ? s.deliveriesPerSec : s.reqPerSec,
      baseline: s.name === result.baseline,
    })),
    footer: chartFooter(result),
  });
}
