/**
 * The sender side of a sender comparison: each sender script calls {@link runSender} with
 * how it sets itself up; the script runs under the orchestrator with an IPC channel,
 * `node --import tsx <entry> [args…] '<SenderOptions as JSON>'`, reports `ready`, then
 * answers each `run` command with the time from its first send to its last delivery. Every
 * request's latency (created to answer headers) is taken the same way for every sender,
 * from undici's diagnostics channels.
 */
import { subscribe } from 'node:diagnostics_channel';
import type { SenderCommand, SenderOptions, SenderReport, TickData } from './types.js';

/** What a sender tells the harness about each delivery. */
export interface DeliveryEvents {
  /** One delivery answered 2xx. */
  delivered(): void;
  /** One delivery lost (an error, a non-2xx answer, a dead letter): the run fails. */
  failed(message: string): void;
}

/** A sender under test, set up. */
export interface SenderApp {
  /**
   * Delivers `count` messages, the `seq`th carrying `data(seq)`, reporting each to `events`.
   * It may resolve before every delivery is done (a queue): the run ends at the last one.
   */
  deliver(count: number, data: (seq: number) => TickData, events: DeliveryEvents): Promise<void>;
}

/** The same ~170 characters in every delivery, so that `data` is about 200 bytes of JSON. */
const TEXT = 'the quick brown fox jumps over the lazy dog; '.repeat(4).slice(0, 170);

const report = (message: SenderReport) => process.send?.(message);

let latencies = new Float64Array(0);
let timed = 0;
const started = new WeakMap<object, number>();
subscribe('undici:request:create', (message) => {
  started.set((message as { request: object }).request, performance.now());
});
subscribe('undici:request:headers', (message) => {
  const at = started.get((message as { request: object }).request);
  if (at !== undefined && timed < latencies.length) latencies[timed++] = performance.now() - at;
});

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Runs `app` for one round: resolves once `count` deliveries are done, rejects on a loss. */
async function runRound(app: SenderApp, round: number, count: number, timeoutMs: number) {
  latencies = new Float64Array(count);
  timed = 0;
  let delivered = 0;
  let timer: NodeJS.Timeout | undefined;
  const start = performance.now();
  await new Promise<void>((resolve, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${delivered} of ${count} delivered within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const events: DeliveryEvents = {
      delivered: () => {
        if (++delivered === count) resolve();
      },
      failed: (message) => reject(new Error(`delivery lost: ${message}`)),
    };
    app.deliver(count, (seq) => ({ round, seq, text: TEXT }), events).catch(reject);
  }).finally(() => clearTimeout(timer));
  const spanMs = performance.now() - start;
  const sorted = latencies.subarray(0, timed).sort();
  report({
    type: 'done',
    round,
    delivered,
    spanMs,
    latencyP50Ms: percentile(sorted, 50),
    latencyP99Ms: percentile(sorted, 99),
  });
}

function fail(error: unknown): void {
  report({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
  setTimeout(() => process.exit(1), 100);
}

/**
 * Sets the sender up with `setup(options)` (the options from the last argument), reports
 * `ready`, and runs each round it is told to, one at a time.
 */
export function runSender(setup: (options: SenderOptions) => Promise<SenderApp>): void {
  if (process.send === undefined) throw new Error('a sender runs under the bench orchestrator');
  const options = JSON.parse(process.argv.at(-1) ?? 'null') as SenderOptions | null;
  if (options === null || !options.url.startsWith('http://127.0.0.1:')) {
    throw new Error('usage: <sender> [args…] <SenderOptions as JSON> (url on http://127.0.0.1)');
  }
  // The orchestrator gone (IPC closed): nothing left to send for.
  process.on('disconnect', () => process.exit(0));
  setup(options).then((app) => {
    let busy = false;
    process.on('message', (command: SenderCommand) => {
      if (command.type === 'exit') process.exit(0);
      if (busy) return fail(new Error('a run is already going'));
      busy = true;
      runRound(app, command.round, command.deliveries, command.timeoutMs).then(() => {
        busy = false;
      }, fail);
    });
    report({ type: 'ready' });
  }, fail);
}
