import {
  type OutgoingHttpHeader,
  type OutgoingHttpHeaders,
  OutgoingMessage,
  ServerResponse,
} from 'node:http';

// The response head portico owns (issue 42): portico's middleware add their header lines to a
// list held on the response instead of calling `setHeader` for each (node validates, lower-cases
// and stores every one, then merges them into the head), and the answer is written with one
// `writeHead(status, rawArray)`: node's fast path when nothing else set a header. Whatever a
// handler or a framework does with the response still sees those lines: the head replaces the
// response's `writeHead`, `getHeader`, `hasHeader`, `removeHeader`, `appendHeader`,
// `getHeaders`, `getHeaderNames` and `getRawHeaderNames` with functions (shared, none made per
// response) that join the head's lines with node's own. The last writer of a field wins, as
// with `setHeader`: a line the head sets removes the response's own field of that name, and a
// field set on the response afterwards wins over the head's line.

/** Header lines fixed when a middleware is made (security headers, a CORS answer). */
export interface HeadSegment {
  readonly names: readonly string[];
  readonly lower: readonly string[];
  readonly values: readonly string[];
}

/**
 * The segment of `lines`, in order: made once, at a factory's creation.
 *
 * @example
 * ```ts
 * const segment = headSegment([['X-Content-Type-Options', 'nosniff']]);
 * ```
 */
export function headSegment(lines: readonly (readonly [string, string])[]): HeadSegment {
  return Object.freeze({
    names: Object.freeze(lines.map(([name]) => name)),
    lower: Object.freeze(lines.map(([name]) => name.toLowerCase())),
    values: Object.freeze(lines.map(([, value]) => value)),
  });
}

type Store = Record<string, [string, OutgoingHttpHeader]>;
type Method<K extends keyof ServerResponse> = ServerResponse[K];

interface Head {
  names: string[];
  lower: string[];
  values: OutgoingHttpHeader[];
  /** Written: the lines went out (they are kept, for `getHeader`). */
  written: boolean;
  /** Run once, just before the lines are written: see {@link beforeHeadWrite}. */
  hook: HeadHook | undefined;
  // the response's own methods when the head was made (its prototype's: node's, or a subclass's)
  writeHead: Method<'writeHead'>;
  getHeader: Method<'getHeader'>;
  hasHeader: Method<'hasHeader'>;
  removeHeader: Method<'removeHeader'>;
  appendHeader: Method<'appendHeader'>;
  getHeaders: Method<'getHeaders'>;
  getHeaderNames: Method<'getHeaderNames'>;
  getRawHeaderNames: () => string[];
}

const HEAD = Symbol('portico.head');
const NODE_WRITE_HEAD = ServerResponse.prototype.writeHead;
/** node's own `headersSent` (a wrapper such as compression's may answer `true` while it holds the head). */
export const nodeHeadersSent = Object.getOwnPropertyDescriptor(
  OutgoingMessage.prototype,
  'headersSent',
)!.get as (this: ServerResponse) => boolean;

type HeadResponse = ServerResponse & { [HEAD]?: Head };

/** node's own store of the fields set on a response (`kOutHeaders`), found on first use. */
let storeKey: symbol | null | undefined;

function storeOf(res: ServerResponse): Store | null | undefined {
  if (storeKey === undefined) {
    storeKey =
      Object.getOwnPropertySymbols(res).find((key) => key.description === 'kOutHeaders') ?? null;
  }
  return storeKey === null ? undefined : (res as unknown as Record<symbol, Store | null>)[storeKey];
}

function indexIn(head: Head, lower: string): number {
  const names = head.lower;
  for (let i = 0; i < names.length; i++) if (names[i] === lower) return i;
  return -1;
}

/** The response's head, made (and its methods put in place) on first use. */
function headOf(res: HeadResponse): Head | undefined {
  const existing = res[HEAD];
  if (existing !== undefined) return existing;
  // a runtime without node's store, a response already sent, or one whose writeHead something
  // wrapped already (it may be running, and write the head without ours): the plain API
  if (storeOf(res) === undefined || nodeHeadersSent.call(res) || Object.hasOwn(res, 'writeHead')) {
    return undefined;
  }
  const raw = res as unknown as { getRawHeaderNames(): string[] };
  const head: Head = {
    names: [],
    lower: [],
    values: [],
    written: false,
    hook: undefined,
    writeHead: res.writeHead,
    getHeader: res.getHeader,
    hasHeader: res.hasHeader,
    removeHeader: res.removeHeader,
    appendHeader: res.appendHeader,
    getHeaders: res.getHeaders,
    getHeaderNames: res.getHeaderNames,
    getRawHeaderNames: raw.getRawHeaderNames,
  };
  res[HEAD] = head;
  res.writeHead = headWriteHead as Method<'writeHead'>;
  res.getHeader = headGetHeader;
  res.hasHeader = headHasHeader;
  res.removeHeader = headRemoveHeader;
  res.appendHeader = headAppendHeader as Method<'appendHeader'>;
  res.getHeaders = headGetHeaders;
  res.getHeaderNames = headGetHeaderNames;
  raw.getRawHeaderNames = headGetRawHeaderNames;
  return head;
}

