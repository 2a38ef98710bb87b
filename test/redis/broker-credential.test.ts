// Over a real redis-server: a revocation in one process ends the deliveries bound to the
// credential in another (the hubs are the revocation bus's transport), and the history is
// redacted in place, atomically against concurrent publishes and trimming.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import type { Authenticator } from '../../src/auth/authenticator.js';
import {
  createRevocations,
  grantCredentialId,
  type Revocations,
} from '../../src/auth/revocations.js';
import { setPrincipal } from '../../src/core/principal.js';
import type { HubMessage } from '../../src/realtime/broker.js';
import { createHub, type Hub } from '../../src/realtime/hub.js';
import { RedisBroker } from '../../src/redis/broker.js';
import { streamChannel } from '../../src/sse/channel.js';
import { type ChannelProtocol, createChannelProtocol } from '../../src/ws/channel/channel.js';
import { createUpgradeHandler } from '../../src/ws/upgrade.js';
import { closeAll, listen } from '../helpers/http.js';
import { hasRedis, type RedisServer, startRedis } from '../helpers/redis.js';
import { connect, parseEvents } from '../helpers/sse.js';

/** A bearer-like principal of grant `x-grant`, as `jwtBearer()` makes one. */
const grantAuth: Authenticator = {
  scheme: 'Grant',
  authenticate(req) {
    const grant = req.headers['x-grant'];
    if (typeof grant !== 'string') return undefined;
    return {
      sub: 'alice',
      scopes: [],
      method: 'bearer',
      credentialIds: [grantCredentialId(grant)],
    };
  },
};

