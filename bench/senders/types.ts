/**
 * Shapes of the sender comparisons (`webhook`): each sender runs in its own process and POSTs
 * M deliveries to one receiver process, which counts them. The request/response and fan-out
 * comparisons keep their own shapes (`bench/lib/types.ts`, `bench/realtime/types.ts`).
 */
import type { MachineInfo, ProfileSummary, Spread } from '../lib/types.js';

/** One sender under test: a script run with an IPC channel (see `bench/senders/sender.ts`). */
export interface SenderSpec {
  /** Short id, used in results and command lines. */
  name: string;
  /** What the table calls it. */
  label: string;
  /** The sender script, relative to the repository root. */
  entry: string;
  /** Arguments before the options (a variant of the same script, say). */
  args?: readonly string[];
  /** Whether every request must carry a Standard Webhooks signature that verifies. */
  signed: boolean;
}

/** Senders delivering to one receiver, measured against a baseline. */
export interface SenderComparison {
  kind: 'sender';
  name: string;
  title: string;
  /** One paragraph for BENCHMARKS.md. */
  description: string;
  /** The `name` of the sender the ratios are taken against. */
  baseline: string;
  senders: readonly SenderSpec[];
  /** The event every delivery is for: body `{ event, type, timestamp, data }`. */
  event: string;
  /** The path on the receiver deliveries are POSTed to. */
  path: string;
  /** Requests each sender may have in flight. */
  concurrency: number;
  notes?: readonly string[];
  /**
   * Senders to profile after the rounds (`node --cpu-prof`, a warm-up and the rounds' loads
   * again): where their CPU goes per delivery, in the result's `profiles` and the section.
   */
  profile?: readonly string[];
}

export interface SenderSettings {
  quick: boolean;
  rounds: number;
  /** Deliveries per round (M), the warm-up's too. */
  deliveries: number;
  concurrency: number;
  /** Receiver pinned to CPU 0 and senders to CPU 1 (`taskset`). */
  pinned: boolean;
}

/** What a sender script is given (as one JSON argument); the signing secret is in its env. */
export interface SenderOptions {
  /** The receiver's URL, on http://127.0.0.1. */
  url: string;
  concurrency: number;
  /** The event name of every delivery. */
  event: string;
}

/** The environment variable holding the `whsec_` secret of a run. */
export const SECRET_ENV = 'BENCH_WEBHOOK_SECRET';

/** What each delivery's `data` is: ~200 bytes of JSON. */
export interface TickData {
  round: number;
  seq: number;
  text: string;
}

/** The orchestrator's commands to a sender process (over IPC). */
export type SenderCommand =
  | { type: 'run'; round: number; deliveries: number; timeoutMs: number }
  | { type: 'exit' };

/** One run as the sender process saw it. */
export interface SenderRunReport {
  type: 'done';
  round: number;
  delivered: number;
  /** ms from the first send to the last delivery. */
  spanMs: number;
  /** One request's time as undici sees it, created to answer headers. */
  latencyP50Ms: number;
  latencyP99Ms: number;
}

/** What a sender process tells the orchestrator. */
export type SenderReport =
  | { type: 'ready' }
  | SenderRunReport
  | { type: 'failed'; message: string };

/** One request as the receiver captured it (the first after a reset). */
export interface CapturedRequest {
  method: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One measured round of one sender. */
export interface SenderMeasurement {
  sender: string;
  round: number;
  deliveries: number;
  deliveriesPerSec: number;
  spanMs: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  /** Sender CPU time (user + system) per delivery; null without procfs. */
  senderCpuUsPerDelivery: number | null;
  /** Receiver CPU time per delivery: shows when the receiver bounds the rate. */
  receiverCpuUsPerDelivery: number | null;
}

export interface SenderSummary {
  name: string;
  label: string;
  deliveriesPerSec: Spread;
  latencyP50Ms: number;
  latencyP99Ms: number;
  senderCpuUsPerDelivery: number | null;
  receiverCpuUsPerDelivery: number | null;
  /** Per round, this sender's deliveries/s over the baseline's in the same round. */
  ratio: Spread;
}

/** `bench/results/<name>.json` of a sender comparison. */
export interface SenderResult {
  kind: 'sender';
  name: string;
  title: string;
  description: string;
  baseline: string;
  date: string;
  command: string;
  receiverCommand: string;
  senderCommands: Record<string, string>;
  machine: MachineInfo;
  settings: SenderSettings;
  notes: readonly string[];
  servers: SenderSummary[];
  measurements: SenderMeasurement[];
  /** The comparison's `profile` senders, profiled after the rounds (per delivery). */
  profiles?: ProfileSummary[];
}
