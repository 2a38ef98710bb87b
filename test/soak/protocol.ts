/**
 * The IPC messages between a soak test and its child processes: the soak server
 * (test/soak/server.ts) and the WebSocket client processes (test/soak/ws-clients.ts). Every
 * child answers a command with one report of the matching type, or `{ type: 'failed' }`.
 */

/** The one hub channel every soak client subscribes to, and the event broadcast on it. */
export const SOAK_CHANNEL = 'soak';
export const TICK_EVENT = 'tick';

/** The data of each broadcast: its sequence number (1, 2, …) and a realistic payload. */
export interface TickData {
  seq: number;
  text: string;
}

/** What the server measures, after two forced collections (`--expose-gc`). */
export interface ServerStats {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
  /** V8's own malloc'd memory (compiler zones and the like): `v8.getHeapStatistics()`. */
  mallocedMemory: number;
  peakMallocedMemory: number;
  /** `process._getActiveHandles().length`: sockets, servers, pipes. */
  handles: number;
  /** `process.getActiveResourcesInfo()`, counted by type (ref'd timers appear as `Timeout`). */
  resources: Record<string, number>;
  /** Live `Timeout` objects, ref'd or not (async_hooks init − destroy). */
  timers: number;
  /** Sockets the http server holds (`server.getConnections()`). */
  serverConnections: number;
  /** Open WebSocket channel connections (`protocol.size`). */
  wsConnections: number;
  /** Open event streams (opened by `streamChannel`, not yet reported closed by `onClose`). */
  sseStreams: number;
  /** Live hub subscriptions (counted by the broker the hub was given). */
  hubSubscribers: number;
  /** Listeners on the http server, every event together. */
  serverListeners: number;
  /** Listeners on `process`, every event together. */
  processListeners: number;
}

export type ServerCommand =
  | { type: 'stats' }
  /**
   * Publishes ticks from seq `from`, one every `intervalMs` (later when the previous one kept
   * the event loop busy for longer), until `count` are sent or `durationMs` has passed.
   */
  | { type: 'broadcast'; count: number; intervalMs: number; from: number; durationMs: number }
  | { type: 'exit' };

export type ServerReport =
  | { type: 'ready'; port: number }
  | ({ type: 'stats' } & ServerStats)
  | { type: 'broadcast'; sent: number; lastSeq: number; elapsedMs: number }
  | { type: 'failed'; message: string };

/** How a WebSocket client process is started (its argv[2], as JSON). */
export interface WsClientOptions {
  clients: number;
  /** Connections opening at once. */
  concurrency: number;
  /** The whole connect phase must end within this. */
  connectTimeoutMs: number;
}

export type WsClientCommand =
  /** Opens every client to `url`, `ws://127.0.0.1:<port>/ws` (answered `connected`). */
  | { type: 'connect'; url: string }
  /** Every client sends a protocol `{"type":"ping"}` once per `everyMs` (staggered). */
  | { type: 'traffic'; everyMs: number }
  /** Counts ticks from seq `from` on (answered `armed`): send it before the broadcast. */
  | { type: 'arm'; from: number }
  /** Waits until every client has received the ticks `from`…`to`, in order, each once. */
  | { type: 'expect'; to: number; timeoutMs: number }
  /** Closes every client with 1000 and waits for each close. */
  | { type: 'close'; timeoutMs: number }
  | { type: 'exit' };

/** What the clients of one process saw. */
export interface WsTally {
  clients: number;
  /** Clients that received every expected tick, in order. */
  complete: number;
  /** Ticks received out of order, twice, or outside the expected range. */
  disorder: number;
  /** Fewest ticks of the expected range any client received. */
  minTicks: number;
  /** Fewest protocol-level pings (server heartbeats) any client received. */
  minHeartbeats: number;
  /** Fewest `pong` answers to its protocol `ping` messages any client received. */
  minPongs: number;
  /** Most `ping` messages any client sent without a `pong` back. */
  maxUnanswered: number;
  /** Errors reported by any client socket. */
  errors: number;
  /** Clients closed before being asked to. */
  unexpectedCloses: number;
  /** Messages that were neither a tick, a pong, nor JSON. */
  strayMessages: number;
  firstError: string | undefined;
}

export type WsClientReport =
  /** Listening for commands. */
  | { type: 'ready' }
  | { type: 'connected'; clients: number; ms: number }
  | { type: 'armed' }
  | ({ type: 'expect'; timedOut: boolean; ms: number } & WsTally)
  | ({
      type: 'close';
      timedOut: boolean;
      ms: number;
      /** Close codes the clients saw, by code. */
      codes: Record<string, number>;
    } & WsTally)
  | { type: 'failed'; message: string };
