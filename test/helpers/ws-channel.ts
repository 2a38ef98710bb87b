// The channel protocol served over a real socket, and `ws` clients with bounded waits.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import { WebSocket } from 'ws';
import type { Authenticator } from '../../src/auth/authenticator.js';
import type { Hub } from '../../src/realtime/hub.js';
import {
  type ChannelProtocol,
  type ChannelProtocolOptions,
  createChannelProtocol,
} from '../../src/ws/channel/channel.js';
import { createUpgradeHandler } from '../../src/ws/upgrade.js';

const headerAuth: Authenticator = {
  scheme: 'User',
  authenticate(req) {
    const sub = req.headers['x-user'];
    return typeof sub === 'string' ? { sub, scopes: [], method: 'test' } : undefined;
  },
};

// what each start() opened, the last one last (several: processes sharing one hub)
const servers: Server[] = [];
const protocols: ChannelProtocol[] = [];
const hubs = new Set<Hub>();
const clients: WebSocket[] = [];
/** The server side of each connection, in the order they were handed to the protocol. */
export const serverSockets: WebSocket[] = [];

/** The protocol the last {@link start} made. */
export function currentProtocol(): ChannelProtocol {
  const protocol = protocols.at(-1);
  if (protocol === undefined) throw new Error('start() first');
  return protocol;
}

/** Closes what every {@link start} opened: clients, protocols, their hubs, the servers. */
export async function closeChannels(): Promise<void> {
  for (const c of clients.splice(0)) c.terminate();
  serverSockets.length = 0;
  for (const protocol of protocols.splice(0)) await protocol.close();
  for (const hub of hubs) await hub.close();
  hubs.clear();
  for (const s of servers.splice(0)) await new Promise<void>((resolve) => s.close(() => resolve()));
}

/** Serves the channel protocol on `/ws` of a new server; the `x-user` header names the principal. */
export async function start(
  options: ChannelProtocolOptions = {},
  maxPayload?: number,
): Promise<string> {
  if (options.hub !== undefined) hubs.add(options.hub);
  const channels = createChannelProtocol({ heartbeat: 0, ...options });
  protocols.push(channels);
  const server = createServer((_req, res) => res.end());
  servers.push(server);
  server.on(
    'upgrade',
    createUpgradeHandler({
      path: '/ws',
      authenticators: [headerAuth],
      maxPayload,
      onConnection: (ws, context) => {
        serverSockets.push(ws);
        channels.handle(ws, context);
      },
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return `ws://127.0.0.1:${port}/ws`;
}

/** A client with a queue of received JSON messages and bounded waits. */
export interface Client {
  ws: WebSocket;
  next(ms?: number): Promise<Record<string, unknown>>;
  closed(ms?: number): Promise<{ code: number; reason: string }>;
  send(message: unknown): void;
}

export async function connect(url: string, user: string, autoPong = true): Promise<Client> {
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
export async function silent(client: Client, ms = 100): Promise<void> {
  await expect(client.next(ms)).rejects.toThrow('no message in time');
}

/** Subscribes `client` to `channel`, and returns once the server has taken it (a ping's pong). */
export async function subscribed(client: Client, channel: string): Promise<void> {
  client.send({ type: 'subscribe', channel });
  client.send({ type: 'ping' });
  expect(await client.next()).toEqual({ type: 'pong' });
}
