import { randomUUID } from 'node:crypto';
import type { Dispatcher } from 'undici';
import { assertWebhookUrl, createGuardedAgent } from './address-guard.js';
import { type AttemptOutcome, attemptDelivery } from './attempt.js';
import { endEndpointsWithCredential } from './credential-end.js';
import { MemoryWebhookStore } from './memory-store.js';
import { admissionRefused, checkOwnership, credentialRevoked } from './ownership.js';
import { DeadlineWatch } from './post.js';
import { retryDelay } from './schedule.js';
import { generateWebhookSecret } from './secret.js';
import {
  type SenderSettings,
  senderSettings,
  type WebhookSenderEvent,
  type WebhookSenderOptions,
} from './sender-options.js';
import { signWebhook } from './signature.js';
import type {
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointFilter,
  WebhookStore,
} from './store.js';

/**
 * What {@link WebhookSender.addEndpoint} takes.
 *
 * @example
 * ```ts
 * const input: NewWebhookEndpoint = { url: 'https://hooks.example.com/in', events: ['message.created'] };
 * ```
 */
export interface NewWebhookEndpoint {
  /** The `https:` URL to POST to; checked against the address guard now and at each send. */
  url: string;
  /** The events it receives; unset for every event. */
  events?: readonly string[] | undefined;
  /** Its `whsec_` secret. @defaultValue a new random one */
  secret?: string | undefined;
  /**
   * Who registers it (a user or tenant id, 1–200 characters): an owner has at most
   * `maxEndpointsPerOwner` endpoints (one more: a 422 problem) and one per URL (again: 409).
   * @defaultValue none (not counted against any cap)
   */
  owner?: string | undefined;
  /**
   * The revocation ids of the credential it is registered with (`webhookCredentialIds(principal)`:
   * `grant:<id>`, `api_key:<id>`): revoking one removes the endpoint and its pending deliveries,
   * in every process that hears the revocation. A credential already revoked: a 403 problem.
   * @defaultValue none (the endpoint outlives every credential)
   */
  credentialIds?: readonly string[] | undefined;
}

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
 * How long past an attempt's timeout a claimed delivery stays leased: time to record the
 * outcome. A sender that died lets its deliveries go after `timeout` + this.
 */
const LEASE_MARGIN_MS = 5000;

/** `msg_…` / `ep_…`: 122 random bits (randomUUID draws from a buffered pool: cheap per id). */
const newId = (prefix: string) => `${prefix}_${randomUUID().replaceAll('-', '')}`;

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it rejects.
const EVENT_NAME = /^[^\u0000-\u001f\u007f]{1,200}$/;

