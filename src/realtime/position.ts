import type { Position } from './broker.js';

/** Longest id {@link parsePosition} reads; anything longer is not one of ours. */
const MAX_ID_LENGTH = 256;
/** An epoch fit for an SSE `id`: no separator, whitespace or control character. */
const EPOCH = /^[\x21-\x39\x3b-\x7e]{1,200}$/;
const OFFSET = /^(?:0|[1-9]\d{0,15})$/;

/**
 * Turns a position into the id a client sends back (the SSE `id` field, echoed in
 * `Last-Event-ID`, or the WebSocket resume token): `<epoch>:<offset>`.
 *
 * @throws TypeError when the epoch holds `:`, whitespace or a control character, or the
 *   offset is not an integer ≥ 0 (a bug of the broker, never client input).
 * @example
 * ```ts
 * formatPosition({ epoch: 'k3Jx9', offset: 42 }); // 'k3Jx9:42'
 * stream.send({ id: formatPosition(message), event: message.event, data: message.data });
 * ```
 */
export function formatPosition(position: Position): string {
  const { epoch, offset } = position;
  if (typeof epoch !== 'string' || !EPOCH.test(epoch)) {
    throw new TypeError('formatPosition: the epoch must be 1–200 visible ASCII characters, no `:`');
  }
  if (!Number.isSafeInteger(offset) || offset < 0) {
    throw new TypeError('formatPosition: the offset must be an integer ≥ 0');
  }
  return `${epoch}:${offset}`;
}

/**
 * Reads an id made by {@link formatPosition}, such as a `Last-Event-ID` header. Anything
 * else (missing, too long, malformed) gives `undefined`: client input never throws.
 *
 * @example
 * ```ts
 * parsePosition('k3Jx9:42'); // { epoch: 'k3Jx9', offset: 42 }
 * parsePosition('garbage'); // undefined
 * const since = parsePosition(req.headers['last-event-id']);
 * ```
 */
export function parsePosition(id: unknown): Position | undefined {
  if (typeof id !== 'string' || id.length > MAX_ID_LENGTH) return undefined;
  const colon = id.lastIndexOf(':');
  if (colon < 1) return undefined;
  const epoch = id.slice(0, colon);
  const digits = id.slice(colon + 1);
  if (!EPOCH.test(epoch) || !OFFSET.test(digits)) return undefined;
  const offset = Number(digits);
  return Number.isSafeInteger(offset) ? { epoch, offset } : undefined;
}
