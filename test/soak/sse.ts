/**
 * The Server-Sent Events soak scenario, parameterised by rounds and size (sse.test.ts: the
 * short form in `npm test`; sse.soak.ts: the long one in `npm run test:soak`).
 *
 * R rounds of C clients on `GET /events` of the soak server (test/soak/server.ts:
 * `streamChannel` over a hub, comment heartbeats every `heartbeatMs`, in its own process).
 * Each round: C streams open (status 200, `text/event-stream`, the `retry:` hint), the server
 * reports C open streams and C hub subscriptions, one broadcast reaches every stream, every
 * stream gets at least one heartbeat comment (so their timers ran), then every client goes
 * away (the socket destroyed, as a closed tab does). After each round the server must be back
 * to its baseline, taken after a warm-up round: no open stream, no hub subscription, no
 * connection, the same number of active handles (`process._getActiveHandles()`) and of live
 * timers (every `Timeout`, ref'd or not, counted with async_hooks), and the same listener
 * counts on the http server and on `process`. The heap used after a forced GC is recorded
 * per round (a trend, not asserted: it is not what a listener or timer leak shows first).
 */
import { type ClientRequest, request } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import {
  heldOver,
  mib,
  type SoakServer,
  settle,
  startSoakServer,
  steady,
  writeResult,
} from './harness.js';
import type { ServerStats } from './protocol.js';

export interface SseSoakParams {
  form: 'short' | 'long';
  rounds: number;
  connections: number;
  /** The streams' comment heartbeat, in ms; each round holds its streams past one. */
  heartbeatMs: number;
}

const CONNECT_CONCURRENCY = 100;
const WARMUP_CONNECTIONS = 20;

/** One event-stream client: what it has read, counted as it arrives. */
interface StreamClient {
  req: ClientRequest;
  status: number;
  contentType: string;
  retry: boolean;
  heartbeats: number;
  /** The seq of each tick received. */
  ticks: number[];
  errors: number;
  /** Whether the server ended it before the client went away. */
  ended: boolean;
  /** Set when the client goes away: errors after that are its own doing. */
  leaving: boolean;
}

/** Opens `/events`; resolves once the `retry:` hint is read. */
function open(port: number, timeoutMs: number): Promise<StreamClient> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`no retry hint within ${timeoutMs} ms`));
    }, timeoutMs);
    const req = request({
      host: '127.0.0.1',
      port,
      path: '/events',
      headers: { accept: 'text/event-stream' },
      agent: false,
    });
    const client: StreamClient = {
      req,
      status: 0,
      contentType: '',
      retry: false,
      heartbeats: 0,
      ticks: [],
      errors: 0,
      ended: false,
      leaving: false,
    };
    req.on('error', (error) => {
      if (!client.leaving) client.errors++;
      clearTimeout(timer);
      reject(error);
    });
    req.on('response', (res) => {
      client.status = res.statusCode ?? 0;
      client.contentType = String(res.headers['content-type']);
      res.setEncoding('utf8');
      let carry = '';
      res.on('data', (chunk: string) => {
        const lines = (carry + chunk).split('\n');
        carry = lines.pop() ?? '';
        for (const line of lines) {
          if (line.startsWith('retry:')) {
            client.retry = true;
            clearTimeout(timer);
            resolve(client);
          } else if (line.startsWith(':')) client.heartbeats++;
          else if (line.startsWith('data:')) {
            const data = JSON.parse(line.slice(5)) as { seq?: unknown };
            if (typeof data.seq === 'number') client.ticks.push(data.seq);
          }
        }
      });
      res.on('error', () => {
        if (!client.leaving) client.errors++;
      });
      res.on('end', () => {
        client.ended = true;
      });
    });
    req.end();
  });
}

/** Opens `n` streams, `CONNECT_CONCURRENCY` at a time, within `timeoutMs` in all. */
async function openAll(port: number, n: number, timeoutMs: number): Promise<StreamClient[]> {
  const clients: StreamClient[] = [];
  const deadline = performance.now() + timeoutMs;
  let next = 0;
  const worker = async () => {
    while (next < n) {
      next++;
      const left = deadline - performance.now();
      if (left <= 0)
        throw new Error(`only ${clients.length} of ${n} streams open in ${timeoutMs} ms`);
      clients.push(await open(port, left));
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(CONNECT_CONCURRENCY, n) }, worker));
  } catch (error) {
    for (const c of clients) c.req.destroy();
    throw error;
  }
  return clients;
}

