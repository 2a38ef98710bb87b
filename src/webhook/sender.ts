import type { Dispatcher } from 'undici';
import { loadUndici } from '../internal/lazy.js';
import { guardedAgentWith } from './address-guard/guard.js';
import { Deliverer } from './delivery/deliverer.js';
import { DeliveryLoop } from './delivery/loop.js';
import { observe } from './delivery/observe.js';
import { enqueueEvent } from './delivery/outbox.js';
import { DeadlineWatch } from './delivery/post.js';
import { EndpointRegistry, type NewWebhookEndpoint } from './endpoint-registry.js';
import { assertEventName } from './event-name.js';
import { MemoryWebhookStore } from './memory-store.js';
import { endEndpointsWithCredential } from './revoked-credentials.js';
import {
  type SenderSettings,
  senderSettings,
  type WebhookSenderEvent,
  type WebhookSenderOptions,
} from './sender-options.js';
import type {
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointFilter,
  WebhookStore,
} from './store.js';

export type { NewWebhookEndpoint } from './endpoint-registry.js';

/**
 * A webhook sender, from {@link createWebhookSender}.
 *
 * @example
 * ```ts
 * const endpoint = await sender.addEndpoint({ url: 'https://hooks.example.com/in' });
 * await sender.send('message.created', { id: 1, text: 'hi' });
 * ```
 */
export interface WebhookSender {
  /**
   * Registers an endpoint, its URL checked first (a `WebhookAddressError` when refused); with
   * an owner, a 409 problem for a URL it already registered, a 422 past its cap.
   */
  addEndpoint(input: NewWebhookEndpoint): Promise<WebhookEndpoint>;
  /** The endpoints matching `filter` (`{ owner }`: one user's), oldest first. */
  listEndpoints(filter?: WebhookEndpointFilter): Promise<WebhookEndpoint[]>;
  /** Removes an endpoint with its pending deliveries; `false` when there was none. */
  removeEndpoint(id: string): Promise<boolean>;
  /** One endpoint, or `undefined`. */
  getEndpoint(id: string): Promise<WebhookEndpoint | undefined>;
  /** Gives an endpoint a new secret; the old one keeps signing too for `rotationOverlapMs`. */
  rotateSecret(id: string): Promise<WebhookEndpoint | undefined>;
  /** Turns a disabled endpoint back on (its failure count reset). */
  enableEndpoint(id: string): Promise<WebhookEndpoint | undefined>;
  /**
   * Queues one message per enabled endpoint that wants `event`: body
   * `{ "event", "type", "timestamp", "data" }`. Resolves once queued (not delivered).
   */
  send(event: string, data: unknown): Promise<WebhookDelivery[]>;
  /** One delivery with its attempts, or `undefined`. */
  getDelivery(id: string): Promise<WebhookDelivery | undefined>;
  /** Deliveries, oldest first (`state: 'failed'` lists the dead letters). */
  listDeliveries(
    filter?: Parameters<WebhookStore['listDeliveries']>[0],
  ): Promise<WebhookDelivery[]>;
  /** Stops taking deliveries and waits for those in flight; what is pending stays in the store. */
  close(): Promise<void>;
}

/**
 * Creates a webhook sender: signed (Standard Webhooks: `webhook-id`, `webhook-timestamp`,
 * `webhook-signature: v1,…`, several signatures during a secret rotation), retried on network
 * errors, timeouts, 3xx, 408, 429 and 5xx on a schedule with jitter (honouring
 * `Retry-After`), dead-lettered after the last attempt, never following redirects, and never
 * a way into the sender's own network: every address is checked when an endpoint is added and
 * again when the attempt connects. Concurrency is bounded overall and per endpoint; order
 * per endpoint is an option. Delivery is at least once: receivers dedupe on `webhook-id`.
 *
 * @example
 * ```ts
 * const sender = createWebhookSender({ onEvent: (e) => e.type === 'dead-letter' && alert(e) });
 * const { id, secrets } = await sender.addEndpoint({ url: 'https://hooks.example.com/in' });
 * await sender.send('message.created', { id: 42, text: 'hello' });
 * process.once('SIGTERM', () => sender.close());
 * ```
 * @see {@link https://www.standardwebhooks.com/ | Standard Webhooks}
 */
