// The sender's edges over real sockets on 127.0.0.1: its option messages and defaults, the
// secrets it signs with around a rotation (injected clock), attempt events, failure counts,
// deliveries of an endpoint disabled meanwhile, store failures, and the delivery loop's
// timer (a long pollInterval, so that only the loop's own wake-ups can deliver in time).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Agent } from 'undici';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createRevocations } from '../../src/auth/revocations.js';
import { MemoryWebhookStore } from '../../src/webhook/memory-store.js';
import { createWebhookSender } from '../../src/webhook/sender.js';
import type { WebhookClaim, WebhookDelivery } from '../../src/webhook/store.js';
import { closeAll, listen } from '../helpers/http.js';
import { captureLogger } from '../helpers/logger.js';
import { closeSenders, keep, sender, settled } from './sender-fixtures.js';

interface Seen {
  url: string;
  headers: IncomingMessage['headers'];
  port: number;
}

/** A receiver on 127.0.0.1: `answer` handles its n-th request (from 0). */
async function receiver(
  answer: (n: number, req: IncomingMessage, res: ServerResponse) => void = (_n, _r, res) =>
    res.writeHead(204).end(),
) {
  const seen: Seen[] = [];
  const sockets = new Set<Socket>();
  const listening = await listen((req, res) => {
    req.resume();
    req.on('end', () => {
      seen.push({ url: req.url ?? '', headers: req.headers, port: req.socket.remotePort ?? 0 });
      answer(seen.length - 1, req, res);
    });
  });
  listening.server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  return { url: `${listening.url}/hook`, port: listening.port, seen, sockets };
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await closeSenders();
  for (const cleanup of cleanups.splice(0)) await cleanup();
  await closeAll();
});

/** A store that records what the loop asks of it. */
function recordingStore() {
  const store = new MemoryWebhookStore();
  const claims: WebhookClaim[] = [];
  const claim = store.claim.bind(store);
  store.claim = (request) => {
    claims.push(request);
    return claim(request);
  };
  return { store, claims };
}

describe('createWebhookSender: option messages', () => {
  const message = (options: object) => {
    try {
      keep(createWebhookSender(options as never));
    } catch (err) {
      return (err as Error).message;
    }
    return undefined;
  };

  it('names the option and what it must be', () => {
    const cases: [object, string][] = [
      [{ jitter: -0.1 }, '`jitter` must be between 0 and 1'],
      [{ jitter: 1.01 }, '`jitter` must be between 0 and 1'],
      [{ jitter: Number.NaN }, '`jitter` must be between 0 and 1'],
      [{ jitter: '0.5' }, '`jitter` must be between 0 and 1'],
      [{ userAgent: 5 }, '`userAgent` must be a string without a line break'],
      [{ userAgent: 'a\nb' }, '`userAgent` must be a string without a line break'],
      [
        { userAgent: 'a\u0001b' },
        '`userAgent` must be a header value (tab, space, visible ASCII, 0x80–0xFF): no control character',
      ],
      [{ ordered: 'yes' }, '`ordered` must be a boolean'],
      [{ revocations: {} }, '`revocations` must be a revocation bus'],
      [{ perEndpointConcurrency: 0 }, '`perEndpointConcurrency` must be an integer, at least 1'],
      [{ allowHttp: 1 }, '`allowHttp` must be a boolean'],
      [{ allowPrivate: 1 }, '`allowPrivate` must be a boolean'],
      [{ lookup: 'dns' }, '`lookup` must be a function'],
      [{ disableAfter: -1 }, '`disableAfter` must be an integer, at least 0'],
      [{ rotationOverlapMs: 0 }, '`rotationOverlapMs` must be milliseconds, at least 1'],
      [{ onEvent: 'log' }, '`onEvent` must be a function'],
      [{ pollInterval: 0 }, '`pollInterval` must be milliseconds, at least 1'],
      [{ now: 5 }, '`now` must be a function'],
      [{ maxEndpointsPerOwner: 0 }, '`maxEndpointsPerOwner` must be an integer, at least 1'],
      [{ schedule: 'fast' }, '`schedule` must be an array of milliseconds, 0 or more'],
    ];
    for (const [options, text] of cases) {
      expect(message(options), JSON.stringify(options)).toBe(`createWebhookSender(): ${text}`);
    }
  });

  it('takes the bounds: a jitter of 0 or 1, disableAfter 0', () => {
    for (const options of [
      { jitter: 0 },
      { jitter: 1 },
      { disableAfter: 0 },
      { userAgent: 'x/1' },
    ]) {
      expect(message(options), JSON.stringify(options)).toBeUndefined();
    }
  });
});

