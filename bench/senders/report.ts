/** The table and BENCHMARKS.md section of a sender comparison. */
import { renderProfiles } from '../lib/profile-report.js';
import { commandList, renderSection } from '../lib/section.js';
import type { Spread } from '../lib/types.js';
import type { SenderResult, SenderSettings } from './types.js';

const int = (n: number) => Math.round(n).toLocaleString('en-US');
const ms = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(2));
const cpu = (n: number | null) => (n === null ? '–' : n.toFixed(1));

function ratio(spread: Spread, isBaseline: boolean): string {
  if (isBaseline) return '1.00 (baseline)';
  return `**${spread.median.toFixed(2)}** (${spread.min.toFixed(2)}–${spread.max.toFixed(2)})`;
}

export function renderSenderTable(result: SenderResult): string {
  const labelOf = (name: string) => result.servers.find((s) => s.name === name)?.label ?? name;
  const lines = [
    '| Sender | deliveries/s median | min | max | p50 / p99 request latency ms | ' +
      `sender CPU µs/delivery | receiver CPU µs/delivery | ratio to ${labelOf(result.baseline)} |`,
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const s of result.servers) {
    lines.push(
      `| ${s.label} | ${int(s.deliveriesPerSec.median)} | ${int(s.deliveriesPerSec.min)} | ` +
        `${int(s.deliveriesPerSec.max)} | ${ms(s.latencyP50Ms)} / ${ms(s.latencyP99Ms)} | ` +
        `${cpu(s.senderCpuUsPerDelivery)} | ${cpu(s.receiverCpuUsPerDelivery)} | ` +
        `${ratio(s.ratio, s.name === result.baseline)} |`,
    );
  }
  return lines.join('\n');
}

function settingsLine(s: SenderSettings): string {
  return (
    `${s.deliveries.toLocaleString('en-US')} deliveries per round, at most ${s.concurrency} in ` +
    `flight, ${s.rounds} rounds per sender after a discarded warm-up round, senders ` +
    'interleaved round-robin' +
    (s.pinned ? '; receiver pinned to CPU 0 and senders to CPU 1 (`taskset`)' : '') +
    (s.quick ? ' (quick run)' : '')
  );
}

export function renderSenderSection(result: SenderResult): string {
  return renderSection({
    ...result,
    table: renderSenderTable(result) + renderProfiles(result, 'delivery'),
    how: [
      `Load: ${settingsLine(result.settings)}`,
      'Receiver (its own process, on 127.0.0.1, `NODE_ENV=production`): ' +
        `\`${result.receiverCommand}\``,
      'Senders (each its own process, `NODE_ENV=production`, kept for every round):\n' +
        commandList(result.senderCommands),
    ],
  });
}

/** How the sender numbers are made, for the head of BENCHMARKS.md. */
export const SENDER_METHOD = `The sender comparisons (\`webhook\`) measure outgoing requests: one receiver process
(node:http on 127.0.0.1, answering \`204\` to every POST and counting them) and each sender in a
process of its own, started once and told over IPC to make M deliveries with at most C in
flight. Before anything is measured, a short run of each sender must all arrive, and the first
request the receiver got must be the expected JSON body (and, for a signing sender, carry a
Standard Webhooks signature that portico's \`verifyWebhook\` accepts); a warm-up round of M is
then discarded. A round's deliveries/s is M over the time, in the sender, from its first send
to its last delivery; the receiver must count exactly M, and any error, non-2xx answer or dead
letter aborts the run. Request latency is one request's time as undici sees it (created to
answer headers, from its diagnostics channels, the same for every sender); sender and receiver
CPU per delivery are each process's CPU time during the round over M. Rounds are interleaved
round-robin as above and ratios taken per round; where the machine allows, the receiver runs
pinned to CPU 0 and the senders to CPU 1 (\`taskset\`).`;
