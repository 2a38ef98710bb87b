import {
  compose,
  createWebhookSender,
  getParams,
  type MethodTable,
  notFound,
  type Revocations,
  readJson,
  requirePrincipal,
  sendJson,
  sendNoContent,
  unprocessable,
  type WebhookStore,
} from 'portico';
import type { Logger } from 'portico/diagnostics';
import { WebhookAddressError, webhookCredentialIds } from 'portico/webhook';
import { type Message, READ } from './messages.js';

/** The events a subscriber may ask for. */
const EVENTS = ['message.created'];

/** Where a webhook subscription may point, and how deliveries are retried. */
export interface WebhookSettings {
  /** `WEBHOOK_ALLOW_PRIVATE=1`: loopback/private addresses (and `http:`) allowed. */
  allowPrivate: boolean;
  /** `http:` URLs allowed (development). */
  allowHttp: boolean;
  /** Milliseconds between attempts; unset, the library's schedule. */
  schedule: number[] | undefined;
  /** Milliseconds an attempt may take. */
  timeout: number;
  /** Where subscriptions and deliveries live (Redis behind several processes). */
  store: WebhookStore;
  /** Where ended grants and deleted keys are heard: their subscriptions go with them. */
  revocations: Revocations;
  /** Where failed attempts, dead letters and store failures are logged. */
  logger: Logger;
}

function invalid(field: string, message: string): never {
  throw unprocessable([{ field, message }]);
}

/**
 * `POST /api/webhooks` (`{ "url", "events"? }` → 201 `{ "id", "secret" }`, the secret shown
 * once), `GET /api/webhooks` (the caller's, without secrets) and `DELETE /api/webhooks/{id}`
 * (the owner's only), and a signed delivery of every new message to every subscriber, retried
 * with backoff. A subscription made with a delegated token or an API key ends with its grant
 * or key.
 */
export function createWebhooks(settings: WebhookSettings) {
  const sender = createWebhookSender({
    store: settings.store,
    timeout: settings.timeout,
    allowPrivate: settings.allowPrivate,
    allowHttp: settings.allowHttp || settings.allowPrivate,
    // at most 10 subscriptions per user (the 11th: 422), the same URL twice: 409
    maxEndpointsPerOwner: 10,
    revocations: settings.revocations,
    logger: settings.logger,
    // the contract's seconds may be fractions (`0.2` in tests): written with their unit, so that
    // a sub-second wait is meant, not a number of seconds mistaken for milliseconds
    ...(settings.schedule !== undefined && {
      schedule: settings.schedule.map((ms) => `${ms}ms` as const),
    }),
  });

  const routes: Record<string, MethodTable> = {
    '/api/webhooks': {
      // the caller's subscriptions, never their secrets
      GET: compose([
        READ,
        async (req, res) => {
          const endpoints = await sender.listEndpoints({ owner: requirePrincipal(req).sub });
          sendJson(
            res,
            200,
            endpoints.map(({ id, url, events }) => ({ id, url, events: events ?? EVENTS })),
          );
        },
      ]),
      // every delivery carries a message: subscribing needs the scope that reading them needs
      POST: compose([
        READ,
        async (req, res) => {
          const principal = requirePrincipal(req);
          const body = await readJson<unknown>(req);
          if (typeof body !== 'object' || body === null || Array.isArray(body)) {
            invalid('', 'The body must be a JSON object.');
          }
          const { url, events } = body as Record<string, unknown>;
          if (typeof url !== 'string' || url.length === 0 || url.length > 2048) {
            invalid('url', 'must be a URL of at most 2048 characters');
          }
          if (
            events !== undefined &&
            (!Array.isArray(events) ||
              events.length === 0 ||
              events.some((e) => typeof e !== 'string' || !EVENTS.includes(e)))
          ) {
            invalid('events', `must be a non-empty array of: ${EVENTS.join(', ')}`);
          }
          try {
            const endpoint = await sender.addEndpoint({
              url,
              events: events as string[] | undefined,
              owner: principal.sub,
              // made with a delegated token or an API key: it ends with that grant or key
              credentialIds: webhookCredentialIds(principal),
            });
            sendJson(
              res,
              201,
              {
                id: endpoint.id,
                url: endpoint.url,
                events: endpoint.events ?? EVENTS,
                secret: endpoint.secrets[0],
              },
              { Location: `/api/webhooks/${endpoint.id}`, 'Cache-Control': 'no-store' },
            );
          } catch (error) {
            if (error instanceof WebhookAddressError) invalid('url', error.message);
            throw error;
          }
        },
      ]),
    },
    '/api/webhooks/:id': {
      // removing a subscription needs the scope that making one needs
      DELETE: compose([
        READ,
        async (req, res) => {
          const id = getParams(req).id ?? '';
          // someone else's subscription is as good as none
          const endpoint = await sender.getEndpoint(id);
          if (endpoint?.owner !== requirePrincipal(req).sub || !(await sender.removeEndpoint(id))) {
            throw notFound('No webhook subscription of yours has this id.');
          }
          sendNoContent(res);
        },
      ]),
    },
  };

  return {
    routes,
    /** Queues a signed `message.created` delivery to every subscriber; never rejects. */
    publish(message: Message): Promise<void> {
      return sender.send('message.created', message).then(
        () => {},
        (error: unknown) => {
          console.error('portico reference server: queueing webhook deliveries failed', error);
        },
      );
    },
    /** Waits for the deliveries in flight (graceful shutdown). */
    close: () => sender.close(),
  };
}