describe('createWebhookSender: defaults', () => {
  it('retries on the Standard Webhooks schedule: the first retry 5 seconds later', async () => {
    const T = Date.now(); // frozen: the memory store files retries by the real clock
    const target = await receiver((_n, _r, res) => res.writeHead(500).end());
    const { sender: s } = sender({ schedule: undefined, now: () => T });
    await s.addEndpoint({ url: target.url });
    const [queued] = await s.send('ping', {});
    await vi.waitFor(async () =>
      expect((await s.getDelivery(queued!.id))?.attempts).toHaveLength(1),
    );
    const delivery = await s.getDelivery(queued!.id);
    expect(delivery).toMatchObject({ state: 'pending', nextAttemptAt: T + 5_000 });
  });

  it('refuses http: unless allowHttp, even with allowPrivate', async () => {
    const { sender: s } = sender({ allowHttp: undefined });
    const err = await s.addEndpoint({ url: 'http://127.0.0.1/hook' }).catch((e) => e);
    expect(err).toMatchObject({ code: 'ERR_WEBHOOK_ADDRESS', reason: 'insecure-scheme' });
  });

  it('is not ordered: a delivery waiting for a retry does not hold back the next one', async () => {
    const target = await receiver((n, _r, res) => res.writeHead(n === 0 ? 500 : 204).end());
    const { sender: s } = sender({ schedule: [60_000] });
    await s.addEndpoint({ url: target.url });
    const [first] = await s.send('ping', { i: 1 });
    await vi.waitFor(() => expect(target.seen).toHaveLength(1));
    const [second] = await s.send('ping', { i: 2 });
    expect((await settled(s, second!.id)).state).toBe('delivered');
    expect((await s.getDelivery(first!.id))?.state).toBe('pending');
  });

  it('resolves host names with the lookup given, when registering and when connecting', async () => {
    const target = await receiver();
    const asked: string[] = [];
    const lookup = async (hostname: string) => {
      asked.push(hostname);
      return [{ address: '127.0.0.1', family: 4 as const }];
    };
    const { sender: s } = sender({ lookup });
    await s.addEndpoint({ url: `http://hooks.example:${target.port}/hook` });
    const [queued] = await s.send('ping', {});
    expect((await settled(s, queued!.id)).state).toBe('delivered');
    expect(asked).toEqual(['hooks.example', 'hooks.example']);
    expect(target.seen[0]!.headers.host).toBe(`hooks.example:${target.port}`);
  });

  it('refuses a private address at connect time as final: one attempt, dead-lettered', async () => {
    const target = await receiver();
    let answers = ['93.184.215.14'];
    const lookup = async () => answers.map((address) => ({ address, family: 4 as const }));
    const { sender: s } = sender({ allowPrivate: false, lookup });
    await s.addEndpoint({ url: `http://rebind.example:${target.port}/hook` });
    answers = ['127.0.0.1'];
    const [queued] = await s.send('ping', {});
    const done = await settled(s, queued!.id);
    expect(done.state).toBe('failed');
    expect(done.attempts.map((a) => a.error)).toEqual(['address refused (private)']);
    expect(target.seen).toEqual([]);
  });

  it('fails an attempt whose connection is not made within the timeout (the lookup hangs)', async () => {
    let lookups = 0;
    const lookup = (_hostname: string) =>
      lookups++ === 0
        ? Promise.resolve([{ address: '127.0.0.1', family: 4 as const }])
        : new Promise<never>(() => {}); // at delivery, the resolver never answers
    const { sender: s } = sender({ lookup, timeout: '300ms', schedule: [] });
    await s.addEndpoint({ url: 'http://slow-dns.example:1/hook' });
    const [queued] = await s.send('ping', {});
    const done = await settled(s, queued!.id);
    expect(done.attempts.map((a) => a.error)).toEqual(['UND_ERR_CONNECT_TIMEOUT']);
    expect(done.attempts[0]!.durationMs).toBeLessThan(5_000);
  });

  it('sends through a dispatcher given instead of its own agent', async () => {
    const target = await receiver();
    const dispatcher = new Agent();
    cleanups.push(() => dispatcher.close());
    const { sender: s } = sender({ dispatcher, userAgent: 'custom/2' });
    await s.addEndpoint({ url: target.url });
    const [queued] = await s.send('ping', {});
    expect((await settled(s, queued!.id)).state).toBe('delivered');
    expect(target.seen[0]!.headers['user-agent']).toBe('custom/2');
  });

  it('close() waits for the attempt in flight on a dispatcher it did not make', async () => {
    const target = await receiver((_n, _r, res) => {
      setTimeout(() => res.writeHead(204).end(), 100);
    });
    const dispatcher = new Agent();
    cleanups.push(() => dispatcher.close());
    const store = new MemoryWebhookStore();
    const { sender: s } = sender({ store, dispatcher });
    await s.addEndpoint({ url: target.url });
    const [queued] = await s.send('ping', {});
    await vi.waitFor(() => expect(target.seen).toHaveLength(1));
    await s.close(); // the given dispatcher stays open: the sender waits for the attempt itself
    expect((await store.getDelivery(queued!.id))?.state).toBe('delivered');
  });

  it('reuses the connection: a short answer is read, not a reason to hang up', async () => {
    const target = await receiver((_n, _r, res) => res.writeHead(200).end('ok, thanks'));
    const { sender: s } = sender();
    await s.addEndpoint({ url: target.url });
    for (let i = 0; i < 2; i++) {
      const [queued] = await s.send('ping', { i });
      expect((await settled(s, queued!.id)).state).toBe('delivered');
    }
    expect(new Set(target.seen.map((r) => r.port)).size).toBe(1);
  });

  it('closes its own agent, and with it the connections it kept open', async () => {
    const target = await receiver();
    const { sender: s } = sender();
    await s.addEndpoint({ url: target.url });
    const [queued] = await s.send('ping', {});
    await settled(s, queued!.id);
    expect(target.sockets.size).toBe(1); // kept alive for the next delivery
    await s.close();
    // the agent keeps an idle connection 4 s: well before that, close() has ended it
    await vi.waitFor(() => expect(target.sockets.size).toBe(0), { timeout: 2000, interval: 10 });
  });

  it('refuses endpoints and messages once closed', async () => {
    const { sender: s } = sender();
    await s.close();
    await expect(s.addEndpoint({ url: 'http://127.0.0.1/' })).rejects.toThrow(
      new TypeError('The webhook sender is closed.'),
    );
    await expect(s.send('ping', {})).rejects.toThrow(
      new TypeError('The webhook sender is closed.'),
    );
    await s.close(); // twice is fine
  });
});

