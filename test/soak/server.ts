/**
 * The soak server: portico's WebSocket channel and event stream over one hub, in a process
 * of its own so that its memory is measured alone. Started by the soak tests (harness.ts) as
 * `node --expose-gc --import tsx test/soak/server.ts` with an IPC channel; it listens on
 * 127.0.0.1, port 0, and reports `{ type: 'ready', port }`.
 *
 * - `GET /ws` (upgrade): `createUpgradeHandler` + `createChannelProtocol({ hub, heartbeat })`,
 *   the default rate limit and send-buffer bound; heartbeat `SOAK_WS_HEARTBEAT_MS` (1000).
 * - `GET /events`: `streamChannel(req, res, { hub, channel: 'soak', heartbeat })`, heartbeat
 *   `SOAK_SSE_HEARTBEAT_MS` (1000).
 *
 * The debug surface is the IPC channel only (nothing of it is reachable over HTTP, and none of
 * it ships in the library or the reference server): `stats` runs `gc()` twice and reports
 * `process.memoryUsage()`, active handles, live timers (async_hooks), open connections and
 * streams, hub subscriptions and listener counts; `broadcast` publishes numbered ticks on the
 * `soak` channel at a fixed interval, for a bounded count and time; `exit` closes everything and exits. The hub's history
 * (1000 events, the default) is filled at start, so that it does not grow during a run.
 */
import { createHook } from 'node:async_hooks';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getHeapStatistics } from 'node:v8';
import {
  type Broker,
  createHub,
  type HubListener,
  MemoryBroker,
  type Unsubscribe,
} from '../../src/realtime/index.js';
import { type EventStream, streamChannel } from '../../src/sse/index.js';
import { createChannelProtocol, createUpgradeHandler } from '../../src/ws/index.js';
import {
  type ServerCommand,
  type ServerReport,
  type ServerStats,
  SOAK_CHANNEL,
  TICK_EVENT,
  type TickData,
} from './protocol.js';

if (process.send === undefined) throw new Error('server.ts runs under a soak test (IPC)');
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run the soak server with --expose-gc');