describe.skipIf(!hasRedis)('RedisBroker: credentials and redaction (real redis-server)', () => {
  let redis: RedisServer;
  const hubs: Hub[] = [];
  const brokers: RedisBroker[] = [];
  const buses: Revocations[] = [];
  const protocols: ChannelProtocol[] = [];
  const servers: Server[] = [];
  const sockets: WebSocket[] = [];
  let prefixes = 0;

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterEach(async () => {
    for (const ws of sockets.splice(0)) ws.terminate();
    for (const protocol of protocols.splice(0)) await protocol.close();
    for (const bus of buses.splice(0)) bus.close();
    for (const hub of hubs.splice(0)) await hub.close();
    for (const broker of brokers.splice(0)) await broker.close();
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    }
    await closeAll();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  function hubOnRedis(prefix: string, historySize = 100): { hub: Hub; broker: RedisBroker } {
    const broker = new RedisBroker({ client: redis.client(), prefix, historySize });
    brokers.push(broker);
    const hub = createHub({ broker });
    hubs.push(hub);
    return { hub, broker };
  }

  /** Two processes of one service: each a hub on one Redis, carrying its revocation bus. */
  async function twoProcesses() {
    const prefix = `c${++prefixes}:`;
    const [a, b] = [0, 1].map(() => {
      const { hub } = hubOnRedis(prefix);
      const revocations = createRevocations({ transport: hub });
      buses.push(revocations);
      return { hub, revocations };
    }) as [{ hub: Hub; revocations: Revocations }, { hub: Hub; revocations: Revocations }];
    // B hears A's revocations once its subscription is up
    const heard: string[] = [];
    const stop = b.revocations.listen((id) => heard.push(id));
    await vi.waitFor(async () => {
      await a.revocations.revoke(['probe']);
      expect(heard).toContain('probe');
    });
    stop();
    return [a, b] as const;
  }

  async function serveChannels(hub: Hub, revocations: Revocations): Promise<string> {
    const protocol = createChannelProtocol({ hub, heartbeat: 0, revocations });
    protocols.push(protocol);
    const server = createServer((_req, res) => res.end());
    servers.push(server);
    server.on(
      'upgrade',
      createUpgradeHandler({
        path: '/ws',
        authenticators: [grantAuth],
        revocations,
        onConnection: (ws, context) => protocol.handle(ws, context),
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws`;
  }

  async function openWs(url: string, headers: Record<string, string>) {
    const ws = new WebSocket(url, { headers });
    sockets.push(ws);
    const received: Record<string, unknown>[] = [];
    ws.on('error', () => {});
    ws.on('message', (data) => received.push(JSON.parse(String(data))));
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })),
    );
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return { ws, received, closed, send: (m: object) => ws.send(JSON.stringify(m)) };
  }

  const within = <T>(promise: Promise<T>, ms: number) =>
    Promise.race([
      promise,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`not within ${ms} ms`)), ms).unref(),
      ),
    ]);

  it('ends a WebSocket bound in one process when another revokes, before a later publish', async () => {
    const [a, b] = await twoProcesses();
    const url = await serveChannels(b.hub, b.revocations);
    const client = await openWs(url, { 'x-grant': 'g-x' });
    client.send({ type: 'subscribe', channel: 'room' });
    await vi.waitFor(async () => {
      await a.hub.publish('room', 'note', { n: 'before' });
      expect(client.received.length).toBeGreaterThan(0);
    });
    await a.revocations.revoke([grantCredentialId('g-x')]);
    await a.hub.publish('room', 'note', { n: 'after' });
    expect(await within(client.closed, 1000)).toEqual({
      code: 1008,
      reason: 'credential revoked',
    });
    expect(JSON.stringify(client.received)).not.toContain('after');
  });

  it('ends an event stream bound in one process when another revokes, before a later publish', async () => {
    const [a, b] = await twoProcesses();
    const server = await listen((req, res) => {
      setPrincipal(req, {
        sub: 'alice',
        scopes: [],
        method: 'bearer',
        credentialIds: [grantCredentialId('g-sse')],
      });
      streamChannel(req, res, {
        hub: b.hub,
        channel: 'news',
        heartbeat: 0,
        retry: false,
        revocations: b.revocations,
      });
    });
    const client = await connect(server, '/');
    await vi.waitFor(async () => {
      await a.hub.publish('news', 'headline', { n: 'before' });
      expect(client.text()).toContain('before');
    });
    await a.revocations.revoke([grantCredentialId('g-sse')]);
    await a.hub.publish('news', 'headline', { n: 'after' });
    await within(client.ended, 1000);
    expect(parseEvents(client.text()).at(-1)).toEqual({
      event: 'credential-ended',
      data: '{"reason":"revoked"}',
    });
    expect(client.text()).not.toContain('after');
  });

  it('redacts held entries in place: same offsets, replayed over SSE and WebSocket', async () => {
    const { hub } = hubOnRedis(`r${++prefixes}:`);
    const created = await hub.publish('room', 'message.created', { id: 1, text: 'secret' });
    await hub.publish('room', 'message.created', { id: 2, text: 'public' });
    const count = await hub.redact('room', (m) =>
      (m.data as { id: number }).id === 1
        ? { event: 'message.deleted', data: { id: 1 } }
        : undefined,
    );
    expect(count).toBe(1);
    const since = { epoch: created.epoch, offset: 0 };
    const { events, recovered } = await hub.replay('room', since);
    expect(recovered).toBe(true);
    expect(events[0]).toEqual({ ...created, event: 'message.deleted', data: { id: 1 } });
    expect(events.map((m) => m.offset)).toEqual([1, 2]);

    const server = await listen((req, res) => {
      streamChannel(req, res, { hub, channel: 'room', heartbeat: 0, retry: false });
    });
    const stream = await connect(server, '/', { 'last-event-id': `${created.epoch}:0` });
    const text = await stream.until((t) => parseEvents(t).length >= 2);
    expect(parseEvents(text).map((e) => [e.id, e.event])).toEqual([
      [`${created.epoch}:1`, 'message.deleted'],
      [`${created.epoch}:2`, 'message.created'],
    ]);
    expect(text).not.toContain('secret');
    stream.destroy();

    const url = await serveChannels(hub, createRevocations());
    const client = await openWs(url, { 'x-grant': 'g-r' });
    client.send({ type: 'subscribe', channel: 'room', since: `${created.epoch}:0` });
    await vi.waitFor(() => expect(client.received).toHaveLength(3));
    expect(client.received.map((m) => m.event ?? m.type)).toEqual([
      'subscribed',
      'message.deleted',
      'message.created',
    ]);
    expect(JSON.stringify(client.received)).not.toContain('secret');
  });

  it('redacts by offset while another process publishes and trims the history', async () => {
    const prefix = `t${++prefixes}:`;
    const { hub } = hubOnRedis(prefix, 30);
    const { hub: other } = hubOnRedis(prefix, 30);
    const sent = new Map<number, number>(); // offset → n
    let publishing = true;
    const publishAll = async (from: number, to: number) => {
      for (let n = from; n < to; n++) {
        const m = await other.publish('log', 'created', { n });
        sent.set(m.offset, n);
      }
      publishing = false;
    };
    const toDeleted = (m: HubMessage) =>
      m.event === 'created'
        ? { event: 'deleted', data: { n: (m.data as { n: number }).n } }
        : undefined;
    await publishAll(0, 30);
    publishing = true;
    const redactWhilePublishing = async () => {
      let total = 0;
      while (publishing) total += await hub.redact('log', toDeleted);
      return total;
    };
    const [redacted] = await Promise.all([redactWhilePublishing(), publishAll(30, 90)]);
    expect(redacted).toBeGreaterThan(0);
    const { events } = await hub.replay('log', { epoch: 'none', offset: 0 });
    expect(events).toHaveLength(30);
    for (const [i, m] of events.entries()) {
      // each entry kept its place and its own payload: never another offset's
      if (i > 0) expect(m.offset).toBe(events[i - 1]!.offset + 1);
      expect((m.data as { n: number }).n).toBe(sent.get(m.offset));
      expect(['created', 'deleted']).toContain(m.event);
    }
  });
});
