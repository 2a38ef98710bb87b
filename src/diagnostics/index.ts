/**
 * What operators and tracers see of portico: the {@link Logger} every component writes to (a
 * pino logger as it is), the `node:diagnostics_channel` {@link channels} it publishes on
 * (authentication, rate limits, tokens, WebSocket and SSE connections, webhook attempts,
 * revocations, and each request as a TracingChannel for OpenTelemetry), the W3C trace
 * context `requestId()` reads from `traceparent`, and {@link requestPath}: what a log line or
 * a span says of a request's target (its path, never its query or, in absolute form, its
 * scheme and authority with their userinfo).
 *
 * @module portico/diagnostics
 */

export { defaultLogger, type LogFields, type Logger, silentLogger } from '../core/logger.js';
export { requestPath } from '../core/problem.js';
export { getTraceContext, requestFields, type TraceContext } from '../core/trace-context.js';
export {
  type AuthRefusedMessage,
  type AuthSucceededMessage,
  channels,
  type RateLimitedMessage,
  type RequestMessage,
  type RevocationMessage,
  type SseEndedMessage,
  type SseOpenedMessage,
  type TokenIssuedMessage,
  type TokenRefusedMessage,
  type WebhookAttemptMessage,
  type WebhookDeadLetteredMessage,
  type WebSocketClosedMessage,
  type WebSocketOpenedMessage,
} from './channels.js';
export { parseTraceparent } from './traceparent.js';