function assertEventNames(events: unknown): asserts events is readonly string[] | undefined {
  if (events === undefined) return;
  if (
    !Array.isArray(events) ||
    events.length > 100 ||
    events.some((e) => typeof e !== 'string' || !EVENT_NAME.test(e))
  ) {
    throw new TypeError('`events` must be up to 100 event names of 1–200 characters.');
  }
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
  const { now, timeout, concurrency, pollInterval } = settings;
  const store = settings.store ?? new MemoryWebhookStore();
  const guard = {
    allowHttp: settings.allowHttp,
    allowPrivate: settings.allowPrivate,
    ...(settings.lookup && { lookup: settings.lookup }),
  };
  const ownDispatcher = settings.dispatcher === undefined;
  const dispatcher: Dispatcher =
    settings.dispatcher ??
    createGuardedAgent({ ...guard, connectTimeout: Math.min(timeout, 10_000) });
  const attemptSettings = {
    dispatcher,
    timeout,
    userAgent: settings.userAgent,
    now,
    deadlines: new DeadlineWatch(timeout),
  };
  const inFlight = new Set<Promise<void>>();
  const endpointLocks = new Map<string, Promise<unknown>>();
  let timer: NodeJS.Timeout | undefined;
  /** When `timer` fires (epoch ms). */
  let timerAt = 0;
  let ticking = false;
  /** The tick under way: `close()` waits for it, so a batch claimed just then is not lost. */
  let currentTick: Promise<void> | undefined;
  let again = false;
  /** Whether the last look at the store found nothing it could take (all due ones held back). */
  let idle = false;
  let closed = false;

  const emit = (event: WebhookSenderEvent) => {
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

  /** Runs `change` on an endpoint, one change at a time per endpoint. */
  function changeEndpoint(
    id: string,
    change: (endpoint: WebhookEndpoint) => void,
  ): Promise<WebhookEndpoint | undefined> {
    const previous = endpointLocks.get(id) ?? Promise.resolve();
    const next = previous.then(async () => {
      const endpoint = await store.getEndpoint(id);
      if (endpoint === undefined) return undefined;
      change(endpoint);
      // removed meanwhile (its credential revoked): it stays removed
      return (await store.saveEndpoint(endpoint)) ? endpoint : undefined;
    });
    const settled = next.catch(() => {});
    endpointLocks.set(id, settled);
    settled.then(() => {
      if (endpointLocks.get(id) === settled) endpointLocks.delete(id);
    });
    return next;
  }

  /** The secrets that sign now: the newest, and the older ones while the overlap lasts. */
  const signingSecrets = (endpoint: WebhookEndpoint) =>
    endpoint.previousSecretsUntil !== undefined && endpoint.previousSecretsUntil > now()
      ? endpoint.secrets
      : endpoint.secrets.slice(0, 1);

  async function finish(
    delivery: WebhookDelivery,
    outcome: AttemptOutcome | undefined,
    endpoint?: WebhookEndpoint,
  ) {
    const verdict = outcome?.verdict ?? 'final';
    let delay: number | undefined;
    if (verdict === 'retry') {
      delay = retryDelay(delivery.attempts.length, settings.schedule, {
        jitter: settings.jitter,
        retryAfterMs: outcome?.retryAfterMs,
      });
    }
    if (verdict === 'delivered') delivery.state = 'delivered';
    else if (delay === undefined) delivery.state = 'failed';
    else delivery.nextAttemptAt = now() + delay;
    await store.update(delivery);
    if (delivery.state === 'delivered') {
      emit({ type: 'delivered', delivery });
      // a write only when there is a failure count to clear
      if (endpoint === undefined || endpoint.consecutiveFailures > 0) {
        await changeEndpoint(delivery.endpointId, (e) => {
          e.consecutiveFailures = 0;
        });
      }
    } else if (delivery.state === 'failed') {
      emit({ type: 'dead-letter', delivery });
      const endpoint = await changeEndpoint(delivery.endpointId, (e) => {
        if (e.disabled !== undefined) return;
        e.consecutiveFailures += 1;
        if (verdict === 'gone') e.disabled = 'gone';
        else if (settings.disableAfter > 0 && e.consecutiveFailures >= settings.disableAfter) {
          e.disabled = 'failing';
        }
      });
      if (endpoint?.disabled !== undefined && outcome !== undefined) {
        const { secrets: _secrets, ...visible } = endpoint;
        emit({ type: 'endpoint-disabled', endpoint: visible });
      }
    }
  }

  async function run(delivery: WebhookDelivery): Promise<void> {
    const endpoint = await store.getEndpoint(delivery.endpointId);
    if (endpoint !== undefined && credentials.isRevoked(endpoint)) {
      // its removal (under way) drops this delivery too: never sent, never dead-lettered
      await store.deleteEndpoint(endpoint.id);
      return;
    }
    if (endpoint === undefined || endpoint.disabled !== undefined) {
      return finish(delivery, undefined);
    }
    const outcome = await attemptDelivery(
      delivery,
      endpoint.url,
      signingSecrets(endpoint),
      attemptSettings,
    );
    delivery.attempts.push(outcome.attempt);
    emit({ type: 'attempt', delivery, attempt: outcome.attempt });
    await finish(delivery, outcome, endpoint);
  }

  async function attempt(delivery: WebhookDelivery): Promise<void> {
    try {
      await run(delivery);
    } catch (error) {
      // a store failure: the lease runs out and the delivery is taken again
      console.error('portico webhooks: recording an attempt failed', error);
    }
  }

  function start(delivery: WebhookDelivery): void {
    const task = attempt(delivery).then(() => {
      inFlight.delete(task);
      wake();
    });
    inFlight.add(task);
  }

  async function tick(): Promise<void> {
    if (ticking) {
      again = true;
      return;
    }
    ticking = true;
    try {
      do {
        again = false;
        while (!closed && inFlight.size < concurrency) {
          const batch = await store.claim({
            now: now(),
            limit: concurrency - inFlight.size,
            leaseMs: timeout + LEASE_MARGIN_MS,
            perEndpoint: settings.perEndpointConcurrency,
            ordered: settings.ordered,
          });
          idle = batch.length === 0;
          if (idle) break;
          for (const delivery of batch) start(delivery);
        }
      } while (again && !closed);
      // With every slot taken, the end of an attempt wakes the sender: no timer to set.
      if (inFlight.size < concurrency) await arm();
    } catch (error) {
      console.error('portico webhooks: reading the delivery store failed', error);
      if (!closed) arm(pollInterval);
    } finally {
      ticking = false;
    }
  }

  /** Sets the timer for the next due delivery (or the next look at the store). */
  async function arm(wait?: number): Promise<void> {
    if (closed) return;
    if (wait === undefined) {
      const due = await store.nextDue?.();
      // Due deliveries held back by a concurrency bound wait for an attempt to end (which
      // wakes the sender), not for a spin on the store.
      const until = due === undefined ? pollInterval : due - now();
      wait = Math.min(Math.max(until, idle && until <= 0 ? pollInterval : 0), pollInterval);
    }
    // keep a timer that already fires as soon (no timer churn per attempt)
    const at = Date.now() + wait;
    if (timer !== undefined && timerAt <= at) return;
    if (timer !== undefined) clearTimeout(timer);
    timerAt = at;
    timer = setTimeout(() => {
      timer = undefined;
      wake();
    }, wait);
    timer.unref();
  }

  function wake(): void {
    if (closed) return;
    const starting = !ticking; // else the tick under way runs once more
    const running = tick().catch(() => {});
    if (starting) currentTick = running;
  }

  wake();

  /** Stores a new endpoint within its owner's bounds, unless its credential was revoked. */
  async function register(endpoint: WebhookEndpoint): Promise<WebhookEndpoint> {
    const maxPerOwner = settings.maxEndpointsPerOwner;
    const result = await store.addEndpoint(endpoint, { maxPerOwner });
    if (result !== 'added') throw admissionRefused(result, maxPerOwner);
    // revoked while it was being stored: the removal may have looked before it was there
    if (credentials.isRevoked(endpoint)) {
      await store.deleteEndpoint(endpoint.id);
      throw credentialRevoked();
    }
    return endpoint;
  }

  return {
    async addEndpoint(input) {
      if (closed) throw new TypeError('The webhook sender is closed.');
      assertEventNames(input.events);
      const ownership = checkOwnership(input);
      if (credentials.isRevoked(ownership)) throw credentialRevoked();
      const url = await assertWebhookUrl(input.url, guard);
      const secret = input.secret ?? generateWebhookSecret();
      signWebhook(secret, { id: 'msg_check', timestamp: 0, body: '' }); // a bad secret throws here
      return register({
        id: newId('ep'),
        url: url.href,
        ...(input.events !== undefined && { events: [...input.events] }),
        ...ownership,
        secrets: [secret],
        consecutiveFailures: 0,
        createdAt: now(),
      });
    },
    listEndpoints: (filter) => store.listEndpoints(filter),
    removeEndpoint: (id) => store.deleteEndpoint(id),
    getEndpoint: (id) => store.getEndpoint(id),
    rotateSecret: (id) =>
      changeEndpoint(id, (e) => {
        e.secrets = [generateWebhookSecret(), e.secrets[0]!];
        e.previousSecretsUntil = now() + settings.rotationOverlapMs;
      }),
    enableEndpoint: (id) =>
      changeEndpoint(id, (e) => {
        e.disabled = undefined;
        e.consecutiveFailures = 0;
      }),
    async send(event, data) {
      if (typeof event !== 'string' || !EVENT_NAME.test(event)) {
        throw new TypeError('The event name must be 1–200 characters without control characters.');
      }
      if (closed) throw new TypeError('The webhook sender is closed.');
      const at = now();
      const body = JSON.stringify({
        event,
        type: event,
        timestamp: new Date(at).toISOString(),
        data,
      });
      const endpoints = (await store.listEndpoints()).filter(
        (e) =>
          e.disabled === undefined &&
          (e.events === undefined || e.events.includes(event)) &&
          !credentials.isRevoked(e),
      );
      const deliveries = endpoints.map<WebhookDelivery>((e) => ({
        id: newId('msg'),
        endpointId: e.id,
        event,
        body,
        state: 'pending',
        attempts: [],
        nextAttemptAt: at,
        createdAt: at,
      }));
      if (deliveries.length > 0) {
        await store.enqueue(deliveries);
        // with every slot taken, the end of an attempt takes them
        if (inFlight.size < concurrency) wake();
      }
      return deliveries;
    },
    getDelivery: (id) => store.getDelivery(id),
    listDeliveries: (filter) => store.listDeliveries(filter),
    async close() {
      if (closed) return;
      closed = true;
      credentials.close();
      if (timer !== undefined) clearTimeout(timer);
      // a claim answered after this point still starts its batch: wait for that, then for
      // every attempt, so each is recorded before the store goes
      await currentTick;
      await Promise.allSettled([...inFlight]);
      if (ownDispatcher) await dispatcher.close();
    },
  };
}
