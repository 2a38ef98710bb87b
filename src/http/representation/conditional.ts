import { hash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { preconditionFailed } from '../../core/errors/errors.js';
import { send } from '../../core/send.js';

/**
 * Options of {@link createETag}.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-8.8.3 | RFC 9110 §8.8.3}
 */
export interface CreateETagOptions {
  /**
   * Make a weak validator (`W/"…"`): equal for representations that are semantically
   * equivalent but not byte for byte (RFC 9110 §8.8.1).
   * @defaultValue `false`
   */
  weak?: boolean;
}

/**
 * An entity tag computed from a representation's bytes: the first 128 bits of its SHA-256,
 * base64url-encoded and quoted. Strings are hashed as UTF-8.
 *
 * @example
 * ```ts
 * createETag('{"id":1}'); // '"A3ySFO73TMOIfzpPCFtOFw"'
 * createETag('{"id":1}', { weak: true }); // 'W/"A3ySFO73TMOIfzpPCFtOFw"'
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-8.8.3 | RFC 9110 §8.8.3}
 */
export function createETag(body: string | Uint8Array, options: CreateETagOptions = {}): string {
  const digest = hash('sha256', body, 'buffer').subarray(0, 16).toString('base64url');
  return options.weak === true ? `W/"${digest}"` : `"${digest}"`;
}

const ETAG = /^(?:W\/)?"[\x21\x23-\x7e\x80-\xff]*"$/;

/**
 * Whether `value` is a syntactically valid entity tag (`"xyz"` or `W/"xyz"`).
 *
 * @example
 * ```ts
 * isETag('W/"v2"'); // true
 * isETag('v2'); // false: entity tags are quoted
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-8.8.3 | RFC 9110 §8.8.3}
 */
export function isETag(value: string): boolean {
  return ETAG.test(value);
}

/**
 * Parses an `If-Match` / `If-None-Match` field value: `['*']` for `*`, otherwise the
 * entity tags it lists, in order. Malformed members are skipped (commas may appear inside
 * a quoted tag, so the list is not split naively).
 *
 * @example
 * ```ts
 * parseETagList('W/"a", "b,c"'); // ['W/"a"', '"b,c"']
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-13.1.1 | RFC 9110 §13.1.1}
 */
export function parseETagList(value: string): string[] {
  if (value.trim() === '*') return ['*'];
  const tags: string[] = [];
  let i = 0;
  while (i < value.length) {
    const c = value[i]!;
    if (c === ',' || c === ' ' || c === '\t') {
      i++;
      continue;
    }
    const start = i;
    if (value.startsWith('W/"', i)) i += 2;
    if (value[i] === '"') {
      const end = value.indexOf('"', i + 1);
      if (end !== -1) {
        const tag = value.slice(start, end + 1);
        if (ETAG.test(tag)) tags.push(tag);
        i = end + 1;
        continue;
      }
    }
    // not an entity tag: skip to the next comma
    const comma = value.indexOf(',', i);
    i = comma === -1 ? value.length : comma + 1;
  }
  return tags;
}

/**
 * How two entity tags are compared (RFC 9110 §8.8.3.2).
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-8.8.3.2 | RFC 9110 §8.8.3.2}
 */
export type ETagComparison = 'strong' | 'weak';

/**
 * Compares two entity tags. Strong comparison: both strong and equal character for
 * character. Weak comparison: the opaque tags are equal, either or both may be weak.
 *
 * @example
 * ```ts
 * compareETags('W/"1"', '"1"', 'weak'); // true
 * compareETags('W/"1"', '"1"', 'strong'); // false
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-8.8.3.2 | RFC 9110 §8.8.3.2}
 */
export function compareETags(a: string, b: string, comparison: ETagComparison): boolean {
  const weakA = a.startsWith('W/');
  const weakB = b.startsWith('W/');
  if (comparison === 'strong') return !weakA && !weakB && a === b;
  return (weakA ? a.slice(2) : a) === (weakB ? b.slice(2) : b);
}

/**
 * Whether an `If-Match` / `If-None-Match` field value matches `etag`: `*` matches any
 * current representation, a list matches when one member compares equal. `If-Match` uses
 * strong comparison, `If-None-Match` weak.
 *
 * @example
 * ```ts
 * matchesETag(req.headers['if-none-match'] ?? '', etag, 'weak');
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-13.1 | RFC 9110 §13.1}
 */
export function matchesETag(
  header: string,
  etag: string | undefined,
  comparison: ETagComparison,
): boolean {
  const list = parseETagList(header);
  if (list[0] === '*') return true;
  if (etag === undefined) return false;
  return list.some((tag) => compareETags(tag, etag, comparison));
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const IMF_FIXDATE =
  /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\d{2}) ([A-Z][a-z]{2}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) GMT$/;
const RFC850_DATE =
  /^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\d{2})-([A-Z][a-z]{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) GMT$/;
const ASCTIME_DATE =
  /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ([A-Z][a-z]{2}) ([ \d]\d) (\d{2}):(\d{2}):(\d{2}) (\d{4})$/;

function toTime(day: string, month: string, year: number, h: string, m: string, s: string) {
  const mon = MONTHS.indexOf(month);
  const [d, hh, mm, ss] = [Number(day), Number(h), Number(m), Number(s)];
  if (mon === -1 || d < 1 || d > 31 || hh > 23 || mm > 59 || ss > 60) return undefined;
  const time = Date.UTC(year, mon, d, hh, mm, Math.min(ss, 59));
  // reject dates that roll over (31 Feb)
  return new Date(time).getUTCDate() === d ? time : undefined;
}

/**
 * Parses an HTTP-date in any of the three formats recipients must accept (IMF-fixdate,
 * RFC 850, asctime) into milliseconds since the epoch; `undefined` when it is not one.
 *
 * @example
 * ```ts
 * parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT'); // 784111777000
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-5.6.7 | RFC 9110 §5.6.7}
 */
export function parseHttpDate(value: string): number | undefined {
  const v = value.trim();
  let m = IMF_FIXDATE.exec(v);
  if (m) return toTime(m[1]!, m[2]!, Number(m[3]), m[4]!, m[5]!, m[6]!);
  m = RFC850_DATE.exec(v);
  if (m) {
    // a two-digit year more than 50 years ahead is in the past century (RFC 9110 §5.6.7)
    const now = new Date().getUTCFullYear();
    let year = Math.floor(now / 100) * 100 + Number(m[3]);
    if (year > now + 50) year -= 100;
    return toTime(m[1]!, m[2]!, year, m[4]!, m[5]!, m[6]!);
  }
  m = ASCTIME_DATE.exec(v);
  if (m) return toTime(m[2]!.trim(), m[1]!, Number(m[6]), m[3]!, m[4]!, m[5]!);
  return undefined;
}

/**
 * Formats a date as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form HTTP
 * senders must generate.
 *
 * @example
 * ```ts
 * res.setHeader('Last-Modified', formatHttpDate(message.updatedAt));
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-5.6.7 | RFC 9110 §5.6.7}
 */
export function formatHttpDate(date: Date | number): string {
  return new Date(toMillis(date, 'date')).toUTCString();
}

function toMillis(date: Date | number, what: string): number {
  const ms = typeof date === 'number' ? date : date instanceof Date ? date.getTime() : Number.NaN;
  if (!Number.isFinite(ms))
    throw new TypeError(`${what} must be a valid Date or epoch milliseconds`);
  return ms;
}

/**
 * The validators of the selected representation, as {@link evaluatePreconditions} takes them.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-8.8 | RFC 9110 §8.8}
 */
export interface RepresentationValidators {
  /** Its entity tag, quoted (`"abc"` or `W/"abc"`), e.g. from {@link createETag}. */
  etag?: string;
  /** When it last changed; compared at second precision, as HTTP-dates are. */
  lastModified?: Date | number;
  /**
   * Whether the target resource has a current representation (`If-Match: *` is false and
   * `If-None-Match: *` true when it has none, e.g. for a PUT that creates).
   * @defaultValue `true`
   */
  exists?: boolean;
}

/**
 * The outcome of evaluating a request's preconditions.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-13.2.2 | RFC 9110 §13.2.2}
 */
export type PreconditionOutcome = 'proceed' | 'not-modified' | 'precondition-failed';

const IGNORED_METHODS = new Set(['CONNECT', 'OPTIONS', 'TRACE']);

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

function evaluate(
  req: IncomingMessage,
  validators: RepresentationValidators,
): [PreconditionOutcome, string | undefined] {
  const method = (req.method ?? 'GET').toUpperCase();
  if (IGNORED_METHODS.has(method)) return ['proceed', undefined];
  const safe = method === 'GET' || method === 'HEAD';
  if (validators.etag !== undefined && !ETAG.test(validators.etag)) {
    throw new TypeError('etag must be a quoted entity tag ("…" or W/"…")');
  }
  const exists = validators.exists !== false;
  const etag = exists ? validators.etag : undefined;
  const lastModified =
    exists && validators.lastModified !== undefined
      ? Math.floor(toMillis(validators.lastModified, 'lastModified') / 1000)
      : undefined;
  const h = req.headers;
  const ifMatch = single(h['if-match']);
  const ifNoneMatch = single(h['if-none-match']);

  // 1. If-Match (strong comparison)
  if (ifMatch !== undefined) {
    if (!exists || !matchesETag(ifMatch, etag, 'strong')) {
      return ['precondition-failed', 'If-Match'];
    }
  } else if (h['if-unmodified-since'] !== undefined && lastModified !== undefined) {
    // 2. If-Unmodified-Since, only without If-Match; an invalid date is ignored
    const since = parseHttpDate(h['if-unmodified-since']);
    if (since !== undefined && lastModified > Math.floor(since / 1000)) {
      return ['precondition-failed', 'If-Unmodified-Since'];
    }
  }
  // 3. If-None-Match (weak comparison)
  if (ifNoneMatch !== undefined) {
    if (exists && matchesETag(ifNoneMatch, etag, 'weak')) {
      return safe ? ['not-modified', undefined] : ['precondition-failed', 'If-None-Match'];
    }
  } else if (safe && h['if-modified-since'] !== undefined && lastModified !== undefined) {
    // 4. If-Modified-Since, GET/HEAD only and only without If-None-Match
    const since = parseHttpDate(h['if-modified-since']);
    if (since !== undefined && lastModified <= Math.floor(since / 1000)) {
      return ['not-modified', undefined];
    }
  }
  return ['proceed', undefined];
}

/**
 * Evaluates `If-Match`, `If-Unmodified-Since`, `If-None-Match` and `If-Modified-Since`
 * against the selected representation, in the order of RFC 9110 §13.2.2. Invalid dates are
 * ignored; CONNECT, OPTIONS and TRACE always proceed. Call it once the request is known to
 * succeed otherwise (after authentication and lookup, before any change).
 *
 * @example
 * ```ts
 * switch (evaluatePreconditions(req, { etag: message.etag, lastModified: message.updatedAt })) {
 *   case 'not-modified': return send(res, 304);
 *   case 'precondition-failed': throw preconditionFailed();
 * }
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-13.2.2 | RFC 9110 §13.2.2}
 */
export function evaluatePreconditions(
  req: IncomingMessage,
  validators: RepresentationValidators,
): PreconditionOutcome {
  return evaluate(req, validators)[0];
}

/** Representation metadata that a 304 must not carry (RFC 9110 §15.4.5). */
const NOT_ON_304 = [
  'content-type',
  'content-length',
  'content-encoding',
  'content-language',
  'content-range',
  'content-disposition',
  'transfer-encoding',
];

/**
 * Evaluates the request's preconditions ({@link evaluatePreconditions}) and acts on them:
 * answers `304 Not Modified` without a body (keeping `ETag`, `Last-Modified`,
 * `Cache-Control`, `Vary`, `Expires`) and returns `true`, throws a 412 problem, or returns
 * `false` for the handler to go on. On GET and HEAD it also sets `ETag` and `Last-Modified`
 * (an HTTP-date) on the response; on other methods it leaves them to the handler, whose
 * answer describes the new state, not the one the preconditions were checked against.
 *
 * @example
 * ```ts
 * const body = JSON.stringify(message);
 * if (checkConditional(req, res, { etag: createETag(body), lastModified: message.updatedAt })) return;
 * send(res, 200, body, { 'Content-Type': JSON_TYPE, 'Cache-Control': 'no-cache' });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-13 | RFC 9110 §13}
 */
export function checkConditional(
  req: IncomingMessage,
  res: ServerResponse,
  validators: RepresentationValidators,
): boolean {
  const [outcome, header] = evaluate(req, validators);
  const method = req.method?.toUpperCase();
  if ((method === 'GET' || method === 'HEAD') && validators.exists !== false) {
    if (validators.etag !== undefined) res.setHeader('ETag', validators.etag);
    if (validators.lastModified !== undefined) {
      res.setHeader('Last-Modified', formatHttpDate(validators.lastModified));
    }
  }
  if (outcome === 'precondition-failed') {
    throw preconditionFailed(`The ${header} precondition of the request failed.`);
  }
  if (outcome === 'proceed') return false;
  for (const name of NOT_ON_304) res.removeHeader(name);
  send(res, 304);
  return true;
}
