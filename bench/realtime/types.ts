/**
 * Shapes of the fan-out comparisons (`ws`, `sse`): one server broadcasts to N connections
 * held by a client process, which times every delivery. The request/response comparisons
 * keep their own shapes in `bench/lib/types.ts`.
 */
import type { MachineInfo, Spread } from '../lib/types.js';

/** How the client process connects and subscribes. */
export type ClientKind =
  /** `ws` WebSocket clients; `subscribe` (if any) is sent as a text frame once open. */
  | 'ws'
  /** socket.io-client (`transports: ['websocket']`), emitting `subscribe` once connected. */
  | 'socketio'
  /** Plain `GET` event streams over node:http. */
  | 'sse';

/** One server under test: a script that listens on 127.0.0.1, port 0, and prints its port. */
export interface FanoutServerSpec {
  name: string;
  label: string;
  /** The server script, relative to the repository root. */
  entry: string;
  client: ClientKind;
  /** The path clients connect to. */
  path: string;
  /** For `ws` clients: the text frame sent once open (the channel subscription). */
  subscribe?: string;
  /**
   * Server processes sharing the N connections (client i connects to process i mod n); every
   * broadcast is sent through the first, so the others get it only through their broker.
   * @defaultValue `1`
   */
  processes?: number;
}

/** Broadcast to N connections, measured against a baseline. */
export interface FanoutComparison {
  kind: 'fanout';
  name: string;
  title: string;
  /** One paragraph for BENCHMARKS.md. */
  description: string;
  /** The `name` of the server the ratios are taken against. */
  baseline: string;
  /** A second server to give throughput ratios against, in a column of their own. */
  secondaryBaseline?: string;
  servers: readonly FanoutServerSpec[];
  notes?: readonly string[];
  /** Connections per server when `--clients` is not given. @defaultValue 10,000 (quick 1,000) */
  clients?: { full: number; quick: number };
  /**
   * Runs in the orchestrator once, before the servers start, and returns variables that every
   * server gets in its environment (never written to the results).
   */
  setup?: () => Promise<Readonly<Record<string, string>>>;
  /** Runs once the servers have stopped, whether the run succeeded or not (when `setup` did). */
  teardown?: () => Promise<void>;
}

export interface FanoutSettings {
  quick: boolean;
  rounds: number;
  /** Connections per server (N). */
  clients: number;
  /** Broadcasts per round (K); each reaches all N connections. */
  messages: number;
  /** How many connections may be opening at once. */
  connectConcurrency: number;
  /** Servers pinned to CPU 0 and client processes to CPU 1 (`taskset`). */
  pinned: boolean;
}

/** What every broadcast carries (the same fields for every server). */
export interface TickData {
  round: number;
  seq: number;
  /** `performance.timeOrigin + performance.now()` in the server when it was broadcast. */
  sent: number;
  text: string;
}

/** A server's `GET /_bench/stats` answer, taken after a forced GC. */
export interface ServerStats {
  rss: number;
  heapUsed: number;
  /** Connections the server holds (subscribed ones, where it can tell). */
  connections: number;
}

/** The orchestrator's commands to a client process (over IPC). */
export type ClientCommand =
  /** Count the messages of `round`: done when all `messages` reached every client. */
  | { type: 'arm'; round: number; messages: number; timeoutMs: number }
  /** Done when every client has received any message of `round` (the readiness probe). */
  | { type: 'probe'; round: number; timeoutMs: number }
  | { type: 'exit' };

/** One round as the client process saw it. */
export interface ClientRoundReport {
  type: 'round';
  round: number;
  delivered: number;
  expected: number;
  /** Clients that did not get every message (any is a failure). */
  incompleteClients: number;
  /** Connections that closed or failed since they opened. */
  closedClients: number;
  /** ms from the first message's send time to the last delivery, on the shared clock. */
  spanMs: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  latencyMaxMs: number;
  timedOut: boolean;
}

/** What a client process tells the orchestrator. */
export type ClientReport =
  | { type: 'connected'; clients: number; ms: number }
  /** Counting the messages of `round` (sent in answer to `arm`). */
  | { type: 'armed'; round: number }
  | { type: 'probed'; round: number; reached: number; timedOut: boolean }
  | ClientRoundReport
  | { type: 'failed'; message: string };

/** What `bench/realtime/clients.ts` is given (as one JSON argument). */
export interface ClientOptions {
  kind: ClientKind;
  url: string;
  /** When several server processes share the clients: client i connects to `urls[i % n]`. */
  urls?: readonly string[];
  subscribe?: string;
  clients: number;
  concurrency: number;
  connectTimeoutMs: number;
}

/** One measured round of one server. */
export interface FanoutMeasurement {
  server: string;
  round: number;
  deliveries: number;
  deliveriesPerSec: number;
  spanMs: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  latencyMaxMs: number;
  /** How long the server's broadcast loop took to hand every message over. */
  serverSendMs: number;
  /** Server CPU time (user + system) per delivery; null without procfs. */
  serverCpuUsPerDelivery: number | null;
}

/** Memory of one server process, after a forced GC, before and after N connections. */
export interface FanoutMemory {
  server: string;
  clients: number;
  before: ServerStats;
  after: ServerStats;
  rssPerConnectionBytes: number;
  heapPerConnectionBytes: number;
  /** How long connecting (and subscribing) every client took. */
  connectMs: number;
}

export interface FanoutSummary {
  name: string;
  label: string;
  deliveriesPerSec: Spread;
  latencyP50Ms: number;
  latencyP99Ms: number;
  serverCpuUsPerDelivery: number | null;
  rssPerConnectionBytes: number;
  heapPerConnectionBytes: number;
  /** Per round, this server's deliveries/s over the baseline's in the same round. */
  ratio: Spread;
  secondaryRatio?: Spread;
  /** RSS per connection over the baseline's. */
  memoryRatio: number;
}

/** `bench/results/<name>.json` of a fan-out comparison. */
export interface FanoutResult {
  kind: 'fanout';
  name: string;
  title: string;
  description: string;
  baseline: string;
  secondaryBaseline?: string;
  date: string;
  command: string;
  serverCommands: Record<string, string>;
  clientCommand: string;
  machine: MachineInfo;
  settings: FanoutSettings;
  notes: readonly string[];
  servers: FanoutSummary[];
  memory: FanoutMemory[];
  measurements: FanoutMeasurement[];
}
