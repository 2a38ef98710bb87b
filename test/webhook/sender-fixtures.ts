// The senders of the sender suites: allowed to reach local receivers, retrying fast, every
// event kept, each closed after its test (closeSenders in an afterEach).
import { expect, vi } from 'vitest';
import { createWebhookSender, type WebhookSender } from '../../src/webhook/sender.js';
import type { WebhookSenderEvent, WebhookSenderOptions } from '../../src/webhook/sender-options.js';

const senders: WebhookSender[] = [];

/** Has `s` closed by the next {@link closeSenders}, and gives it back. */
export function keep(s: WebhookSender): WebhookSender {
  senders.push(s);
  return s;
}

/** Closes every sender made since the last call. */
export async function closeSenders(): Promise<void> {
  await Promise.all(senders.splice(0).map((s) => s.close()));
}

/** A sender allowed to reach local receivers, retrying fast (20 ms, twice), and its events. */
export function sender(options: WebhookSenderOptions = {}) {
  const events: WebhookSenderEvent[] = [];
  const s = createWebhookSender({
    allowHttp: true,
    allowPrivate: true,
    schedule: ['20ms', '20ms'],
    jitter: 0,
    onEvent: (e) => events.push(e),
    ...options,
  });
  senders.push(s);
  return { sender: s, events };
}

/** The delivery `id` of `s` once it is no longer pending (within `timeout` milliseconds). */
export const settled = (s: WebhookSender, id: string, timeout = 5000) =>
  vi.waitFor(
    async () => {
      const delivery = await s.getDelivery(id);
      expect(delivery?.state).not.toBe('pending');
      return delivery!;
    },
    { timeout, interval: 10 },
  );
