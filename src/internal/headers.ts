import type { IncomingMessage, ServerResponse } from 'node:http';
import { setHeadLine } from './head.js';

/**
 * Adds `fields` (a field name, or several separated by commas) to the response's `Vary`, each
 * unless it is listed already (or `*` is). The merged field is one line of the response's head.
 */
export function appendVary(res: ServerResponse, fields: string): void {
  const current = res.getHeader('Vary');
  if (current === undefined) {
    setHeadLine(res, 'Vary', 'vary', fields);
    return;
  }
  // the common case, one field added to a plain list: no set, no split
  if (typeof current === 'string' && !fields.includes(',') && current !== '*') {
    if (!listsField(current, fields))
      setHeadLine(res, 'Vary', 'vary', `${current}, ${fields.trim()}`);
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
  if (added !== '') setHeadLine(res, 'Vary', 'vary', value ? `${value}, ${added}` : added);
}

const OWS = (code: number) => code === 0x20 || code === 0x09 || code === 0x2c; // SP, HTAB, ','

/** Whether the comma-separated `list` names `field` (case-insensitively) or `*`. */
function listsField(list: string, field: string): boolean {
  const lowerList = list.toLowerCase();
  const name = field.trim().toLowerCase();
  if (name === '') return true;
  for (let at = lowerList.indexOf(name); at !== -1; at = lowerList.indexOf(name, at + 1)) {
    const before = at === 0 || OWS(lowerList.charCodeAt(at - 1));
    const end = at + name.length;
    if (before && (end === lowerList.length || OWS(lowerList.charCodeAt(end)))) return true;
  }
  return /(?:^|,)\s*\*\s*(?:,|$)/.test(list);
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

/**
 * The values (trimmed) of every field line named `lower` (lower case) in `rawHeaders`, in
 * order: node joins or drops repeated fields in `headers`, so a field that must come once
 * (`DPoP`, `X-API-Key`) is counted here. No `rawHeaders` (a stand-in request) holds none.
 */
export function fieldLines(rawHeaders: readonly string[] | undefined, lower: string): string[] {
  const values: string[] = [];
  if (!Array.isArray(rawHeaders)) return values;
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length === lower.length && name.toLowerCase() === lower) {
      values.push(rawHeaders[i + 1]!.trim());
    }
  }
  return values;
}

/** An `Upgrade` header that asks for WebSocket, among its protocols. */
const NAMES_WEBSOCKET = /(?:^|,)\s*websocket\s*(?:,|$)/i;

/** Whether a request asks to upgrade to WebSocket (`Upgrade` names `websocket`). */
export function asksForWebSocket(req: IncomingMessage): boolean {
  return NAMES_WEBSOCKET.test(req.headers.upgrade ?? '');
}
