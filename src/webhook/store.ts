/**
 * A receiver's registration: where its deliveries go, which events it wants, the secrets they
 * are signed with.
 *
 * @example
 * ```ts
 * const endpoint: WebhookEndpoint = await sender.addEndpoint({ url: 'https://hooks.example.com/in' });
 * console.log(endpoint.id, endpoint.secrets[0]); // show the secret to its owner once
 * ```
 */
export interface WebhookEndpoint {
  /** Its id (`ep_…`). */
  id: string;
  /** The `https:` URL deliveries are POSTed to. */
  url: string;
  /** The events it receives; unset for every event. */
  events?: readonly string[] | undefined;
  /**
   * Who registered it (an app's user or tenant id): the sender caps the endpoints of each
   * owner and refuses the same URL twice for one owner; list them with
   * `listEndpoints({ owner })`.
   */
  owner?: string | undefined;
  /**
   * The revocation ids of the credential it was registered with (`grant:<id>`,
   * `api_key:<id>`): when one is revoked, the endpoint is removed with its pending deliveries.
   */
  credentialIds?: readonly string[] | undefined;
  /**
   * The `whsec_` signing secrets, newest first: each delivery carries one signature per
   * secret, so that a receiver rotating its secret accepts both meanwhile.
   */
  secrets: readonly string[];
  /** When the older secrets stop being used (epoch ms), after a rotation. */
  previousSecretsUntil?: number | undefined;
  /** Why it no longer receives deliveries (`gone`: it answered 410; `failing`: too many dead letters). */
  disabled?: 'gone' | 'failing' | 'manual' | undefined;
  /** Dead-lettered deliveries in a row; a delivered one resets it. */
  consecutiveFailures: number;
  /** When it was registered (epoch ms). */
  createdAt: number;
}

/**
 * One HTTP attempt of a delivery.
 *
 * @example
 * ```ts
 * const last: WebhookAttempt | undefined = delivery.attempts.at(-1);
 * if (last?.status === 429) console.log('rate limited by the receiver');
 * ```
 */
export interface WebhookAttempt {
  /** When it started (epoch ms). */
  at: number;
  /** The receiver's status code, when it answered. */
  status?: number | undefined;
  /** How long it took, in milliseconds. */
  durationMs: number;
  /** What went wrong without an answer (`timeout`, `ECONNREFUSED`, `address refused` …). */
  error?: string | undefined;
}

/**
 * One message to one endpoint, from enqueueing to delivered or dead-lettered.
 *
 * @example
 * ```ts
 * const [delivery]: WebhookDelivery[] = await sender.send('message.created', message);
 * ```
 */
export interface WebhookDelivery {
  /** The `webhook-id`: unique per message and endpoint, the same on every retry (`msg_…`). */
  id: string;
  /** The endpoint it goes to. */
  endpointId: string;
  /** The event name. */
  event: string;
  /** The exact JSON body, built once: every attempt sends the same bytes. */
  body: string;
  /** Where it stands. */
  state: 'pending' | 'delivered' | 'failed';
  /** Every attempt so far, oldest first. */
  attempts: WebhookAttempt[];
  /** When the next attempt is due (epoch ms), while pending. */
  nextAttemptAt: number;
  /** Until when a sender holds it (epoch ms); past it, another sender may take it over. */
  leaseUntil?: number | undefined;
  /** When it was enqueued (epoch ms); orders deliveries per endpoint. */
  createdAt: number;
}

/**
 * What {@link WebhookStore.claim} is asked for.
 *
 * @example
 * ```ts
 * const due = await store.claim({ now: Date.now(), limit: 10, leaseMs: 20_000, perEndpoint: 2, ordered: false });
 * ```
 */
export interface WebhookClaim {
  /** The current time (epoch ms). */
  now: number;
  /** The most deliveries to return. */
  limit: number;
  /** How long the claimed deliveries are held for this sender. */
  leaseMs: number;
  /** The most deliveries in flight (leased) per endpoint, these included. */
  perEndpoint: number;
  /** Only the oldest pending delivery of each endpoint may be claimed. */
  ordered: boolean;
}

/**
 * Which endpoints {@link WebhookStore.listEndpoints} lists: every one by default, else those
 * matching every filter given.
 *
 * @example
 * ```ts
 * const mine = await store.listEndpoints({ owner: principal.sub } satisfies WebhookEndpointFilter);
 * ```
 */
export interface WebhookEndpointFilter {
  /** Only the endpoints of this owner. */
  owner?: string | undefined;
  /** Only the endpoints registered with this credential (a revocation id, `grant:<id>`). */
  credentialId?: string | undefined;
}

/**
 * What {@link WebhookStore.addEndpoint} did: `added`, or refused because its owner already
 * has an endpoint with this URL (`duplicate`) or as many endpoints as allowed (`full`).
 *
 * @example
 * ```ts
 * const result: WebhookEndpointAdmission = await store.addEndpoint(endpoint, { maxPerOwner: 10 });
 * ```
 */
export type WebhookEndpointAdmission = 'added' | 'duplicate' | 'full';

/**
 * Where endpoints and deliveries live. Deliveries are claimed with a lease, so that those of
 * a sender that crashed are taken over once the lease runs out (at-least-once delivery). The
 * in-memory `MemoryWebhookStore` is the default; a shared store (Redis) lets pending
 * deliveries survive a restart and several processes share the work.
 *
 * @example
 * ```ts
 * const sender = createWebhookSender({ store: new MemoryWebhookStore() });
 * ```
 */
export interface WebhookStore {
  /**
   * Registers a new endpoint, indexed by owner and by credential id. With an `owner`, refused
   * at once (atomically, across every process sharing the store) when that owner already has
   * an endpoint with the same URL or `maxPerOwner` endpoints.
   */
  addEndpoint(
    endpoint: WebhookEndpoint,
    limits: { maxPerOwner: number },
  ): Promise<WebhookEndpointAdmission>;
  /**
   * Replaces a registered endpoint (its secrets, state and failure count; never its URL, owner
   * or credential). An endpoint removed meanwhile stays removed: `false` then.
   */
  saveEndpoint(endpoint: WebhookEndpoint): Promise<boolean>;
  /** One endpoint, or `undefined`. */
  getEndpoint(id: string): Promise<WebhookEndpoint | undefined>;
  /** Removes an endpoint and drops its pending deliveries; `false` when there was none. */
  deleteEndpoint(id: string): Promise<boolean>;
  /** The endpoints matching `filter` (every one without), oldest first. */
  listEndpoints(filter?: WebhookEndpointFilter): Promise<WebhookEndpoint[]>;
  /** Adds pending deliveries. */
  enqueue(deliveries: readonly WebhookDelivery[]): Promise<void>;
  /** Leases up to `limit` due deliveries (`nextAttemptAt ≤ now`, not leased), oldest first. */
  claim(claim: WebhookClaim): Promise<WebhookDelivery[]>;
  /** Records an attempt's outcome (rescheduled, delivered or failed) and releases the lease. */
  update(delivery: WebhookDelivery): Promise<void>;
  /** One delivery, or `undefined`. */
  getDelivery(id: string): Promise<WebhookDelivery | undefined>;
  /** Deliveries, oldest first, filtered by endpoint and state (`failed`: the dead letters). */
  listDeliveries(filter?: {
    endpointId?: string;
    state?: WebhookDelivery['state'];
  }): Promise<WebhookDelivery[]>;
  /** When the next pending delivery is due (epoch ms), if the store can tell. */
  nextDue?(): Promise<number | undefined>;
}
