import { type Logger, log } from '../../core/logger.js';
import type { EndpointRegistry } from '../endpoint-registry.js';
import type { CredentialEnd } from '../revoked-credentials.js';
import type { WebhookDelivery, WebhookEndpoint, WebhookStore } from '../store.js';
import { type AttemptOutcome, type AttemptSettings, attemptDelivery } from './attempt.js';
import type { WebhookSenderEvent } from './observe.js';
import { retryDelay } from './schedule.js';

/** What a {@link Deliverer} is given. */
export interface DelivererOptions {
  store: WebhookStore;
  now: () => number;
  endpoints: EndpointRegistry;
  credentials: CredentialEnd;
  /** How each attempt is made. */
  attempt: AttemptSettings;
  /** Milliseconds before each retry. */
  schedule: readonly number[];
  /** Spread of each wait, as a fraction. */
  jitter: number;
  /** Dead letters in a row after which an endpoint is disabled; `0` never. */
  disableAfter: number;
  /** Reports what happened; never throws. */
  emit(event: WebhookSenderEvent): void;
  /** Where a store failure is logged. */
  logger: Logger;
}

/** The secrets that sign now: the newest, and the older ones while the overlap lasts. */
function signingSecrets(endpoint: WebhookEndpoint, now: number): readonly string[] {
  return endpoint.previousSecretsUntil !== undefined && endpoint.previousSecretsUntil > now
    ? endpoint.secrets
    : endpoint.secrets.slice(0, 1);
}

/**
 * One attempt of a claimed delivery, and what follows from it: delivered, rescheduled on the
 * retry schedule (or the receiver's `Retry-After`) or dead-lettered, the endpoint's failure
 * count kept and the endpoint disabled on a 410 or after `disableAfter` dead letters in a row.
 * @internal
 */
export class Deliverer {
  readonly #options: DelivererOptions;

  constructor(options: DelivererOptions) {
    this.#options = options;
  }

  /** Makes one attempt and records it. Never rejects: a store failure is logged. */
  async deliver(delivery: WebhookDelivery): Promise<void> {
    try {
      await this.#run(delivery);
    } catch (error) {
      // a store failure: the lease runs out and the delivery is taken again
      log(
        this.#options.logger,
        'error',
        {
          component: 'webhook',
          event: 'store.failed',
          endpointId: delivery.endpointId,
          deliveryId: delivery.id,
          err: error,
        },
        'recording a webhook attempt failed',
      );
    }
  }

  async #run(delivery: WebhookDelivery): Promise<void> {
    const { store, credentials, now, emit } = this.#options;
    const endpoint = await store.getEndpoint(delivery.endpointId);
    if (endpoint !== undefined && credentials.isRevoked(endpoint)) {
      // its removal (under way) drops this delivery too: never sent, never dead-lettered
      await store.deleteEndpoint(endpoint.id);
      return;
    }
    if (endpoint === undefined || endpoint.disabled !== undefined) {
      return this.#finish(delivery, undefined);
    }
    const outcome = await attemptDelivery(
      delivery,
      endpoint.url,
      signingSecrets(endpoint, now()),
      this.#options.attempt,
    );
    delivery.attempts.push(outcome.attempt);
    emit({ type: 'attempt', delivery, attempt: outcome.attempt });
    await this.#finish(delivery, outcome, endpoint);
  }

  /** Records where the delivery stands after `outcome` (none: its endpoint is gone or off). */
  async #finish(
    delivery: WebhookDelivery,
    outcome: AttemptOutcome | undefined,
    endpoint?: WebhookEndpoint,
  ): Promise<void> {
    const { store, now, emit, endpoints } = this.#options;
    const verdict = outcome?.verdict ?? 'final';
    let delay: number | undefined;
    if (verdict === 'retry') {
      delay = retryDelay(delivery.attempts.length, this.#options.schedule, {
        jitter: this.#options.jitter,
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
        await endpoints.change(delivery.endpointId, (e) => {
          e.consecutiveFailures = 0;
        });
      }
    } else if (delivery.state === 'failed') {
      emit({ type: 'dead-letter', delivery });
      await this.#countFailure(delivery.endpointId, verdict === 'gone', outcome !== undefined);
    }
  }

  /** Counts a dead letter against its endpoint, disabling it when gone or failing too often. */
  async #countFailure(endpointId: string, gone: boolean, attempted: boolean): Promise<void> {
    const { disableAfter } = this.#options;
    const endpoint = await this.#options.endpoints.change(endpointId, (e) => {
      if (e.disabled !== undefined) return;
      e.consecutiveFailures += 1;
      if (gone) e.disabled = 'gone';
      else if (disableAfter > 0 && e.consecutiveFailures >= disableAfter) e.disabled = 'failing';
    });
    if (endpoint?.disabled !== undefined && attempted) {
      const { secrets: _secrets, ...visible } = endpoint;
      this.#options.emit({ type: 'endpoint-disabled', endpoint: visible });
    }
  }
}
