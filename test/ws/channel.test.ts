import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { Authenticator } from '../../src/auth/authenticator.js';
import { createHub, type Hub } from '../../src/realtime/hub.js';
import {
  type ChannelProtocol,
  type ChannelProtocolOptions,
  createChannelProtocol,
} from '../../src/ws/channel.js';
import { createUpgradeHandler } from '../../src/ws/upgrade.js';

const headerAuth: Authenticator = {
  scheme: 'User',
  authenticate(req) {
    const sub = req.headers['x-user'];
    return typeof sub === 'string' ? { sub, scopes: [], method: 'test' } : undefined;
  },
};

let server: Server | undefined;
let protocol: ChannelProtocol | undefined;
let hub: Hub | undefined;
const clients: WebSocket[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.terminate();
  await protocol?.close();
  protocol = undefined;
  await hub?.close();
  hub = undefined;
  if (server) {
    const s = server;
    server = undefined;
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
});

async function start(options: ChannelProtocolOptions = {}, maxPayload?: number): Promise<string> {
  const channels = createChannelProtocol({ heartbeat: 0, ...options });
  protocol = channels;
  server = createServer((_req, res) => res.end());
  server.on(
    'upgrade',
    createUpgradeHandler({
      path: '/ws',
      authenticators: [headerAuth],
      maxPayload,
      onConnection: channels.handle,
    }),
  );
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return `ws://127.0.0.1:${port}/ws`;
}

/** A client with a queue of received JSON messages and bounded waits. */
interface Client {
  ws: WebSocket;
  next(ms?: number): Promise<Record<string, unknown>>;
  closed(ms?: number): Promise<{ code: number; reason: string }>;
  send(message: unknown): void;
}

async function connect(url: string, user: string, autoPong = true): Promise<Client> {
  const ws = new WebSocket(url, { headers: { 'x-user': user }, autoPong });
  clients.push(ws);
  const queue: Record<string, unknown>[] = [];
  const waiters: ((m: Record<string, unknown>) => void)[] = [];
  ws.on('error', () => {});
  ws.on('message', (data) => {
    const m = JSON.parse(String(data)) as Record<string, unknown>;
    const waiter = waiters.shift();
    if (waiter) waiter(m);
    else queue.push(m);
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })),
  );
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
    setTimeout(() => reject(new Error('open timed out')), 2000).unref();
  });
  return {
    ws,
    send: (message) => ws.send(typeof message === 'string' ? message : JSON.stringify(message)),
    next: (ms = 1000) => {
      const queued = queue.shift();
      if (queued) return Promise.resolve(queued);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(done), 1);
          reject(new Error('no message in time'));
        }, ms);
        const done = (m: Record<string, unknown>) => {
          clearTimeout(timer);
          resolve(m);
        };
        waiters.push(done);
      });
    },
    closed: (ms = 2000) =>
      Promise.race([
        closed,
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error('not closed in time')), ms).unref(),
        ),
      ]),
  };
}

/** Resolves when nothing arrives within `ms`. */
async function silent(client: Client, ms = 100): Promise<void> {
  await expect(client.next(ms)).rejects.toThrow('no message in time');
}

