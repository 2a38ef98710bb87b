import type { TraceContext } from '../core/trace-context.js';

/** version 00: `00-<trace-id>-<parent-id>-<flags>`; a later version may add fields after a `-`. */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);
/** At most 32 list members of at most 256 characters (W3C §3.3.1.1): 8,224 with commas. */
const MAX_TRACESTATE = 8224;

/**
 * Parses a `traceparent` header (and `tracestate`), as W3C Trace Context §3.2 and §4.3 say:
 * version `ff` and all-zero ids are invalid, version 00 takes exactly four fields, a later
 * version is read for its first four. Anything else: `undefined` (a receiver then starts a
 * new trace, and ignores `tracestate`).
 *
 * @example
 * ```ts
 * import { parseTraceparent } from 'portico/diagnostics';
 *
 * parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')?.traceId;
 * // '4bf92f3577b34da6a3ce929d0e0e4736'
 * ```
 */
export function parseTraceparent(
  traceparent: unknown,
  tracestate?: unknown,
): TraceContext | undefined {
  if (typeof traceparent !== 'string' || traceparent.length > 512) return undefined;
  const match = TRACEPARENT.exec(traceparent.trim());
  if (match === null) return undefined;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
    string | undefined,
  ];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  const state = typeof tracestate === 'string' ? tracestate.trim() : undefined;
  const sane = state !== undefined && state !== '' && state.length <= MAX_TRACESTATE;
  return Object.freeze({
    traceId,
    spanId,
    flags,
    sampled: (Number.parseInt(flags, 16) & 1) === 1,
    ...(sane && /^[\x20-\x7e]*$/.test(state) ? { traceState: state } : {}),
  });
}
