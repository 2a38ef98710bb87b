// WebSocket connections end with the credential they were opened with, and never replay a
// message redacted from the history: attacks over real sockets with real `ws` clients.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { toNodeListener } from '../../src/adapters/node.js';
import {
  createRevocations,
  grantCredentialId,
  type Revocations,
} from '../../src/auth/revocations.js';
import { createHub, type Hub } from '../../src/realtime/hub.js';
import { MemoryBroker } from '../../src/realtime/memory-broker.js';
import {
  type ChannelProtocol,
  type ChannelProtocolOptions,
  createChannelProtocol,
} from '../../src/ws/channel/channel.js';
import { createUpgradeHandler, type UpgradeHandlerOptions } from '../../src/ws/upgrade.js';
import type { Listening } from '../helpers/http.js';
import { type Credentials, credentials } from '../realtime/credential-fixtures.js';

let revocations: Revocations;
let creds: Credentials;
let hub: Hub;
let broker: MemoryBroker;
let protocol: ChannelProtocol | undefined;
let server: Server | undefined;
const sockets: WebSocket[] = [];

beforeEach(async () => {
  revocations = createRevocations();
  creds = await credentials(revocations);
  broker = new MemoryBroker();
  hub = createHub({ broker });
});
afterEach(async () => {
  for (const ws of sockets.splice(0)) ws.terminate();
  await protocol?.close();
  protocol = undefined;
  await hub.close();
  const s = server;
  server = undefined;
  if (s !== undefined) {
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
});

/**
 * Serves the account routes over HTTP and the channel protocol on `/ws`, both bound to
 * `revocations` unless `upgrade` or `channels` say otherwise.
 */
async function serveChannels(
  upgrade: Partial<UpgradeHandlerOptions> = {},
  channels: ChannelProtocolOptions = {},
): Promise<Listening & { ws: string }> {
  const current = createChannelProtocol({ hub, heartbeat: 0, revocations, ...channels });
  protocol = current;
  const s = createServer(toNodeListener([creds.accountRoutes]));
  server = s;
  s.on(
    'upgrade',
    createUpgradeHandler({
      path: '/ws',
      authenticators: creds.authenticators,
      revocations,
      onConnection: (ws, context) => current.handle(ws, context),
      ...upgrade,
    }),
  );
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  return {
    server: s,
    port,
    url: `http://127.0.0.1:${port}`,
    ws: `ws://127.0.0.1:${port}/ws`,
    close: async () => {},
  };
}

interface Client {
  ws: WebSocket;
  /** Every message received, in order. */
  received: Record<string, unknown>[];
  /** Resolves once a received message satisfies `match`. */
  until(match: (m: Record<string, unknown>) => boolean, ms?: number): Promise<void>;
  closed: Promise<{ code: number; reason: string }>;
  send(message: object): void;
}

async function open(url: string, headers: Record<string, string>): Promise<Client> {
  const ws = new WebSocket(url, { headers });
  sockets.push(ws);
  const received: Record<string, unknown>[] = [];
  const waiters = new Set<() => void>();
  ws.on('error', () => {});
  ws.on('message', (data) => {
    received.push(JSON.parse(String(data)) as Record<string, unknown>);
    for (const waiter of waiters) waiter();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })),
  );
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`refused ${res.statusCode}`)));
  });
  return {
    ws,
    received,
    closed,
    send: (message) => ws.send(JSON.stringify(message)),
    until(match, ms = 1000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!received.some(match)) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`nothing matched; got ${JSON.stringify(received)}`));
        }, ms);
        waiters.add(check);
        check();
      });
    },
  };
}

const isPush = (n: string) => (m: Record<string, unknown>) =>
  m.type === 'push' && (m.data as { n?: string } | undefined)?.n === n;

/** A client subscribed to `room` that received a push published after it subscribed. */
async function live(url: string, headers: Record<string, string>): Promise<Client> {
  const client = await open(url, headers);
  client.send({ type: 'subscribe', channel: 'room' });
  client.send({ type: 'ping' });
  await client.until((m) => m.type === 'pong');
  await hub.publish('room', 'note', { n: 'before' });
  await client.until(isPush('before'));
  return client;
}

function closedWithin(client: Client, ms = 1000) {
  return Promise.race([
    client.closed,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error('still open')), ms).unref(),
    ),
  ]);
}

/** Closed 1008 for `reason`, having received nothing published after the revocation. */
async function endedFor(client: Client, reason: 'revoked' | 'expired') {
  expect(await closedWithin(client)).toEqual({ code: 1008, reason: `credential ${reason}` });
  expect(client.received.some(isPush('after'))).toBe(false);
}

