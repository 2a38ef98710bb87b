import type { IncomingMessage, ServerResponse } from 'node:http';
import { setHeadLine } from './head.js';

/**
 * Adds `fields` (a field name, several separated by commas, or a list of names made once) to
 * the response's `Vary`, each unless it is listed already (or `*` is). The merged field is one
 * line of the response's head.
 */
export function appendVary(res: ServerResponse, fields: string | readonly string[]): void {
  const current = res.getHeader('Vary');
  if (current === undefined) {
    setHeadLine(res, 'Vary', 'vary', typeof fields === 'string' ? fields : fields.join(', '));
    return;
  }
  const value = Array.isArray(current) ? current.join(', ') : String(current);
  const merged = mergedVary(value, fields);
  if (merged !== value) setHeadLine(res, 'Vary', 'vary', merged);
}

/**
 * The merges already made, by current value and the fields added: an application adds a
 * handful of constant fields to a handful of values, so each merge is computed once. Bounded:
 * past `MAX_MERGES`, merges are computed each time.
 */
const merges = new Map<string, Map<string | readonly string[], string>>();
const MAX_MERGES = 256;
let mergeCount = 0;

/** `value` with `fields` added, each unless it is listed already (or `*` is). */
function mergedVary(value: string, fields: string | readonly string[]): string {
  const known = merges.get(value)?.get(fields);
  if (known !== undefined) return known;
  const merged = mergeVary(value, fields);
  if (mergeCount < MAX_MERGES) {
    mergeCount++;
    const byFields = merges.get(value) ?? new Map<string | readonly string[], string>();
    merges.set(value, byFields.set(fields, merged));
  }
  return merged;
}

function mergeVary(current: string, fields: string | readonly string[]): string {
  let value = current;
  const list =
    typeof fields !== 'string' ? fields : fields.includes(',') ? fields.split(',') : [fields];
  for (const part of list) {
    const field = part.trim();
    // listsField is true for '*' as well: nothing is added to a Vary of '*'
    if (field === '' || (value !== '' && listsField(value, field))) continue;
    value = value === '' ? field : `${value}, ${field}`;
  }
  return value;
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
