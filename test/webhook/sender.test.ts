import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { WebhookAddressError } from '../../src/webhook/errors.js';
import { createWebhookSender } from '../../src/webhook/sender.js';
import { verifyWebhook } from '../../src/webhook/signature.js';
import { closeAll, listen } from '../helpers/http.js';
import { closeSenders, keep, sender, settled } from './sender-fixtures.js';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/** A local receiver: `answer` decides each reply (the n-th request, from 0). */
async function receiver(
  answer: (n: number, req: IncomingMessage, res: ServerResponse) => void = (_n, _req, res) =>
    res.writeHead(204).end(),
) {
  const received: Received[] = [];
  const listening = await listen((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
    });
    req.on('end', () => {
      received.push({ headers: req.headers, body, at: Date.now() });
      answer(received.length - 1, req, res);
    });
  });
  return { url: `${listening.url}/hook`, received, listening };
}

afterEach(async () => {
  await closeSenders();
  await closeAll();
});

describe('createWebhookSender', () => {
  it('POSTs a signed Standard Webhooks message that both verifiers accept', async () => {
    const target = await receiver();
    const { sender: s } = sender();
    const endpoint = await s.addEndpoint({ url: target.url });
    expect(endpoint.secrets[0]).toMatch(/^whsec_/);
    const [delivery] = await s.send('message.created', { id: 7, text: 'hi' });
    expect((await settled(s, delivery!.id)).state).toBe('delivered');

    const [got] = target.received;
    expect(got!.headers['content-type']).toBe('application/json');
    expect(got!.headers['user-agent']).toMatch(/^portico-webhooks\//);
    expect(got!.headers['webhook-id']).toBe(delivery!.id);
    const body = JSON.parse(got!.body);
    expect(body).toEqual({
      event: 'message.created',
      type: 'message.created',
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      data: { id: 7, text: 'hi' },
    });
    const headers = {
      'webhook-id': String(got!.headers['webhook-id']),
      'webhook-timestamp': String(got!.headers['webhook-timestamp']),
      'webhook-signature': String(got!.headers['webhook-signature']),
    };
    expect(new Webhook(endpoint.secrets[0]!).verify(got!.body, headers)).toEqual(body);
    expect(verifyWebhook(endpoint.secrets[0]!, got!.body, got!.headers).payload).toEqual(body);
  });

  it('retries 5xx, 408, 429 and 3xx with the same id, then delivers', async () => {
    const statuses = [500, 408, 302];
    const target = await receiver((n, _req, res) => {
      const status = statuses[n];
      if (status === 302) res.writeHead(302, { Location: 'http://127.0.0.1:1/' }).end();
      else res.writeHead(status ?? 200).end();
    });
    const { sender: s } = sender({ schedule: ['10ms', '10ms', '10ms'] });
    await s.addEndpoint({ url: target.url });
    const [queued] = await s.send('ping', {});
    const delivery = await settled(s, queued!.id);
    expect(delivery.state).toBe('delivered');
    expect(delivery.attempts.map((a) => a.status)).toEqual([500, 408, 302, 200]);
    expect(new Set(target.received.map((r) => r.headers['webhook-id']))).toEqual(
      new Set([queued!.id]),
    );
  });

  it('honours Retry-After over a shorter schedule', async () => {
    const target = await receiver((n, _req, res) =>
      n === 0 ? res.writeHead(429, { 'Retry-After': '1' }).end() : res.writeHead(200).end(),
    );
    const { sender: s } = sender({ schedule: ['10ms'] });
    await s.addEndpoint({ url: target.url });
    const [queued] = await s.send('ping', {});
    const delivery = await settled(s, queued!.id);
    expect(delivery.attempts.map((a) => a.status)).toEqual([429, 200]);
    expect(target.received[1]!.at - target.received[0]!.at).toBeGreaterThanOrEqual(950);
  });

  it('dead-letters after the last attempt, and stops at once on another 4xx', async () => {
    const failing = await receiver((_n, _req, res) => res.writeHead(503).end());
    const refusing = await receiver((_n, _req, res) => res.writeHead(400).end());
    const { sender: s, events } = sender({ schedule: ['10ms', '10ms'] });
    await s.addEndpoint({ url: failing.url });
    await s.addEndpoint({ url: refusing.url });
    const queued = await s.send('ping', {});
    const done = await Promise.all(queued.map((d) => settled(s, d.id)));
    expect(done.map((d) => d.state)).toEqual(['failed', 'failed']);
    expect(done.map((d) => d.attempts.length)).toEqual([3, 1]);
    expect(failing.received).toHaveLength(3);
    expect(refusing.received).toHaveLength(1);
    expect((await s.listDeliveries({ state: 'failed' })).map((d) => d.id).sort()).toEqual(
      queued.map((d) => d.id).sort(),
    );
    expect(events.filter((e) => e.type === 'dead-letter')).toHaveLength(2);
  });

  it('disables an endpoint that answers 410, and one that keeps failing', async () => {
    const gone = await receiver((_n, _req, res) => res.writeHead(410).end());
    const broken = await receiver((_n, _req, res) => res.writeHead(400).end());
    const { sender: s, events } = sender({ disableAfter: 2 });
    const a = await s.addEndpoint({ url: gone.url });
    const b = await s.addEndpoint({ url: broken.url });
    for (const d of await s.send('one', {})) await settled(s, d.id);
    expect((await s.getEndpoint(a.id))?.disabled).toBe('gone');
    expect((await s.getEndpoint(b.id))?.disabled).toBeUndefined();
    for (const d of await s.send('two', {})) await settled(s, d.id);
    expect((await s.getEndpoint(b.id))?.disabled).toBe('failing');
    expect(await s.send('three', {})).toEqual([]);
    const disabled = events.flatMap((e) => (e.type === 'endpoint-disabled' ? [e.endpoint] : []));
    expect(disabled.map((e) => [e.id, e.disabled])).toEqual([
      [a.id, 'gone'],
      [b.id, 'failing'],
    ]);
    expect(JSON.stringify(disabled)).not.toContain('whsec_');
    await s.enableEndpoint(b.id);
    expect(await s.send('four', {})).toHaveLength(1);
  });

  it('records timeouts and refused connections, and retries them', async () => {
    const silent = await receiver(() => {});
    const { sender: s } = sender({ timeout: '150ms', schedule: ['10ms'] });
    await s.addEndpoint({ url: silent.url });
    await s.addEndpoint({ url: 'http://127.0.0.1:1/hook' });
    const done = await Promise.all((await s.send('ping', {})).map((d) => settled(s, d.id)));
    expect(done.map((d) => d.attempts.map((a) => a.error))).toEqual([
      ['timeout', 'timeout'],
      ['ECONNREFUSED', 'ECONNREFUSED'],
    ]);
    expect(done.every((d) => d.state === 'failed')).toBe(true);
  });

  it('keeps within the global and per-endpoint concurrency', async () => {
    let open = 0;
    let most = 0;
    const slow = () =>
      receiver((_n, _req, res) => {
        open++;
        most = Math.max(most, open);
        setTimeout(() => {
          open--;
          res.writeHead(200).end();
        }, 30);
      });
    const targets = [await slow(), await slow(), await slow()];
    const { sender: s } = sender({ concurrency: 4, perEndpointConcurrency: 2 });
    for (const t of targets) await s.addEndpoint({ url: t.url });
    const queued = [];
    for (let i = 0; i < 6; i++) queued.push(...(await s.send('ping', { i })));
    await Promise.all(queued.map((d) => settled(s, d.id)));
    expect(most).toBeLessThanOrEqual(4);
    expect(most).toBeGreaterThan(1);
    expect(targets.map((t) => t.received.length)).toEqual([6, 6, 6]);
  });

  it('delivers in order per endpoint when ordered, even across a retry', async () => {
    const target = await receiver((n, _req, res) => res.writeHead(n === 0 ? 500 : 200).end());
    const { sender: s } = sender({ ordered: true });
    await s.addEndpoint({ url: target.url });
    const queued = [];
    for (let i = 1; i <= 5; i++) queued.push(...(await s.send('ping', { i })));
    await Promise.all(queued.map((d) => settled(s, d.id)));
    const order = target.received.map((r) => JSON.parse(r.body).data.i);
    expect(order).toEqual([1, 1, 2, 3, 4, 5]);
  });

  it('signs with both secrets while a rotation overlaps', async () => {
    const target = await receiver();
    const { sender: s } = sender();
    const before = await s.addEndpoint({ url: target.url });
    const after = await s.rotateSecret(before.id);
    expect(after?.secrets).toEqual([expect.stringMatching(/^whsec_/), before.secrets[0]]);
    const [d] = await s.send('ping', {});
    await settled(s, d!.id);
    const [got] = target.received;
    expect(String(got!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const secret of after!.secrets) {
      expect(verifyWebhook(secret, got!.body, got!.headers).id).toBe(d!.id);
    }
  });

  it('refuses private and insecure addresses unless allowed', async () => {
    const strict = createWebhookSender();
    keep(strict);
    const refusal = await strict.addEndpoint({ url: 'http://127.0.0.1/hook' }).catch((e) => e);
    expect(refusal).toBeInstanceOf(WebhookAddressError);
    const httpOnly = createWebhookSender({ allowHttp: true });
    keep(httpOnly);
    const private_ = await httpOnly.addEndpoint({ url: 'http://10.0.0.1/hook' }).catch((e) => e);
    expect(private_).toMatchObject({ code: 'ERR_WEBHOOK_ADDRESS', reason: 'private' });
  });

  it('drops the pending deliveries of a removed endpoint', async () => {
    const target = await receiver((_n, _req, res) => res.writeHead(500).end());
    const { sender: s } = sender({ schedule: [60_000] });
    const endpoint = await s.addEndpoint({ url: target.url });
    const [d] = await s.send('ping', {});
    await vi.waitFor(() => expect(target.received).toHaveLength(1));
    await vi.waitFor(async () => expect((await s.getDelivery(d!.id))?.attempts).toHaveLength(1));
    expect(await s.removeEndpoint(endpoint.id)).toBe(true);
    expect(await s.getDelivery(d!.id)).toBeUndefined();
    expect(await s.removeEndpoint(endpoint.id)).toBe(false);
  });

  it('rejects bad options, event names and bodies', async () => {
    expect(() => createWebhookSender({ retries: 3 } as never)).toThrow(TypeError);
    expect(() => createWebhookSender({ concurrency: 0 })).toThrow(/concurrency/);
    expect(() => createWebhookSender({ schedule: [-1] })).toThrow(/schedule/);
    const { sender: s } = sender();
    await expect(s.send('', {})).rejects.toThrow(TypeError);
    await expect(s.send('a\nb', {})).rejects.toThrow(TypeError);
    await expect(s.send('big', 1n)).rejects.toThrow(TypeError);
    await expect(s.addEndpoint({ url: 'http://127.0.0.1/', events: [''] })).rejects.toThrow(
      TypeError,
    );
  });
});