describe('a channel connection bound to its credential', () => {
  it('is closed 1008 when its API key is deleted, before a publish that follows', async () => {
    const { ws } = await serveChannels();
    const { headers, id } = await creds.apiKey('alice');
    const client = await live(ws, headers);
    const bystander = await live(ws, (await creds.apiKey('bob')).headers);
    creds.keys.delete(id);
    await hub.publish('room', 'note', { n: 'after' });
    await endedFor(client, 'revoked');
    await bystander.until(isPush('after'));
    expect(protocol?.size).toBe(1);
  });

  it('is closed 1008 when its session signs out', async () => {
    const app = await serveChannels();
    const session = await creds.signIn(app);
    const client = await live(app.ws, session);
    await creds.signOut(app, session);
    await hub.publish('room', 'note', { n: 'after' });
    await endedFor(client, 'revoked');
  });

  it("is closed 1008 when its bearer token's grant is revoked", async () => {
    const { ws } = await serveChannels();
    const client = await live(ws, await creds.bearer('g-ws'));
    await revocations.revoke([grantCredentialId('g-ws')]);
    await hub.publish('room', 'note', { n: 'after' });
    await endedFor(client, 'revoked');
  });

  it('is closed 1008 when its credential expires, not before', async () => {
    const { ws } = await serveChannels();
    const opened = Date.now();
    const client = await live(ws, creds.expiring('dave', 300));
    expect(await closedWithin(client)).toEqual({ code: 1008, reason: 'credential expired' });
    expect(Date.now() - opened).toBeGreaterThanOrEqual(250);
  });

  it('is dropped from its channels and relays inside revoke(), by the protocol alone', async () => {
    // the upgrade handler watches another bus: only the protocol's binding can act
    const { ws } = await serveChannels({ revocations: createRevocations() });
    const client = await live(ws, await creds.bearer('g-proto'));
    const sender = await live(ws, await creds.bearer('g-sender', 'mallory'));
    const size = protocol?.size;
    await revocations.revoke([grantCredentialId('g-proto')]);
    // detached before revoke() returned: neither a push nor a relay reaches it
    expect(protocol?.size).toBe((size ?? 0) - 1);
    await hub.publish('room', 'note', { n: 'after' });
    sender.send({ type: 'message', channel: 'room', text: 'after' });
    await endedFor(client, 'revoked');
    expect(client.received.some((m) => m.type === 'message')).toBe(false);
  });

  it('is closed by the upgrade handler alone, for an onConnection of its own', async () => {
    const { ws } = await serveChannels({ onConnection: () => {} });
    const client = await open(ws, await creds.bearer('g-own'));
    await revocations.revoke([grantCredentialId('g-own')]);
    expect(await closedWithin(client)).toEqual({ code: 1008, reason: 'credential revoked' });
  });

  it('stops watching once the connection closes', async () => {
    const { ws } = await serveChannels();
    const client = await live(ws, await creds.bearer('g-gone'));
    expect(revocations.size).toBe(2); // the upgrade handler's and the protocol's
    client.ws.close();
    await client.closed;
    await expect.poll(() => revocations.size).toBe(0);
  });
});

describe('a redacted message', () => {
  it('is replayed as its redaction to a subscribe with since <epoch>:0, never as it was', async () => {
    const { ws } = await serveChannels();
    await hub.publish('room', 'message.created', { id: 1, text: 'secret' });
    await hub.publish('room', 'message.created', { id: 2, text: 'public' });
    await hub.redact('room', (m) =>
      (m.data as { id: number }).id === 1
        ? { event: 'message.deleted', data: { id: 1 } }
        : undefined,
    );
    const client = await open(ws, (await creds.apiKey('heidi')).headers);
    client.send({ type: 'subscribe', channel: 'room', since: `${broker.epoch}:0` });
    await client.until((m) => m.type === 'push' && (m.data as { id: number }).id === 2);
    expect(client.received).toEqual([
      { type: 'subscribed', channel: 'room', position: `${broker.epoch}:0`, recovered: true },
      {
        type: 'push',
        channel: 'room',
        event: 'message.deleted',
        data: { id: 1 },
        position: `${broker.epoch}:1`,
      },
      {
        type: 'push',
        channel: 'room',
        event: 'message.created',
        data: { id: 2, text: 'public' },
        position: `${broker.epoch}:2`,
      },
    ]);
    expect(JSON.stringify(client.received)).not.toContain('secret');
  });
});
