/** `http://` or `https://` (any case) at the start of an absolute-form request target. */
const ABSOLUTE = /^https?:\/\//i;

/** The authority of an absolute-form target: everything up to its path, query or fragment. */
const AUTHORITY = /^[^/?#]*/;

/** A request target taken apart: its path, and its query with the `?` (or `''`). */
export interface SplitTarget {
  path: string;
  search: string;
}

/**
 * Splits a request target (`req.url`) into path and query. The origin form (`/a?b`) is split
 * as it is; the absolute form (`http://host/a?b`, which a server must accept, RFC 9112
 * §3.2.2) loses its scheme and authority first, and an empty path is `/`. Any other form
 * (`*`, `host:port`, another scheme) is returned whole as the path.
 */
export function splitTarget(target: string): SplitTarget {
  let rest = target;
  const scheme = ABSOLUTE.exec(target);
  if (scheme !== null) {
    const after = target.slice(scheme[0].length);
    rest = after.slice(AUTHORITY.exec(after)![0].length);
    if (!rest.startsWith('/')) rest = `/${rest}`;
  }
  const q = rest.indexOf('?');
  return q === -1 ? { path: rest, search: '' } : { path: rest.slice(0, q), search: rest.slice(q) };
}

/**
 * The path of a request target, without its query: {@link splitTarget}'s `path`, with no
 * allocation beyond the slice for the origin form every request but a proxy's has.
 */
export function targetPath(target: string): string {
  if (target.charCodeAt(0) !== 0x2f /* / */) return splitTarget(target).path;
  const q = target.indexOf('?');
  return q === -1 ? target : target.slice(0, q);
}

/** The query parameters of a request target (`req.url`), none for an absent one. */
export function targetQuery(target: string | undefined): URLSearchParams {
  return new URLSearchParams(splitTarget(target ?? '').search.slice(1));
}