/** Resolves with true once `done()` holds (checked every 50 ms), false after `ms`. */
async function until(done: () => boolean, ms: number): Promise<boolean> {
  const deadline = performance.now() + ms;
  for (let i = 0; i < Math.ceil(ms / 50) + 1; i++) {
    if (done()) return true;
    if (performance.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return done();
}

/** The counts that must be back to the baseline after every round. */
function counts(s: ServerStats) {
  return {
    sseStreams: s.sseStreams,
    hubSubscribers: s.hubSubscribers,
    serverConnections: s.serverConnections,
    handles: s.handles,
    timers: s.timers,
    serverListeners: s.serverListeners,
    processListeners: s.processListeners,
  };
}

export function sseSoak(p: SseSoakParams): void {
  const timeoutMs = 60_000 + p.rounds * (p.connections * 10 + p.heartbeatMs * 2 + 20_000);

  describe(`SSE soak (${p.form}): ${p.rounds} rounds of ${p.connections} streams`, () => {
    let server: SoakServer | undefined;
    const live: StreamClient[] = [];

    afterAll(async () => {
      for (const c of live.splice(0)) c.req.destroy();
      await server?.stop();
    }, 30_000);

    it(
      'each round connects, receives, heartbeats and disconnects every stream; nothing of it stays',
      async () => {
        const started = performance.now();
        const soak = await startSoakServer(
          { SOAK_SSE_HEARTBEAT_MS: String(p.heartbeatMs) },
          p.connections + 200,
        );
        server = soak;
        const round = async (id: number, n: number) => {
          const t0 = performance.now();
          const clients = await openAll(soak.port, n, 30_000 + n * 10);
          live.push(...clients);
          const openMs = performance.now() - t0;
          const loaded = await soak.stats();
          // one broadcast, seq = round id, must reach every stream
          await soak.broadcast({
            count: 1,
            intervalMs: 0,
            from: id,
            durationMs: 10_000,
            timeoutMs: 10_000,
          });
          const reached = await until(
            () => clients.every((c) => c.ticks.length > 0 && c.heartbeats > 0),
            p.heartbeatMs * 3 + 10_000,
          );
          const liveMs = performance.now() - t0 - openMs;
          // what the clients saw, before they go away
          const seen = {
            status200: clients.filter((c) => c.status === 200).length,
            eventStream: clients.filter((c) => c.contentType.startsWith('text/event-stream'))
              .length,
            withTick: clients.filter((c) => c.ticks.length === 1 && c.ticks[0] === id).length,
            withHeartbeat: clients.filter((c) => c.heartbeats > 0).length,
            endedByServer: clients.filter((c) => c.ended).length,
            errors: clients.reduce((sum, c) => sum + c.errors, 0),
          };
          for (const c of clients) {
            c.leaving = true;
            c.req.destroy();
          }
          live.length = 0;
          return { seen, loaded, reached, openMs, liveMs };
        };

        // Warm-up round, then the baseline.
        const warm = await round(0, WARMUP_CONNECTIONS);
        expect(warm.reached).toBe(true);
        const idle = (s: ServerStats) =>
          s.sseStreams === 0 && s.hubSubscribers === 0 && s.serverConnections === 0;
        const base = await steady(soak, idle, counts, 10_000);
        expect(base.settled, 'the warm-up streams are gone').toBe(true);
        const baseline = base.stats;

        const rounds = [];
        for (let r = 1; r <= p.rounds; r++) {
          const { seen, loaded, reached, openMs, liveMs } = await round(r, p.connections);
          const back = await settle(
            soak,
            (s) => Object.keys(heldOver(counts(s), counts(baseline))).length === 0,
            15_000,
          );
          // the heap, once what the sockets held is collected too (up to 3 s; not asserted)
          const heap = await settle(soak, (s) => s.heapUsed <= baseline.heapUsed * 1.1, 3000, 500);
          rounds.push({
            round: r,
            ms: {
              open: Math.round(openMs),
              live: Math.round(liveMs),
              release: Math.round(back.ms),
            },
            loaded: counts(loaded),
            after: counts(back.stats),
            heapUsedMiB: { loaded: mib(loaded.heapUsed), after: mib(heap.stats.heapUsed) },
            rssMiB: { loaded: mib(loaded.rss), after: mib(heap.stats.rss) },
            reached,
            clients: seen,
            settled: back.settled,
          });
        }

        const result = {
          scenario: 'sse',
          form: p.form,
          params: p,
          ms: { total: Math.round(performance.now() - started) },
          baseline: {
            ...counts(baseline),
            heapUsedMiB: mib(baseline.heapUsed),
            rssMiB: mib(baseline.rss),
          },
          rounds,
        };
        const file = writeResult(`sse-${p.form}`, result);
        console.log(
          `sse soak (${p.form}): ${p.rounds} × ${p.connections} streams in ${result.ms.total} ms; ` +
            `heap after each round ${rounds.map((r) => r.heapUsedMiB.after).join(', ')} MiB ` +
            `(baseline ${result.baseline.heapUsedMiB}); handles ${baseline.handles} → ` +
            `${rounds.map((r) => r.after.handles).join(', ')}, timers ${baseline.timers} → ` +
            `${rounds.map((r) => r.after.timers).join(', ')}; ${file}`,
        );

        for (const r of rounds) {
          const all = p.connections;
          expect(r.loaded.sseStreams, `round ${r.round}: open streams`).toBe(all);
          expect(r.loaded.hubSubscribers, `round ${r.round}: hub subscriptions`).toBe(all);
          // the instruments see each stream: its socket, and its heartbeat timer (not
          // baseline + all: a timer of the baseline may have fired by then)
          expect(r.loaded.handles).toBeGreaterThanOrEqual(all);
          expect(r.loaded.timers).toBeGreaterThanOrEqual(all);
          expect(r.reached, `round ${r.round}: every stream got the tick and a heartbeat`).toBe(
            true,
          );
          expect(r.clients, `round ${r.round}: clients`).toEqual({
            status200: all,
            eventStream: all,
            withTick: all,
            withHeartbeat: all,
            endedByServer: 0,
            errors: 0,
          });
          expect(r.settled, `round ${r.round}: back to the baseline (or below)`).toBe(true);
          expect(heldOver(r.after, counts(baseline)), `round ${r.round}: left over`).toEqual({});
        }
      },
      timeoutMs,
    );
  });
}
