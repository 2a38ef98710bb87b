import { Fifo } from '../internal/fifo.js';
import { MapEvictor } from '../internal/map-evictor.js';
import { assertKnownOptions, countOption } from '../internal/options.js';
import type {
  WebhookClaim,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointAdmission,
  WebhookEndpointFilter,
  WebhookStore,
} from './store.js';

/**
 * Options of `MemoryWebhookStore`.
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
   * @defaultValue `10_000`
   */
  maxFinished?: number;
}

const KNOWN = ['maxFinished'] as const satisfies readonly (keyof MemoryWebhookStoreOptions)[];

/** Copies of what goes in and out, as a remote store would hand back (never shared objects). */
const copyEndpoint = (e: WebhookEndpoint): WebhookEndpoint => ({
  ...e,
  secrets: [...e.secrets],
  ...(e.events !== undefined && { events: [...e.events] }),
  ...(e.credentialIds !== undefined && { credentialIds: [...e.credentialIds] }),
});
const copyOf = (d: WebhookDelivery, leaseUntil: number | undefined): WebhookDelivery => ({
  // field by field, in one order: every copy has the same shape (a spread has as many as inputs)
  id: d.id,
  endpointId: d.endpointId,
  event: d.event,
  body: d.body,
  state: d.state,
  attempts: d.attempts.map((a) => ({ ...a })),
  nextAttemptAt: d.nextAttemptAt,
  leaseUntil,
  createdAt: d.createdAt,
});
/** A copy to store: no lease (a stored delivery is leased by `claim` only). */
const storedCopy = (d: WebhookDelivery): WebhookDelivery => copyOf(d, undefined);
const copyDelivery = (d: WebhookDelivery): WebhookDelivery => copyOf(d, d.leaseUntil);

/**
 * One endpoint's pending deliveries. Its two lines are consumed from the front and never
 * searched: an entry that no longer belongs (finished, leased, replaced by an update) stays
 * until it reaches the front, and is dropped there.
 */
interface Queue {
  /** The ids of its pending deliveries, in the order enqueued (the order of `ordered` claims). */
  order: Fifo<string>;
  /** Its deliveries that are due and not leased, in the order they became so. */
  ready: Fifo<WebhookDelivery>;
  /** How many are pending. */
  pending: number;
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
  /** Each owner's endpoints: URL → endpoint id. */
  readonly #byOwner = new Map<string, Map<string, string>>();
  /** Each credential id's endpoints. */
  readonly #byCredential = new Map<string, Set<string>>();
  /** Pending deliveries, in the order they were enqueued. */
  readonly #pending = new Map<string, WebhookDelivery>();
  readonly #queues = new Map<string, Queue>();
  /** Pending deliveries waiting for a later attempt, not yet in their queue's `ready`. */
  readonly #waiting = new Map<string, WebhookDelivery>();
  readonly #finished = new Map<string, WebhookDelivery>();
  readonly #finishedEvictor = new MapEvictor(this.#finished);
  readonly #maxFinished: number;

  constructor(options: MemoryWebhookStoreOptions = {}) {
    const owner = 'MemoryWebhookStore';
    assertKnownOptions(owner, options, KNOWN);
    this.#maxFinished = countOption(owner, 'maxFinished', options.maxFinished, 10_000, { min: 0 });
  }

  async addEndpoint(
    endpoint: WebhookEndpoint,
    limits: { maxPerOwner: number },
  ): Promise<WebhookEndpointAdmission> {
    const { owner, url, id } = endpoint;
    if (owner !== undefined) {
      const urls = this.#byOwner.get(owner) ?? new Map<string, string>();
      if (urls.has(url)) return 'duplicate';
      if (urls.size >= limits.maxPerOwner) return 'full';
      this.#byOwner.set(owner, urls.set(url, id));
    }
    for (const credentialId of endpoint.credentialIds ?? []) {
      const ids = this.#byCredential.get(credentialId) ?? new Set<string>();
      this.#byCredential.set(credentialId, ids.add(id));
    }
    this.#endpoints.set(id, copyEndpoint(endpoint));
    return 'added';
  }

