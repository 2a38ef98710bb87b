// The reference server's maintenance, overload and health rows, from outside: MAINTENANCE=1
// answers /api/*, /events and the /ws handshake 503 with Retry-After and a problem while
// discovery, JWKS and the health endpoints still answer; /healthz and /readyz without
// credentials and outside the rate limit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

let normal: RunningServer;
let down: RunningServer;
let busy: RunningServer;
const KEY = 'demo-availability-key-0123456789abcdef';

beforeAll(async () => {
  [normal, down, busy] = await Promise.all([
    startReferenceServer({ RATE_LIMIT: '2' }),
    startReferenceServer({ MAINTENANCE: '1', MAINTENANCE_RETRY_AFTER: '45' }),
    // an event loop late by more than 20 ms counts as overloaded: a burst is enough
    startReferenceServer({ OVERLOAD_MAX_DELAY: '20', RATE_LIMIT: '1000000', DEMO_API_KEY: KEY }),
  ]);
});
afterAll(async () => {
  await Promise.all([normal?.stop(), down?.stop(), busy?.stop()]);
});

describe('OVERLOAD_MAX_DELAY', () => {
  it('sheds /api/* requests with 503 and Retry-After while the loop is late, then recovers', async () => {
    const me = () => fetch(`${busy.url}/api/me`, { headers: { 'X-API-Key': KEY } });
    let shed: Response | undefined;
    // bursts of requests delay the server's loop; at most 10 of them
    for (let burst = 0; burst < 10 && shed === undefined; burst++) {
      const replies = await Promise.all(Array.from({ length: 500 }, me));
      shed = replies.find((r) => r.status === 503);
      expect(replies.every((r) => r.status === 200 || r.status === 503)).toBe(true);
    }
    expect(shed, 'no request was shed').toBeDefined();
    expect(shed!.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await shed!.json()).toMatchObject({ status: 503 });
    // the health endpoints are never shed, and /api/* answers again once the loop is well
    expect((await fetch(`${busy.url}/healthz`)).status).toBe(200);
    // recovered at a sample that finds the loop well (polled: a busy machine delays it)
    let status = 0;
    for (const deadline = Date.now() + 10_000; status !== 200 && Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      status = (await me()).status;
    }
    expect(status).toBe(200);
  });
});

describe('health endpoints', () => {
  it('answer /healthz and /readyz 200 without credentials, never counted by the rate limit', async () => {
    for (let i = 0; i < 5; i++) {
      const live = await fetch(`${normal.url}/healthz`);
      expect(live.status).toBe(200);
      expect(await live.json()).toEqual({ status: 'ok' });
      const ready = await fetch(`${normal.url}/readyz`);
      expect(ready.status).toBe(200);
      expect(ready.headers.get('cache-control')).toBe('no-store');
      expect(ready.headers.get('ratelimit-policy')).toBeNull();
    }
  });
});

describe('MAINTENANCE=1', () => {
  it('answers /api/* and /events 503 with Retry-After and a problem', async () => {
    for (const path of ['/api/messages', '/api/me', '/events']) {
      const reply = await fetch(`${down.url}${path}`);
      expect(reply.status, path).toBe(503);
      expect(reply.headers.get('retry-after')).toBe('45');
      expect(reply.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(await reply.json()).toMatchObject({ status: 503 });
    }
  });

  it('refuses the /ws handshake with 503, never a 101', async () => {
    const status = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`${down.url.replace('http', 'ws')}/ws`, {
        headers: { Origin: down.url },
      });
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => {
        ws.close();
        resolve(101);
      });
      ws.on('error', () => {});
    });
    expect(status).toBe(503);
  });

  it('still answers discovery, JWKS and health; readiness says not ready', async () => {
    expect((await fetch(`${down.url}/.well-known/openid-configuration`)).status).toBe(200);
    expect((await fetch(`${down.url}/.well-known/jwks.json`)).status).toBe(200);
    expect((await fetch(`${down.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${down.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(ready.headers.get('retry-after')).not.toBeNull();
  });
});
