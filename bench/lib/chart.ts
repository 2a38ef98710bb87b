import type { FanoutResult } from '../realtime/types.js';
import type { SenderResult } from '../senders/types.js';
import { type ComparisonResult, REQUESTS } from './types.js';

const xmlText = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const WIDTH = 860;
const LABEL = 340;
const VALUE = 150;
const ROW = 30;
const TOP = 36;

/**
 * A horizontal bar chart of the median throughput per server (req/s, or deliveries/s for a
 * fan-out or sender comparison), with a min–max whisker: plain SVG, no external service.
 */
export function renderChart(result: ComparisonResult | FanoutResult | SenderResult): string {
  const rate =
    result.kind === 'fanout' || result.kind === 'sender'
      ? 'deliveries/s'
      : (result.unit ?? REQUESTS).rate;
  const bars = result.servers.map((s) => ({
    name: s.name,
    label: s.label,
    value: 'deliveriesPerSec' in s ? s.deliveriesPerSec : s.reqPerSec,
  }));
  const plot = WIDTH - LABEL - VALUE;
  const top = Math.max(...bars.map((s) => s.value.max), 1);
  const x = (value: number) => LABEL + (value / top) * plot;
  const height = TOP + bars.length * ROW + 24;
  const rows = bars.map((server, i) => {
    const y = TOP + i * ROW;
    const mid = y + ROW / 2 - 4;
    const fill = server.name === result.baseline ? '#9aa5b1' : '#3b82f6';
    const value = `${Math.round(server.value.median).toLocaleString('en-US')} ${rate}`;
    return [
      `<text x="${LABEL - 8}" y="${mid + 4}" text-anchor="end">${xmlText(server.label)}</text>`,
      `<rect x="${LABEL}" y="${y}" width="${(x(server.value.median) - LABEL).toFixed(1)}" height="${ROW - 8}" fill="${fill}"/>`,
      `<line x1="${x(server.value.min).toFixed(1)}" x2="${x(server.value.max).toFixed(1)}" y1="${mid}" y2="${mid}" stroke="#111" stroke-width="1.5"/>`,
      `<text x="${(x(server.value.max) + 6).toFixed(1)}" y="${mid + 4}">${value}</text>`,
    ].join('\n  ');
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="system-ui, sans-serif" font-size="13">
  <rect width="100%" height="100%" fill="#fff"/>
  <text x="${LABEL}" y="20" font-weight="bold">${xmlText(result.title)}: ${rate}, median of ${result.settings.rounds} rounds (whisker: min–max)</text>
  ${rows.join('\n  ')}
  <text x="${LABEL}" y="${height - 6}" fill="#555" font-size="11">${xmlText(`${result.date.slice(0, 10)}, ${result.machine.cpus} × ${result.machine.cpuModel}, Node ${result.machine.node}`)}</text>
</svg>
`;
}
