/**
 * The client process of a fan-out comparison, started by the orchestrator with an IPC
 * channel: `node --import tsx bench/realtime/clients.ts '<ClientOptions as JSON>'`. It opens
 * N connections in bounded-concurrency batches, reports `connected`, then answers each
 * command (`probe`, `arm`) with what its clients received: every delivery is timed against
 * the send time the message carries (`performance.timeOrigin + performance.now()` on both
 * sides, so one clock).
 */
import { type Connection, connector } from './connectors.js';
import type { ClientCommand, ClientOptions, ClientReport, TickData } from './types.js';

const options = JSON.parse(process.argv[2] ?? 'null') as ClientOptions;
if (
  options === null ||
  ![options.url, ...(options.urls ?? [])].every((u) => u.includes('//127.0.0.1:'))
) {
  throw new Error('usage: clients.ts <ClientOptions as JSON> (on 127.0.0.1)');
}
if (process.send === undefined) throw new Error('clients.ts runs under the bench orchestrator');

const report = (message: ClientReport) => process.send?.(message);
const now = () => performance.timeOrigin + performance.now();
const N = options.clients;

/** What is being counted now: a measured round, or a readiness probe. */
let round:
  | {
      id: number;
      expected: number;
      counts: Uint32Array;
      latencies: Float64Array;
      delivered: number;
      firstSent: number;
      lastReceived: number;
      done: () => void;
    }
  | undefined;
let probe: { id: number; reached: Uint8Array; count: number; done: () => void } | undefined;
let closed = 0;

function onTick(client: number, data: TickData): void {
  if (round !== undefined && data.round === round.id) {
    const r = round;
    r.counts[client]!++;
    const received = now();
    if (r.delivered < r.latencies.length) r.latencies[r.delivered] = received - data.sent;
    r.delivered++;
    if (data.sent < r.firstSent) r.firstSent = data.sent;
    r.lastReceived = received;
    if (r.delivered === r.expected) r.done();
  } else if (probe !== undefined && data.round === probe.id && probe.reached[client] === 0) {
    probe.reached[client] = 1;
    if (++probe.count === N) probe.done();
  }
}

/** Opens every connection, at most `concurrency` at a time, within `connectTimeoutMs`. */
async function connectAll(): Promise<Connection[]> {
  const connects = (options.urls ?? [options.url]).map((url) => connector({ ...options, url }));
  const connections: Connection[] = [];
  let next = 0;
  const worker = async () => {
    while (next < N) {
      const client = next++;
      connections.push(
        await connects[client % connects.length]!({
          onTick: (data) => onTick(client, data),
          onClose: () => closed++,
        }),
      );
    }
  };
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `only ${connections.length} of ${N} connected within ${options.connectTimeoutMs} ms`,
          ),
        ),
      options.connectTimeoutMs,
    );
  });
  try {
    await Promise.race([
      Promise.all(Array.from({ length: Math.min(options.concurrency, N) }, worker)),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
  return connections;
}

/** Whether `done` took longer than `ms` (it is no longer waited for then). */
function timedOut(done: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(true), ms);
  });
  return Promise.race([done.then(() => false), late]).finally(() => clearTimeout(timer));
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Counts the messages of one round until every client has all of them, or the time is up. */
async function measureRound(id: number, messages: number, timeoutMs: number): Promise<void> {
  const expected = N * messages;
  let finish = () => {};
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  round = {
    id,
    expected,
    counts: new Uint32Array(N),
    latencies: new Float64Array(expected),
    delivered: 0,
    firstSent: Number.POSITIVE_INFINITY,
    lastReceived: 0,
    done: finish,
  };
  const r = round;
  const closedBefore = closed;
  report({ type: 'armed', round: id });
  const late = await timedOut(finished, timeoutMs);
  round = undefined;
  const latencies = r.latencies.subarray(0, Math.min(r.delivered, expected)).sort();
  report({
    type: 'round',
    round: id,
    delivered: r.delivered,
    expected,
    incompleteClients: r.counts.reduce((n, c) => (c === messages ? n : n + 1), 0),
    closedClients: closed - closedBefore,
    spanMs: r.lastReceived - r.firstSent,
    latencyP50Ms: percentile(latencies, 50),
    latencyP99Ms: percentile(latencies, 99),
    latencyMaxMs: latencies.length > 0 ? latencies[latencies.length - 1]! : Number.NaN,
    timedOut: late,
  });
}

/** Waits until every client has received some message of the probe round `id`. */
async function measureProbe(id: number, timeoutMs: number): Promise<void> {
  let finish = () => {};
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  probe = { id, reached: new Uint8Array(N), count: 0, done: finish };
  const p = probe;
  const late = await timedOut(finished, timeoutMs);
  probe = undefined;
  report({ type: 'probed', round: id, reached: p.count, timedOut: late });
}

async function main(): Promise<void> {
  const start = performance.now();
  const connections = await connectAll();
  report({ type: 'connected', clients: connections.length, ms: performance.now() - start });
  process.on('message', (command: ClientCommand) => {
    if (command.type === 'exit') {
      for (const c of connections) c.close();
      process.exit(0);
    }
    const run =
      command.type === 'arm'
        ? measureRound(command.round, command.messages, command.timeoutMs)
        : measureProbe(command.round, command.timeoutMs);
    run.catch(fail);
  });
}

function fail(error: unknown): void {
  report({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
  setTimeout(() => process.exit(1), 100);
}

// The orchestrator gone (IPC closed): nothing left to measure for.
process.on('disconnect', () => process.exit(0));
main().catch(fail);
