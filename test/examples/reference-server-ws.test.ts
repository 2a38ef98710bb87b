import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const DEMO_KEY = 'demo-key-of-the-ws-suite-0123456789abcdef';
let server: RunningServer;
const wsUrl = () => `${server.url.replace('http', 'ws')}/ws`;

beforeAll(async () => {
  server = await startReferenceServer({ DEMO_API_KEY: DEMO_KEY, WS_HEARTBEAT: '1' });
});

afterAll(async () => {
  await server?.stop();
});

/** Opens an authenticated connection and collects its JSON messages. */
async function connect(headers: Record<string, string> = { 'X-API-Key': DEMO_KEY }) {
  const ws = new WebSocket(wsUrl(), { headers });
  const received: Record<string, unknown>[] = [];
  ws.on('message', (data) => received.push(JSON.parse(String(data))));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const next = async (type: string) => {
    for (let i = 0; i < 100; i++) {
      const found = received.find((m) => m.type === type);
      if (found) {
        received.splice(received.indexOf(found), 1);
        return found;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`no ${type} message`);
  };
  return { ws, received, next };
}

function refusal(headers: Record<string, string>) {
  return new Promise<{ status: number; body: string; headers: Record<string, unknown> }>(
    (resolve, reject) => {
      const ws = new WebSocket(wsUrl(), { headers });
      ws.on('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (d: Buffer) => {
          body += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      });
      ws.on('open', () => reject(new Error('the upgrade was accepted')));
      ws.on('error', () => {});
    },
  );
}

const closed = (ws: WebSocket) =>
  new Promise<number>((resolve) => ws.once('close', (code: number) => resolve(code)));

