import { type AddressGuardOptions, assertWebhookUrl } from './address-guard/guard.js';
import { assertEventNames } from './event-name.js';
import { newId } from './ids.js';
import { admissionRefused, checkOwnership, credentialRevoked } from './ownership.js';
import type { CredentialEnd } from './revoked-credentials.js';
import { generateWebhookSecret } from './secret.js';
import { signWebhook } from './signature.js';
import type { WebhookEndpoint, WebhookStore } from './store.js';

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

/** What an {@link EndpointRegistry} is given. */
export interface EndpointRegistryOptions {
  store: WebhookStore;
  now: () => number;
  /** How new URLs are checked. */
  guard: AddressGuardOptions;
  /** The watch over the credentials endpoints are registered with. */
  credentials: CredentialEnd;
  /** The most endpoints one owner may register. */
  maxPerOwner: number;
  /** Milliseconds the previous secret still signs after a rotation. */
  rotationOverlapMs: number;
}

/**
 * The sender's endpoints: registration (URL, events, ownership and secret checked first) and
 * changes to a registered endpoint, one at a time per endpoint.
 * @internal
 */
export class EndpointRegistry {
  readonly #options: EndpointRegistryOptions;
  /** Per endpoint, the change under way: the next one waits for it. */
  readonly #locks = new Map<string, Promise<unknown>>();

  constructor(options: EndpointRegistryOptions) {
    this.#options = options;
  }

  /** Checks `input` and registers it as a new endpoint. */
  async add(input: NewWebhookEndpoint): Promise<WebhookEndpoint> {
    const { guard, credentials, now } = this.#options;
    assertEventNames(input.events);
    const ownership = checkOwnership(input);
    if (credentials.isRevoked(ownership)) throw credentialRevoked();
    const url = await assertWebhookUrl(input.url, guard);
    const secret = input.secret ?? generateWebhookSecret();
    signWebhook(secret, { id: 'msg_check', timestamp: 0, body: '' }); // a bad secret throws here
    return this.#register({
      id: newId('ep'),
      url: url.href,
      ...(input.events !== undefined && { events: [...input.events] }),
      ...ownership,
      secrets: [secret],
      consecutiveFailures: 0,
      createdAt: now(),
    });
  }

  /** Runs `change` on an endpoint, one change at a time per endpoint. */
  change(
    id: string,
    change: (endpoint: WebhookEndpoint) => void,
  ): Promise<WebhookEndpoint | undefined> {
    const { store } = this.#options;
    const previous = this.#locks.get(id) ?? Promise.resolve();
    const next = previous.then(async () => {
      const endpoint = await store.getEndpoint(id);
      if (endpoint === undefined) return undefined;
      change(endpoint);
      // removed meanwhile (its credential revoked): it stays removed
      return (await store.saveEndpoint(endpoint)) ? endpoint : undefined;
    });
    const settled = next.catch(() => {});
    this.#locks.set(id, settled);
    settled.then(() => {
      if (this.#locks.get(id) === settled) this.#locks.delete(id);
    });
    return next;
  }

  /** Gives an endpoint a new secret; the old one keeps signing for the overlap. */
  rotateSecret(id: string): Promise<WebhookEndpoint | undefined> {
    const { now, rotationOverlapMs } = this.#options;
    return this.change(id, (e) => {
      e.secrets = [generateWebhookSecret(), e.secrets[0]!];
      e.previousSecretsUntil = now() + rotationOverlapMs;
    });
  }

  /** Turns a disabled endpoint back on, its failure count reset. */
  enable(id: string): Promise<WebhookEndpoint | undefined> {
    return this.change(id, (e) => {
      e.disabled = undefined;
      e.consecutiveFailures = 0;
    });
  }

  /** Stores a new endpoint within its owner's bounds, unless its credential was revoked. */
  async #register(endpoint: WebhookEndpoint): Promise<WebhookEndpoint> {
    const { store, credentials, maxPerOwner } = this.#options;
    const result = await store.addEndpoint(endpoint, { maxPerOwner });
    if (result !== 'added') throw admissionRefused(result, maxPerOwner);
    // revoked while it was being stored: the removal may have looked before it was there
    if (credentials.isRevoked(endpoint)) {
      await store.deleteEndpoint(endpoint.id);
      throw credentialRevoked();
    }
    return endpoint;
  }
}
