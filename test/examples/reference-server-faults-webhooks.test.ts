// Webhook receivers that misbehave, against the reference server (WEBHOOK_TIMEOUT=1,
// WEBHOOK_RETRY_SCHEDULE=0.2,0.2: three attempts in all). docs/webhooks.md: network errors and
// timeouts are retried with the same webhook-id, a 2xx is delivered, the last failure is
// dead-lettered, delivery is at least once. Here nothing is lost, and a message reaches a
// receiver more than once only after an attempt that failed. (What the sender records, dead
// letters included, is checked in test/webhook/sender-faults.test.ts.)
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { closeAll, listen } from '../helpers/http.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const DEMO_KEY = 'demo-key-of-the-webhook-faults-suite-0123';
const TIMEOUT_MS = 1000;
const ATTEMPTS = 3;
let server: RunningServer;

beforeAll(async () => {
  server = await startReferenceServer({
    DEMO_API_KEY: DEMO_KEY,
    WEBHOOK_ALLOW_PRIVATE: '1',
    WEBHOOK_TIMEOUT: String(TIMEOUT_MS / 1000),
    WEBHOOK_RETRY_SCHEDULE: '0.2,0.2',
    RATE_LIMIT: '10000',
  });
});
afterAll(async () => {
  await server?.stop();
  await closeAll();
});

interface Arrival {
  id: string;
  text: string;
  at: number;
  /** When the sender let the connection go. */
  closedAt?: number;
}

/** A receiver whose n-th request (from 0) is answered by `answer`; it records every arrival. */
async function receiver(answer: (n: number, req: IncomingMessage, res: ServerResponse) => void) {
  const arrivals: Arrival[] = [];
  const target = await listen((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => {
      body += chunk;
    });
    req.on('end', () => {
      const arrival: Arrival = {
        id: String(req.headers['webhook-id']),
        text: JSON.parse(body).data.text,
        at: Date.now(),
      };
      arrivals.push(arrival);
      req.socket.once('close', () => {
        arrival.closedAt = Date.now();
      });
      answer(arrivals.length - 1, req, res);
    });
  });
  return { url: `${target.url}/hook`, arrivals };
}

const api = (method: string, path: string, body?: unknown) =>
  fetch(`${server.url}${path}`, {
    method,
    headers: { 'Content-Type': 'application/json', 'X-API-Key': DEMO_KEY },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });

/** Subscribes `url`, runs `test`, and removes the subscription (with its pending deliveries). */
async function subscribed(url: string, test: () => Promise<void>): Promise<void> {
  const created = await api('POST', '/api/webhooks', { url });
  expect(created.status).toBe(201);
  const { id } = (await created.json()) as { id: string };
  try {
    await test();
  } finally {
    expect((await api('DELETE', `/api/webhooks/${id}`)).status).toBe(204);
  }
}

const post = async (text: string) => {
  const res = await api('POST', '/api/messages', { text });
  expect(res.status).toBe(201);
};
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('reference server: webhook receivers that misbehave', () => {
  it('times out a receiver that never answers after WEBHOOK_TIMEOUT, retries on schedule, then stops', async () => {
    const hanging = await receiver(() => {});
    await subscribed(hanging.url, async () => {
      await post('to a receiver that hangs');
      await vi.waitFor(() => expect(hanging.arrivals).toHaveLength(ATTEMPTS), {
        timeout: 8000,
        interval: 50,
      });
      await vi.waitFor(() => expect(hanging.arrivals[ATTEMPTS - 1]!.closedAt).toBeDefined(), {
        timeout: 3000,
        interval: 50,
      });
      // the same message each time, each attempt given up after the timeout (not sooner, not
      // much later), the next one after the schedule's wait
      expect(new Set(hanging.arrivals.map((a) => a.id)).size).toBe(1);
      for (const [i, arrival] of hanging.arrivals.entries()) {
        const held = arrival.closedAt! - arrival.at;
        expect(held, `attempt ${i + 1}`).toBeGreaterThanOrEqual(TIMEOUT_MS - 100);
        expect(held, `attempt ${i + 1}`).toBeLessThan(TIMEOUT_MS + 1500);
        const next = hanging.arrivals[i + 1];
        if (next) expect(next.at - arrival.closedAt!).toBeGreaterThanOrEqual(100);
      }
      // dead-lettered after the last attempt: no fourth
      await pause(1200);
      expect(hanging.arrivals).toHaveLength(ATTEMPTS);
    });
  });

  it('retries a receiver that resets the connection, and delivers once it answers', async () => {
    const resetting = await receiver((n, req, res) => {
      if (n < 2) req.socket.destroy();
      else res.writeHead(204).end();
    });
    const alwaysResetting = await receiver((_n, req) => req.socket.destroy());
    await subscribed(resetting.url, () =>
      subscribed(alwaysResetting.url, async () => {
        await post('to receivers that reset');
        await vi.waitFor(
          () => {
            expect(resetting.arrivals).toHaveLength(3);
            expect(alwaysResetting.arrivals).toHaveLength(ATTEMPTS);
          },
          { timeout: 8000, interval: 50 },
        );
        await pause(1000);
        // delivered on the third attempt: nothing after it; the other one gave up after three
        expect(resetting.arrivals).toHaveLength(3);
        expect(alwaysResetting.arrivals).toHaveLength(ATTEMPTS);
        for (const { arrivals } of [resetting, alwaysResetting]) {
          expect(new Set(arrivals.map((a) => a.id)).size).toBe(1);
          expect(arrivals.every((a) => a.text === 'to receivers that reset')).toBe(true);
        }
      }),
    );
  });

  it('delivers once, not twice, to a receiver that answers slowly within the timeout', async () => {
    const slow = await receiver((_n, _req, res) => {
      setTimeout(() => res.writeHead(204).end(), TIMEOUT_MS * 0.6);
    });
    await subscribed(slow.url, async () => {
      for (let i = 1; i <= 3; i++) await post(`slow ${i}`);
      await vi.waitFor(() => expect(slow.arrivals).toHaveLength(3), { timeout: 5000 });
      await pause(TIMEOUT_MS + 1000);
      expect(slow.arrivals.map((a) => a.text).sort()).toEqual(['slow 1', 'slow 2', 'slow 3']);
      expect(new Set(slow.arrivals.map((a) => a.id)).size).toBe(3);
    });
  });

  it('loses none of many messages when every first attempt hangs: each arrives, again only after a failure', async () => {
    const seen = new Map<string, number>();
    const flaky = await receiver((_n, req, res) => {
      const id = String(req.headers['webhook-id']);
      seen.set(id, (seen.get(id) ?? 0) + 1);
      if (seen.get(id)! > 1) res.writeHead(204).end(); // the first attempt of each hangs
    });
    const texts = Array.from({ length: 4 }, (_, i) => `burst ${i}`);
    await subscribed(flaky.url, async () => {
      for (const text of texts) await post(text);
      await vi.waitFor(
        () => {
          expect(seen.size).toBe(texts.length);
          expect([...seen.values()].every((n) => n === 2)).toBe(true);
        },
        { timeout: 15_000, interval: 50 },
      );
      await pause(500);
      // one id per message, each seen twice: the hung attempt and its successful retry
      const byId = new Map(flaky.arrivals.map((a) => [a.id, a.text]));
      expect([...byId.values()].sort()).toEqual([...texts].sort());
      expect(flaky.arrivals).toHaveLength(texts.length * 2);
    });
  }, 25_000);
});