describe('createWebhookSender: secrets, events and failure counts', () => {
  it('signs with the previous secret until the overlap ends, to the millisecond', async () => {
    const T = Date.now(); // frozen: the memory store files retries by the real clock
    let t = T;
    const target = await receiver();
    const { sender: s } = sender({ now: () => t, rotationOverlapMs: 1_000 });
    const endpoint = await s.addEndpoint({ url: target.url });
    await s.rotateSecret(endpoint.id);
    const signatures = async () => {
      const [queued] = await s.send('ping', {});
      await settled(s, queued!.id);
      return String(target.seen.at(-1)!.headers['webhook-signature']).split(' ').length;
    };
    t = T + 999;
    expect(await signatures()).toBe(2);
    t = T + 1_000;
    expect(await signatures()).toBe(1);
  });

  it('reports each attempt, with its record', async () => {
    const target = await receiver((n, _r, res) => res.writeHead(n === 0 ? 503 : 201).end());
    const { sender: s, events } = sender();
    await s.addEndpoint({ url: target.url });
    const [queued] = await s.send('ping', {});
    await settled(s, queued!.id);
    const attempts = events.filter((e) => e.type === 'attempt');
    expect(attempts).toEqual([
      expect.objectContaining({
        type: 'attempt',
        attempt: expect.objectContaining({ status: 503 }),
      }),
      expect.objectContaining({
        type: 'attempt',
        attempt: expect.objectContaining({ status: 201 }),
      }),
    ]);
    expect(attempts.map((e) => (e as { delivery: WebhookDelivery }).delivery.id)).toEqual([
      queued!.id,
      queued!.id,
    ]);
  });

  it('counts dead letters in a row, and clears the count on a delivery', async () => {
    const target = await receiver((n, _r, res) => res.writeHead(n < 2 ? 400 : 204).end());
    const { sender: s } = sender({ disableAfter: 3 });
    const endpoint = await s.addEndpoint({ url: target.url });
    for (let i = 0; i < 2; i++) {
      const [queued] = await s.send('ping', { i });
      expect((await settled(s, queued!.id)).state).toBe('failed');
    }
    expect((await s.getEndpoint(endpoint.id))?.consecutiveFailures).toBe(2);
    const [ok] = await s.send('ping', {});
    expect((await settled(s, ok!.id)).state).toBe('delivered');
    await vi.waitFor(async () =>
      expect((await s.getEndpoint(endpoint.id))?.consecutiveFailures).toBe(0),
    );
    expect((await s.getEndpoint(endpoint.id))?.disabled).toBeUndefined();
  });

  it('never disables an endpoint with disableAfter 0', async () => {
    const target = await receiver((_n, _r, res) => res.writeHead(400).end());
    const { sender: s, events } = sender({ disableAfter: 0 });
    const endpoint = await s.addEndpoint({ url: target.url });
    for (let i = 0; i < 3; i++) {
      const [queued] = await s.send('ping', { i });
      expect((await settled(s, queued!.id)).state).toBe('failed');
    }
    await vi.waitFor(async () =>
      expect(await s.getEndpoint(endpoint.id)).toMatchObject({ consecutiveFailures: 3 }),
    );
    expect((await s.getEndpoint(endpoint.id))?.disabled).toBeUndefined();
    expect(events.filter((e) => e.type === 'endpoint-disabled')).toEqual([]);
  });

  it('records the outcome of an attempt whose endpoint was removed meanwhile, quietly', async () => {
    const logger = captureLogger();
    let remove!: () => Promise<unknown>;
    const target = await receiver((_n, _r, res) => {
      void remove().then(() => res.writeHead(400).end());
    });
    const { sender: s, events } = sender({ logger });
    const endpoint = await s.addEndpoint({ url: target.url });
    remove = () => s.removeEndpoint(endpoint.id);
    const [queued] = await s.send('ping', {});
    await vi.waitFor(() =>
      expect(events.filter((e) => e.type === 'dead-letter').map((e) => e.delivery.id)).toEqual([
        queued!.id,
      ]),
    );
    await s.close();
    expect(logger.errors).toEqual([]);
    expect(await s.getEndpoint(endpoint.id)).toBeUndefined();
  });

  it('dead-letters unsent what waited for an endpoint disabled meanwhile, counting nothing', async () => {
    let answer!: () => void;
    const target = await receiver((_n, _r, res) => {
      answer = () => res.writeHead(410).end();
    });
    const { sender: s, events } = sender({ ordered: true });
    const endpoint = await s.addEndpoint({ url: target.url });
    const [first] = await s.send('ping', { i: 1 });
    const [second] = await s.send('ping', { i: 2 });
    await vi.waitFor(() => expect(target.seen).toHaveLength(1));
    answer(); // 410: the endpoint is disabled, with the second delivery still waiting
    const done = [await settled(s, first!.id), await settled(s, second!.id)];
    expect(done.map((d) => [d.state, d.attempts.length])).toEqual([
      ['failed', 1],
      ['failed', 0],
    ]);
    expect(target.seen).toHaveLength(1);
    expect(await s.getEndpoint(endpoint.id)).toMatchObject({
      disabled: 'gone',
      consecutiveFailures: 1,
    });
    expect(events.filter((e) => e.type === 'endpoint-disabled')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'dead-letter')).toHaveLength(2);
  });
});