export function createWebhookSender(options: WebhookSenderOptions = {}): WebhookSender {
  const settings: SenderSettings = senderSettings(options);
  const { now, timeout } = settings;
  const store = settings.store ?? new MemoryWebhookStore();
  const guard = {
    allowHttp: settings.allowHttp,
    allowPrivate: settings.allowPrivate,
    ...(settings.lookup && { lookup: settings.lookup }),
  };
  // the guarded agent is made on the first attempt: undici is loaded then, not at import
  let agent: Dispatcher | Promise<Dispatcher> | undefined;
  const ownAgent = (): Dispatcher | Promise<Dispatcher> => {
    agent ??= loadUndici().then((undici) => {
      // `timeout` is checked milliseconds already: given with its unit, a short one stays valid
      const connectTimeout = `${Math.min(timeout, 10_000)}ms` as const;
      agent = guardedAgentWith(undici, { ...guard, connectTimeout });
      return agent;
    });
    return agent;
  };
  const dispatcher = settings.dispatcher ?? ownAgent;
  const emit = (event: WebhookSenderEvent) => {
    observe(event, settings.logger);
    try {
      settings.onEvent?.(event);
    } catch {
      // a failing listener must not stop deliveries
    }
  };
  // endpoints end with the credential they were registered with (pending deliveries dropped)
  const credentials = endEndpointsWithCredential({
    store,
    revocations: settings.revocations,
    now,
    onRemoved: ({ secrets: _secrets, ...endpoint }, credentialId) =>
      emit({ type: 'endpoint-revoked', endpoint, credentialId }),
  });
  const endpoints = new EndpointRegistry({
    store,
    now,
    guard,
    credentials,
    maxPerOwner: settings.maxEndpointsPerOwner,
    rotationOverlapMs: settings.rotationOverlapMs,
  });
  const deliverer = new Deliverer({
    store,
    now,
    endpoints,
    credentials,
    attempt: {
      dispatcher,
      timeout,
      userAgent: settings.userAgent,
      now,
      deadlines: new DeadlineWatch(timeout),
    },
    schedule: settings.schedule,
    jitter: settings.jitter,
    disableAfter: settings.disableAfter,
    emit,
    logger: settings.logger,
  });
  const loop = new DeliveryLoop({
    store,
    now,
    timeout,
    concurrency: settings.concurrency,
    perEndpoint: settings.perEndpointConcurrency,
    ordered: settings.ordered,
    pollInterval: settings.pollInterval,
    logger: settings.logger,
    deliver: (delivery) => deliverer.deliver(delivery),
  });
  loop.wake();

  return {
    addEndpoint(input) {
      if (loop.closed) return Promise.reject(new TypeError('The webhook sender is closed.'));
      return endpoints.add(input);
    },
    listEndpoints: (filter) => store.listEndpoints(filter),
    removeEndpoint: (id) => store.deleteEndpoint(id),
    getEndpoint: (id) => store.getEndpoint(id),
    rotateSecret: (id) => endpoints.rotateSecret(id),
    enableEndpoint: (id) => endpoints.enable(id),
    async send(event, data) {
      assertEventName(event);
      if (loop.closed) throw new TypeError('The webhook sender is closed.');
      const deliveries = await enqueueEvent({ store, now, credentials }, event, data);
      // with every slot taken, the end of an attempt takes them
      if (deliveries.length > 0 && loop.hasRoom) loop.wake();
      return deliveries;
    },
    getDelivery: (id) => store.getDelivery(id),
    listDeliveries: (filter) => store.listDeliveries(filter),
    async close() {
      if (loop.closed) return;
      const stopping = loop.close();
      credentials.close();
      await stopping;
      if (agent !== undefined) await (await agent).close();
    },
  };
}
