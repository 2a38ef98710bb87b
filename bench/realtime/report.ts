/** The table and BENCHMARKS.md section of a fan-out comparison. */
import { commandList, renderSection } from '../lib/section.js';
import type { Spread } from '../lib/types.js';
import type { FanoutResult, FanoutSettings } from './types.js';

const int = (n: number) => Math.round(n).toLocaleString('en-US');
const ms = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(1));
const kib = (n: number) => (Number.isFinite(n) ? (n / 1024).toFixed(1) : '–');
const cpu = (n: number | null) => (n === null ? '–' : n.toFixed(1));

function ratio(spread: Spread, isBaseline: boolean): string {
  if (isBaseline) return '1.00 (baseline)';
  return `**${spread.median.toFixed(2)}** (${spread.min.toFixed(2)}–${spread.max.toFixed(2)})`;
}

export function renderFanoutTable(result: FanoutResult): string {
  const labelOf = (name: string) => result.servers.find((s) => s.name === name)?.label ?? name;
  const secondary = result.secondaryBaseline;
  const lines = [
    '| Server | deliveries/s median | min | max | p50 / p99 latency ms | server CPU µs/delivery | ' +
      `RSS / heap KiB per connection | ratio to ${labelOf(result.baseline)} | memory ratio |` +
      (secondary === undefined ? '' : ` ratio to ${labelOf(secondary)} |`),
    `| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |${secondary === undefined ? '' : ' ---: |'}`,
  ];
  for (const s of result.servers) {
    const isBase = s.name === result.baseline;
    const second =
      secondary === undefined || s.secondaryRatio === undefined
        ? ''
        : ` ${ratio(s.secondaryRatio, s.name === secondary)} |`;
    lines.push(
      `| ${s.label} | ${int(s.deliveriesPerSec.median)} | ${int(s.deliveriesPerSec.min)} | ` +
        `${int(s.deliveriesPerSec.max)} | ${ms(s.latencyP50Ms)} / ${ms(s.latencyP99Ms)} | ` +
        `${cpu(s.serverCpuUsPerDelivery)} | ${kib(s.rssPerConnectionBytes)} / ${kib(s.heapPerConnectionBytes)} | ` +
        `${ratio(s.ratio, isBase)} | ${isBase ? '1.00' : `**${s.memoryRatio.toFixed(2)}**`} |${second}`,
    );
  }
  return lines.join('\n');
}

function settingsLine(s: FanoutSettings): string {
  return (
    `${s.clients.toLocaleString('en-US')} connections per server (opened ${s.connectConcurrency} ` +
    `at a time), ${s.rounds} rounds of ${s.messages} broadcasts per server after a discarded ` +
    `warm-up round, servers interleaved round-robin` +
    (s.pinned ? '; servers pinned to CPU 0 and client processes to CPU 1 (`taskset`)' : '') +
    (s.quick ? ' (quick run)' : '')
  );
}

export function renderFanoutSection(result: FanoutResult): string {
  return renderSection({
    ...result,
    table: renderFanoutTable(result),
    how: [
      `Load: ${settingsLine(result.settings)}`,
      'Servers (each its own process, on 127.0.0.1, `NODE_ENV=production`, `--expose-gc` for ' +
        `the memory readings):\n${commandList(result.serverCommands)}`,
      `Client process (one per server, holding its N connections): \`${result.clientCommand}\``,
    ],
  });
}

/** How the fan-out numbers are made, for the head of BENCHMARKS.md. */
export const FANOUT_METHOD = `The fan-out comparisons (\`ws\`, \`sse\`) measure broadcasts instead: each server runs in
its own process and a client process of its own holds its N connections, opened a bounded
number at a time; a probe broadcast must reach every client (so all are connected and
subscribed) before anything is measured. Memory per connection is the server's RSS (and V8
heap used) after a forced GC with all N connected and subscribed, minus the same before any
client connected, over N. A round is K broadcasts, one per event-loop turn, each stamped with
its send time (\`performance.timeOrigin + performance.now()\`, one clock for both processes);
deliveries/s is N × K over the time from the first send to the last delivery, latency is
receive time minus send time over all N × K deliveries (p50 and p99, median over rounds), and
server CPU per delivery is the server process's CPU time during the round over N × K. Every
client must get every message: any loss or dropped connection aborts the run. Rounds are
interleaved round-robin as above, and ratios taken per round; the memory ratio is RSS per
connection over the baseline's. Where the machine allows, servers run pinned to CPU 0 and
client processes to CPU 1 (\`taskset\`). With the clients on the same machine the client side
can bound deliveries/s; server CPU per delivery shows the server's own cost.`;