describe('createWebhookSender: an endpoint gone between claim and attempt', () => {
  it('dead-letters the delivery unsent, quietly', async () => {
    const logger = captureLogger();
    const store = new MemoryWebhookStore();
    const get = store.getEndpoint.bind(store);
    let gone: string | undefined;
    // the store answers as if the endpoint had been removed after the delivery was claimed
    store.getEndpoint = async (id) => (id === gone ? undefined : get(id));
    const target = await receiver();
    const { sender: s, events } = sender({ store, logger });
    const endpoint = await s.addEndpoint({ url: target.url });
    gone = endpoint.id;
    const [queued] = await s.send('ping', {});
    const done = await settled(s, queued!.id);
    expect([done.state, done.attempts]).toEqual(['failed', []]);
    expect(target.seen).toEqual([]);
    expect(events.filter((e) => e.type === 'dead-letter')).toHaveLength(1);
    expect(logger.errors).toEqual([]);
  });
});

describe('createWebhookSender: an endpoint whose credential is revoked', () => {
  it('sends nothing more for it while its removal is still under way', async () => {
    const store = new MemoryWebhookStore();
    const list = store.listEndpoints.bind(store);
    let release!: () => void;
    const removal = new Promise<void>((resolve) => {
      release = resolve;
    });
    // the removal by credential hangs: the retry falls due while the endpoint is still there
    store.listEndpoints = async (filter) => {
      if (filter?.credentialId !== undefined) await removal;
      return list(filter);
    };
    const target = await receiver((_n, _r, res) => res.writeHead(503).end());
    const revocations = createRevocations();
    // the retry a second later: the revocation comes first, even on a loaded machine
    const { sender: s } = sender({ store, revocations, schedule: [1_000, 1_000] });
    const endpoint = await s.addEndpoint({ url: target.url, credentialIds: ['api_key:k1'] });
    const [queued] = await s.send('ping', {});
    await vi.waitFor(() => expect(target.seen).toHaveLength(1));
    await revocations.revoke(['api_key:k1']);
    // the retry finds the endpoint revoked: it removes it (its deliveries with it), sends nothing
    await vi.waitFor(async () => expect(await s.getDelivery(queued!.id)).toBeUndefined(), {
      timeout: 5000,
    });
    expect(await s.getEndpoint(endpoint.id)).toBeUndefined();
    expect(target.seen).toHaveLength(1);
    release();
  });
});

