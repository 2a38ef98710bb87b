import { type Logger, log } from '../../core/logger.js';
import {
  published,
  type WebhookAttemptMessage,
  type WebhookDeadLetteredMessage,
} from '../../diagnostics/channels.js';
import type { WebhookAttempt, WebhookDelivery, WebhookEndpoint } from '../store.js';

/**
 * What a sender reports to `onEvent` (`WebhookSenderOptions`): each attempt, each delivery
 * delivered or dead-lettered, each endpoint disabled. Never a secret.
 *
 * @example
 * ```ts
 * const onEvent = (e: WebhookSenderEvent) => {
 *   if (e.type === 'dead-letter') log.warn({ delivery: e.delivery.id }, 'webhook dead-lettered');
 * };
 * ```
 */
export type WebhookSenderEvent =
  | { type: 'attempt'; delivery: WebhookDelivery; attempt: WebhookAttempt }
  | { type: 'delivered'; delivery: WebhookDelivery }
  | { type: 'dead-letter'; delivery: WebhookDelivery }
  | { type: 'endpoint-disabled'; endpoint: Omit<WebhookEndpoint, 'secrets'> }
  | { type: 'endpoint-revoked'; endpoint: Omit<WebhookEndpoint, 'secrets'>; credentialId: string };

const COMPONENT = 'webhook';

/**
 * What a sender's event tells operators: the `portico:webhook:*` channels, and a `warn` line
 * for a failed attempt, a dead letter and a disabled endpoint. Ids, status and a short
 * reason only: never the URL (its query may hold a token) nor a secret.
 */
export function observe(event: WebhookSenderEvent, logger: Logger): void {
  switch (event.type) {
    case 'attempt': {
      const { delivery, attempt } = event;
      const ok = attempt.status !== undefined && attempt.status >= 200 && attempt.status < 300;
      if (published.webhookAttempt.hasSubscribers) {
        published.webhookAttempt.publish({
          endpointId: delivery.endpointId,
          deliveryId: delivery.id,
          eventType: delivery.event,
          attempt: delivery.attempts.length,
          ok,
          status: attempt.status,
          error: attempt.error ?? (ok ? undefined : `status ${attempt.status}`),
          durationMs: attempt.durationMs,
        } satisfies WebhookAttemptMessage);
      }
      if (!ok) {
        log(
          logger,
          'warn',
          {
            component: COMPONENT,
            event: 'attempt.failed',
            endpointId: delivery.endpointId,
            deliveryId: delivery.id,
            attempt: delivery.attempts.length,
            status: attempt.status,
            error: attempt.error,
            durationMs: attempt.durationMs,
          },
          'a webhook delivery attempt failed',
        );
      }
      return;
    }
    case 'dead-letter': {
      const { delivery } = event;
      if (published.webhookDeadLettered.hasSubscribers) {
        published.webhookDeadLettered.publish({
          endpointId: delivery.endpointId,
          deliveryId: delivery.id,
          eventType: delivery.event,
          attempts: delivery.attempts.length,
        } satisfies WebhookDeadLetteredMessage);
      }
      log(
        logger,
        'warn',
        {
          component: COMPONENT,
          event: 'delivery.dead-lettered',
          endpointId: delivery.endpointId,
          deliveryId: delivery.id,
          attempts: delivery.attempts.length,
        },
        'a webhook delivery ran out of attempts',
      );
      return;
    }
    case 'endpoint-disabled':
      log(
        logger,
        'warn',
        {
          component: COMPONENT,
          event: 'endpoint.disabled',
          endpointId: event.endpoint.id,
          reason: event.endpoint.disabled,
        },
        'a webhook endpoint was disabled',
      );
      return;
    default:
      return;
  }
}
