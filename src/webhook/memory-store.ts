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

const copy = <T>(value: T): T => structuredClone(value);

/**
 * The in-process {@link WebhookStore}: endpoints and deliveries in maps, finished deliveries
 * bounded. Pending deliveries do not survive a restart: behind several processes, or where
 * that matters, use a shared store. Values are copied in and out, as a remote store would.
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
    this.#endpoints.set(endpoint.id, copy(endpoint));
  }

  async getEndpoint(id: string): Promise<WebhookEndpoint | undefined> {
    const endpoint = this.#endpoints.get(id);
    return endpoint && copy(endpoint);
  }

  async deleteEndpoint(id: string): Promise<boolean> {
    for (const [deliveryId, delivery] of this.#pending) {
      if (delivery.endpointId === id) this.#pending.delete(deliveryId);
    }
    return this.#endpoints.delete(id);
  }

  async listEndpoints(): Promise<WebhookEndpoint[]> {
    return [...this.#endpoints.values()].map(copy);
  }

  async enqueue(deliveries: readonly WebhookDelivery[]): Promise<void> {
    for (const delivery of deliveries) this.#pending.set(delivery.id, copy(delivery));
  }

  async claim(claim: WebhookClaim): Promise<WebhookDelivery[]> {
    const { now, limit, leaseMs, perEndpoint, ordered } = claim;
    const inFlight = new Map<string, number>();
    for (const d of this.#pending.values()) {
      if ((d.leaseUntil ?? 0) > now)
        inFlight.set(d.endpointId, (inFlight.get(d.endpointId) ?? 0) + 1);
    }
    const seen = new Set<string>();
    const claimed: WebhookDelivery[] = [];
    for (const d of this.#pending.values()) {
      if (claimed.length >= limit) break;
      const first = !seen.has(d.endpointId);
      seen.add(d.endpointId);
      if (ordered && !first) continue;
      if ((d.leaseUntil ?? 0) > now || d.nextAttemptAt > now) continue;
      const busy = inFlight.get(d.endpointId) ?? 0;
      if (busy >= perEndpoint) continue;
      inFlight.set(d.endpointId, busy + 1);
      d.leaseUntil = now + leaseMs;
      claimed.push(copy(d));
    }
    return claimed;
  }

  async update(delivery: WebhookDelivery): Promise<void> {
    const stored = { ...copy(delivery), leaseUntil: undefined };
    if (stored.state === 'pending') {
      if (this.#pending.has(stored.id)) this.#pending.set(stored.id, stored);
      return;
    }
    this.#pending.delete(stored.id);
    this.#finished.set(stored.id, stored);
    while (this.#finished.size > this.#maxFinished) {
      this.#finished.delete(this.#finished.keys().next().value as string);
    }
  }

  async getDelivery(id: string): Promise<WebhookDelivery | undefined> {
    const delivery = this.#pending.get(id) ?? this.#finished.get(id);
    return delivery && copy(delivery);
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
      .map(copy);
  }

  async nextDue(): Promise<number | undefined> {
    let next: number | undefined;
    for (const d of this.#pending.values()) {
      const due = Math.max(d.nextAttemptAt, d.leaseUntil ?? 0);
      if (next === undefined || due < next) next = due;
    }
    return next;
  }
}