describe('createWebhookSender: the store failing under it', () => {
  it('logs a failure to record an attempt, with the endpoint and the delivery', async () => {
    const logger = captureLogger();
    const store = new MemoryWebhookStore();
    const update = store.update.bind(store);
    let failures = 1;
    store.update = async (delivery) => {
      if (failures-- > 0) throw new Error('store down');
      return update(delivery);
    };
    const target = await receiver();
    const { sender: s } = sender({ store, logger });
    const endpoint = await s.addEndpoint({ url: target.url });
    const [queued] = await s.send('ping', {});
    await vi.waitFor(() => expect(logger.errors).toHaveLength(1));
    expect(logger.lines.filter((l) => l.level === 'error')).toEqual([
      {
        level: 'error',
        message: 'recording a webhook attempt failed',
        fields: {
          component: 'webhook',
          event: 'store.failed',
          endpointId: endpoint.id,
          deliveryId: queued!.id,
          err: new Error('store down'),
        },
      },
    ]);
  });

  it('logs a failed claim and looks again after pollInterval', async () => {
    const logger = captureLogger();
    const store = new MemoryWebhookStore();
    const claim = store.claim.bind(store);
    let fail = false;
    store.claim = async (request) => {
      if (fail) {
        fail = false;
        throw new Error('store down');
      }
      return claim(request);
    };
    const target = await receiver();
    const { sender: s } = sender({ store, logger, pollInterval: '50ms' });
    await s.addEndpoint({ url: target.url });
    fail = true;
    const [queued] = await s.send('ping', {});
    expect((await settled(s, queued!.id)).state).toBe('delivered');
    expect(logger.lines.filter((l) => l.level === 'error')).toEqual([
      {
        level: 'error',
        message: 'reading the webhook delivery store failed',
        fields: { component: 'webhook', event: 'store.failed', err: new Error('store down') },
      },
    ]);
  });

  it('keeps looking after a failed look that its own timer started', async () => {
    const logger = captureLogger();
    const { store, claims } = recordingStore();
    const claim = store.claim;
    let down = false;
    store.claim = async (request) => {
      if (down) {
        down = false;
        claims.push(request);
        throw new Error('store down');
      }
      return claim(request);
    };
    const { sender: s } = sender({ store, logger, pollInterval: '50ms' });
    // idle: every look after the first is the poll timer's
    await vi.waitFor(() => expect(claims.length).toBeGreaterThanOrEqual(2));
    down = true;
    await vi.waitFor(() => expect(logger.errors).toHaveLength(1));
    const failedAt = claims.length;
    await vi.waitFor(() => expect(claims.length).toBeGreaterThanOrEqual(failedAt + 2));
    await s.close();
  });

  it('works with a store that cannot tell when the next delivery is due', async () => {
    const logger = captureLogger();
    const store = new MemoryWebhookStore();
    (store as { nextDue?: unknown }).nextDue = undefined;
    const target = await receiver((n, _r, res) => res.writeHead(n === 0 ? 500 : 204).end());
    const { sender: s } = sender({ store, logger, pollInterval: '50ms' });
    await s.addEndpoint({ url: target.url });
    const [queued] = await s.send('ping', {});
    expect((await settled(s, queued!.id)).state).toBe('delivered');
    expect(logger.errors).toEqual([]);
  });
});