describe('reference server: /ws', () => {
  it('refuses no credential with 401 and a foreign Origin with 403, before the upgrade', async () => {
    const none = await refusal({});
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBeTruthy();
    expect(JSON.parse(none.body)).toMatchObject({ status: 401 });
    const foreign = await refusal({ 'X-API-Key': DEMO_KEY, Origin: 'https://evil.example' });
    expect(foreign.status).toBe(403);
    // a refusal is an answer like any other: request id (quoted in the problem), security headers
    const traced = await refusal({ 'X-Request-ID': 'ws-trace-1' });
    expect(traced.status).toBe(401);
    expect(traced.headers['x-request-id']).toBe('ws-trace-1');
    expect(JSON.parse(traced.body).requestId).toBe('ws-trace-1');
    for (const answer of [none, foreign]) {
      expect(answer.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      expect(answer.headers['content-security-policy']).toContain("default-src 'none'");
      expect(answer.headers['x-content-type-options']).toBe('nosniff');
      expect(answer.headers['x-frame-options']).toBe('DENY');
      expect(answer.headers['referrer-policy']).toBe('no-referrer');
    }
  });

  it('puts the request id and security headers on the 101 too', async () => {
    const ws = new WebSocket(wsUrl(), {
      headers: { 'X-API-Key': DEMO_KEY, 'X-Request-ID': 'ws-2' },
    });
    const upgrade = await new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
      ws.once('upgrade', resolve);
      ws.once('error', reject);
    });
    expect(upgrade.headers['x-request-id']).toBe('ws-2');
    expect(upgrade.headers['x-content-type-options']).toBe('nosniff');
    ws.close(1000);
    expect(await closed(ws)).toBe(1000);
  });

  it('answers plain HTTP on /ws: 426 with Upgrade to GET, 405 with Allow, 204 to OPTIONS', async () => {
    const get = await fetch(`${server.url}/ws`, { headers: { 'X-API-Key': DEMO_KEY } });
    expect(get.status).toBe(426);
    expect(get.headers.get('upgrade')).toBe('websocket');
    expect(get.headers.get('content-type')).toBe('application/problem+json');
    expect(get.headers.get('x-request-id')).toBeTruthy();
    expect(await get.json()).toMatchObject({ status: 426, instance: '/ws' });
    const post = await fetch(`${server.url}/ws`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toContain('GET');
    const options = await fetch(`${server.url}/ws`, { method: 'OPTIONS' });
    expect(options.status).toBe(204);
    expect(options.headers.get('allow')).toContain('GET');
  });

  it('answers HEAD /events with the stream headers and no stream', async () => {
    const res = await fetch(`${server.url}/events`, {
      method: 'HEAD',
      headers: { 'X-API-Key': DEMO_KEY },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
  });

  it('answers join with welcome and ping with pong', async () => {
    const { ws, next } = await connect({ 'X-API-Key': DEMO_KEY, Origin: 'http://localhost:5173' });
    ws.send(JSON.stringify({ type: 'join', user: 'Alice' }));
    expect(await next('welcome')).toMatchObject({
      type: 'welcome',
      id: expect.anything(),
      user: 'alice',
    });
    ws.send(JSON.stringify({ type: 'ping' }));
    expect(await next('pong')).toEqual({ type: 'pong' });
    ws.close(1000);
  });

  it('relays messages to the others, not to the sender, and pushes messages created over REST', async () => {
    const a = await connect();
    const b = await connect();
    a.ws.send(JSON.stringify({ type: 'message', text: 'hello', user: 'A' }));
    expect(await b.next('message')).toMatchObject({
      type: 'message',
      text: 'hello',
      from: 'alice',
      user: 'A',
    });
    // a connection's messages are served in order, and the relay went out while the server
    // served A's message: A's pong comes after anything it would have been sent of its own
    a.ws.send(JSON.stringify({ type: 'ping' }));
    expect(await a.next('pong')).toEqual({ type: 'pong' });
    expect(a.received.find((m) => m.type === 'message')).toBeUndefined();

    // B's subscription is recorded once a ping sent after it is answered
    b.ws.send(JSON.stringify({ type: 'subscribe', channel: 'general' }));
    b.ws.send(JSON.stringify({ type: 'ping' }));
    expect(await b.next('pong')).toEqual({ type: 'pong' });
    const created = await fetch(`${server.url}/api/messages`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-API-Key': DEMO_KEY },
      body: '{"text":"from REST"}',
    });
    expect(created.status).toBe(201);
    const push = await b.next('push');
    expect(push).toMatchObject({
      type: 'push',
      event: 'message.created',
      data: { text: 'from REST', channel: 'general' },
    });
    a.ws.close();
    b.ws.close();
  });

  it('lets a reconnecting client resume a channel from its last position', async () => {
    const post = (text: string) =>
      fetch(`${server.url}/api/messages`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-API-Key': DEMO_KEY },
        body: JSON.stringify({ text, channel: 'resume' }),
      });
    const first = await connect();
    first.ws.send(JSON.stringify({ type: 'subscribe', channel: 'resume', recover: true }));
    expect(await first.next('subscribed')).toMatchObject({ channel: 'resume' });
    await post('one');
    const seen = await first.next('push');
    expect(seen).toMatchObject({ channel: 'resume', data: { text: 'one' } });
    first.ws.terminate();
    await post('two');
    await post('three');

    const again = await connect();
    again.ws.send(JSON.stringify({ type: 'subscribe', channel: 'resume', since: seen.position }));
    expect(await again.next('subscribed')).toMatchObject({ recovered: true });
    expect(await again.next('push')).toMatchObject({ data: { text: 'two' } });
    expect(await again.next('push')).toMatchObject({ data: { text: 'three' } });
    again.ws.close();
  });

  it('closes with 1008 for text that is not JSON or an unknown type, 1003 for binary', async () => {
    for (const [frame, code] of [
      ['not json', 1008],
      ['{"type":"dance"}', 1008],
      [Buffer.from([1, 2, 3]), 1003],
    ] as const) {
      const { ws } = await connect();
      const done = closed(ws);
      ws.send(frame);
      expect(await done).toBe(code);
    }
  });

  it('closes with 1009 for a frame over 64 KiB', async () => {
    const { ws } = await connect();
    const done = closed(ws);
    ws.send(JSON.stringify({ type: 'message', text: 'x'.repeat(70 * 1024) }));
    expect(await done).toBe(1009);
  });

  it('sends 1001 to connected clients when the server shuts down', async () => {
    const own = await startReferenceServer({ DEMO_API_KEY: DEMO_KEY });
    try {
      const ws = new WebSocket(`${own.url.replace('http', 'ws')}/ws`, {
        headers: { 'X-API-Key': DEMO_KEY },
      });
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      });
      const done = closed(ws);
      const exit = own.stop('SIGTERM');
      expect(await done).toBe(1001);
      expect(await exit).toBe(0);
    } finally {
      await own.stop();
    }
  });
});
