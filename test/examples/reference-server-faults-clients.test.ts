// Clients that vanish mid-body, mid-stream and mid-handshake: the reference server survives,
// answers the next request, and keeps no connection of theirs (its open sockets, read from
// /proc/<pid>/fd on Linux, come back to where they were).
import { existsSync, readdirSync, readlinkSync } from 'node:fs';
import { type Socket, connect as tcp } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { json, request } from '../helpers/http.js';
import { connect as connectEvents, parseEvents } from '../helpers/sse.js';
import { openSocket } from './live-clients.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const DEMO_KEY = 'demo-key-of-the-vanishing-clients-suite-01';
const BOB = `Basic ${Buffer.from('bob:bob-password').toString('base64')}`;
const COUNT = 20;
let server: RunningServer;
let port: number;

beforeAll(async () => {
  server = await startReferenceServer({
    DEMO_API_KEY: DEMO_KEY,
    RATE_LIMIT: '10000',
    SSE_HEARTBEAT: '1',
  });
  port = Number(new URL(server.url).port);
});
afterAll(async () => {
  expect(await server?.stop()).toBe(0);
});

const procFds = () => `/proc/${server.child.pid}/fd`;
/** The server process's open sockets (listening one included), or undefined without /proc. */
function openSockets(): number | undefined {
  if (!existsSync(procFds())) return undefined;
  let sockets = 0;
  for (const fd of readdirSync(procFds())) {
    try {
      if (readlinkSync(`${procFds()}/${fd}`).startsWith('socket:')) sockets++;
    } catch {
      // closed while listed
    }
  }
  return sockets;
}

/** Waits (bounded) until the server holds no more sockets than `baseline`. */
async function backTo(baseline: number | undefined): Promise<void> {
  if (baseline === undefined) return;
  await vi.waitFor(() => expect(openSockets()).toBeLessThanOrEqual(baseline), {
    timeout: 8000,
    interval: 100,
  });
}

/** Opens a TCP connection, writes `data`, and destroys it after `ms` without reading. */
function vanish(data: string, ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket: Socket = tcp(port, '127.0.0.1', () => {
      socket.write(data);
      setTimeout(() => {
        socket.destroy();
        resolve();
      }, ms);
    });
    socket.on('error', reject);
  });
}

/** The server still answers: a request with the demo key, on a fresh connection. */
async function stillServes(): Promise<void> {
  const res = await request(port, '/api/me', { headers: { 'X-API-Key': DEMO_KEY } });
  expect(res.status).toBe(200);
  expect(json(res)).toMatchObject({ sub: 'alice', method: 'api_key' });
}

const texts = async () =>
  json<{ text: string }[]>(
    await request(port, '/api/messages', { headers: { 'X-API-Key': DEMO_KEY } }),
  ).map((m) => m.text);

describe('reference server: clients that vanish', () => {
  it('survives requests whose body never comes: POST with a Content-Length larger than sent', async () => {
    const baseline = openSockets();
    const partial = (path: string, type: string, start: string, auth = `X-API-Key: ${DEMO_KEY}`) =>
      `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${auth ? `${auth}\r\n` : ''}` +
      `Content-Type: ${type}\r\nContent-Length: 4096\r\n\r\n${start}`;
    const jsonType = 'application/json';
    const formType = 'application/x-www-form-urlencoded';
    await Promise.all(
      Array.from({ length: COUNT }, (_, i) => {
        const requests = [
          partial('/api/messages', jsonType, `{"text":"never finished ${i}`),
          partial('/api/webhooks', jsonType, '{"url":"http://127.0.0.1:9/'),
          partial('/login', formType, 'username=alice&password=alice-pa', ''),
          partial('/token', formType, 'grant_type=client_credentials&client_id=demo-se', ''),
        ];
        // some vanish at once, some after the server has started reading
        return vanish(requests[i % requests.length]!, i % 2 === 0 ? 0 : 100);
      }),
    );
    await stillServes();
    expect((await texts()).some((t) => t.startsWith('never finished'))).toBe(false);
    await backTo(baseline);
    expect(server.child.exitCode).toBeNull();
  });

  it('drops event streams whose clients vanished, and publishes to the others quickly', async () => {
    const baseline = openSockets();
    const streams = await Promise.all(
      Array.from({ length: COUNT }, () =>
        connectEvents({ port }, '/events', { 'X-API-Key': DEMO_KEY }),
      ),
    );
    expect(streams.every((s) => s.status === 200)).toBe(true);
    // the measure sees them (where there is /proc)
    if (baseline !== undefined) expect(openSockets()).toBeGreaterThanOrEqual(baseline + COUNT);
    const survivor = await connectEvents({ port }, '/events', { Authorization: BOB });
    for (const stream of streams) stream.destroy();
    await backTo(baseline === undefined ? undefined : baseline + 1); // the survivor's
    const started = performance.now();
    const created = await request(port, '/api/messages', {
      method: 'POST',
      headers: { 'X-API-Key': DEMO_KEY, 'Content-Type': 'application/json' },
      body: '{"text":"after the vanished streams"}',
    });
    expect(created.status).toBe(201);
    expect(performance.now() - started).toBeLessThan(1000);
    const [event] = parseEvents(
      await survivor.until((t) => t.includes('after the vanished streams'), 3000),
    );
    expect(JSON.parse(event!.data!)).toMatchObject({ event: 'message.created' });
    // heartbeats (comment lines) go on for the one left
    await survivor.until((t) => /^:/m.test(t), 3000);
    survivor.destroy();
    await backTo(baseline);
    await stillServes();
  });

  it('forgets WebSocket handshakes whose socket is destroyed before the 101', async () => {
    const baseline = openSockets();
    const upgrade = (auth: string) =>
      `GET /ws HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n${auth}\r\n\r\n`;
    await Promise.all(
      Array.from({ length: COUNT }, (_, i) => {
        // a password takes a while to check: those vanish while the server is at it
        const handshake = upgrade(i % 2 === 0 ? `X-API-Key: ${DEMO_KEY}` : `Authorization: ${BOB}`);
        if (i % 4 === 3) return vanish(handshake.slice(0, 40), 0); // mid-headers
        return vanish(handshake, i % 4 === 0 ? 0 : 5);
      }),
    );
    await backTo(baseline);
    const live = await openSocket(server.url, { 'X-API-Key': DEMO_KEY });
    live.ws.send('{"type":"ping"}');
    await live.next('pong');
    live.ws.close(1000);
    expect(await live.closed).toBe(1000);
    await stillServes();
    await backTo(baseline);
  });
});
