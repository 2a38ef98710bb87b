import {
  type IncomingMessage,
  type OutgoingHttpHeaders,
  ServerResponse,
  STATUS_CODES,
} from 'node:http';
import type { Duplex } from 'node:stream';
import { hasLineBreak } from '../internal/grammar.js';
import { invalidOption } from '../internal/options.js';
import { compose, type Middleware } from './compose.js';

// Not part of the public API (core/index.ts does not export it): the answers written on a raw
// socket (a refused WebSocket upgrade, a request node's parser refused). It lives in core, not
// internal, because it runs middleware: internal/ depends on nothing in core/.

/** The `middleware` option of a raw-socket handler as one middleware, or `undefined` for none. */
export function middlewareOption(
  owner: string,
  value: Middleware | readonly Middleware[] | undefined,
): Middleware | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'function') return value;
  if (!Array.isArray(value)) {
    throw invalidOption(`${owner}: \`middleware\` must be a function or an array of them`);
  }
  return value.length === 0 ? undefined : compose(value as readonly Middleware[]);
}

/**
 * Runs `middleware` on `req` against a response that is never sent, for the answers written
 * on a raw socket (a refused WebSocket upgrade, a request node's parser refused). Returns
 * the headers it set (`X-Request-ID`, the security headers, rate-limit fields), names in the
 * case they were set, to be written by hand, and what it threw, if it did: the headers set
 * before a throw are kept, as a response would keep them. A middleware that answers instead
 * of calling `next()` is an error, since nothing it writes would reach the client.
 */
export async function runOnRawSocket(
  middleware: Middleware,
  req: IncomingMessage,
): Promise<{ headers: OutgoingHttpHeaders; error?: unknown }> {
  const res = new ServerResponse(req);
  let reached = false;
  let error: unknown;
  try {
    await middleware(req, res, () => {
      reached = true;
      return Promise.resolve();
    });
    if (!reached) {
      error = new Error('middleware on a raw socket must call next(): its answer is never sent');
    }
  } catch (thrown) {
    error = thrown ?? new Error('middleware threw nothing');
  }
  const headers: OutgoingHttpHeaders = {};
  // in the case they were set (node has it since 15.13; its typings only on ClientRequest)
  const names = (res as unknown as { getRawHeaderNames(): string[] }).getRawHeaderNames();
  for (const name of names) headers[name] = res.getHeader(name);
  return error === undefined ? { headers } : { headers, error };
}

/** Header fields by name, as a response or an `HttpError` holds them. */
export type HeaderSet = Readonly<Record<string, number | string | readonly string[] | undefined>>;

/** Headers of a raw answer that the writer sets itself: whatever else says is dropped. */
const FRAMING = new Set(['content-length', 'transfer-encoding', 'connection', 'content-type']);

/**
 * The header lines (`Name: value`) of `headerSets`, later sets winning by name, without the
 * fields `dropped` names (given in lower case) or any field with a line break in its name or
 * a value: for a head written by hand.
 */
export function formatHeaderLines(
  headerSets: readonly HeaderSet[],
  dropped: (lowerName: string) => boolean,
): string[] {
  const merged = new Map<string, [string, string[]]>();
  for (const set of headerSets) {
    for (const [name, value] of Object.entries(set)) {
      const lower = name.toLowerCase();
      if (value === undefined || dropped(lower)) continue;
      const values = (Array.isArray(value) ? value : [value]).map(String);
      if (hasLineBreak(name) || values.some(hasLineBreak)) continue;
      merged.set(lower, [name, values]);
    }
  }
  const lines: string[] = [];
  for (const [name, values] of merged.values()) for (const v of values) lines.push(`${name}: ${v}`);
  return lines;
}

/**
 * Writes a complete HTTP/1.1 answer on a raw socket and closes it once written: `headers`
 * (later ones win; framing headers and values with line breaks are dropped), then
 * `Content-Type`, `Content-Length` and `Connection: close`.
 */
export function writeRawAnswer(
  socket: Duplex,
  status: number,
  headerSets: readonly HeaderSet[],
  contentType: string,
  body: string,
): void {
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}`,
    ...formatHeaderLines(headerSets, (name) => FRAMING.has(name)),
    `Content-Type: ${contentType}`,
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
  ];
  try {
    socket.once('finish', () => socket.destroy());
    socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
  } catch {
    socket.destroy();
  }
}
