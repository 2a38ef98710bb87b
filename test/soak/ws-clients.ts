/**
 * A WebSocket client process of the soak tests (harness.ts starts several, so that no
 * process needs more descriptors than `ulimit -n` allows and the clients use both cores):
 * `node --import tsx test/soak/ws-clients.ts '<WsClientOptions as JSON>'`, with IPC;
 * it reports `ready`, then waits for commands.
 *
 * On `connect`, each client opens the url, sends `{"type":"subscribe","channel":"soak"}` then
 * `{"type":"ping"}`, and counts as connected once the `pong` is back (the protocol answers in
 * order, so the subscription is in place). Then, on command: protocol `ping` traffic, the
 * count of ticks every client received (each once, in order), and a clean close of every
 * client with 1000, reporting the close codes seen. Every wait is bounded.
 */
import WebSocket from 'ws';
import type { WsClientCommand, WsClientOptions, WsClientReport, WsTally } from './protocol.js';

const options = JSON.parse(process.argv[2] ?? 'null') as WsClientOptions | null;
if (options === null || !Number.isInteger(options.clients)) {
  throw new Error('usage: ws-clients.ts <WsClientOptions as JSON>');
}
if (process.send === undefined) throw new Error('ws-clients.ts runs under a soak test (IPC)');
const report = (message: WsClientReport): void => {
  process.send?.(message);
};

const SUBSCRIBE = JSON.stringify({ type: 'subscribe', channel: 'soak' });
const PING = JSON.stringify({ type: 'ping' });

interface Client {
  ws: WebSocket;
  /** The last tick seq received in the expected range (from − 1 before any). */
  last: number;
  ticks: number;
  heartbeats: number;
  pingsSent: number;
  pongs: number;
  closing: boolean;
  closeCode: number | undefined;
}

const clients: Client[] = [];
/** The range of ticks expected now (seq `from`…`to`); ticks outside it are disorder. */
let range = { from: 1, to: 0 };
let disorder = 0;
let errors = 0;
let unexpectedCloses = 0;
let strayMessages = 0;
let firstError: string | undefined;

function noteError(message: string): void {
  errors++;
  firstError ??= message;
}

function onMessage(client: Client, raw: WebSocket.RawData): void {
  let message: { type?: string; event?: string; data?: { seq?: unknown } };
  try {
    message = JSON.parse(raw.toString());
  } catch {
    strayMessages++;
    return;
  }
  if (message.type === 'pong') {
    client.pongs++;
    return;
  }
  const seq = message.data?.seq;
  if (message.type !== 'push' || message.event !== 'tick' || typeof seq !== 'number') {
    strayMessages++;
    return;
  }
  if (seq === client.last + 1 && seq <= range.to) {
    client.last = seq;
    client.ticks++;
  } else disorder++;
}

/** Opens one client; resolves once its subscription is confirmed by the `pong` after it. */
function open(url: string): Promise<Client> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    const client: Client = {
      ws,
      last: 0,
      ticks: 0,
      heartbeats: 0,
      pingsSent: 1,
      pongs: 0,
      closing: false,
      closeCode: undefined,
    };
    let ready = false;
    ws.on('open', () => {
      ws.send(SUBSCRIBE);
      ws.send(PING);
    });
    ws.on('ping', () => {
      client.heartbeats++;
    });
    ws.on('message', (raw) => {
      onMessage(client, raw);
      if (!ready && client.pongs === 1) {
        ready = true;
        resolve(client);
      }
    });
    ws.on('error', (error) => {
      if (!ready) reject(error);
      else noteError(error.message);
    });
    ws.on('close', (code) => {
      client.closeCode = code;
      if (!ready) reject(new Error(`closed with ${code} before the subscription was confirmed`));
      else if (!client.closing) unexpectedCloses++;
    });
  });
}

