// The one path every portico piece that matches paths reads (mount, the router, static files,
// the OAuth server's routes, the upgrade handler's `path`): RFC 3986 §6.2.2 normal form, and a
// 400 for a path that two readers (portico and a framework's router, a proxy) could take apart
// differently.
import type { IncomingMessage } from 'node:http';
import { badRequest } from '../../core/errors/errors.js';
import { CTL } from '../../internal/grammar.js';
import { targetPath } from '../../internal/target.js';

/**
 * What sends a path down the slow road: an escape, a backslash, a segment starting with a dot
 * (`/.well-known` too: checked, then kept), an empty segment.
 */
const SUSPECT = /[%\\]|\/\.|\/\//;

/** `%` and two hex digits. */
const ESCAPE = /%(?:([0-9A-Fa-f]{2})|)/g;

/** ALPHA / DIGIT / "-" / "." / "_" / "~" (RFC 3986 §2.3). */
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

const ambiguous = (detail: string) =>
  badRequest(`${detail} Send the path as a browser would send it.`, {
    code: 'ERR_AMBIGUOUS_PATH',
    typeSlug: 'ambiguous-path',
    title: 'Ambiguous request path',
  });
const invalid = (detail: string) => badRequest(detail, { code: 'ERR_INVALID_PATH' });

/** One `%XX` escape of a path in normal form: decoded when unreserved, else upper-case hex. */
function normalEscape(hex: string | undefined): string {
  if (hex === undefined) throw invalid('The request path holds an invalid percent-encoding.');
  const code = Number.parseInt(hex, 16);
  const char = String.fromCharCode(code);
  if (CTL.test(char)) {
    throw invalid('The request path holds an encoded control character (%00–%1F, %7F).');
  }
  if (code === 0x2f) throw ambiguous('The request path holds an encoded slash (%2F).');
  if (code === 0x5c) throw ambiguous('The request path holds an encoded backslash (%5C).');
  return UNRESERVED.test(char) ? char : `%${hex.toUpperCase()}`;
}

/**
 * The normal form of a request path (RFC 3986 §6.2.2): percent-encoded unreserved characters
 * decoded (`/%61pi` is `/api`, as Fastify routes it), other escapes in upper-case hex. A path
 * that readers take apart differently is refused with a `400` problem rather than guessed:
 *
 * - an encoded `/` or `\` (`%2F`, `%5C`), or a raw `\` (`ERR_AMBIGUOUS_PATH`): one segment to
 *   one reader, two to another;
 * - a `.` or `..` segment, encoded or not (`/a/../api`, `/%2e%2e/api`; `ERR_AMBIGUOUS_PATH`):
 *   node, Express and Fastify route them as written, URL parsers and proxies remove them;
 *   browsers and HTTP clients never send them;
 * - an empty segment (`//api`, `/api//x`; a trailing `/` is kept; `ERR_AMBIGUOUS_PATH`): some
 *   routers merge slashes (Fastify's `ignoreDuplicateSlashes`), others do not;
 * - an invalid escape (`%zz`, `%4`) or an encoded control character (`%00`–`%1F`, `%7F`;
 *   `ERR_INVALID_PATH`).
 *
 * A path with none of these (nearly every request) is returned as it is, unallocated. Case is
 * kept: see {@link mount} for case-insensitive prefixes.
 *
 * @example
 * ```ts
 * canonicalPath('/%61pi/events'); // '/api/events'
 * canonicalPath('/api/caf%c3%a9'); // '/api/caf%C3%A9'
 * canonicalPath('/api/../admin'); // throws a 400 problem, ERR_AMBIGUOUS_PATH
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc3986#section-6.2.2 | RFC 3986 §6.2.2}
 */
export function canonicalPath(path: string): string {
  if (!SUSPECT.test(path)) return path;
  if (path.includes('\\')) throw ambiguous('The request path holds a backslash.');
  const decoded = path.includes('%') ? path.replace(ESCAPE, (_, hex) => normalEscape(hex)) : path;
  const segments = decoded.split('/');
  for (let i = 1; i < segments.length; i++) {
    const segment = segments[i];
    if (segment === '.' || segment === '..') {
      throw ambiguous('The request path holds a dot segment (`.` or `..`).');
    }
    if (segment === '' && i < segments.length - 1) {
      throw ambiguous('The request path holds an empty segment (`//`).');
    }
  }
  return decoded;
}

/**
 * The request path portico matches against: the path of `req.url` without its query (an
 * absolute-form target, RFC 9112 §3.2.2, gives its path, `/` when it has none), in the normal
 * form of {@link canonicalPath}; a path readers could take differently is a `400` problem.
 * Under Express's `app.use('/api', …)`, `req.url` is what Express leaves: the path below the
 * mount. `req.url` itself is left as it is.
 *
 * @example
 * ```ts
 * // GET /api/messages?limit=10, GET /%61pi/messages, or GET http://api.example.com/api/messages
 * getPathname(req); // '/api/messages'
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc3986#section-6.2.2 | RFC 3986 §6.2.2}
 */
export function getPathname(req: IncomingMessage): string {
  const path = targetPath(req.url ?? '/');
  // `*` (OPTIONS *) and authority form (CONNECT) have no path to normalise
  return path.charCodeAt(0) === 0x2f ? canonicalPath(path) : path;
}