describe('createChannelProtocol', () => {
  it('answers join with welcome and ping with pong', async () => {
    const url = await start();
    const a = await connect(url, 'alice');
    a.send({ type: 'join', user: 'Alice' });
    const welcome = await a.next();
    expect(welcome).toMatchObject({ type: 'welcome', user: 'alice' });
    expect(typeof welcome.id).toBe('string');
    a.send({ type: 'ping' });
    expect(await a.next()).toEqual({ type: 'pong' });
  });

  it('relays messages to the others, never echoing them', async () => {
    const url = await start();
    const a = await connect(url, 'alice');
    const b = await connect(url, 'bob');
    const c = await connect(url, 'carol');
    a.send({ type: 'message', text: 'hello', user: 'Alice' });
    const expected = { type: 'message', text: 'hello', from: 'alice', user: 'Alice' };
    expect(await b.next()).toEqual(expected);
    expect(await c.next()).toEqual(expected);
    await silent(a);
  });

  it('relays a channel message only to its subscribers', async () => {
    const url = await start();
    const a = await connect(url, 'alice');
    const b = await connect(url, 'bob');
    const c = await connect(url, 'carol');
    b.send({ type: 'subscribe', channel: 'room:1' });
    a.send({ type: 'subscribe', channel: 'room:1' });
    b.send({ type: 'ping' });
    await b.next();
    a.send({ type: 'ping' });
    await a.next();
    a.send({ type: 'message', text: 'hi room', channel: 'room:1' });
    expect(await b.next()).toEqual({
      type: 'message',
      text: 'hi room',
      from: 'alice',
      channel: 'room:1',
    });
    await silent(c);
    await silent(a);
    b.send({ type: 'unsubscribe', channel: 'room:1' });
    b.send({ type: 'ping' });
    await b.next();
    a.send({ type: 'message', text: 'again', channel: 'room:1' });
    await silent(b);
  });

  it('forwards hub events as push to subscribers', async () => {
    hub = createHub();
    const url = await start({ hub });
    const a = await connect(url, 'alice');
    const b = await connect(url, 'bob');
    a.send({ type: 'subscribe', channel: 'news' });
    a.send({ type: 'ping' });
    await a.next();
    await hub.publish('news', 'message.created', { id: 1 });
    expect(await a.next()).toEqual({ type: 'push', event: 'message.created', data: { id: 1 } });
    await silent(b);
  });

  it.each([
    ['not JSON', 'nope'],
    ['not an object', '[1]'],
    ['an unknown type', JSON.stringify({ type: 'dance' })],
    ['empty text', JSON.stringify({ type: 'message', text: '' })],
    ['text too long', JSON.stringify({ type: 'message', text: 'x'.repeat(1001) })],
    ['a bad channel', JSON.stringify({ type: 'subscribe', channel: 7 })],
    ['a long user', JSON.stringify({ type: 'join', user: 'u'.repeat(101) })],
  ])('closes with 1008 for %s', async (_name, frame) => {
    const url = await start();
    const a = await connect(url, 'alice');
    a.send(frame);
    const { code, reason } = await a.closed();
    expect(code).toBe(1008);
    expect(reason.length).toBeGreaterThan(0);
  });

  it('closes with 1003 for a binary frame', async () => {
    const url = await start();
    const a = await connect(url, 'alice');
    a.ws.send(Buffer.from([1, 2, 3]), { binary: true });
    expect((await a.closed()).code).toBe(1003);
  });

  it('closes with 1009 for a message over maxPayload', async () => {
    const url = await start({}, 1024);
    const a = await connect(url, 'alice');
    a.send({ type: 'message', text: 'x'.repeat(2000) });
    expect((await a.closed()).code).toBe(1009);
  });

  it('closes with 1011 when an extension throws unexpectedly', async () => {
    const errors: unknown[] = [];
    const url = await start({
      extend: {
        boom() {
          throw new Error('kaput');
        },
        echo(message, ctx) {
          ctx.send({ type: 'echo', value: message.value });
        },
      },
      onError: (e) => errors.push(e),
    });
    const a = await connect(url, 'alice');
    a.send({ type: 'echo', value: 42 });
    expect(await a.next()).toEqual({ type: 'echo', value: 42 });
    a.send({ type: 'boom' });
    expect((await a.closed()).code).toBe(1011);
    expect(errors).toHaveLength(1);
  });

  it('terminates a peer that does not answer pings', async () => {
    const url = await start({ heartbeat: 50 });
    const quiet = await connect(url, 'quiet', false);
    const lively = await connect(url, 'lively');
    expect((await quiet.closed(1000)).code).toBe(1006);
    lively.send({ type: 'ping' });
    expect(await lively.next()).toEqual({ type: 'pong' });
    expect(lively.ws.readyState).toBe(WebSocket.OPEN);
  });

  it('close() sends 1001 to every client', async () => {
    const url = await start();
    const a = await connect(url, 'alice');
    const b = await connect(url, 'bob');
    const closing = protocol!.close();
    const [ca, cb] = await Promise.all([a.closed(), b.closed()]);
    expect(ca.code).toBe(1001);
    expect(cb.code).toBe(1001);
    await closing;
    expect(protocol!.size).toBe(0);
  });
});