async function connectAll(
  url: string,
  { clients: n, concurrency, connectTimeoutMs }: WsClientOptions,
) {
  if (!url.startsWith('ws://127.0.0.1:')) throw new Error(`${url}: not on ws://127.0.0.1`);
  const deadline = performance.now() + connectTimeoutMs;
  let next = 0;
  const worker = async () => {
    while (next < n) {
      next++;
      if (performance.now() > deadline) {
        throw new Error(`only ${clients.length} of ${n} connected in ${connectTimeoutMs} ms`);
      }
      clients.push(await open(url));
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
}

function tally(): WsTally {
  let complete = 0;
  let minTicks = Number.POSITIVE_INFINITY;
  let minHeartbeats = Number.POSITIVE_INFINITY;
  let minPongs = Number.POSITIVE_INFINITY;
  let maxUnanswered = 0;
  const expected = range.to - range.from + 1;
  for (const c of clients) {
    if (c.ticks === expected && c.last === range.to) complete++;
    minTicks = Math.min(minTicks, c.ticks);
    minHeartbeats = Math.min(minHeartbeats, c.heartbeats);
    minPongs = Math.min(minPongs, c.pongs);
    maxUnanswered = Math.max(maxUnanswered, c.pingsSent - c.pongs);
  }
  return {
    clients: clients.length,
    complete,
    disorder,
    minTicks: clients.length === 0 ? 0 : minTicks,
    minHeartbeats: clients.length === 0 ? 0 : minHeartbeats,
    minPongs: clients.length === 0 ? 0 : minPongs,
    maxUnanswered,
    errors,
    unexpectedCloses,
    strayMessages,
    firstError,
  };
}

/** Resolves with false once `done()` holds (checked every 50 ms), with true after `ms`. */
function waitFor(done: () => boolean, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const finish = (late: boolean) => {
      clearTimeout(timer);
      clearInterval(poll);
      resolve(late);
    };
    const timer = setTimeout(() => finish(true), ms);
    const poll = setInterval(() => {
      if (done()) finish(false);
    }, 50);
    if (done()) finish(false);
  });
}

let traffic: NodeJS.Timeout | undefined;
const TRAFFIC_TICK_MS = 100;

/** Each client sends a `ping` once per `everyMs`: a slice of them every 100 ms. */
function startTraffic(everyMs: number): void {
  if (traffic !== undefined) clearInterval(traffic);
  const slices = Math.max(1, Math.round(everyMs / TRAFFIC_TICK_MS));
  let slice = 0;
  traffic = setInterval(() => {
    for (let i = slice; i < clients.length; i += slices) {
      const c = clients[i]!;
      if (c.closing || c.ws.readyState !== WebSocket.OPEN) continue;
      c.pingsSent++;
      c.ws.send(PING);
    }
    slice = (slice + 1) % slices;
  }, TRAFFIC_TICK_MS);
}

async function run(command: WsClientCommand): Promise<void> {
  switch (command.type) {
    case 'connect': {
      const started = performance.now();
      await connectAll(command.url, options!);
      return report({
        type: 'connected',
        clients: clients.length,
        ms: performance.now() - started,
      });
    }
    case 'traffic':
      return startTraffic(command.everyMs);
    case 'arm':
      range = { from: command.from, to: Number.POSITIVE_INFINITY };
      for (const c of clients) {
        c.last = command.from - 1;
        c.ticks = 0;
      }
      return report({ type: 'armed' });
    case 'expect': {
      const start = performance.now();
      range = { from: range.from, to: command.to };
      const expected = range.to - range.from + 1;
      const timedOut = await waitFor(
        () => clients.every((c) => c.ticks === expected || c.closeCode !== undefined),
        command.timeoutMs,
      );
      return report({ type: 'expect', timedOut, ms: performance.now() - start, ...tally() });
    }
    case 'close': {
      const start = performance.now();
      if (traffic !== undefined) clearInterval(traffic);
      traffic = undefined;
      // let the last pongs of the traffic come back before closing
      await waitFor(() => clients.every((c) => c.pongs === c.pingsSent), 2000);
      const answered = tally();
      for (const c of clients) {
        c.closing = true;
        if (c.closeCode === undefined) c.ws.close(1000, 'soak done');
      }
      const timedOut = await waitFor(
        () => clients.every((c) => c.closeCode !== undefined),
        command.timeoutMs,
      );
      const codes: Record<string, number> = {};
      for (const c of clients) {
        const code = String(c.closeCode ?? 'open');
        codes[code] = (codes[code] ?? 0) + 1;
      }
      return report({
        type: 'close',
        timedOut,
        ms: performance.now() - start,
        codes,
        ...tally(),
        maxUnanswered: answered.maxUnanswered,
      });
    }
    case 'exit':
      for (const c of clients) c.ws.terminate();
      process.exit(0);
  }
}

process.on('message', (command: WsClientCommand) => {
  run(command).catch(fail);
});
// The test gone (IPC closed): nothing left to measure for.
process.on('disconnect', () => process.exit(0));
report({ type: 'ready' });

function fail(error: unknown): void {
  report({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
  setTimeout(() => process.exit(1), 100).unref();
}
