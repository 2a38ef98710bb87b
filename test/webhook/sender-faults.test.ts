// Receivers that hang, reset or answer slowly, over real sockets: what the sender records
// (docs/webhooks.md: network errors and timeouts retried with the same webhook-id, the last
// failure dead-lettered and listed by `listDeliveries({ state: 'failed' })`, at least once).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryWebhookStore } from '../../src/webhook/memory-store.js';
import type { WebhookSenderOptions } from '../../src/webhook/sender-options.js';
import { closeAll, listen } from '../helpers/http.js';
import { closeSenders, sender as fastSender, settled } from './sender-fixtures.js';

/** A receiver whose n-th request (from 0) `answer` handles; it counts requests per webhook-id. */
async function receiver(answer: (n: number, req: IncomingMessage, res: ServerResponse) => void) {
  const ids: string[] = [];
  const listening = await listen((req, res) => {
    req.resume();
    req.on('end', () => {
      ids.push(String(req.headers['webhook-id']));
      answer(ids.length - 1, req, res);
    });
  });
  return { url: `${listening.url}/hook`, ids };
}

afterEach(async () => {
  await closeSenders();
  await closeAll();
});

const TIMEOUT = 300;

/** The suites' sender with a short attempt timeout. */
const sender = (options: WebhookSenderOptions = {}) =>
  fastSender({ timeout: `${TIMEOUT}ms`, ...options });

