import type { IncomingMessage } from 'node:http';
import { createContextKey, getContextValue, getRequestId } from './context.js';
import type { LogFields } from './logger.js';

/**
 * The W3C Trace Context a request carried (`traceparent`, and `tracestate` as sent).
 *
 * @see {@link https://www.w3.org/TR/trace-context/ | W3C Trace Context}
 */
export interface TraceContext {
  /** The trace the request belongs to: 32 lower-case hex digits. */
  readonly traceId: string;
  /** The caller's span, parent of this request's work (`parent-id`): 16 lower-case hex digits. */
  readonly spanId: string;
  /** Whether the caller sampled the trace (flag `01`). */
  readonly sampled: boolean;
  /** The trace flags as sent: 2 hex digits. */
  readonly flags: string;
  /** `tracestate`, as sent (its list members joined by commas), when present and sane. */
  readonly traceState?: string;
}

/** @internal set by requestId() */
export const traceContextKey = createContextKey<TraceContext>('traceContext');

/**
 * The W3C trace context of a request, as `requestId()` read it from `traceparent` (with
 * `tracestate`); `undefined` when the request carried none (or an invalid one), or when
 * `requestId()` did not run.
 *
 * @example
 * ```ts
 * import { getTraceContext } from 'portico/diagnostics';
 * import type { Middleware } from 'portico';
 *
 * const whoCalls: Middleware = (req, _res, next) => {
 *   const trace = getTraceContext(req);
 *   if (trace !== undefined) console.log(`trace ${trace.traceId}`);
 *   return next();
 * };
 * ```
 */
export function getTraceContext(req: IncomingMessage): TraceContext | undefined {
  return getContextValue(req, traceContextKey);
}

/**
 * The fields that tie a log line to its request: `requestId`, and `traceId` and `spanId`
 * when the request carried a trace context.
 *
 * @example
 * ```ts
 * import { requestFields } from 'portico/diagnostics';
 * import type { Middleware } from 'portico';
 * import pino from 'pino';
 *
 * const logger = pino();
 * const audit: Middleware = (req, _res, next) => {
 *   logger.info({ ...requestFields(req), event: 'audit' }, 'seen');
 *   return next();
 * };
 * ```
 */
export function requestFields(req: IncomingMessage): LogFields {
  const requestId = getRequestId(req);
  const trace = getTraceContext(req);
  return {
    ...(requestId !== undefined && { requestId }),
    ...(trace !== undefined && { traceId: trace.traceId, spanId: trace.spanId }),
  };
}
