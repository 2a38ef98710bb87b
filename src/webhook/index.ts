/**
 * Webhooks: {@link createWebhookSender}, a signed (Standard Webhooks), retrying, SSRF-safe
 * sender with a delivery queue over a {@link WebhookStore}; {@link verifyWebhook} and the
 * {@link verifyWebhooks} middleware for receivers; the address guard that keeps deliveries
 * out of the sender's own network.
 *
 * @see {@link https://www.standardwebhooks.com/ | Standard Webhooks}
 * @module portico/webhook
 */

export { createGuardedAgent } from './address-guard/agent.js';
export {
  type AddressClass,
  type AddressGuardOptions,
  assertWebhookUrl,
  type GuardedAgentOptions,
  type ResolvedAddress,
} from './address-guard/guard.js';
export {
  DEFAULT_RETRY_SCHEDULE,
  parseRetrySchedule,
} from './delivery/schedule.js';
export {
  WEBHOOK_VERIFICATION_CODES,
  WebhookAddressError,
  type WebhookAddressReason,
  WebhookVerificationError,
  type WebhookVerificationFailure,
} from './errors.js';
export {
  MemoryWebhookStore,
  type MemoryWebhookStoreOptions,
} from './memory-store.js';
export { webhookCredentialIds } from './ownership.js';
export {
  getWebhook,
  verifyWebhooks,
  type WebhookReceiverOptions,
} from './receiver.js';
export { generateWebhookSecret } from './secret.js';
export {
  createWebhookSender,
  type NewWebhookEndpoint,
  type WebhookSender,
} from './sender.js';
export type { WebhookSenderEvent, WebhookSenderOptions } from './sender-options.js';
export {
  signWebhook,
  type VerifiedWebhook,
  type VerifyWebhookOptions,
  verifyWebhook,
  type WebhookHeaderSource,
  type WebhookHeaders,
  type WebhookMessage,
  webhookHeaders,
} from './signature.js';
export type {
  WebhookAttempt,
  WebhookClaim,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointAdmission,
  WebhookEndpointFilter,
  WebhookStore,
} from './store.js';
