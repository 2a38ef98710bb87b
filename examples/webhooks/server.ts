// A webhook sender and a receiver in one process: the sender signs and retries, the receiver
// verifies the signature and dedupes on webhook-id. See docs/webhooks.md.
// node --import tsx examples/webhooks/server.ts   (env: PORT; listens on 127.0.0.1)
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { pathToFileURL } from 'node:url';
import {
  compose,
  createRouter,
  createWebhookSender,
  requestId,
  sendNoContent,
  toNodeListener,
  verifyWebhooks,
  type WebhookSenderEvent,
} from 'portico';
import { getWebhook } from 'portico/webhook';

/** What the receiver has taken in: one entry per message, whatever the retries. */
export interface Inbox {
  events: { id: string; event: string; data: unknown }[];
}

/** The receiving service: `POST /hooks/portico`, verified before anything else runs. */
export function createReceiver(secret: string) {
  const inbox: Inbox = { events: [] };
  const seen = new Set<string>();
  const onWebhook = (req: IncomingMessage, res: ServerResponse) => {
    const { id, payload } = getWebhook<{ event: string; data: unknown }>(req)!;
    // At-least-once delivery: a retry of a message already handled is acknowledged, not redone.
    if (!seen.has(id)) {
      seen.add(id);
      inbox.events.push({ id, event: payload.event, data: payload.data });
    }
    sendNoContent(res);
  };
  const app = compose([
    requestId(),
    createRouter({
      // The receiver reads the raw body itself: mount it before any body parser.
      '/hooks/portico': { POST: compose([verifyWebhooks({ secret }), onWebhook]) },
    }),
  ]);
  return { server: createServer(toNodeListener(app)), inbox };
}

/** The sending service: one subscriber, and what happened to each delivery. */
export async function createSender(receiverUrl: string, log: (line: string) => void) {
  const onEvent = (event: WebhookSenderEvent) => {
    if (event.type === 'attempt') {
      log(`attempt ${event.delivery.id}: ${event.attempt.status ?? event.attempt.error}`);
    }
    if (event.type === 'dead-letter') log(`dead letter ${event.delivery.id}`);
  };
  const sender = createWebhookSender({
    // Local demo only: the receiver is on 127.0.0.1 over http. In production leave both off.
    allowHttp: true,
    allowPrivate: true,
    schedule: [1_000, 5_000, 30_000], // retry waits, in milliseconds: 1 s, 5 s, 30 s
    onEvent,
  });
  // The secret goes to the subscriber once; the sender keeps it to sign every delivery.
  const endpoint = await sender.addEndpoint({ url: receiverUrl, events: ['order.paid'] });
  return { sender, secret: endpoint.secrets[0]! };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const port = Number(process.env.PORT || 3005);
  const url = `http://127.0.0.1:${port}/hooks/portico`;
  const { sender, secret } = await createSender(url, console.log);
  const { server, inbox } = createReceiver(secret);
  server.listen(port, '127.0.0.1', async () => {
    console.log(`receiver on ${url}`);
    for (let order = 1; order <= 3; order++) {
      await sender.send('order.paid', { order, amount: 10 * order });
    }
    setTimeout(async () => {
      console.log(`received: ${JSON.stringify(inbox.events.map((e) => e.data))}`);
      await sender.close();
      server.close();
    }, 1000);
  });
}
