/**
 * A scheme and `//` at the start of an absolute-form request target (RFC 3986 §3.1): `http://`
 * and `https://` in any case, and any other (`ftp://`), which node accepts and Express routes
 * by its path just the same.
 */
const ABSOLUTE = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/** Where a path ends: its query, or a fragment (never sent by a client, yet accepted by node). */
const PATH_END = /[?#]/;

/** The authority of an absolute-form target: everything up to its path, query or fragment. */
const AUTHORITY = /^[^/?#]*/;

/** A request target taken apart: its path, and its query with the `?` (or `''`). */
export interface SplitTarget {
  path: string;
  search: string;
}

/**
 * Splits a request target (`req.url`) into path and query. The origin form (`/a?b`) is split
 * as it is; the absolute form (`http://user:pw@host/a?b`, which a server must accept, RFC 9112
 * §3.2.2, with any scheme) loses its scheme and authority (userinfo included) first, and an
 * empty path is `/`. A fragment (`#…`) is cut off with the query, as Express's parser does. Any
 * other form (`*`, `host:port`) is returned whole as the path.
 */
export function splitTarget(target: string): SplitTarget {
  let rest = target;
  const scheme = ABSOLUTE.exec(target);
  if (scheme !== null) {
    const after = target.slice(scheme[0].length);
    rest = after.slice(AUTHORITY.exec(after)![0].length);
    if (!rest.startsWith('/')) rest = `/${rest}`;
  }
  const end = rest.search(PATH_END);
  if (end === -1) return { path: rest, search: '' };
  const hash = rest.indexOf('#', end);
  const search = rest[end] === '?' ? rest.slice(end, hash === -1 ? undefined : hash) : '';
  return { path: rest.slice(0, end), search };
}

/**
 * The path of a request target, without its query: {@link splitTarget}'s `path`, with no
 * allocation beyond the slice for the origin form every request but a proxy's has.
 */
export function targetPath(target: string): string {
  if (target.charCodeAt(0) !== 0x2f /* / */) return splitTarget(target).path;
  const end = target.search(PATH_END);
  return end === -1 ? target : target.slice(0, end);
}

/** The query parameters of a request target (`req.url`), none for an absent one. */
export function targetQuery(target: string | undefined): URLSearchParams {
  return new URLSearchParams(splitTarget(target ?? '').search.slice(1));
}
