import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { RedisWebhookStore } from '../../src/redis/webhook-store.js';
import { createWebhookSender, type WebhookSender } from '../../src/webhook/sender.js';
import type { WebhookSenderOptions } from '../../src/webhook/sender-options.js';
import { closeAll, listen } from '../helpers/http.js';
import { hasRedis, type RedisServer, startRedis } from '../helpers/redis.js';

describe.skipIf(!hasRedis)('RedisWebhookStore (real redis-server)', () => {
  let redis: RedisServer;
  let prefixes = 0;
  const senders: WebhookSender[] = [];

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterEach(async () => {
    await Promise.all(senders.splice(0).map((s) => s.close()));
    await closeAll();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  const newPrefix = () => `wh${++prefixes}:`;
  const storeOn = (prefix: string) => new RedisWebhookStore({ client: redis.client(), prefix });

  function sender(prefix: string, options: WebhookSenderOptions = {}) {
    const s = createWebhookSender({
      store: storeOn(prefix),
      allowHttp: true,
      allowPrivate: true,
      schedule: ['20ms', '20ms'],
      jitter: 0,
      pollInterval: '50ms',
      ...options,
    });
    senders.push(s);
    return s;
  }

  async function receiver(
    answer: (n: number, req: IncomingMessage, res: ServerResponse) => void = (_n, _q, res) =>
      res.writeHead(204).end(),
  ) {
    const bodies: string[] = [];
    const ids: string[] = [];
    const listening = await listen((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => {
        body += chunk;
      });
      req.on('end', () => {
        bodies.push(body);
        ids.push(String(req.headers['webhook-id']));
        answer(bodies.length - 1, req, res);
      });
    });
    return { url: `${listening.url}/hook`, bodies, ids };
  }

  const settled = (s: WebhookSender, id: string) =>
    vi.waitFor(
      async () => {
        const d = await s.getDelivery(id);
        expect(d?.state).not.toBe('pending');
        return d!;
      },
      { timeout: 8000, interval: 20 },
    );

  it('keeps endpoints and delivers, retries and dead-letters through Redis', async () => {
    const prefix = newPrefix();
    const ok = await receiver((n, _q, res) => res.writeHead(n === 0 ? 500 : 204).end());
    const broken = await receiver((_n, _q, res) => res.writeHead(503).end());
    const s = sender(prefix);
    const a = await s.addEndpoint({ url: ok.url });
    await s.addEndpoint({ url: broken.url });
    expect((await storeOn(prefix).listEndpoints()).map((e) => e.url).sort()).toEqual(
      [ok.url, broken.url].sort(),
    );
    const queued = await s.send('ping', { n: 1 });
    const done = await Promise.all(queued.map((d) => settled(s, d.id)));
    const byEndpoint = Object.fromEntries(done.map((d) => [d.endpointId, d]));
    expect(byEndpoint[a.id]?.state).toBe('delivered');
    expect(byEndpoint[a.id]?.attempts.map((x) => x.status)).toEqual([500, 204]);
    expect(done.find((d) => d.endpointId !== a.id)?.state).toBe('failed');
    expect(broken.bodies).toHaveLength(3);
    expect((await s.listDeliveries({ state: 'failed' })).map((d) => d.endpointId)).not.toContain(
      a.id,
    );
  });

  it('shares the queue between two senders: each message delivered once, the per-endpoint bound kept', async () => {
    const prefix = newPrefix();
    let open = 0;
    let most = 0;
    const target = await receiver((_n, _q, res) => {
      open++;
      most = Math.max(most, open);
      setTimeout(() => {
        open--;
        res.writeHead(204).end();
      }, 10);
    });
    const [one, two] = [
      sender(prefix, { perEndpointConcurrency: 1 }),
      sender(prefix, { perEndpointConcurrency: 1 }),
    ];
    await one!.addEndpoint({ url: target.url });
    const queued = [];
    for (let i = 0; i < 20; i++) queued.push(...(await (i % 2 ? one! : two!).send('n', { i })));
    await Promise.all(queued.map((d) => settled(one!, d.id)));
    expect(new Set(target.ids).size).toBe(20);
    expect(target.ids).toHaveLength(20);
    expect(most).toBe(1);
  });

  it('delivers in order per endpoint across senders when ordered', async () => {
    const prefix = newPrefix();
    const target = await receiver((n, _q, res) => res.writeHead(n === 1 ? 500 : 204).end());
    const [one, two] = [sender(prefix, { ordered: true }), sender(prefix, { ordered: true })];
    await one!.addEndpoint({ url: target.url });
    const queued = [];
    for (let i = 1; i <= 6; i++) queued.push(...(await (i % 2 ? one! : two!).send('n', { i })));
    await Promise.all(queued.map((d) => settled(one!, d.id)));
    expect(target.bodies.map((b) => JSON.parse(b).data.i)).toEqual([1, 2, 2, 3, 4, 5, 6]);
  });

  it('takes over the deliveries of a sender that died once their lease runs out', async () => {
    const prefix = newPrefix();
    const target = await receiver();
    const setup = sender(prefix);
    await setup.addEndpoint({ url: target.url });
    await setup.close();
    // a "sender" that claims and then dies: enqueue and claim by hand, never update
    const store = storeOn(prefix);
    const endpoint = (await store.listEndpoints())[0]!;
    const now = Date.now();
    await store.enqueue([
      {
        id: 'msg_orphan',
        endpointId: endpoint.id,
        event: 'n',
        body: '{"event":"n"}',
        state: 'pending',
        attempts: [],
        nextAttemptAt: now,
        createdAt: now,
      },
    ]);
    const claimed = await store.claim({
      now,
      limit: 10,
      leaseMs: 300,
      perEndpoint: 2,
      ordered: false,
    });
    expect(claimed.map((d) => d.id)).toEqual(['msg_orphan']);
    const survivor = sender(prefix);
    await vi.waitFor(() => expect(target.ids).toEqual(['msg_orphan']), { timeout: 5000 });
    expect((await settled(survivor, 'msg_orphan')).state).toBe('delivered');
  });

  it('drops the pending deliveries of a removed endpoint', async () => {
    const prefix = newPrefix();
    const target = await receiver((_n, _q, res) => res.writeHead(500).end());
    const s = sender(prefix, { schedule: [60_000] });
    const endpoint = await s.addEndpoint({ url: target.url });
    const [d] = await s.send('n', {});
    await vi.waitFor(async () => expect((await s.getDelivery(d!.id))?.attempts).toHaveLength(1));
    expect(await s.removeEndpoint(endpoint.id)).toBe(true);
    expect(await s.getDelivery(d!.id)).toBeUndefined();
    expect(await storeOn(prefix).nextDue()).toBeUndefined();
  });
});
