/**
 * The WebSocket soak scenario, parameterised by size and duration (ws.test.ts: the short
 * form in `npm test`; ws.soak.ts: the long one in `npm run test:soak`).
 *
 * N clients, spread over child processes (test/soak/ws-clients.ts) so that no process needs
 * more descriptors than `ulimit -n` allows, connect to the soak server (test/soak/server.ts,
 * its own process, so that its memory is measured alone), subscribe to one channel and stay
 * for T seconds with the protocol heartbeat on (server pings, answered by the clients' pongs)
 * and traffic: each client sends a protocol `ping` every `pingEveryMs` and must get every
 * `pong` back, and the server broadcasts a tick every 100 ms for T seconds, which every client
 * must receive, each once and in order. When one broadcast to every client takes longer than
 * 100 ms (10,000 clients × 10 a second is 100,000 deliveries a second, about twice what one
 * process delivers on a 2-core machine: see BENCHMARKS.md, `ws`), the next goes out as soon
 * as the event loop is free: the result records how many went out and at what interval, and
 * at least one a second must. Then every client closes with 1000: no error, no other close
 * code.
 *
 * Memory: a warm-up round (a few clients, a few ticks, closed) runs first, so that code
 * compiled on first use and the buffers the server keeps for reuse are in the baseline; the
 * baseline (RSS and heap used, after two forced GCs) is taken once the warm-up clients are
 * gone and the server holds no connection. After the run, once the connections are gone,
 * the same measures must come back within `maxGrowth` of it (polled for up to `settleMs`:
 * RSS falls lazily, as the allocator hands pages back). Handles, live timers, hub
 * subscriptions and listener counts must be back to the baseline (or below).
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  descriptorLimits,
  heldOver,
  mib,
  type SoakServer,
  settle,
  startSoakServer,
  startWsClients,
  steady,
  type WsClients,
  writeResult,
} from './harness.js';
import type { ServerStats, WsClientReport, WsTally } from './protocol.js';

export interface WsSoakParams {
  /** `short` (npm test) or `long` (npm run test:soak): names the result file. */
  form: 'short' | 'long';
  connections: number;
  seconds: number;
  /** The channel protocol's heartbeat (server pings), in ms. */
  heartbeatMs: number;
  /** How often each client sends a protocol `ping` message. */
  pingEveryMs: number;
  /** The most clients one client process holds. */
  clientsPerProcess: number;
  /** Clients of the warm-up round. */
  warmupConnections: number;
  /**
   * How far above the baseline the heap used (the memory a GC can give back) may end, as a
   * fraction (0.1: 10 %); also the RSS bound unless `maxRssGrowth` is given.
   */
  maxGrowth: number;
  /**
   * The RSS bound, when it must differ: after a peak of thousands of sockets the allocator
   * keeps native pages a GC cannot return (RSS then stays level from one cycle to the next
   * rather than growing), so the long form bounds RSS looser than the heap.
   */
  maxRssGrowth?: number;
  /** How long to wait for the memory to come back after the connections are gone. */
  settleMs: number;
}

const BROADCAST_INTERVAL_MS = 100;
const WARMUP_TICKS = 5;
const CONNECT_CONCURRENCY = 100;

/** `total` split into `parts` sizes that differ by at most one. */
function split(total: number, parts: number): number[] {
  return Array.from({ length: parts }, (_, i) =>
    Math.floor(total / parts + (i < total % parts ? 1 : 0)),
  );
}

function memory(stats: ServerStats) {
  return { rssMiB: mib(stats.rss), heapUsedMiB: mib(stats.heapUsed) };
}

function growth(after: number, before: number): number {
  return Math.round(((after - before) / before) * 10_000) / 100;
}

type Report<T extends WsClientReport['type']> = Extract<WsClientReport, { type: T }>;

/** Sends `command` to every client process and collects each one's `type` report. */
async function all<T extends WsClientReport['type']>(
  processes: WsClients[],
  command: Parameters<WsClients['send']>[0],
  type: T,
  timeoutMs: number,
): Promise<Report<T>[]> {
  for (const p of processes) p.send(command);
  return Promise.all(processes.map((p) => p.next(type, timeoutMs))) as Promise<Report<T>[]>;
}

