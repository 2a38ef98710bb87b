/**
 * Runs one sender comparison: starts the receiver, then each sender in its own process;
 * checks each sender's deliveries all arrive and look right (a signed sender's signature
 * verified with portico's `verifyWebhook`), runs a discarded warm-up round each; then
 * measures the senders round-robin (the order rotating every round). A round is M
 * deliveries; the receiver must count exactly M, else the run fails.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateWebhookSecret, verifyWebhook } from '../../src/webhook/index.js';
import { processCpuSeconds } from '../lib/cpu.js';
import { nodeCommand, type RunningServer, startServer } from '../lib/processes.js';
import { mainThreadProfile, monotonicUs, summarizeProfile, type Window } from '../lib/profile.js';
import { median, spread } from '../lib/stats.js';
import type { ProfileSummary, Spread } from '../lib/types.js';
import { pin } from '../realtime/measure.js';
import {
  firstRequest,
  receivedCount,
  resetReceiver,
  type SenderProcess,
  startSender,
} from './control.js';
import type {
  CapturedRequest,
  SenderComparison,
  SenderMeasurement,
  SenderOptions,
  SenderSettings,
  SenderSpec,
  SenderSummary,
} from './types.js';

const log = (line: string) => process.stderr.write(`${line}\n`);
export const RECEIVER_SCRIPT = 'bench/senders/receiver.ts';
export const receiverCommandLine = () => nodeCommand(RECEIVER_SCRIPT);
const READY_TIMEOUT_MS = 20_000;
const CHECK_DELIVERIES = 20;
/** Round ids of the runs that are not measured. */
const CHECK_ROUND = -2;
const WARMUP_ROUND = -1;

interface Running {
  spec: SenderSpec;
  sender: SenderProcess;
}

export function senderOptions(
  comparison: SenderComparison,
  port: number,
  s: SenderSettings,
): SenderOptions {
  return {
    url: `http://127.0.0.1:${port}${comparison.path}`,
    concurrency: s.concurrency,
    event: comparison.event,
  };
}

const cpuUsPer = (before: number | undefined, after: number | undefined, count: number) =>
  before === undefined || after === undefined ? null : ((after - before) * 1e6) / count;

/** One run of `deliveries`; throws unless the sender and the receiver both count all of them. */
async function runOnce(
  r: Running,
  receiver: RunningServer,
  round: number,
  deliveries: number,
): Promise<SenderMeasurement> {
  const timeoutMs = 10_000 + deliveries * 2; // at least 500 deliveries/s
  await resetReceiver(receiver.port);
  const senderBefore = processCpuSeconds(r.sender.pid);
  const receiverBefore = processCpuSeconds(receiver.pid);
  r.sender.send({ type: 'run', round, deliveries, timeoutMs });
  const got = await r.sender.next('done', timeoutMs + 5_000);
  const senderAfter = processCpuSeconds(r.sender.pid);
  const receiverAfter = processCpuSeconds(receiver.pid);
  const received = await receivedCount(receiver.port);
  if (got.delivered !== deliveries || received !== deliveries) {
    throw new Error(
      `${r.spec.name}: ${deliveries} deliveries sent, ${got.delivered} reported delivered, ` +
        `${received} received`,
    );
  }
  return {
    sender: r.spec.name,
    round,
    deliveries,
    deliveriesPerSec: deliveries / (got.spanMs / 1000),
    spanMs: got.spanMs,
    latencyP50Ms: got.latencyP50Ms,
    latencyP99Ms: got.latencyP99Ms,
    senderCpuUsPerDelivery: cpuUsPer(senderBefore, senderAfter, deliveries),
    receiverCpuUsPerDelivery: cpuUsPer(receiverBefore, receiverAfter, deliveries),
  };
}

