// Maintenance, load shedding and health over real sockets: a 503 with Retry-After and a
// problem before any work (HTTP routes, a WebSocket handshake, an event stream), switched at
// run time; a blocked event loop shedding the requests queued behind it and recovering; the
// liveness and readiness endpoints with failing, slow and passing checks.
import { createServer } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import { toNodeListener } from '../../src/adapters/node.js';
import type { Middleware } from '../../src/core/compose.js';
import { sendJson } from '../../src/core/send.js';
import { healthChecks } from '../../src/http/health.js';
import { shedLoad } from '../../src/http/load-shedding.js';
import { maintenanceMode } from '../../src/http/maintenance.js';
import { createRouter } from '../../src/http/routing/router.js';
import { createUpgradeHandler } from '../../src/ws/upgrade.js';
import { closeAll, json, parseReply, request, serve } from '../helpers/http.js';

const ok: Middleware = (_req, res) => sendJson(res, 200, { ok: true });

afterAll(closeAll);

describe('maintenanceMode', () => {
  it('answers 503 with Retry-After and a problem while on, switched at run time', async () => {
    const maintenance = maintenanceMode({ retryAfter: 90_000 });
    const app = await serve([maintenance, ok]);
    expect((await request(app, '/')).status).toBe(200);
    maintenance.enable();
    expect(maintenance.enabled).toBe(true);
    const refused = await request(app, '/', { method: 'POST', body: '{"x":1}' });
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('90');
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(json(refused)).toMatchObject({
      status: 503,
      detail: 'The service is under maintenance.',
    });
    maintenance.enable({ retryAfter: 1_500 });
    expect((await request(app, '/')).headers['retry-after']).toBe('2');
    maintenance.disable();
    expect((await request(app, '/')).status).toBe(200);
  });

  it('refuses a WebSocket handshake with the 503, never a 101', async () => {
    const maintenance = maintenanceMode({ enabled: true });
    const server = createServer(toNodeListener([ok]));
    let connected = 0;
    server.on(
      'upgrade',
      createUpgradeHandler({
        path: '/ws',
        middleware: [maintenance],
        onConnection: () => {
          connected++;
        },
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const status = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`);
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => resolve(101));
      ws.on('error', () => {});
    });
    expect(status).toBe(503);
    expect(connected).toBe(0);
    server.close();
  });

  it('refuses options it does not know and a bad retryAfter', () => {
    expect(() => maintenanceMode({ retry: 5 } as never)).toThrow();
    expect(() => maintenanceMode({ retryAfter: -1 })).toThrow(/retryAfter/);
    expect(() => maintenanceMode({ enabled: 'yes' as never })).toThrow(/enabled/);
  });
});

/** Opens a connection and resolves once it is connected. */
function connected(port: number) {
  return new Promise<import('node:net').Socket>((resolve) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
  });
}

/** Everything the server writes on `socket` until it has a whole answer. */
function answer(socket: import('node:net').Socket) {
  return new Promise<string>((resolve) => {
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      text += chunk;
      if (/\r\n\r\n[\s\S]*\}$/.test(text)) resolve(text);
    });
  });
}

describe('shedLoad', () => {
  it('sheds the requests queued behind a blocked event loop, then takes requests again', async () => {
    // a threshold a loaded machine's own event-loop lag stays under, a block well past it
    const shed = shedLoad({ maxEventLoopDelay: 250, sampleInterval: 20, retryAfter: 3_000 });
    // the last sample as each request reaches the shedder: the one it is answered on
    const delays: number[] = [];
    const measure: Middleware = (_req, _res, next) => {
      delays.push(shed.sample().eventLoopDelay);
      return next();
    };
    const app = await serve([measure, shed, ok]);
    expect((await request(app, '/')).status).toBe(200);
    const sockets = await Promise.all(Array.from({ length: 5 }, () => connected(app.port)));
    const answers = sockets.map(answer);
    for (const socket of sockets) {
      socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    }
    // the requests are in the kernel's buffers: block the loop for 750 ms
    const until = Date.now() + 750;
    while (Date.now() < until) {
      // busy
    }
    const replies = (await Promise.all(answers)).map(parseReply);
    expect(replies.map((r) => r.status)).toEqual([503, 503, 503, 503, 503]);
    expect(replies[0]!.headers['retry-after']).toBe('3');
    // refused on a sample that measured the block (read as they arrived: under load a later
    // sample may already have replaced it by the time the answers are read)
    expect(delays.slice(1)).toHaveLength(5);
    for (const delay of delays.slice(1)) expect(delay).toBeGreaterThan(250);
    // recovered at a later sample (polled: on a loaded machine the sampling timer runs late)
    await vi.waitFor(() => expect(shed.overloaded).toBe(false), { timeout: 5_000, interval: 20 });
    expect((await request(app, '/')).status).toBe(200);
    for (const socket of sockets) socket.destroy();
    shed.close();
  });

  it('refuses past maxInFlight, and counts a request out when its answer ends', async () => {
    const shed = shedLoad({ maxInFlight: 2 });
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slow: Middleware = async (_req, res) => {
      await gate;
      sendJson(res, 200, {});
    };
    const app = await serve([shed, slow]);
    const first = request(app, '/');
    const second = request(app, '/');
    // both are in flight (held at the gate) before the third is sent
    await vi.waitFor(() => expect(shed.sample().inFlight).toBe(2), { timeout: 5_000 });
    expect(shed.overloaded).toBe(true);
    const third = await request(app, '/');
    expect(third.status).toBe(503);
    release();
    expect((await first).status).toBe(200);
    expect((await second).status).toBe(200);
    expect(shed.sample().inFlight).toBe(0);
    expect((await request(app, '/')).status).toBe(200);
    shed.close();
  });
});

describe('healthChecks', () => {
  it('answers liveness always, readiness 200 with every check ok', async () => {
    const health = healthChecks({ checks: { redis: async () => 'PONG', db: () => true } });
    const app = await serve(
      createRouter({ '/healthz': { GET: health.liveness }, '/readyz': { GET: health.readiness } }),
    );
    const live = await request(app, '/healthz');
    expect({ status: live.status, body: json(live) }).toEqual({
      status: 200,
      body: { status: 'ok' },
    });
    expect(live.headers['cache-control']).toBe('no-store');
    const ready = await request(app, '/readyz');
    expect(json(ready)).toEqual({ status: 'ok', checks: { redis: 'ok', db: 'ok' } });
  });

  it('answers 503 naming the failed and slow checks (never their errors), and in maintenance', async () => {
    const maintenance = maintenanceMode();
    const health = healthChecks({
      checks: {
        redis: () => Promise.reject(new Error('connect ECONNREFUSED redis://:secret@10.0.0.1')),
        // never settles: an answer at all shows the 100 ms timeout ended it
        slow: () => new Promise(() => {}),
        fine: () => undefined,
      },
      timeout: 100,
      maintenance,
    });
    const app = await serve(createRouter({ '/readyz': { GET: health.readiness } }));
    const down = await request(app, '/readyz');
    expect(down.status).toBe(503);
    expect(down.headers['retry-after']).toBe('5');
    expect(down.headers['cache-control']).toBe('no-store');
    expect(json(down)).toMatchObject({ checks: { redis: 'failed', slow: 'failed', fine: 'ok' } });
    expect(down.body).not.toContain('secret');
    const calm = await serve(
      createRouter({ '/readyz': { GET: healthChecks({ maintenance }).readiness } }),
    );
    expect((await request(calm, '/readyz')).status).toBe(200);
    maintenance.enable();
    const closed = await request(calm, '/readyz');
    expect(closed.status).toBe(503);
    expect(json(closed)).toMatchObject({ maintenance: true });
  });

  it('refuses a check that is not a function', () => {
    expect(() => healthChecks({ checks: { redis: 'PING' as never } })).toThrow(/redis/);
  });
});
