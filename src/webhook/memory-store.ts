import { assertKnownOptions, invalidOption } from '../internal/options.js';
import type { WebhookClaim, WebhookDelivery, WebhookEndpoint, WebhookStore } from './store.js';

/**
 * Options of {@link MemoryWebhookStore}.
 *
 * @example
 * ```ts
 * const store = new MemoryWebhookStore({ maxFinished: 1000 } satisfies MemoryWebhookStoreOptions);
 * ```
 */
export interface MemoryWebhookStoreOptions {
  /**
   * How many finished deliveries (delivered or dead-lettered) are kept for inspection; the
   * oldest are forgotten first. Pending ones are always kept.
   * @defaultValue `10000`
   */
  maxFinished?: number;
}

/** Copies of what goes in and out, as a remote store would hand back (never shared objects). */
const copyEndpoint = (e: WebhookEndpoint): WebhookEndpoint => ({
  ...e,
  secrets: [...e.secrets],
  ...(e.events !== undefined && { events: [...e.events] }),
});
const copyDelivery = (d: WebhookDelivery): WebhookDelivery => ({
  ...d,
  attempts: d.attempts.map((a) => ({ ...a })),
});

/** One endpoint's pending deliveries. */
interface Queue {
  /** Every pending delivery, in the order enqueued (the order of `ordered` claims). */
  order: Map<string, WebhookDelivery>;
  /** Those due now and not leased, oldest first. */
  ready: Map<string, WebhookDelivery>;
  /** How many are leased (in flight). */
  leased: number;
}

/**
 * The in-process {@link WebhookStore}: endpoints and deliveries in maps, a queue per endpoint
 * (so a claim costs the number of endpoints, not of deliveries), finished deliveries bounded.
 * Pending deliveries do not survive a restart: behind several processes, or where that
 * matters, use a shared store. A lease ends with `update()` (one process: no sender to take
 * over from). Values are copied in and out, as a remote store would.
 *
 * @example
 * ```ts
 * const sender = createWebhookSender({ store: new MemoryWebhookStore() });
 * ```
 */
export class MemoryWebhookStore implements WebhookStore {
  readonly #endpoints = new Map<string, WebhookEndpoint>();
  /** Pending deliveries, in the order they were enqueued. */
  readonly #pending = new Map<string, WebhookDelivery>();
  readonly #queues = new Map<string, Queue>();
  /** Pending deliveries waiting for a later attempt, not yet in their queue's `ready`. */
  readonly #waiting = new Map<string, WebhookDelivery>();
  readonly #finished = new Map<string, WebhookDelivery>();
  readonly #maxFinished: number;

  constructor(options: MemoryWebhookStoreOptions = {}) {
    assertKnownOptions('MemoryWebhookStore', options, ['maxFinished']);
    const { maxFinished = 10_000 } = options;
    if (!Number.isSafeInteger(maxFinished) || maxFinished < 0) {
      throw invalidOption('MemoryWebhookStore: `maxFinished` must be an integer ≥ 0');
    }
    this.#maxFinished = maxFinished;
  }

  async saveEndpoint(endpoint: WebhookEndpoint): Promise<void> {
    this.#endpoints.set(endpoint.id, copyEndpoint(endpoint));
  }

  async getEndpoint(id: string): Promise<WebhookEndpoint | undefined> {
    const endpoint = this.#endpoints.get(id);
    return endpoint && copyEndpoint(endpoint);
  }

  async deleteEndpoint(id: string): Promise<boolean> {
    const queue = this.#queues.get(id);
    if (queue !== undefined) {
      for (const deliveryId of queue.order.keys()) {
        this.#pending.delete(deliveryId);
        this.#waiting.delete(deliveryId);
      }
      this.#queues.delete(id);
    }
    return this.#endpoints.delete(id);
  }

  async listEndpoints(): Promise<WebhookEndpoint[]> {
    return [...this.#endpoints.values()].map(copyEndpoint);
  }

  #queue(endpointId: string): Queue {
    let queue = this.#queues.get(endpointId);
    if (queue === undefined) {
      queue = { order: new Map(), ready: new Map(), leased: 0 };
      this.#queues.set(endpointId, queue);
    }
    return queue;
  }