/** Sets one line of `head` (replacing one of the same name) and drops the response's own field. */
function put(
  res: ServerResponse,
  head: Head,
  name: string,
  lower: string,
  value: OutgoingHttpHeader,
): void {
  const store = storeOf(res);
  if (store?.[lower] !== undefined) delete store[lower];
  const at = indexIn(head, lower);
  if (at === -1) {
    head.names.push(name);
    head.lower.push(lower);
    head.values.push(value);
  } else {
    head.names[at] = name;
    head.values[at] = value;
  }
}

/**
 * Gives the response a head, if it can have one (portico is first on it: see the top of this
 * file), so that what its `writeHead` is given stays readable with `getHeader` once written.
 */
export function holdHead(res: ServerResponse): void {
  headOf(res);
}

/**
 * Sets header `name` (`lower`: its lower case, computed once by the caller) on the response,
 * as `setHeader` would, in the head portico writes in one go.
 */
export function setHeadLine(
  res: ServerResponse,
  name: string,
  lower: string,
  value: OutgoingHttpHeader,
): void {
  const head = headOf(res);
  if (head === undefined || head.written) res.setHeader(name, value);
  else put(res, head, name, lower, value);
}

/** Sets every line of `segment` on the response, as {@link setHeadLine} does each. */
export function addHeadSegment(res: ServerResponse, segment: HeadSegment): void {
  const head = headOf(res);
  const { names, lower, values } = segment;
  if (head === undefined || head.written) {
    for (let i = 0; i < names.length; i++) res.setHeader(names[i]!, values[i]!);
    return;
  }
  const store = storeOf(res);
  if (head.names.length === 0 && (store === null || store === undefined)) {
    // the common case, the first lines of a fresh response: no name to look for
    head.names.push(...names);
    head.lower.push(...lower);
    head.values.push(...values);
    return;
  }
  for (let i = 0; i < names.length; i++) put(res, head, names[i]!, lower[i]!, values[i]!);
}

/**
 * What a response's head is to run just before it is written, with the fields `writeHead` was
 * given already among its lines and the status set (compression's `Vary`, which depends on the
 * final `Content-Type`): it may set lines with {@link setHeadLine}. Shared by many responses
 * (made once, with the middleware), it is not run for a `writeHead` node would refuse.
 */
export type HeadHook = (res: ServerResponse) => void;

/**
 * Has the response's head run `hook` once, just before it is written. `false`, with nothing
 * done, when the response has no head to hold it (or it is written already): the caller then
 * wraps `writeHead` itself.
 *
 * @example
 * ```ts
 * const vary: HeadHook = (res) => appendVary(res, 'Accept-Encoding');
 * if (!beforeHeadWrite(res, vary)) wrapWriteHead(res);
 * ```
 */
export function beforeHeadWrite(res: ServerResponse, hook: HeadHook): boolean {
  const head = headOf(res);
  if (head === undefined || head.written) return false;
  head.hook = hook;
  return true;
}

/**
 * What `writeHead(status, reason?, headers?)` is given, taken into `head`: the status and
 * reason set, the fields joined to the head as {@link setHeadLine} would (a name repeated in
 * them as one list).
 */
function takeGiven(res: ServerResponse, head: Head, status: number, args: unknown[]): void {
  const withReason = typeof args[0] === 'string';
  res.statusCode = status;
  if (withReason) res.statusMessage = args[0] as string;
  const given = withReason ? args[1] : args[0];
  if (Array.isArray(given) && !Array.isArray(given[0])) {
    // a flat raw array (portico's own writers give one): taken as it is, no pairs made
    for (let i = 0; i + 1 < given.length; i += 2) {
      const name = String(given[i]);
      const lower = name.toLowerCase();
      takeField(res, head, name, lower, given[i + 1], !namedBefore(given, i, lower));
    }
    return;
  }
  const pairs = givenPairs(given);
  for (let i = 0; i < pairs.length; i++) {
    const [name, value] = pairs[i]!;
    const lower = name.toLowerCase();
    const first = !pairs.slice(0, i).some(([earlier]) => earlier.toLowerCase() === lower);
    takeField(res, head, name, lower, value, first);
  }
}

