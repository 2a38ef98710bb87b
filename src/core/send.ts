import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { hasLineBreak } from '../internal/grammar.js';
import { holdHead } from '../internal/head.js';

/**
 * The JSON media type portico answers with.
 *
 * @example
 * ```ts
 * send(res, 200, JSON.stringify(body), { 'Content-Type': JSON_TYPE });
 * ```
 */
export const JSON_TYPE = 'application/json; charset=utf-8';

function isHead(res: ServerResponse): boolean {
  return res.req?.method === 'HEAD';
}

/**
 * Writes a complete response. `Content-Length` is always set from the body, so a HEAD
 * request gets the same `Content-Length` (and `ETag`) as the GET it mirrors, without the body.
 * The head goes out in one `writeHead`: the lines portico's middleware hold, what was set with
 * `setHeader`, then `headers`.
 *
 * @example
 * ```ts
 * send(res, 200, 'hello', { 'Content-Type': 'text/plain; charset=utf-8' });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-9.3.2 | RFC 9110 §9.3.2} (HEAD)
 */
export function send(
  res: ServerResponse,
  status: number,
  body?: string | Uint8Array,
  headers?: OutgoingHttpHeaders,
): void {
  writeAnswer(res, status, body, headers, undefined);
}

/** {@link send}, with `contentType` first when given. */
function writeAnswer(
  res: ServerResponse,
  status: number,
  body: string | Uint8Array | undefined,
  headers: OutgoingHttpHeaders | undefined,
  contentType: string | undefined,
): void {
  const lines: (string | number | readonly string[])[] = [];
  let typed = false;
  if (headers !== undefined) {
    for (const name in headers) {
      const value = headers[name];
      if (value === undefined) continue;
      const lower = name.length === 12 || name.length === 14 ? name.toLowerCase() : '';
      if (lower === 'content-length') continue; // the body's own length is written below
      if (lower === 'content-type') typed = true;
      lines.push(name, value);
    }
  }
  if (contentType !== undefined && !typed) lines.unshift('Content-Type', contentType);
  holdHead(res); // the fields written stay readable with getHeader
  if (body === undefined || status === 204 || status === 304) {
    if (status !== 204 && status !== 304) lines.push('Content-Length', 0);
    res.writeHead(status, lines as string[]);
    res.end();
    return;
  }
  lines.push(
    'Content-Length',
    typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength,
  );
  res.writeHead(status, lines as string[]);
  if (isHead(res)) res.end();
  else res.end(body);
}

/**
 * Writes `body` as JSON (`application/json; charset=utf-8`, unless a `Content-Type` is set
 * already) with the given status.
 *
 * @example
 * ```ts
 * sendJson(res, 201, message, { Location: `/api/messages/${message.id}` });
 * ```
 */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers?: OutgoingHttpHeaders,
): void {
  const json = JSON.stringify(body);
  writeAnswer(res, status, json, headers, res.hasHeader('Content-Type') ? undefined : JSON_TYPE);
}

/**
 * Answers `204 No Content`.
 *
 * @example
 * ```ts
 * messages.delete(id);
 * sendNoContent(res);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.3.5 | RFC 9110 §15.3.5}
 */
export function sendNoContent(res: ServerResponse, headers?: OutgoingHttpHeaders): void {
  send(res, 204, undefined, headers);
}

/**
 * Answers a redirect with `Location`. 307/308 keep the method and are preferred over
 * 302/301 (RFC 9110 §15.4).
 *
 * @example
 * ```ts
 * sendRedirect(res, 308, '/api/v2/messages');
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.4 | RFC 9110 §15.4}
 */
export function sendRedirect(
  res: ServerResponse,
  status: 301 | 302 | 303 | 307 | 308,
  location: string,
): void {
  if (hasLineBreak(location)) throw new TypeError('Location must not contain CR, LF or NUL');
  send(res, status, undefined, { Location: location });
}