describe('webhook sender: receivers that misbehave', () => {
  it('dead-letters a receiver that never answers: every attempt a timeout, listed as failed', async () => {
    const hanging = await receiver(() => {});
    const { sender: s, events } = sender();
    await s.addEndpoint({ url: hanging.url });
    const [queued] = await s.send('ping', {});
    const done = await settled(s, queued!.id);
    expect(done.state).toBe('failed');
    expect(done.attempts.map((a) => a.error)).toEqual(['timeout', 'timeout', 'timeout']);
    for (const attempt of done.attempts) {
      expect(attempt.status).toBeUndefined();
      expect(attempt.durationMs).toBeGreaterThanOrEqual(TIMEOUT - 20);
      expect(attempt.durationMs).toBeLessThan(TIMEOUT + 1000);
    }
    expect(hanging.ids).toEqual([queued!.id, queued!.id, queued!.id]);
    expect((await s.listDeliveries({ state: 'failed' })).map((d) => d.id)).toEqual([queued!.id]);
    expect(events.filter((e) => e.type === 'dead-letter')).toHaveLength(1);
  });

  it('retries connection resets, delivering once the receiver answers, or dead-lettering', async () => {
    const recovering = await receiver((n, req, res) =>
      n < 2 ? req.socket.destroy() : res.writeHead(204).end(),
    );
    const broken = await receiver((_n, req) => req.socket.destroy());
    const { sender: s } = sender();
    await s.addEndpoint({ url: recovering.url });
    await s.addEndpoint({ url: broken.url });
    const queued = await s.send('ping', {});
    const [delivered, failed] = await Promise.all(queued.map((d) => settled(s, d.id)));
    expect(delivered!.state).toBe('delivered');
    expect(delivered!.attempts.map((a) => a.status ?? 'error')).toEqual(['error', 'error', 204]);
    expect(delivered!.attempts[0]!.error).toMatch(/\S/);
    expect(failed!.state).toBe('failed');
    expect(failed!.attempts).toHaveLength(3);
    expect(failed!.attempts.every((a) => a.status === undefined && a.error)).toBe(true);
    expect(recovering.ids).toHaveLength(3);
    expect(broken.ids).toHaveLength(3);
  });

  it('delivers a slow answer within the timeout once, and sends it no second time', async () => {
    const slow = await receiver((_n, _req, res) => {
      setTimeout(() => res.writeHead(200).end(), TIMEOUT * 0.6);
    });
    // slow, yet well within its timeout even on a loaded machine (a loaded dry run of the
    // mutation tests once took the 180 ms answer past a 300 ms timeout)
    const { sender: s } = sender({ timeout: TIMEOUT * 10 });
    await s.addEndpoint({ url: slow.url });
    const queued = [];
    for (let i = 0; i < 4; i++) queued.push(...(await s.send('ping', { i })));
    const done = await Promise.all(queued.map((d) => settled(s, d.id)));
    expect(done.map((d) => [d.state, d.attempts.length])).toEqual(
      queued.map(() => ['delivered', 1]),
    );
    await new Promise((resolve) => setTimeout(resolve, TIMEOUT * 2));
    expect(slow.ids.sort()).toEqual(queued.map((d) => d.id).sort());
  });

  it('takes a 2xx whose body never ends as delivered, within the timeout (no lease overrun)', async () => {
    const timers: NodeJS.Timeout[] = [];
    const dribbling = await receiver((_n, _req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      // one byte every 50 ms, for ever: each chunk restarts undici's own bodyTimeout
      timers.push(setInterval(() => res.write('.'), 50));
    });
    try {
      const { sender: s } = sender();
      await s.addEndpoint({ url: dribbling.url });
      const [queued] = await s.send('ping', {});
      const started = Date.now();
      const done = await settled(s, queued!.id);
      expect(done.state).toBe('delivered');
      expect(done.attempts).toHaveLength(1);
      expect(Date.now() - started).toBeLessThan(TIMEOUT * 4);
      expect(dribbling.ids).toEqual([queued!.id]);
    } finally {
      for (const timer of timers) clearInterval(timer);
    }
  });

  it('takes the status of an answer with a large body or a 1xx first, reading no more than 64 KiB', async () => {
    const sockets: { large?: number; informational?: number } = {};
    const large = await receiver((_n, req, res) => {
      sockets.large = (sockets.large ?? 0) + 1;
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      // 4 MiB offered: the sender gives the connection up past 64 KiB instead of reading it all
      res.end(Buffer.alloc(4 * 1024 * 1024, 1));
      req.socket.on('close', () => sockets.large!--);
    });
    const informational = await receiver((_n, _req, res) => {
      res.writeProcessing();
      res.writeHead(202, { 'retry-after': '120' }).end('accepted');
    });
    const { sender: s, events } = sender();
    const [toLarge] = await Promise.all([
      s.addEndpoint({ url: large.url }),
      s.addEndpoint({ url: informational.url }),
    ]);
    const queued = await s.send('ping', {});
    const done = await Promise.all(queued.map((d) => settled(s, d.id)));
    const byEndpoint = new Map(done.map((d) => [d.endpointId, d]));
    expect(byEndpoint.get(toLarge!.id)?.attempts.map((a) => [a.status, a.error])).toEqual([
      [200, undefined],
    ]);
    expect(done.map((d) => d.state)).toEqual(['delivered', 'delivered']);
    expect(done.flatMap((d) => d.attempts.map((a) => a.status)).sort()).toEqual([200, 202]);
    expect(events.filter((e) => e.type === 'delivered')).toHaveLength(2);
    await vi.waitFor(() => expect(sockets.large).toBe(0)); // the large answer's connection dropped
  });

  it('close() waits for a batch claimed while it was called, and records every attempt', async () => {
    const store = new MemoryWebhookStore();
    const claim = store.claim.bind(store);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let held = false;
    // the first non-empty claim answers only once close() has been called
    store.claim = async (request) => {
      const batch = await claim(request);
      if (batch.length > 0 && !held) {
        held = true;
        await gate;
      }
      return batch;
    };
    const ok = await receiver((_n, _req, res) => res.writeHead(204).end());
    const { sender: s } = sender({ store });
    await s.addEndpoint({ url: ok.url });
    const [queued] = await s.send('ping', {});
    await vi.waitFor(() => expect(held).toBe(true));
    // a message sent meanwhile wakes the loop during that claim: close() still waits for it
    const [meanwhile] = await s.send('ping', {});
    const closing = s.close();
    release();
    await closing;
    expect((await store.getDelivery(queued!.id))?.state).toBe('delivered');
    expect(ok.ids).toEqual([queued!.id]);
    expect((await store.getDelivery(meanwhile!.id))?.state).toBe('pending');
  });

  it('keeps what a closing sender did not finish: another sender on the store delivers it', async () => {
    const store = new MemoryWebhookStore();
    let hung = 0;
    const target = await receiver((n, _req, res) => {
      if (n === 0) hung++;
      else res.writeHead(204).end(); // the first attempt hangs until the timeout
    });
    const { sender: first } = sender({ store, schedule: ['50ms'] });
    await first.addEndpoint({ url: target.url });
    const [queued] = await first.send('ping', {});
    await vi.waitFor(() => expect(hung).toBe(1));
    await first.close(); // waits for the attempt in flight: a timeout, recorded as a retry
    expect((await store.getDelivery(queued!.id))?.state).toBe('pending');
    const { sender: second } = sender({ store, schedule: ['50ms'] });
    const done = await settled(second, queued!.id);
    expect(done.state).toBe('delivered');
    expect(done.attempts.map((a) => a.status ?? a.error)).toEqual(['timeout', 204]);
    expect(target.ids).toEqual([queued!.id, queued!.id]);
  });
});