describe('the delivery loop', () => {
  it('claims with a lease of the timeout and 5 seconds, within its bounds', async () => {
    const { store, claims } = recordingStore();
    const target = await receiver();
    const { sender: s } = sender({
      store,
      timeout: 1_234,
      concurrency: 1,
      perEndpointConcurrency: 2,
    });
    await s.addEndpoint({ url: target.url });
    const queued = [...(await s.send('ping', {})), ...(await s.send('ping', {}))];
    for (const d of queued) await settled(s, d.id);
    expect(claims.length).toBeGreaterThan(0);
    for (const c of claims) {
      // never a claim for no delivery: with its one slot taken, the loop waits for the attempt
      expect(c).toMatchObject({ limit: 1, leaseMs: 6_234, perEndpoint: 2, ordered: false });
    }
  });

  it('keeps to its concurrency when woken during a claim', async () => {
    const store = new MemoryWebhookStore();
    const claim = store.claim.bind(store);
    let release: (() => void) | undefined;
    let holding = false;
    store.claim = async (request) => {
      const batch = await claim(request);
      if (batch.length > 0 && !holding) {
        holding = true; // the first batch is answered only once the second message is queued
        await new Promise<void>((resolve) => {
          release = resolve;
        });
      }
      return batch;
    };
    let open = 0;
    let most = 0;
    const target = await receiver((_n, _r, res) => {
      open++;
      most = Math.max(most, open);
      setTimeout(() => {
        open--;
        res.writeHead(204).end();
      }, 50);
    });
    const { sender: s } = sender({ store, concurrency: 1, pollInterval: 600_000 });
    await s.addEndpoint({ url: target.url });
    const [first] = await s.send('ping', { i: 1 });
    await vi.waitFor(() => expect(release).toBeDefined());
    const [second] = await s.send('ping', { i: 2 }); // wakes the loop during the claim
    release!();
    for (const d of [first!, second!]) expect((await settled(s, d.id)).state).toBe('delivered');
    expect(most).toBe(1);
  });

  it('sleeps until a retry falls due, however long the poll interval', async () => {
    const target = await receiver((n, _r, res) => res.writeHead(n === 0 ? 500 : 204).end());
    const { sender: s } = sender({ schedule: ['50ms'], pollInterval: 600_000 });
    await s.addEndpoint({ url: target.url });
    const [queued] = await s.send('ping', {});
    expect((await settled(s, queued!.id)).attempts.map((a) => a.status)).toEqual([500, 204]);
  });

  it('does not lose a wake-up that comes while it asks the store when the next delivery is due', async () => {
    // The first attempt (a 500) ends, and its retry is filed, while the loop is still waiting
    // for the store's nextDue answer, read before that: the answer is stale (no retry yet), so
    // the loop must look again for the wake-up that came meanwhile rather than sleep for the
    // poll interval.
    const { store } = recordingStore();
    const nextDue = store.nextDue.bind(store);
    const target = await receiver((n, _r, res) => res.writeHead(n === 0 ? 500 : 204).end());
    let stale = true;
    store.nextDue = async () => {
      const due = await nextDue();
      // the question asked while the first attempt is in flight (leased, no retry filed yet)
      const [inFlight] = await store.listDeliveries({ state: 'pending' });
      if (stale && inFlight?.attempts.length === 0) {
        stale = false;
        // hold the stale answer until the retry is filed and the attempt's end woke the loop
        await vi.waitFor(
          async () => {
            const [pending] = await store.listDeliveries({ state: 'pending' });
            expect(pending?.attempts).toHaveLength(1);
          },
          { timeout: 4_000, interval: 10 },
        );
        await new Promise((resolve) => setImmediate(resolve));
      }
      return due;
    };
    const { sender: s } = sender({ store, schedule: ['50ms'], pollInterval: 600_000 });
    await s.addEndpoint({ url: target.url });
    const [queued] = await s.send('ping', {});
    expect((await settled(s, queued!.id)).attempts.map((a) => a.status)).toEqual([500, 204]);
  });

  it('looks again at once for a retry that fell due while the store answered when it falls due', async () => {
    // Every nextDue answer arrives 80 ms after it was read: the retry (due 50 ms after the
    // first attempt) is not due at the loop's look, and is due by the time the answer comes.
    // It was not held back by a bound, only late: the loop must not sleep the poll interval.
    const { store } = recordingStore();
    const nextDue = store.nextDue.bind(store);
    store.nextDue = async () => {
      const due = await nextDue();
      await new Promise((resolve) => setTimeout(resolve, 80));
      return due;
    };
    const target = await receiver((n, _r, res) => res.writeHead(n === 0 ? 500 : 204).end());
    const { sender: s } = sender({ store, schedule: ['50ms'], pollInterval: 600_000 });
    await s.addEndpoint({ url: target.url });
    const [queued] = await s.send('ping', {});
    expect((await settled(s, queued!.id)).attempts.map((a) => a.status)).toEqual([500, 204]);
  });

  it('does not spin on an idle store: one look per poll interval', async () => {
    const { store, claims } = recordingStore();
    const { sender: s } = sender({ store, pollInterval: 100 });
    await vi.waitFor(() => expect(claims.length).toBeGreaterThanOrEqual(3), { timeout: 5000 });
    const seen = claims.length;
    await s.close();
    // 100 ms between looks: a spinning loop would have made hundreds by the third
    expect(seen).toBeLessThan(30);
  });

  it('does not spin on due deliveries held back by a concurrency bound', async () => {
    const T = Date.now(); // frozen: the memory store files retries by the real clock
    const { store, claims } = recordingStore();
    // a store that counts held-back deliveries as due (the interface allows it)
    store.nextDue = async () => {
      const pending = await store.listDeliveries({ state: 'pending' });
      return pending.length === 0 ? undefined : Math.min(...pending.map((d) => d.nextAttemptAt));
    };
    const held: (() => void)[] = [];
    const target = await receiver((_n, _r, res) => held.push(() => res.writeHead(204).end()));
    const { sender: s } = sender({
      store,
      now: () => T, // due exactly now: `until` is 0
      perEndpointConcurrency: 1,
      pollInterval: 600_000,
    });
    await s.addEndpoint({ url: target.url });
    const [first] = await s.send('ping', { i: 1 });
    await vi.waitFor(() => expect(held).toHaveLength(1));
    const [second] = await s.send('ping', { i: 2 }); // held back behind the first
    const before = claims.length;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(claims.length - before).toBeLessThan(10);
    held.shift()!();
    expect((await settled(s, first!.id)).state).toBe('delivered');
    await vi.waitFor(() => expect(held).toHaveLength(1));
    held.shift()!();
    expect((await settled(s, second!.id)).state).toBe('delivered');
  });

  it('looks again when woken during a look that found nothing', async () => {
    const store = new MemoryWebhookStore();
    const claim = store.claim.bind(store);
    let hold = false;
    let release!: () => void;
    let holding = false;
    store.claim = async (request) => {
      const batch = await claim(request);
      if (hold && batch.length === 0) {
        hold = false;
        holding = true;
        await new Promise<void>((resolve) => {
          release = resolve;
        });
      }
      return batch;
    };
    const target = await receiver();
    const { sender: s } = sender({
      store,
      pollInterval: 600_000,
      // the look after the first delivery finds nothing: it is held while the second is sent
      onEvent: (e) => {
        if (e.type === 'delivered' && !holding) hold = true;
      },
    });
    await s.addEndpoint({ url: target.url });
    const [first] = await s.send('ping', { i: 1 });
    await settled(s, first!.id);
    await vi.waitFor(() => expect(holding).toBe(true));
    const [second] = await s.send('ping', { i: 2 });
    release();
    expect((await settled(s, second!.id)).state).toBe('delivered');
  });
});