const report = (message: ServerReport): void => {
  process.send?.(message);
};
const setting = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be an integer ≥ 0`);
  return value;
};
const HISTORY_SIZE = 1000;
/** The same ~64 characters in every tick, so that a push has a realistic size. */
const TEXT = 'the quick brown fox jumps over the lazy dog, again and again....';

// Every Timeout made, ref'd or not, until it is cleared or has fired for the last time.
let timers = 0;
const live = new Set<number>();
createHook({
  init(id, type) {
    if (type !== 'Timeout') return;
    live.add(id);
    timers++;
  },
  destroy(id) {
    if (live.delete(id)) timers--;
  },
}).enable();

/**
 * The in-memory broker, counting the subscriptions it holds for clients (the channel
 * protocol's one relay subscription, held while any connection is open, is not a client's).
 */
function countingBroker(): { broker: Broker; subscribers: () => number } {
  const inner = new MemoryBroker({ historySize: HISTORY_SIZE });
  let subscribers = 0;
  const broker: Broker = {
    publish: (channel, draft) => inner.publish(channel, draft),
    subscribe(channel: string, listener: HubListener): Unsubscribe {
      const off = inner.subscribe(channel, listener);
      if (channel === 'portico:relay') return off;
      subscribers++;
      let done = false;
      return () => {
        if (done) return;
        done = true;
        subscribers--;
        off();
      };
    },
    history: (channel, since) => inner.history(channel, since),
    position: (channel) => inner.position(channel),
    close: () => inner.close(),
  };
  return { broker, subscribers: () => subscribers };
}

const { broker, subscribers } = countingBroker();
const hub = createHub({ broker });
// written with their unit: the short soaks beat faster than any default floor allows
const protocol = createChannelProtocol({
  hub,
  heartbeat: `${setting('SOAK_WS_HEARTBEAT_MS', 1000)}ms`,
});
const sseHeartbeat = `${setting('SOAK_SSE_HEARTBEAT_MS', 1000)}ms` as const;
const streams = new Set<EventStream>();

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/events') {
    const stream = streamChannel(req, res, {
      hub,
      channel: SOAK_CHANNEL,
      heartbeat: sseHeartbeat,
    });
    streams.add(stream);
    stream.onClose(() => streams.delete(stream));
    return;
  }
  res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
});
server.on(
  'upgrade',
  createUpgradeHandler({
    path: '/ws',
    onConnection: (ws, context) => protocol.handle(ws, context),
  }),
);

function eventCount(emitter: NodeJS.EventEmitter): number {
  let n = 0;
  for (const name of emitter.eventNames()) n += emitter.listenerCount(name);
  return n;
}

async function stats(): Promise<ServerStats> {
  gc!();
  await new Promise((resolve) => setImmediate(resolve));
  gc!();
  // async_hooks destroy callbacks run in a later turn: let the pending ones run
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  const memory = process.memoryUsage();
  const v8 = getHeapStatistics();
  const resources: Record<string, number> = {};
  for (const type of process.getActiveResourcesInfo()) resources[type] = (resources[type] ?? 0) + 1;
  const serverConnections = await new Promise<number>((resolve, reject) =>
    server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
  );
  const handles = (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles();
  return {
    rss: memory.rss,
    heapUsed: memory.heapUsed,
    heapTotal: memory.heapTotal,
    external: memory.external,
    arrayBuffers: memory.arrayBuffers,
    mallocedMemory: v8.malloced_memory,
    peakMallocedMemory: v8.peak_malloced_memory,
    handles: handles.length,
    resources,
    timers,
    serverConnections,
    wsConnections: protocol.size,
    sseStreams: streams.size,
    hubSubscribers: subscribers(),
    serverListeners: eventCount(server),
    processListeners: eventCount(process),
  };
}

let seq = 0;
let broadcasting = false;

/**
 * Publishes ticks from seq `from`, one every `intervalMs`, until `count` are sent or
 * `durationMs` has passed (a bounded interval, not a loop); resolves with the ms taken. A
 * publish to many connections that takes longer than `intervalMs` delays the next one.
 */
function broadcast(
  count: number,
  intervalMs: number,
  from: number,
  durationMs: number,
): Promise<{ sent: number; elapsedMs: number }> {
  const start = performance.now();
  seq = from - 1;
  return new Promise((resolve, reject) => {
    let sent = 0;
    const tick = () => {
      const elapsedMs = performance.now() - start;
      if (sent > 0 && elapsedMs >= durationMs) {
        clearInterval(timer);
        return resolve({ sent, elapsedMs });
      }
      const data: TickData = { seq: ++seq, text: TEXT };
      hub.publish(SOAK_CHANNEL, TICK_EVENT, data).catch(reject);
      if (++sent === count) {
        clearInterval(timer);
        resolve({ sent, elapsedMs: performance.now() - start });
      }
    };
    const timer = setInterval(tick, intervalMs);
    tick();
  });
}

async function run(command: ServerCommand): Promise<void> {
  switch (command.type) {
    case 'stats':
      return void report({ type: 'stats', ...(await stats()) });
    case 'broadcast': {
      const { count, intervalMs, from, durationMs } = command;
      if (
        !Number.isInteger(count) ||
        count < 1 ||
        count > 100_000 ||
        !(intervalMs >= 0) ||
        !(durationMs >= 0 && durationMs <= 600_000)
      ) {
        throw new Error('broadcast: count 1–100000, intervalMs ≥ 0, durationMs 0–600000');
      }
      if (broadcasting) throw new Error('broadcast: one is running');
      broadcasting = true;
      try {
        const { sent, elapsedMs } = await broadcast(count, intervalMs, from, durationMs);
        return void report({ type: 'broadcast', sent, lastSeq: seq, elapsedMs });
      } finally {
        broadcasting = false;
      }
    }
    case 'exit':
      return shutdown(0);
  }
}

let exiting = false;
async function shutdown(code: number): Promise<void> {
  if (exiting) return;
  exiting = true;
  const force = setTimeout(() => process.exit(code), 3000);
  force.unref();
  for (const stream of [...streams]) stream.close();
  await protocol.close();
  await hub.close();
  server.closeAllConnections();
  server.close(() => process.exit(code));
}

process.on('message', (command: ServerCommand) => {
  run(command).catch((error: unknown) =>
    report({ type: 'failed', message: error instanceof Error ? error.message : String(error) }),
  );
});
// The test gone (IPC closed): nothing left to serve.
process.on('disconnect', () => void shutdown(0));

// Fill the history, so that it holds as much during a run as before it.
for (let i = 0; i < HISTORY_SIZE; i++) {
  await hub.publish(SOAK_CHANNEL, 'prefill', { seq: 0, text: TEXT });
}
server.listen(0, '127.0.0.1', 4096, () => {
  report({ type: 'ready', port: (server.address() as AddressInfo).port });
});
