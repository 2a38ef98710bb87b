import { randomUUID } from 'node:crypto';
import { validateHeaderValue } from 'node:http';
import type { Middleware } from '../core/compose.js';
import { requestIdKey, setContextValue } from '../core/context.js';
import { traceContextKey } from '../core/trace-context.js';
import { parseTraceparent } from '../diagnostics/traceparent.js';
import { isToken } from '../internal/grammar.js';
import { setHeadLine } from '../internal/head.js';
import {
  assertKnownOptions,
  booleanOption,
  functionOption,
  invalidOption,
} from '../internal/options.js';

/** Options of {@link requestId}. */
export interface RequestIdOptions {
  /**
   * The header read from the request and set on the response.
   * @defaultValue `"X-Request-ID"`
   */
  header?: string;
  /**
   * Whether a caller's id is kept when it is a sane token (`[A-Za-z0-9._:-]`, 1–200
   * characters), and its `traceparent` read. Turn off when callers are untrusted and ids
   * must be yours (no trace context is read then either).
   * @defaultValue `true`
   */
  trustIncoming?: boolean;
  /**
   * Makes a new id.
   * @defaultValue `crypto.randomUUID`
   */
  generate?: () => string;
}

const KNOWN_OPTIONS = [
  'header',
  'trustIncoming',
  'generate',
] as const satisfies readonly (keyof RequestIdOptions)[];

const OWNER = 'requestId()';

/**
 * The shape a caller's request id must have to be kept (`req-7f3a:1` is kept, `a b` is
 * replaced by a new id).
 *
 * @internal
 */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,200}$/;

/**
 * Gives every request an id for tracing: the caller's `X-Request-ID` when it is a sane
 * token, otherwise a new UUID. The id is set on the response, returned by
 * `getRequestId(req)` and quoted in every problem body. A valid W3C `traceparent` (with its
 * `tracestate`) is read too: `getTraceContext(req)` (portico/diagnostics) returns its trace
 * and span ids, and every log line about the request carries them; the request id does not
 * change with it.
 *
 * @example
 * ```ts
 * const app = compose([requestId(), routes]);
 * // later: getRequestId(req)
 * ```
 */
export function requestId(options: RequestIdOptions = {}): Middleware {
  assertKnownOptions(OWNER, options, KNOWN_OPTIONS);
  const header = options.header ?? 'X-Request-ID';
  if (!isToken(header)) {
    throw invalidOption(`${OWNER}: \`${String(header)}\` is not a valid header name`);
  }
  const incoming = header.toLowerCase();
  const trust = booleanOption(OWNER, 'trustIncoming', options.trustIncoming, true);
  const custom = functionOption(OWNER, 'generate', options.generate);
  // a caller's id matches REQUEST_ID_PATTERN and a UUID is safe by construction; a custom
  // generator's id is checked as setHeader would, before it joins the response's head
  const generate =
    custom === undefined
      ? randomUUID
      : () => {
          const id = custom();
          validateHeaderValue(header, id);
          return id;
        };
  return function requestIdMiddleware(req, res, next) {
    const given = trust ? req.headers[incoming] : undefined;
    const id = typeof given === 'string' && REQUEST_ID_PATTERN.test(given) ? given : generate();
    setContextValue(req, requestIdKey, id);
    const traceparent = trust ? req.headers.traceparent : undefined;
    if (traceparent !== undefined) {
      const trace = parseTraceparent(traceparent, req.headers.tracestate);
      if (trace !== undefined) setContextValue(req, traceContextKey, trace);
    }
    setHeadLine(res, header, incoming, id);
    return next();
  };
}
