/**
 * portico: `createWebhookSender` (signed, queued in its `MemoryWebhookStore`, through the
 * address-guarded agent) with one endpoint, the receiver; `sender.send(event, data)` once per
 * delivery, each awaited, deliveries counted from `onEvent`. With `--no-guard` it is given
 * its own keep-alive `undici.Agent` as `dispatcher`, which bypasses the address guard. It
 * imports the build in `dist/` (what users run); `npm run bench` builds it first.
 */
import { Agent } from 'undici';
import { type DeliveryEvents, runSender } from '../senders/sender.js';
import { SECRET_ENV } from '../senders/types.js';

// Types from the sources, code from the build: typechecking needs no build, the run uses it.
const webhook = (await import(
  new URL('../../dist/webhook.js', import.meta.url).href
)) as typeof import('../../src/webhook/index.js');

const noGuard = process.argv.includes('--no-guard');
const secret = process.env[SECRET_ENV];
if (secret === undefined) throw new Error(`portico.ts: no ${SECRET_ENV} in the environment`);

runSender(async ({ url, concurrency, event }) => {
  /** The current round's counters. */
  let events: DeliveryEvents | undefined;
  const sender = webhook.createWebhookSender({
    allowHttp: true,
    allowPrivate: true,
    concurrency,
    perEndpointConcurrency: concurrency,
    schedule: [], // no retries: any failure is a dead letter, which fails the run
    ...(noGuard && {
      dispatcher: new Agent({ connections: concurrency, keepAliveTimeout: 4000 }),
    }),
    onEvent(e) {
      if (e.type === 'delivered') events?.delivered();
      else if (e.type === 'dead-letter') {
        const last = e.delivery.attempts.at(-1);
        events?.failed(`dead letter (${last?.error ?? `status ${last?.status}`})`);
      }
    },
  });
  await sender.addEndpoint({ url, secret });
  return {
    async deliver(count, data, roundEvents) {
      events = roundEvents;
      for (let seq = 0; seq < count; seq++) await sender.send(event, data(seq));
    },
  };
});
