import type { IncomingMessage, ServerResponse } from 'node:http';

/** Adds `field` to the response's `Vary` header unless it is already listed (or `*`). */
export function appendVary(res: ServerResponse, field: string): void {
  const current = res.getHeader('Vary');
  if (current === undefined) {
    res.setHeader('Vary', field);
    return;
  }
  const value = Array.isArray(current) ? current.join(', ') : String(current);
  const lower = field.toLowerCase();
  for (const part of value.split(',')) {
    const name = part.trim().toLowerCase();
    if (name === '*' || name === lower) return;
  }
  res.setHeader('Vary', value ? `${value}, ${field}` : field);
}

/**
 * How many field lines named `lower` (lower case) `rawHeaders` holds: node keeps only the
 * first of a singleton field (`Host`, `Authorization`, `Content-Type`) in `headers`, so a
 * repeated one is seen only here. No `rawHeaders` (a stand-in request) counts none.
 */
export function countFieldLines(rawHeaders: readonly string[] | undefined, lower: string): number {
  if (!Array.isArray(rawHeaders)) return 0;
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length === lower.length && name.toLowerCase() === lower) count++;
  }
  return count;
}

/** An `Upgrade` header that asks for WebSocket, among its protocols. */
const NAMES_WEBSOCKET = /(?:^|,)\s*websocket\s*(?:,|$)/i;

/** Whether a request asks to upgrade to WebSocket (`Upgrade` names `websocket`). */
export function asksForWebSocket(req: IncomingMessage): boolean {
  return NAMES_WEBSOCKET.test(req.headers.upgrade ?? '');
}
