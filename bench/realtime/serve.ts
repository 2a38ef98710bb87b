/**
 * The server side of a fan-out comparison: an http server whose `/_bench/` routes let the
 * orchestrator read memory (after a forced GC) and trigger broadcasts, every other request
 * going to the server under test. Run under `node --expose-gc`.
 */
import { createServer, type RequestListener, type Server } from 'node:http';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { serve } from '../lib/serve.js';
import type { ServerStats, TickData } from './types.js';

/** What a server under test does for the harness. */
export interface FanoutApp {
  /** Sends one message carrying `data` to every subscribed connection (a promise is awaited). */
  broadcast(data: TickData): unknown;
  /** How many connections it holds (subscribed ones, where it can tell). */
  connections(): number;
}

/** The same ~64 characters of text in every message, so payloads are of a realistic size. */
const TEXT = 'the quick brown fox jumps over the lazy dog, again and again....';
const MAX_MESSAGES = 10_000;

function gcStats(app: FanoutApp): ServerStats {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run the server with --expose-gc');
  gc();
  gc();
  const { rss, heapUsed } = process.memoryUsage();
  return { rss, heapUsed, connections: app.connections() };
}

/** Broadcasts `count` messages of `round`, one per event-loop turn; resolves with the ms taken. */
async function broadcastRound(app: FanoutApp, round: number, count: number): Promise<number> {
  const start = performance.now();
  for (let seq = 0; seq < count; seq++) {
    await app.broadcast({
      round,
      seq,
      sent: performance.timeOrigin + performance.now(),
      text: TEXT,
    });
    await nextTurn();
  }
  return performance.now() - start;
}

function control(app: FanoutApp): RequestListener {
  let busy = false;
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (url.pathname === '/_bench/stats') return reply(200, gcStats(app));
    if (url.pathname !== '/_bench/broadcast' || req.method !== 'POST') {
      return reply(404, { error: 'no such route' });
    }
    const round = Number(url.searchParams.get('round'));
    const count = Number(url.searchParams.get('count'));
    if (!Number.isInteger(round) || !Number.isInteger(count) || count < 1 || count > MAX_MESSAGES) {
      return reply(400, { error: `round must be an integer, count 1–${MAX_MESSAGES}` });
    }
    if (busy) return reply(409, { error: 'a broadcast is running' });
    busy = true;
    broadcastRound(app, round, count).then(
      (sendMs) => {
        busy = false;
        reply(200, { sendMs });
      },
      (error: unknown) => {
        busy = false;
        reply(500, { error: String(error) });
      },
    );
  };
}

/** An http server for a fan-out comparison, and how to start it once its app exists. */
export interface FanoutServer {
  server: Server;
  /** Serves `app` on 127.0.0.1, port 0, printing the port (see `bench/lib/serve.ts`). */
  start(app: FanoutApp): void;
}

/** An http server sending `/_bench/*` to the harness and every other request to `listener`. */
export function createFanoutServer(listener?: RequestListener): FanoutServer {
  let handle: RequestListener | undefined;
  const server = createServer((req, res) => {
    if (req.url?.startsWith('/_bench/') && handle !== undefined) return handle(req, res);
    if (listener !== undefined) return listener(req, res);
    res.writeHead(404).end();
  });
  return {
    server,
    start(app) {
      handle = control(app);
      serve(server);
    },
  };
}
