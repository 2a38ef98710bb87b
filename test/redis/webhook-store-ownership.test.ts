import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createRevocations, type Revocations } from '../../src/auth/revocations.js';
import type { HttpError } from '../../src/core/errors/errors.js';
import { createHub, type Hub } from '../../src/realtime/hub.js';
import { RedisBroker } from '../../src/redis/broker.js';
import { RedisWebhookStore } from '../../src/redis/webhook-store.js';
import { createWebhookSender, type WebhookSender } from '../../src/webhook/sender.js';
import type { WebhookSenderOptions } from '../../src/webhook/sender-options.js';
import type { WebhookEndpoint } from '../../src/webhook/store.js';
import { closeAll, listen } from '../helpers/http.js';
import { hasRedis, type RedisServer, startRedis } from '../helpers/redis.js';

describe.skipIf(!hasRedis)('RedisWebhookStore: owners and credentials (real redis-server)', () => {
  let redis: RedisServer;
  let prefixes = 0;
  const senders: WebhookSender[] = [];
  const buses: Revocations[] = [];
  const hubs: Hub[] = [];
  const brokers: RedisBroker[] = [];

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterEach(async () => {
    await Promise.all(senders.splice(0).map((s) => s.close()));
    for (const bus of buses.splice(0)) bus.close();
    for (const hub of hubs.splice(0)) await hub.close();
    for (const broker of brokers.splice(0)) await broker.close();
    await closeAll();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  const newPrefix = () => `who${++prefixes}:`;
  const storeOn = (prefix: string) => new RedisWebhookStore({ client: redis.client(), prefix });

  function sender(prefix: string, options: WebhookSenderOptions = {}) {
    const s = createWebhookSender({
      store: storeOn(prefix),
      allowHttp: true,
      allowPrivate: true,
      schedule: [60_000],
      jitter: 0,
      pollInterval: '20ms',
      revocations: createRevocations(),
      ...options,
    });
    senders.push(s);
    return s;
  }

  /** A revocation bus per "process", over a RedisBroker hub on the shared Redis. */
  function busOverRedis(prefix: string): Revocations {
    const broker = new RedisBroker({ client: redis.client(), prefix: `${prefix}hub:` });
    brokers.push(broker);
    const hub = createHub({ broker });
    hubs.push(hub);
    const bus = createRevocations({ transport: hub });
    buses.push(bus);
    return bus;
  }

  const endpoint = (id: string, over: Partial<WebhookEndpoint> = {}): WebhookEndpoint => ({
    id,
    url: `https://hooks.example.com/${id}`,
    owner: 'mallory',
    secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
    consecutiveFailures: 0,
    createdAt: Date.now(),
    ...over,
  });

  it('caps an owner and refuses a URL twice, through the sender (422, 409)', async () => {
    const s = sender(newPrefix(), { maxEndpointsPerOwner: 3 });
    for (let i = 0; i < 3; i++) {
      await s.addEndpoint({ url: `http://127.0.0.1:1/hook/${i}`, owner: 'mallory' });
    }
    const full = await s
      .addEndpoint({ url: 'http://127.0.0.1:1/hook/3', owner: 'mallory' })
      .catch((e: HttpError) => e);
    expect((full as HttpError).status).toBe(422);
    const twice = await s
      .addEndpoint({ url: 'http://127.0.0.1:1/hook/0', owner: 'mallory' })
      .catch((e: HttpError) => e);
    expect((twice as HttpError).status).toBe(409);
    expect(await s.listEndpoints({ owner: 'mallory' })).toHaveLength(3);
    await s.addEndpoint({ url: 'http://127.0.0.1:1/hook/0', owner: 'alice' });
    expect((await s.listEndpoints({ owner: 'alice' })).map((e) => e.owner)).toEqual(['alice']);
  });

  it('keeps the cap under a concurrent burst from two store instances', async () => {
    const prefix = newPrefix();
    const [one, two] = [storeOn(prefix), storeOn(prefix)];
    const burst = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        (i % 2 ? one : two).addEndpoint(
          endpoint(`ep_${i}`, { url: `https://hooks.example.com/${i % 25}` }),
          { maxPerOwner: 10 },
        ),
      ),
    );
    expect(burst.filter((r) => r === 'added')).toHaveLength(10);
    expect(new Set(burst)).toEqual(new Set(['added', 'duplicate', 'full']));
    const listed = await one.listEndpoints({ owner: 'mallory' });
    expect(listed).toHaveLength(10);
    expect(new Set(listed.map((e) => e.url)).size).toBe(10);
    expect(await two.listEndpoints()).toHaveLength(10);
  });

  it('indexes by credential, unindexes on removal, and never resurrects a removed endpoint', async () => {
    const store = storeOn(newPrefix());
    await store.addEndpoint(endpoint('ep_a', { credentialIds: ['grant:g1', 'api_key:k1'] }), {
      maxPerOwner: 1,
    });
    await store.addEndpoint(endpoint('ep_b', { owner: 'bob', credentialIds: ['grant:g2'] }), {
      maxPerOwner: 1,
    });
    expect((await store.listEndpoints({ credentialId: 'api_key:k1' })).map((e) => e.id)).toEqual([
      'ep_a',
    ]);
    expect(await store.listEndpoints({ owner: 'mallory', credentialId: 'grant:g2' })).toEqual([]);
    expect(await store.saveEndpoint({ ...endpoint('ep_a'), consecutiveFailures: 2 })).toBe(true);
    expect((await store.getEndpoint('ep_a'))?.credentialIds).toEqual(['grant:g1', 'api_key:k1']);
    expect(await store.deleteEndpoint('ep_a')).toBe(true);
    expect(await store.deleteEndpoint('ep_a')).toBe(false); // idempotent
    expect(await store.saveEndpoint(endpoint('ep_a'))).toBe(false);
    expect(await store.getEndpoint('ep_a')).toBeUndefined();
    expect(await store.listEndpoints({ credentialId: 'grant:g1' })).toEqual([]);
    expect(await store.listEndpoints({ owner: 'mallory' })).toEqual([]);
    // the owner's place and URL are free again
    expect(await store.addEndpoint(endpoint('ep_c'), { maxPerOwner: 1 })).toBe('added');
  });

  it('a revocation in one process removes the endpoint for both; nothing is delivered', async () => {
    const prefix = newPrefix();
    const ids: string[] = [];
    const controlIds: string[] = [];
    const target = await listen((req, res) => {
      req.resume();
      req.on('end', () => {
        (req.url === '/control' ? controlIds : ids).push(String(req.headers['webhook-id']));
        res.writeHead(204).end();
      });
    });
    const [busA, busB] = [busOverRedis(prefix), busOverRedis(prefix)];
    // both buses subscribed: a probe from A is heard by B
    const heardByB: string[] = [];
    busB.listen((id) => heardByB.push(id));
    await vi.waitFor(
      async () => {
        await busA.revoke(['probe:1']);
        expect(heardByB).toContain('probe:1');
      },
      { timeout: 5000, interval: 50 },
    );
    const a = sender(prefix, { revocations: busA });
    const b = sender(prefix, { revocations: busB });
    const registered = await b.addEndpoint({
      url: `${target.url}/hook`,
      owner: 'alice',
      credentialIds: ['grant:g1'],
    });
    // the control: an endpoint of no credential on the same receiver, sent every message too
    const control = await b.addEndpoint({ url: `${target.url}/control` });
    const sent: string[] = [];
    /** Sends through `s`: only the control is sent to. */
    const sendVia = async (s: WebhookSender, text: string) => {
      const queued = await s.send('message.created', { text });
      expect(queued.map((d) => d.endpointId)).toEqual([control.id]);
      sent.push(...queued.map((d) => d.id));
    };
    // B heard nothing yet, A is the process that revokes
    await busA.revoke(['grant:g1']);
    // process A stops sending to it at once, before the store has it removed
    await sendVia(a, 'at once');
    await vi.waitFor(async () => expect(await a.getEndpoint(registered.id)).toBeUndefined());
    await vi.waitFor(() => expect(heardByB).toContain('grant:g1'));
    for (const s of [a, b]) await sendVia(s, 'after');
    expect(await b.listEndpoints({ owner: 'alice' })).toEqual([]);
    // every delivery those sends queued has arrived (the control's): one to the revoked
    // endpoint, queued by the same sends, would have arrived with them
    await vi.waitFor(() => expect(new Set(controlIds)).toEqual(new Set(sent)), {
      timeout: 5_000,
    });
    expect(ids).toEqual([]);
  });

  it('a revocation heard only by the other process still removes the endpoint', async () => {
    const prefix = newPrefix();
    const [busA, busB] = [busOverRedis(prefix), busOverRedis(prefix)];
    const heardByB: string[] = [];
    busB.listen((id) => heardByB.push(id));
    await vi.waitFor(
      async () => {
        await busA.revoke(['probe:2']);
        expect(heardByB).toContain('probe:2');
      },
      { timeout: 5000, interval: 50 },
    );
    // the sender of process B alone: the revocation is announced in process A
    const b = sender(prefix, { revocations: busB });
    const registered = await b.addEndpoint({
      url: 'http://127.0.0.1:1/hook',
      credentialIds: ['api_key:k1'],
    });
    await busA.revoke(['api_key:k1']);
    await vi.waitFor(async () => expect(await b.getEndpoint(registered.id)).toBeUndefined(), {
      timeout: 5000,
    });
    expect(await storeOn(prefix).listEndpoints({ credentialId: 'api_key:k1' })).toEqual([]);
  });
});