  async saveEndpoint(endpoint: WebhookEndpoint): Promise<boolean> {
    const current = this.#endpoints.get(endpoint.id);
    if (current === undefined) return false;
    // what it is indexed by stays as registered
    this.#endpoints.set(endpoint.id, {
      ...copyEndpoint(endpoint),
      url: current.url,
      owner: current.owner,
      credentialIds: current.credentialIds,
    });
    return true;
  }

  /** Takes a removed endpoint out of the owner and credential indexes. */
  #unindex(endpoint: WebhookEndpoint): void {
    const urls = endpoint.owner === undefined ? undefined : this.#byOwner.get(endpoint.owner);
    if (urls?.get(endpoint.url) === endpoint.id) urls.delete(endpoint.url);
    if (urls?.size === 0) this.#byOwner.delete(endpoint.owner!);
    for (const credentialId of endpoint.credentialIds ?? []) {
      const ids = this.#byCredential.get(credentialId);
      ids?.delete(endpoint.id);
      if (ids?.size === 0) this.#byCredential.delete(credentialId);
    }
  }

  async getEndpoint(id: string): Promise<WebhookEndpoint | undefined> {
    const endpoint = this.#endpoints.get(id);
    return endpoint && copyEndpoint(endpoint);
  }

  async deleteEndpoint(id: string): Promise<boolean> {
    const queue = this.#queues.get(id);
    if (queue !== undefined) {
      for (const deliveryId of queue.order) {
        this.#pending.delete(deliveryId);
        this.#waiting.delete(deliveryId);
      }
      this.#queues.delete(id);
    }
    const endpoint = this.#endpoints.get(id);
    if (endpoint === undefined) return false;
    this.#unindex(endpoint);
    return this.#endpoints.delete(id);
  }

  async listEndpoints(filter: WebhookEndpointFilter = {}): Promise<WebhookEndpoint[]> {
    const { owner, credentialId } = filter;
    let ids: Iterable<string> = this.#endpoints.keys();
    if (owner !== undefined) ids = this.#byOwner.get(owner)?.values() ?? [];
    else if (credentialId !== undefined) ids = this.#byCredential.get(credentialId) ?? [];
    const found: WebhookEndpoint[] = [];
    for (const id of ids) {
      const endpoint = this.#endpoints.get(id);
      if (endpoint === undefined) continue;
      if (credentialId !== undefined && !endpoint.credentialIds?.includes(credentialId)) continue;
      found.push(copyEndpoint(endpoint));
    }
    return found.sort((a, b) => a.createdAt - b.createdAt);
  }

  #queue(endpointId: string): Queue {
    let queue = this.#queues.get(endpointId);
    if (queue === undefined) {
      queue = { order: new Fifo(), ready: new Fifo(), pending: 0, leased: 0 };
      this.#queues.set(endpointId, queue);
    }
    return queue;
  }

  /** Files a pending, unleased delivery as ready or waiting. */
  #file(delivery: WebhookDelivery, queue: Queue, now: number): void {
    if (delivery.nextAttemptAt <= now) queue.ready.push(delivery);
    else this.#waiting.set(delivery.id, delivery);
  }

  /** Whether `delivery`, from a queue's `ready` line, is no longer the stored one or is leased. */
  #isStale = (delivery: WebhookDelivery): boolean =>
    this.#pending.get(delivery.id) !== delivery || delivery.leaseUntil !== undefined;

  /** Whether a queue's `order` line may drop `id` (no longer pending). */
  #isGone = (id: string): boolean => !this.#pending.has(id);

  #isPending = (id: string): boolean => this.#pending.has(id);

  /** The next delivery a claim may take from `queue`, if any, removed from its `ready` line. */
  #takeNext(queue: Queue, ordered: boolean | undefined): WebhookDelivery | undefined {
    if (!ordered) {
      const next = queue.ready.dropWhile(this.#isStale);
      if (next !== undefined) queue.ready.shift();
      return next;
    }
    const headId = queue.order.dropWhile(this.#isGone);
    const head = headId === undefined ? undefined : this.#pending.get(headId);
    if (head === undefined || head.leaseUntil !== undefined || this.#waiting.has(head.id)) {
      return undefined;
    }
    // the head leaves `ready` when it reaches that line's front (after this lease, it is stale)
    return head;
  }

  async enqueue(deliveries: readonly WebhookDelivery[]): Promise<void> {
    const now = Date.now();
    for (const given of deliveries) {
      const delivery = storedCopy(given);
      const queue = this.#queue(delivery.endpointId);
      if (!this.#pending.has(delivery.id)) {
        queue.order.push(delivery.id);
        queue.pending += 1;
      }
      this.#pending.set(delivery.id, delivery);
      this.#file(delivery, queue, now);
    }
  }

  async claim(claim: WebhookClaim): Promise<WebhookDelivery[]> {
    const { now, limit, leaseMs, perEndpoint, ordered } = claim;
    for (const [id, delivery] of this.#waiting) {
      if (delivery.nextAttemptAt > now) continue;
      this.#waiting.delete(id);
      this.#queue(delivery.endpointId).ready.push(delivery);
    }
    const claimed: WebhookDelivery[] = [];
    const served: string[] = [];
    for (const [endpointId, queue] of this.#queues) {
      if (claimed.length >= limit) break;
      let took = false;
      while (claimed.length < limit && queue.leased < perEndpoint) {
        const next = this.#takeNext(queue, ordered);
        if (next === undefined) break;
        queue.leased += 1;
        next.leaseUntil = now + leaseMs;
        claimed.push(copyDelivery(next));
        took = true;
      }
      if (ordered) queue.ready.dropWhile(this.#isStale);
      if (took) served.push(endpointId);
    }
    // Endpoints served go to the back of the line: every endpoint gets its turn.
    for (const endpointId of served) {
      const queue = this.#queues.get(endpointId)!;
      this.#queues.delete(endpointId);
      if (queue.pending > 0) this.#queues.set(endpointId, queue);
    }
    return claimed;
  }

  async update(delivery: WebhookDelivery): Promise<void> {
    const current = this.#pending.get(delivery.id);
    const queue = this.#queues.get(delivery.endpointId);
    const stored = storedCopy(delivery);
    if (current !== undefined && queue !== undefined) {
      // `current` leaves the queue's lines when it reaches their front
      if (current.leaseUntil !== undefined) queue.leased = Math.max(0, queue.leased - 1);
      this.#waiting.delete(current.id);
      if (stored.state === 'pending') {
        this.#pending.set(stored.id, stored);
        this.#file(stored, queue, Date.now());
        return;
      }
      this.#pending.delete(stored.id);
      queue.pending -= 1;
      if (queue.pending === 0 && queue.leased === 0) this.#queues.delete(delivery.endpointId);
      // Unordered claims never take `order` from its front: behind a delivery that waits for
      // a retry, the ids of those delivered since pile up. Sweep them once they outnumber the
      // pending ones (linear, paid for by as many deliveries).
      else if (queue.order.length > 2 * queue.pending + 64) queue.order.retain(this.#isPending);
    } else if (stored.state === 'pending') {
      return; // its endpoint was removed meanwhile
    }
    this.#finished.set(stored.id, stored);
    while (this.#finished.size > this.#maxFinished) this.#finishedEvictor.dropOldest();
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