/** The tallies every client process reported must show no fault. */
function expectClean(reports: (WsTally & { timedOut: boolean })[], clients: number[]): void {
  reports.forEach((r, i) => {
    expect(r.firstError, `client process ${i}: first error`).toBeUndefined();
    expect(
      {
        clients: r.clients,
        timedOut: r.timedOut,
        disorder: r.disorder,
        errors: r.errors,
        unexpectedCloses: r.unexpectedCloses,
        strayMessages: r.strayMessages,
      },
      `client process ${i}`,
    ).toEqual({
      clients: clients[i],
      timedOut: false,
      disorder: 0,
      errors: 0,
      unexpectedCloses: 0,
      strayMessages: 0,
    });
  });
}

export function wsSoak(p: WsSoakParams): void {
  const limits = descriptorLimits();
  const serverDescriptors = p.connections + 200;
  const processes = Math.ceil(p.connections / p.clientsPerProcess);
  const sizes = split(p.connections, processes);
  const needed = Math.max(serverDescriptors, ...sizes.map((n) => n + 200));
  const skip =
    limits.hard < needed
      ? `needs ${needed} open descriptors per process, and ulimit -Hn is ${limits.hard}: raise it (e.g. ulimit -n ${needed}) to run it`
      : undefined;
  if (skip !== undefined) console.warn(`WebSocket soak (${p.form}) skipped: ${skip}`);
  /** The most broadcasts T seconds hold at one per 100 ms. */
  const planned = Math.round((p.seconds * 1000) / BROADCAST_INTERVAL_MS);
  const timeoutMs = p.seconds * 1000 + 60_000 + p.connections * 10;

  describe(`WebSocket soak (${p.form}): ${p.connections} connections for ${p.seconds} s`, () => {
    let server: SoakServer | undefined;
    const children: WsClients[] = [];

    afterAll(async () => {
      await Promise.all(children.map((c) => c.stop()));
      await server?.stop();
    }, 30_000);

    it.skipIf(skip !== undefined)(
      `${p.connections} subscribed clients, a broadcast every ${BROADCAST_INTERVAL_MS} ms, heartbeats and pings; all closed with 1000 and the server's memory back within ${p.maxGrowth * 100} %`,
      async () => {
        const started = performance.now();
        const warm = startWsClients(
          {
            clients: p.warmupConnections,
            concurrency: CONNECT_CONCURRENCY,
            connectTimeoutMs: 20_000,
          },
          'warm-up clients',
        );
        children.push(warm);
        const main = sizes.map((clients, i) =>
          startWsClients(
            {
              clients,
              concurrency: CONNECT_CONCURRENCY,
              connectTimeoutMs: 30_000 + clients * 10,
            },
            `client process ${i}`,
          ),
        );
        children.push(...main);
        const [soak] = await Promise.all([
          startSoakServer({ SOAK_WS_HEARTBEAT_MS: String(p.heartbeatMs) }, serverDescriptors),
          Promise.all(children.map((c) => c.next('ready', 30_000))),
        ]);
        server = soak;
        const url = `ws://127.0.0.1:${soak.port}/ws`;

        // Warm-up: the same paths once, with a few clients, then gone.
        await all([warm], { type: 'connect', url }, 'connected', 30_000);
        await all([warm], { type: 'arm', from: 1 }, 'armed', 10_000);
        await soak.broadcast({
          count: WARMUP_TICKS,
          intervalMs: BROADCAST_INTERVAL_MS,
          from: 1,
          durationMs: 30_000,
          timeoutMs: 40_000,
        });
        const [warmed] = await all(
          [warm],
          { type: 'expect', to: WARMUP_TICKS, timeoutMs: 10_000 },
          'expect',
          15_000,
        );
        expect(warmed!.complete).toBe(p.warmupConnections);
        const [warmClosed] = await all(
          [warm],
          { type: 'close', timeoutMs: 10_000 },
          'close',
          15_000,
        );
        expect(warmClosed!.codes).toEqual({ 1000: p.warmupConnections });
        await warm.stop();
        const idle = (s: ServerStats) =>
          s.wsConnections === 0 && s.serverConnections === 0 && s.hubSubscribers === 0;
        const base = await steady(
          soak,
          idle,
          (s) => [s.handles, s.timers, s.serverListeners, s.processListeners],
          10_000,
        );
        expect(base.settled, 'the warm-up connections are gone').toBe(true);
        const baseline = base.stats;

        // N clients, subscribed.
        const connectStart = performance.now();
        const connected = await all(main, { type: 'connect', url }, 'connected', timeoutMs);
        const connectMs = performance.now() - connectStart;
        expect(connected.map((c) => c.clients)).toEqual(sizes);
        const loaded = await soak.stats();
        expect(loaded.wsConnections).toBe(p.connections);
        expect(loaded.hubSubscribers).toBe(p.connections);
        // each connection's socket is seen (not baseline + N: a baseline handle may have ended)
        expect(loaded.handles).toBeGreaterThanOrEqual(p.connections);

        // T seconds of heartbeats, pings and broadcasts.
        for (const c of main) c.send({ type: 'traffic', everyMs: p.pingEveryMs });
        const from = WARMUP_TICKS + 1;
        await all(main, { type: 'arm', from }, 'armed', 10_000);
        const holdStart = performance.now();
        const sent = await soak.broadcast({
          count: planned,
          intervalMs: BROADCAST_INTERVAL_MS,
          from,
          durationMs: p.seconds * 1000,
          timeoutMs,
        });
        const broadcasts = sent.sent;
        const to = from + broadcasts - 1;
        expect(sent.lastSeq).toBe(to);
        const received = await all(
          main,
          { type: 'expect', to, timeoutMs: 60_000 },
          'expect',
          65_000,
        );
        const holdMs = performance.now() - holdStart;
        const held = await soak.stats();

        // Every client closes with 1000.
        const closeStart = performance.now();
        const closed = await all(main, { type: 'close', timeoutMs: 30_000 }, 'close', 40_000);
        const closeMs = performance.now() - closeStart;

        // The server lets everything go.
        const counts = (s: ServerStats) => ({
          handles: s.handles,
          timers: s.timers,
          serverListeners: s.serverListeners,
          processListeners: s.processListeners,
        });
        const leftOver = (s: ServerStats) => heldOver(counts(s), counts(baseline));
        const baselineCounts = (s: ServerStats) => idle(s) && Object.keys(leftOver(s)).length === 0;
        const drained = await settle(soak, baselineCounts, 15_000);
        const within = (s: ServerStats) =>
          s.rss <= baseline.rss * (1 + (p.maxRssGrowth ?? p.maxGrowth)) &&
          s.heapUsed <= baseline.heapUsed * (1 + p.maxGrowth);
        // polled every 2 s: V8 shrinks its heap (and RSS follows) once allocation is idle
        const recovered = await settle(soak, within, p.settleMs, 2000);
        const after = recovered.stats;

        const result = {
          scenario: 'ws',
          form: p.form,
          params: { ...p, broadcastIntervalMs: BROADCAST_INTERVAL_MS },
          broadcasts: {
            planned,
            sent: broadcasts,
            meanIntervalMs: Math.round(sent.elapsedMs / Math.max(1, broadcasts - 1)),
            deliveries: broadcasts * p.connections,
            deliveriesPerSecond: Math.round((broadcasts * p.connections) / (holdMs / 1000)),
          },
          ms: {
            total: Math.round(performance.now() - started),
            connect: Math.round(connectMs),
            hold: Math.round(holdMs),
            broadcastSend: Math.round(sent.elapsedMs),
            close: Math.round(closeMs),
            drain: Math.round(drained.ms),
            memorySettle: Math.round(recovered.ms),
          },
          clients: {
            received: received.map(({ type: _, ...r }) => r),
            closed: closed.map(({ type: _, ...r }) => r),
          },
          memory: {
            baseline: memory(baseline),
            connected: memory(loaded),
            held: memory(held),
            after: memory(after),
            growthPercent: {
              rss: growth(after.rss, baseline.rss),
              heapUsed: growth(after.heapUsed, baseline.heapUsed),
            },
            settleSamples: recovered.samples,
            perConnectionKiB: {
              rss: Math.round((held.rss - baseline.rss) / p.connections / 102.4) / 10,
              heapUsed:
                Math.round((held.heapUsed - baseline.heapUsed) / p.connections / 102.4) / 10,
            },
          },
          server: { baseline, connected: loaded, held, drained: drained.stats, after },
        };
        const file = writeResult(`ws-${p.form}`, result);
        console.log(
          `ws soak (${p.form}): ${p.connections} clients, ${broadcasts} of ${planned} broadcasts ` +
            `(every ${result.broadcasts.meanIntervalMs} ms) delivered in ${result.ms.hold} ms; ` +
            `RSS ${result.memory.baseline.rssMiB} → ${result.memory.held.rssMiB} → ${result.memory.after.rssMiB} MiB ` +
            `(${result.memory.growthPercent.rss} %), heap ${result.memory.baseline.heapUsedMiB} → ` +
            `${result.memory.held.heapUsedMiB} → ${result.memory.after.heapUsedMiB} MiB ` +
            `(${result.memory.growthPercent.heapUsed} %); ${file}`,
        );

        // At least one broadcast a second went out, even where one to every client takes
        // longer than 100 ms (then the next goes out as soon as the event loop is free).
        expect(broadcasts, 'broadcasts sent').toBeGreaterThanOrEqual(Math.min(planned, p.seconds));
        // Every client got every broadcast, every pong and the heartbeats; no fault anywhere.
        expectClean(received, sizes);
        for (const [i, r] of received.entries()) {
          expect(r.complete, `client process ${i}: clients with every tick`).toBe(sizes[i]);
          expect(r.minTicks).toBe(broadcasts);
          expect(r.minHeartbeats, `client process ${i}: heartbeats`).toBeGreaterThanOrEqual(
            Math.max(1, Math.floor((p.seconds * 1000) / p.heartbeatMs) - 1),
          );
        }
        expectClean(closed, sizes);
        for (const [i, r] of closed.entries()) {
          expect(r.codes, `client process ${i}: close codes`).toEqual({ 1000: sizes[i] });
          expect(r.maxUnanswered, `client process ${i}: pings without a pong`).toBe(0);
          expect(r.minPongs).toBeGreaterThanOrEqual(Math.floor((p.seconds * 1000) / p.pingEveryMs));
        }
        // Nothing held: connections, subscriptions, handles, timers, listeners.
        expect(drained.settled, 'back to the baseline counts').toBe(true);
        expect(
          {
            wsConnections: drained.stats.wsConnections,
            serverConnections: drained.stats.serverConnections,
            hubSubscribers: drained.stats.hubSubscribers,
            ...leftOver(drained.stats),
          },
          'connections, subscriptions, and any count above the baseline',
        ).toEqual({ wsConnections: 0, serverConnections: 0, hubSubscribers: 0 });
        // Memory back near the baseline.
        expect(after.heapUsed, 'heap used after (bytes)').toBeLessThanOrEqual(
          baseline.heapUsed * (1 + p.maxGrowth),
        );
        // (when only this fails, the other measures in the message tell where the excess is:
        // V8's heap, external buffers, or native memory the allocator kept)
        const where = (s: ServerStats) =>
          `heapTotal ${mib(s.heapTotal)}, external ${mib(s.external)}, arrayBuffers ${mib(s.arrayBuffers)}, V8 malloced ${mib(s.mallocedMemory)} MiB`;
        expect(
          after.rss,
          `RSS after (bytes); baseline: ${where(baseline)}; after: ${where(after)}`,
        ).toBeLessThanOrEqual(baseline.rss * (1 + (p.maxRssGrowth ?? p.maxGrowth)));
      },
      timeoutMs + 60_000,
    );
  });
}
