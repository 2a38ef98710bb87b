import type { IncomingHttpHeaders } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { closeAll, listen } from '../helpers/http.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const DEMO_KEY = 'demo-key-of-the-webhook-suite-0123456789';
const BOB = `Basic ${Buffer.from('bob:bob-password').toString('base64')}`;
let open: RunningServer;
let strict: RunningServer;

beforeAll(async () => {
  [open, strict] = await Promise.all([
    startReferenceServer({
      DEMO_API_KEY: DEMO_KEY,
      WEBHOOK_ALLOW_PRIVATE: '1',
      WEBHOOK_RETRY_SCHEDULE: '0.1,0.1',
    }),
    startReferenceServer({ DEMO_API_KEY: DEMO_KEY }),
  ]);
});
afterAll(async () => {
  await Promise.all([open?.stop(), strict?.stop()]);
  await closeAll();
});

/** A JSON request as alice (her API key) unless `auth` says otherwise (`''` drops a header). */
function call(server: RunningServer, method: string, path: string, body?: unknown, auth = {}) {
  const headers = Object.entries({
    'Content-Type': 'application/json',
    'X-API-Key': DEMO_KEY,
    ...auth,
  }).filter(([, value]) => value !== '');
  return fetch(`${server.url}${path}`, {
    method,
    headers,
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
}

/** A local receiver answering the n-th request with `statuses[n]` (then 204). */
async function receiver(statuses: number[] = []) {
  const received: { headers: IncomingHttpHeaders; body: string }[] = [];
  const listening = await listen((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => {
      body += chunk;
    });
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(statuses[received.length - 1] ?? 204).end();
    });
  });
  return { url: `${listening.url}/hook`, received };
}

describe('reference server: webhooks', () => {
  it('delivers each new message, signed per Standard Webhooks, retrying failures', async () => {
    const target = await receiver([500]);
    const created = await call(open, 'POST', '/api/webhooks', { url: target.url });
    expect(created.status).toBe(201);
    const { id, secret } = (await created.json()) as { id: string; secret: string };
    expect(id).toBeTruthy();
    expect(secret).toMatch(/^whsec_/);

    const message = await (await call(open, 'POST', '/api/messages', { text: 'hooked' })).json();
    await vi.waitFor(() => expect(target.received).toHaveLength(2), { timeout: 5000 });
    const [first, second] = target.received;
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    const headers = Object.fromEntries(
      ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((h) => [
        h,
        String(second!.headers[h]),
      ]),
    );
    expect(new Webhook(secret).verify(second!.body, headers)).toEqual({
      event: 'message.created',
      type: 'message.created',
      timestamp: expect.any(String),
      data: message,
    });
    expect(Number.isNaN(Date.parse(JSON.parse(second!.body).timestamp))).toBe(false);
  });

  it('refuses private addresses without WEBHOOK_ALLOW_PRIVATE=1, and bad bodies', async () => {
    for (const url of [
      'http://127.0.0.1:9/hook',
      'http://169.254.169.254/latest',
      'http://[::1]/',
      'http://0x7f000001/',
      'http://10.1.2.3/',
    ]) {
      const refused = await call(strict, 'POST', '/api/webhooks', { url });
      expect(refused.status, url).toBe(422);
      expect(refused.headers.get('content-type')).toBe('application/problem+json');
      // fields are named as everywhere else in the API: `url`, not a JSON Pointer
      expect(await refused.json()).toMatchObject({ errors: [{ field: 'url' }] });
    }
    expect((await call(open, 'POST', '/api/webhooks', { url: 'not a url' })).status).toBe(422);
    expect((await call(open, 'POST', '/api/webhooks', [])).status).toBe(422);
    const badEvents = { url: 'http://127.0.0.1:9/', events: ['nope'] };
    const eventsRefused = await call(open, 'POST', '/api/webhooks', badEvents);
    expect(eventsRefused.status).toBe(422);
    expect(await eventsRefused.json()).toMatchObject({ errors: [{ field: 'events' }] });
    expect((await call(open, 'POST', '/api/webhooks', undefined, { 'X-API-Key': '' })).status).toBe(
      401,
    );
  });

  it('removes a subscription for its owner only', async () => {
    const target = await receiver();
    const created = await call(open, 'POST', '/api/webhooks', { url: target.url });
    const { id } = (await created.json()) as { id: string };
    const asBob = { 'X-API-Key': '', Authorization: BOB };
    expect((await call(open, 'DELETE', `/api/webhooks/${id}`, undefined, asBob)).status).toBe(404);
    expect((await call(open, 'DELETE', `/api/webhooks/${id}`)).status).toBe(204);
    expect((await call(open, 'DELETE', `/api/webhooks/${id}`)).status).toBe(404);
    // the control: another subscription of alice's, delivered every message the removed one
    // would have been
    const control = await receiver();
    const kept = await call(open, 'POST', '/api/webhooks', { url: control.url });
    expect(kept.status).toBe(201);
    const texts = () => control.received.map((r) => JSON.parse(r.body).data.text);
    await call(open, 'POST', '/api/messages', { text: 'after removal' });
    await vi.waitFor(() => expect(texts()).toContain('after removal'), { timeout: 5000 });
    // and a later message too: by then a delivery of the first to the removed one, queued
    // with the control's, has long been sent
    await call(open, 'POST', '/api/messages', { text: 'later still' });
    await vi.waitFor(() => expect(texts()).toContain('later still'), { timeout: 5000 });
    expect(target.received).toHaveLength(0);
    const { id: keptId } = (await kept.json()) as { id: string };
    expect((await call(open, 'DELETE', `/api/webhooks/${keptId}`)).status).toBe(204);
  });
});