/** Whether a flat raw array names `lower` before index `end`. */
function namedBefore(raw: readonly unknown[], end: number, lower: string): boolean {
  for (let j = 0; j < end; j += 2) if (String(raw[j]).toLowerCase() === lower) return true;
  return false;
}

/**
 * One field writeHead was given: the first of its name replaces the head's line, as writeHead
 * replaces the field; a name repeated joins its values to that line.
 */
function takeField(
  res: ServerResponse,
  head: Head,
  name: string,
  lower: string,
  value: unknown,
  first: boolean,
): void {
  if (first) {
    const taken = Array.isArray(value)
      ? value.length === 1
        ? String(value[0])
        : value.map(String)
      : (value as OutgoingHttpHeader);
    put(res, head, name, lower, taken);
    return;
  }
  const at = indexIn(head, lower);
  head.values[at] = [head.values[at]!, ...(Array.isArray(value) ? value : [value])]
    .flat()
    .map(String);
}

/** The value of the head's line `lower`, if the head holds one (and the response does not). */
export function headLine(res: ServerResponse, lower: string): OutgoingHttpHeader | undefined {
  const head = (res as HeadResponse)[HEAD];
  if (head === undefined) return undefined;
  const at = indexIn(head, lower);
  return at === -1 ? undefined : head.values[at];
}

/** writeHead's headers (an object, a flat raw array or pairs) as pairs, names as given. */
export function givenPairs(given: unknown): [string, unknown][] {
  if (given === undefined || given === null) return [];
  if (Array.isArray(given)) {
    if (given.length > 0 && Array.isArray(given[0])) {
      return (given as [unknown, unknown][]).map(([name, value]) => [String(name), value]);
    }
    const pairs: [string, unknown][] = [];
    for (let i = 0; i + 1 < given.length; i += 2) pairs.push([String(given[i]), given[i + 1]]);
    return pairs;
  }
  const pairs: [string, unknown][] = [];
  const object = given as OutgoingHttpHeaders;
  for (const name of Object.keys(object)) {
    if (object[name] !== undefined) pairs.push([name, object[name]]);
  }
  return pairs;
}

/**
 * The head's lines and writeHead's `pairs` as one flat raw array, in the order setHeader would
 * have left them: a field `pairs` sets again takes the place of the head's line (as setHeader
 * replaces a field where it stands), the others follow.
 */
function rawLines(head: Head, pairs: readonly (readonly [string, unknown])[]): unknown[] {
  const raw: unknown[] = [];
  if (pairs.length === 0) {
    for (let i = 0; i < head.names.length; i++) raw.push(head.names[i], head.values[i]);
    return raw;
  }
  const lower = pairs.map(([name]) => name.toLowerCase());
  const placed = new Array<boolean>(pairs.length).fill(false);
  for (let i = 0; i < head.names.length; i++) {
    let replaced = false;
    for (let j = 0; j < pairs.length; j++) {
      if (lower[j] !== head.lower[i]) continue;
      raw.push(pairs[j]![0], pairs[j]![1]);
      placed[j] = true;
      replaced = true;
    }
    if (!replaced) raw.push(head.names[i], head.values[i]);
  }
  for (let j = 0; j < pairs.length; j++) if (!placed[j]) raw.push(pairs[j]![0], pairs[j]![1]);
  return raw;
}

function headWriteHead(
  this: HeadResponse,
  status: number,
  reason?: unknown,
  headers?: unknown,
): ServerResponse {
  const head = this[HEAD]!;
  const write = head.writeHead as (...args: unknown[]) => ServerResponse;
  if (head.written || nodeHeadersSent.call(this)) return write.call(this, status, reason, headers);
  const hook = head.hook;
  if (hook !== undefined && Number.isInteger(status) && status >= 200 && status <= 999) {
    head.hook = undefined;
    takeGiven(this, head, status, [reason, headers]);
    hook(this);
    reason = undefined;
    headers = undefined;
  }
  head.written = true;
  try {
    return writeWithHead(this, head, write, status, reason, headers);
  } catch (err) {
    // a field node refused (a value with a line break): nothing went out, and the answer to
    // the error still carries the head's lines
    head.written = false;
    throw err;
  }
}

