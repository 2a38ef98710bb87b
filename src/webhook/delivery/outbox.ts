import { newId } from '../ids.js';
import type { CredentialEnd } from '../revoked-credentials.js';
import type { WebhookDelivery, WebhookStore } from '../store.js';

/** What {@link enqueueEvent} needs. */
export interface OutboxOptions {
  store: WebhookStore;
  now: () => number;
  credentials: CredentialEnd;
}

/**
 * Queues one message per enabled endpoint that wants `event` (and whose credential was not
 * revoked): body `{ "event", "type", "timestamp", "data" }`, built once for every endpoint.
 * Returns the deliveries queued; `event` is checked by the caller.
 * @internal
 */
export async function enqueueEvent(
  options: OutboxOptions,
  event: string,
  data: unknown,
): Promise<WebhookDelivery[]> {
  const { store, now, credentials } = options;
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
  if (deliveries.length > 0) await store.enqueue(deliveries);
  return deliveries;
}