  /** Files a pending, unleased delivery as ready or waiting. */
  #file(delivery: WebhookDelivery, queue: Queue, now: number): void {
    if (delivery.nextAttemptAt <= now) queue.ready.set(delivery.id, delivery);
    else this.#waiting.set(delivery.id, delivery);
  }

  async enqueue(deliveries: readonly WebhookDelivery[]): Promise<void> {
    const now = Date.now();
    for (const given of deliveries) {
      const delivery = { ...copyDelivery(given), leaseUntil: undefined };
      const queue = this.#queue(delivery.endpointId);
      this.#pending.set(delivery.id, delivery);
      queue.order.set(delivery.id, delivery);
      this.#file(delivery, queue, now);
    }
  }

  async claim(claim: WebhookClaim): Promise<WebhookDelivery[]> {
    const { now, limit, leaseMs, perEndpoint, ordered } = claim;
    for (const [id, delivery] of this.#waiting) {
      if (delivery.nextAttemptAt > now) continue;
      this.#waiting.delete(id);
      this.#queue(delivery.endpointId).ready.set(id, delivery);
    }
    const claimed: WebhookDelivery[] = [];
    const served: string[] = [];
    for (const [endpointId, queue] of this.#queues) {
      if (claimed.length >= limit) break;
      let took = false;
      while (claimed.length < limit && queue.leased < perEndpoint) {
        let next: WebhookDelivery | undefined;
        if (ordered) {
          const head = queue.order.values().next().value;
          next = head !== undefined && queue.ready.has(head.id) ? head : undefined;
        } else {
          next = queue.ready.values().next().value;
        }
        if (next === undefined) break;
        queue.ready.delete(next.id);
        queue.leased += 1;
        next.leaseUntil = now + leaseMs;
        claimed.push(copyDelivery(next));
        took = true;
      }
      if (took) served.push(endpointId);
    }
    // Endpoints served go to the back of the line: every endpoint gets its turn.
    for (const endpointId of served) {
      const queue = this.#queues.get(endpointId)!;
      this.#queues.delete(endpointId);
      if (queue.order.size > 0) this.#queues.set(endpointId, queue);
    }
    return claimed;
  }

  async update(delivery: WebhookDelivery): Promise<void> {
    const current = this.#pending.get(delivery.id);
    const queue = this.#queues.get(delivery.endpointId);
    const stored = { ...copyDelivery(delivery), leaseUntil: undefined };
    if (current !== undefined && queue !== undefined) {
      if (current.leaseUntil !== undefined) queue.leased = Math.max(0, queue.leased - 1);
      queue.ready.delete(current.id);
      this.#waiting.delete(current.id);
      if (stored.state === 'pending') {
        this.#pending.set(stored.id, stored);
        queue.order.set(stored.id, stored);
        this.#file(stored, queue, Date.now());
        return;
      }
      this.#pending.delete(stored.id);
      queue.order.delete(stored.id);
      if (queue.order.size === 0 && queue.leased === 0) this.#queues.delete(delivery.endpointId);
    } else if (stored.state === 'pending') {
      return; // its endpoint was removed meanwhile
    }
    this.#finished.set(stored.id, stored);
    while (this.#finished.size > this.#maxFinished) {
      this.#finished.delete(this.#finished.keys().next().value as string);
    }
  }

  async getDelivery(id: string): Promise<WebhookDelivery | undefined> {
    const delivery = this.#pending.get(id) ?? this.#finished.get(id);
    return delivery && copyDelivery(delivery);
  }

  async listDeliveries(
    filter: { endpointId?: string; state?: WebhookDelivery['state'] } = {},
  ): Promise<WebhookDelivery[]> {
    return [...this.#pending.values(), ...this.#finished.values()]
      .filter(
        (d) =>
          (filter.endpointId === undefined || d.endpointId === filter.endpointId) &&
          (filter.state === undefined || d.state === filter.state),
      )
      .sort((a, b) => a.createdAt - b.createdAt)
      .map(copyDelivery);
  }

  /**
   * When the next waiting delivery (a retry) falls due. Deliveries already due but held back
   * by a concurrency bound are not counted: the end of an attempt wakes the sender for them.
   */
  async nextDue(): Promise<number | undefined> {
    let next: number | undefined;
    for (const d of this.#waiting.values()) {
      if (next === undefined || d.nextAttemptAt < next) next = d.nextAttemptAt;
    }
    return next;
  }
}
