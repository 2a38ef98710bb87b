import { invalidOption } from '../internal/options.js';

/**
 * Decides whether one origin is allowed. Called with the request's `Origin` as sent, never
 * with the literal `null` origin. A rejected promise or a thrown error propagates.
 */
export type OriginPredicate = (origin: string) => boolean | Promise<boolean>;

/**
 * The origins a server lets in:
 *
 * - `'*'`: every origin, `null` included (and a request without `Origin`);
 * - a list of exact origins (`'https://app.example.com'`, compared as sent, case included)
 *   and/or regular expressions, each of which must match the *whole* origin (it is tested as
 *   `^(?:pattern)$`; the `g` and `y` flags are dropped). The opaque origin `null` (sandboxed
 *   frames, `file:` pages, some redirects) is allowed only when the string `'null'` is listed;
 *   patterns never see it;
 * - a function, which never sees `null` either.
 */
export type OriginAllowlist = '*' | readonly (string | RegExp)[] | OriginPredicate;

/**
 * Tells whether an `Origin` header value is allowed. Synchronous (returns a boolean) unless
 * the allowlist is an async function. An absent origin is allowed only by `'*'`.
 */
export type OriginMatcher = (origin: string | undefined) => boolean | Promise<boolean>;

const allowAny: OriginMatcher = () => true;
const allowNone: OriginMatcher = () => false;

/**
 * Checks that `value` is an origin exactly as browsers serialise it in `Origin`
 * (`scheme://host[:port]`, lowercase host, no default port, no path, no trailing slash).
 */
function assertSerializedOrigin(owner: string, index: number, value: string): void {
  if (value === 'null') return;
  const where = `${owner}: origins[${index}]`;
  if (value === '*') {
    throw invalidOption(`${where} is '*'; to allow every origin pass \`origins: '*'\` on its own.`);
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalidOption(
      `${where} ${JSON.stringify(value)} is not an origin; write it as scheme://host[:port], e.g. \`https://app.example.com\`.`,
    );
  }
  if (url.host === '') {
    throw invalidOption(
      `${where} ${JSON.stringify(value)} has no host; pages served from file: and sandboxed frames send the origin \`null\`, which is allowed only if 'null' is listed.`,
    );
  }
  // Non-special schemes (capacitor:, chrome-extension:) have an opaque URL origin, yet
  // browsers send them as scheme://host.
  const origin = url.origin === 'null' ? `${url.protocol}//${url.host}` : url.origin;
  if (value !== origin) {
    throw invalidOption(
      `${where} ${JSON.stringify(value)} is not an origin as browsers send it (scheme://host[:port], lowercase, no path or trailing slash). Did you mean \`${origin}\`?`,
    );
  }
}

/** A pattern that matches only the whole string, without the stateful `g`/`y` flags. */
function anchor(pattern: RegExp): RegExp {
  return new RegExp(`^(?:${pattern.source})$`, pattern.flags.replace(/[gy]/g, ''));
}

/**
 * Whether `origin` is written as a browser serializes one (`scheme://host[:port]`): anything
 * else (`*`, `null`, a path) never reaches a predicate or a pattern, so that neither can echo
 * it back (`Access-Control-Allow-Origin: *` with credentials, from an `Origin: *` any
 * non-browser client can send).
 */
const SERIALIZED_ORIGIN = /^[a-z][a-z0-9+.-]*:\/\/[^/\s?#@*]+$/i;

function fromPredicate(predicate: OriginPredicate): OriginMatcher {
  return function matchOriginBy(origin) {
    if (origin === undefined || !SERIALIZED_ORIGIN.test(origin)) return false;
    const result: unknown = predicate(origin);
    if (typeof result === 'boolean') return result;
    if (result !== null && typeof (result as PromiseLike<unknown>)?.then === 'function') {
      return Promise.resolve(result as PromiseLike<unknown>).then((value) => value === true);
    }
    return false;
  };
}

/** @internal Builds the matcher, naming `owner` in option errors. */
export function buildOriginMatcher(owner: string, origins: OriginAllowlist): OriginMatcher {
  if (origins === '*') return allowAny;
  if (typeof origins === 'function') return fromPredicate(origins);
  if (!Array.isArray(origins)) {
    const hint =
      typeof origins === 'string' ? ` Did you mean \`[${JSON.stringify(origins)}]\`?` : '';
    throw invalidOption(
      `${owner}: \`origins\` must be '*', an array of origins and RegExps, or a function.${hint}`,
    );
  }
  const exact = new Set<string>();
  const patterns: RegExp[] = [];
  (origins as readonly unknown[]).forEach((entry, index) => {
    if (typeof entry === 'string') {
      assertSerializedOrigin(owner, index, entry);
      exact.add(entry);
    } else if (entry instanceof RegExp) {
      patterns.push(anchor(entry));
    } else {
      throw invalidOption(`${owner}: origins[${index}] must be a string or a RegExp.`);
    }
  });
  if (patterns.length === 0) {
    if (exact.size === 0) return allowNone;
    return function matchOrigin(origin) {
      return origin !== undefined && exact.has(origin);
    };
  }
  return function matchOriginOrPattern(origin) {
    if (origin === undefined) return false;
    if (exact.has(origin)) return true;
    if (!SERIALIZED_ORIGIN.test(origin)) return false;
    for (const pattern of patterns) if (pattern.test(origin)) return true;
    return false;
  };
}

/**
 * Builds the origin check that {@link cors} uses, for reuse elsewhere (the WebSocket upgrade's
 * `Origin` check). Exact origins are validated when the matcher is built: each must be written
 * as browsers send it, so `'http://localhost:5173/'` throws a `TypeError` (code
 * `ERR_INVALID_OPTION`) suggesting `'http://localhost:5173'`. Matching is exact and
 * case-sensitive, so look-alikes (`https://example.com.evil.net`, another scheme or port,
 * `HTTPS://EXAMPLE.COM`) are refused.
 *
 * @example
 * ```ts
 * const isAllowed = createOriginMatcher(['https://app.example.com', /https:\/\/[a-z0-9-]+\.example\.com/]);
 * isAllowed('https://app.example.com'); // true
 * isAllowed('https://app.example.com.evil.net'); // false
 * isAllowed('null'); // false: list 'null' to allow it
 * ```
 * @see {@link https://fetch.spec.whatwg.org/#http-origin | Fetch: the `Origin` header}
 */
export function createOriginMatcher(origins: OriginAllowlist): OriginMatcher {
  return buildOriginMatcher('createOriginMatcher', origins);
}