/** What is wrong with one delivered request (nothing: an empty list). */
function problemsOf(
  comparison: SenderComparison,
  spec: SenderSpec,
  request: CapturedRequest | undefined,
  secret: string,
): string[] {
  if (request === undefined) return ['the receiver kept no request'];
  const problems: string[] = [];
  if (request.method !== 'POST') problems.push(`method ${request.method}, expected POST`);
  const type = request.headers['content-type'];
  if (type !== 'application/json') problems.push(`content-type ${type}, not application/json`);
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(request.body) as Record<string, unknown>;
  } catch {
    problems.push(`body is not JSON: ${JSON.stringify(request.body.slice(0, 100))}`);
  }
  const keys = Object.keys(body).join(',');
  const data = body.data as { round?: unknown; seq?: unknown } | undefined;
  if (
    keys !== 'event,type,timestamp,data' ||
    body.event !== comparison.event ||
    body.type !== comparison.event ||
    Number.isNaN(Date.parse(String(body.timestamp))) ||
    data?.round !== CHECK_ROUND ||
    typeof data.seq !== 'number'
  ) {
    problems.push(`body ${request.body.slice(0, 120)}… is not a ${comparison.event} webhook`);
  }
  if (spec.signed) {
    try {
      verifyWebhook(secret, request.body, request.headers);
    } catch (error) {
      problems.push(`signature: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return problems;
}

/** Starts one sender (`nodeArgs` before its script), checks what it delivers, warms it up. */
async function prepare(
  comparison: SenderComparison,
  spec: SenderSpec,
  receiver: RunningServer,
  s: SenderSettings,
  secret: string,
  running: Running[],
  nodeArgs: readonly string[] = [],
): Promise<void> {
  const options = senderOptions(comparison, receiver.port, s);
  const sender = startSender(spec, options, secret, nodeArgs);
  const r: Running = { spec, sender };
  running.push(r);
  if (s.pinned) pin(sender.pid, 1);
  await sender.next('ready', READY_TIMEOUT_MS);
  await runOnce(r, receiver, CHECK_ROUND, CHECK_DELIVERIES);
  const problems = problemsOf(comparison, spec, await firstRequest(receiver.port), secret);
  if (problems.length > 0) {
    throw new Error(`${spec.name} does not deliver as expected:\n  - ${problems.join('\n  - ')}`);
  }
  log(
    `  ${spec.name}: ${CHECK_DELIVERIES} deliveries all received` +
      (spec.signed ? ', signature verified' : ''),
  );
  const warm = await runOnce(r, receiver, WARMUP_ROUND, s.deliveries);
  log(`  warm-up ${spec.name}: ${Math.round(warm.deliveriesPerSec)} deliveries/s (discarded)`);
}

/**
 * The comparison's `profile` senders started once more under `node --cpu-prof`, checked and
 * warmed up, then run round-robin as in the rounds; each one's main-thread profile summed
 * over its measured runs only, per delivery.
 */
async function profileSenders(
  comparison: SenderComparison,
  receiver: RunningServer,
  s: SenderSettings,
  secret: string,
): Promise<ProfileSummary[]> {
  const specs = comparison.senders.filter((spec) => comparison.profile?.includes(spec.name));
  const dirs = specs.map(() => mkdtempSync(join(tmpdir(), 'portico-bench-profile-')));
  const running: Running[] = [];
  try {
    for (const [i, spec] of specs.entries()) {
      const nodeArgs = ['--cpu-prof', `--cpu-prof-dir=${dirs[i]}`];
      await prepare(comparison, spec, receiver, s, secret, running, nodeArgs);
    }
    const windows = running.map((): Window[] => []);
    for (let round = 0; round < s.rounds; round++) {
      for (let i = 0; i < running.length; i++) {
        const at = (i + round) % running.length;
        const from = monotonicUs();
        await runOnce(running[at]!, receiver, round, s.deliveries);
        windows[at]!.push([from, monotonicUs()]);
      }
    }
    await Promise.all(running.splice(0).map((r) => r.sender.stop()));
    return specs.map((spec, i) => {
      const deliveries = s.rounds * s.deliveries;
      const summary = summarizeProfile(
        spec.name,
        mainThreadProfile(dirs[i]!),
        deliveries,
        windows[i],
      );
      log(`  profile ${spec.name}: ${summary.busyUsPerRequest.toFixed(1)} µs busy per delivery`);
      return summary;
    });
  } finally {
    await Promise.all(running.map((r) => r.sender.stop()));
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}

/** The rounds, then the profiles the comparison asks for. */
export async function measureSenders(
  comparison: SenderComparison,
  s: SenderSettings,
): Promise<{ measurements: SenderMeasurement[]; profiles: ProfileSummary[] }> {
  const secret = generateWebhookSecret();
  const receiver = await startServer({
    name: 'receiver',
    label: 'receiver',
    entry: RECEIVER_SCRIPT,
  });
  const running: Running[] = [];
  try {
    if (s.pinned) pin(receiver.pid, 0);
    for (const spec of comparison.senders) {
      await prepare(comparison, spec, receiver, s, secret, running);
    }
    const measurements: SenderMeasurement[] = [];
    for (let round = 0; round < s.rounds; round++) {
      for (let i = 0; i < running.length; i++) {
        const r = running[(i + round) % running.length]!;
        const m = await runOnce(r, receiver, round, s.deliveries);
        measurements.push(m);
        log(
          `  round ${round + 1}/${s.rounds} ${r.spec.name}: ${Math.round(m.deliveriesPerSec)} deliveries/s, ` +
            `p50 ${m.latencyP50Ms.toFixed(2)} ms, p99 ${m.latencyP99Ms.toFixed(2)} ms` +
            (m.senderCpuUsPerDelivery === null
              ? ''
              : `, sender CPU ${m.senderCpuUsPerDelivery.toFixed(1)} µs/delivery, receiver ` +
                `${m.receiverCpuUsPerDelivery?.toFixed(1)} µs/delivery`),
        );
      }
    }
    await Promise.all(running.splice(0).map((r) => r.sender.stop()));
    const profiles = await profileSenders(comparison, receiver, s, secret);
    return { measurements, profiles };
  } finally {
    await Promise.all(running.map((r) => r.sender.stop()));
    await receiver.stop();
  }
}

/** Per round, each measurement's deliveries/s over `reference`'s in the same round. */
function ratiosTo(
  reference: string,
  own: readonly SenderMeasurement[],
  all: readonly SenderMeasurement[],
): Spread {
  const byRound = new Map<number, number>();
  for (const m of all) if (m.sender === reference) byRound.set(m.round, m.deliveriesPerSec);
  return spread(own.map((m) => m.deliveriesPerSec / (byRound.get(m.round) ?? Number.NaN)));
}

const medianOrNull = (values: readonly (number | null)[]) =>
  values.every((v) => v !== null) ? median(values as number[]) : null;

export function summarizeSenders(
  comparison: SenderComparison,
  measurements: readonly SenderMeasurement[],
): SenderSummary[] {
  return comparison.senders.map((spec) => {
    const own = measurements.filter((m) => m.sender === spec.name);
    return {
      name: spec.name,
      label: spec.label,
      deliveriesPerSec: spread(own.map((m) => m.deliveriesPerSec)),
      latencyP50Ms: median(own.map((m) => m.latencyP50Ms)),
      latencyP99Ms: median(own.map((m) => m.latencyP99Ms)),
      senderCpuUsPerDelivery: medianOrNull(own.map((m) => m.senderCpuUsPerDelivery)),
      receiverCpuUsPerDelivery: medianOrNull(own.map((m) => m.receiverCpuUsPerDelivery)),
      ratio: ratiosTo(comparison.baseline, own, measurements),
    };
  });
}
