// examples/webhooks/server.ts runs in-process: its sender delivers to its receiver over a real
// socket; the samples of docs/webhooks.md are cut from it.
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createReceiver, createSender } from '../../examples/webhooks/server.js';
import { signWebhook } from '../../src/webhook/signature.js';
import { closeAll, listen, request } from '../helpers/http.js';

afterAll(closeAll);

describe('examples/webhooks/server.ts', () => {
  it('delivers signed events that the receiver verifies, once each', async () => {
    // The receiver must know the secret the sender makes: listen first, then subscribe.
    const log: string[] = [];
    let receiver: ReturnType<typeof createReceiver> | undefined;
    const listening = await listen((req, res) => receiver?.server.emit('request', req, res));
    const url = `${listening.url}/hooks/portico`;
    const { sender, secret } = await createSender(url, (line) => log.push(line));
    receiver = createReceiver(secret);
    await sender.send('order.paid', { order: 1 });
    await sender.send('order.shipped', { order: 1 }); // not subscribed
    // vi.waitFor's 1 s is short for a loaded machine; the sender logs once the answer is back,
    // after the receiver has taken the event in
    const waiting = { timeout: 10_000 };
    await vi.waitFor(() => expect(receiver?.inbox.events).toHaveLength(1), waiting);
    expect(receiver.inbox.events[0]).toMatchObject({ event: 'order.paid', data: { order: 1 } });
    await vi.waitFor(
      () => expect(log).toEqual([expect.stringMatching(/^attempt msg_\S+: 204$/)]),
      waiting,
    );
    expect(log.join('\n')).not.toContain(secret);

    // a replayed message is acknowledged and not taken in twice
    const id = receiver.inbox.events[0]!.id;
    const body = JSON.stringify({ event: 'order.paid', data: { order: 1 } });
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signWebhook(secret, { id, timestamp, body }),
    };
    expect(
      (await request(listening, '/hooks/portico', { method: 'POST', headers, body })).status,
    ).toBe(204);
    expect(receiver.inbox.events).toHaveLength(1);

    const forged = { ...headers, 'webhook-signature': 'v1,AAAA' };
    const refused = await request(listening, '/hooks/portico', {
      method: 'POST',
      headers: forged,
      body,
    });
    expect(refused.status).toBe(401);
    expect(refused.headers['content-type']).toBe('application/problem+json');
    await sender.close();
  });
});
