import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Adds `fields` (a field name, or several separated by commas) to the response's `Vary`, each
 * unless it is listed already (or `*` is).
 */
export function appendVary(res: ServerResponse, fields: string): void {
  const current = res.getHeader('Vary');
  if (current === undefined) {
    res.setHeader('Vary', fields);
    return;
  }
  const value = Array.isArray(current) ? current.join(', ') : String(current);
  const present = new Set<string>();
  for (const part of value.split(',')) present.add(part.trim().toLowerCase());
  if (present.has('*')) return;
  let added = '';
  for (const part of fields.split(',')) {
    const field = part.trim();
    if (field === '' || present.has(field.toLowerCase())) continue;
    present.add(field.toLowerCase());
    added = added === '' ? field : `${added}, ${field}`;
  }
  if (added !== '') res.setHeader('Vary', value ? `${value}, ${added}` : added);
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