function writeWithHead(
  res: HeadResponse,
  head: Head,
  write: (...args: unknown[]) => ServerResponse,
  status: number,
  reason: unknown,
  headers: unknown,
): ServerResponse {
  const withReason = typeof reason === 'string';
  const given = withReason ? headers : reason;
  const store = storeOf(res);
  if ((store === null || store === undefined) && head.writeHead === NODE_WRITE_HEAD) {
    // nothing set on the response itself: one raw array, node's fast path
    const pairs = givenPairs(given);
    const raw = rawLines(head, pairs);
    const written = withReason
      ? write.call(res, status, reason, raw)
      : write.call(res, status, raw);
    // what writeHead was given stays readable, as node's store would have kept it
    for (const [name, value] of pairs) {
      const lower = name.toLowerCase();
      const at = indexIn(head, lower);
      if (at === -1) {
        head.names.push(name);
        head.lower.push(lower);
        head.values.push(value as OutgoingHttpHeader);
      } else {
        head.values[at] = value as OutgoingHttpHeader;
      }
    }
    return written;
  }
  // fields set on the response too (or a writeHead of a ServerResponse subclass, which may not
  // read a raw array): the head's lines go into the response's store in the order
  // setHeader would have left them, had portico set them before the handler set its own (a
  // field set on the response again takes the place of the head's line, the others follow),
  // then writeHead merges what it is given over them, as node does
  const own = new Map(store === null || store === undefined ? [] : Object.entries(store));
  for (const lower of own.keys()) delete store![lower];
  try {
    for (let i = 0; i < head.names.length; i++) {
      const lower = head.lower[i]!;
      const mine = own.get(lower);
      if (mine === undefined) {
        res.setHeader(head.names[i]!, head.values[i]!); // validated as any field
      } else {
        store![lower] = mine; // validated when it was set
        own.delete(lower);
      }
    }
  } finally {
    const now = storeOf(res) ?? store!;
    for (const [lower, entry] of own) now[lower] = entry;
  }
  return write.call(res, status, reason, headers);
}

function headGetHeader(this: HeadResponse, name: string): OutgoingHttpHeader | undefined {
  const head = this[HEAD]!;
  const own = head.getHeader.call(this, name);
  if (own !== undefined) return own;
  const at = indexIn(head, name.toLowerCase());
  return at === -1 ? undefined : head.values[at];
}

function headHasHeader(this: HeadResponse, name: string): boolean {
  const head = this[HEAD]!;
  return head.hasHeader.call(this, name) || indexIn(head, name.toLowerCase()) !== -1;
}

function headRemoveHeader(this: HeadResponse, name: string): void {
  const head = this[HEAD]!;
  head.removeHeader.call(this, name); // throws once the head is sent, as node's does
  const at = indexIn(head, name.toLowerCase());
  if (at === -1) return;
  head.names.splice(at, 1);
  head.lower.splice(at, 1);
  head.values.splice(at, 1);
}

function headAppendHeader(
  this: HeadResponse,
  name: string,
  value: string | readonly string[],
): ServerResponse {
  const head = this[HEAD]!;
  const lower = name.toLowerCase();
  const at = indexIn(head, lower);
  if (at !== -1 && !head.written && storeOf(this)?.[lower] === undefined) {
    // the head's value joins the response's own field, where node appends; the head's line
    // keeps its place, which the field takes when the head is written
    this.setHeader(head.names[at]!, head.values[at]!);
  }
  return head.appendHeader.call(this, name, value);
}

function headGetHeaders(this: HeadResponse): OutgoingHttpHeaders {
  const head = this[HEAD]!;
  const headers = head.getHeaders.call(this);
  for (let i = 0; i < head.names.length; i++) {
    const lower = head.lower[i]!;
    if (headers[lower] === undefined) headers[lower] = head.values[i];
  }
  return headers;
}

function headGetHeaderNames(this: HeadResponse): string[] {
  const head = this[HEAD]!;
  const names = head.getHeaderNames.call(this);
  for (const lower of head.lower) if (!names.includes(lower)) names.push(lower);
  return names;
}

function headGetRawHeaderNames(this: HeadResponse): string[] {
  const head = this[HEAD]!;
  const names = head.getRawHeaderNames.call(this);
  const store = storeOf(this);
  for (let i = 0; i < head.names.length; i++) {
    if (store?.[head.lower[i]!] === undefined) names.push(head.names[i]!);
  }
  return names;
}
