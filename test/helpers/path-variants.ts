// The spellings of one path that some reader (a framework's router, a URL parser, a proxy)
// routes to it, or could: for the suites that hold a guard on a prefix against them.
import { parseReply, type RawReply, rawRequest } from './http.js';

/**
 * The variants of `path` (an absolute path of at least two segments, such as `/api/events`):
 * case, encoded unreserved characters, encoded `/` and `\\`, dot and empty segments, a
 * trailing `/`, `.` or `;`, a `;` parameter on the first segment, NUL, a bad escape, the
 * absolute form (with userinfo, with another scheme, which Express routes by its path), a
 * fragment (which Express cuts off). Sent with {@link sendRaw}: no client rewrites them.
 */
export function variantsOf(path: string): string[] {
  const [first = '', ...rest] = path.slice(1).split('/');
  const tail = rest.join('/');
  const hex = (c: string) => `%${c.charCodeAt(0).toString(16)}`;
  const HEX = (c: string) => hex(c).toUpperCase();
  return [
    `/${first.toUpperCase()}/${tail}`,
    `/${first[0]!.toUpperCase()}${first.slice(1)}/${tail[0]!.toUpperCase()}${tail.slice(1)}`,
    `/${hex(first[0]!)}${first.slice(1)}/${tail}`,
    `/${HEX(first[0]!.toUpperCase())}${first.slice(1).toUpperCase()}/${tail}`,
    `/${first}/${tail.slice(0, -1)}${hex(tail.at(-1)!)}`,
    `/${first}%2F${tail}`,
    `/${first}%2f${tail}`,
    `/%2F${first}/${tail}`,
    `/x/../${first}/${tail}`,
    `/./${first}/${tail}`,
    `/${first}/./${tail}`,
    `/%2e%2e/${first}/${tail}`,
    `/${first}/%2E/${tail}`,
    `//${first}/${tail}`,
    `/${first}//${tail}`,
    `/${first}/${tail}/`,
    `/${first}/${tail}.`,
    `/${first}/${tail};`,
    `/${first};/${tail}`,
    `/${first};x=1/${tail}`,
    `/${first}%5C${tail}`,
    `/${first}\\${tail}`,
    `/${first}/${tail}%00`,
    `/${first}/${tail}%`,
    `http://127.0.0.1/${first}/${tail}`,
    `http://127.0.0.1/${first.toUpperCase()}/${tail}`,
    `http://alice:alice-password@127.0.0.1/${first}/${tail}`,
    `ftp://127.0.0.1/${first}/${tail}`,
    `/${first}/${tail}#fragment`,
    `/${first}#/${tail}`,
  ];
}

/** One GET written raw on a new connection, with `headers` lines; the reply taken apart. */
export async function sendRaw(
  port: number,
  target: string,
  headers: readonly string[] = [],
): Promise<RawReply> {
  const head = [`GET ${target} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close', ...headers];
  return parseReply(await rawRequest(port, `${head.join('\r\n')}\r\n\r\n`));
}

/**
 * The status `@hono/node-server` answers itself for `target`, before any Fetch handler runs
 * (an empty text/plain answer), or `undefined` when it hands the request on: a `\\` in the
 * path or another scheme is a 400, userinfo a 500 (the Web `Request` it makes of it cannot be
 * built).
 */
export function nodeServerAnswer(target: string): number | undefined {
  if (/^[a-z]+:\/\/[^/@]*@/i.test(target)) return 500;
  if (target.includes('\\') || /^(?!https?:)[a-z]+:\/\//i.test(target)) return 400;
  return undefined;
}

/**
 * The status Next.js (`next start`) answers itself for `target`, before any route handler
 * runs, or `undefined` when it routes it: the absolute form, a `\\`, an empty segment or a
 * trailing `/` are a 308 redirect (to the path it would route, for an origin-form target),
 * a bad escape its own 500 page.
 */
export function nextServerAnswer(target: string): number | undefined {
  if (/^[a-z]+:\/\//i.test(target)) return 308;
  const path = target.split(/[?#]/)[0]!;
  if (path.includes('\\') || path.includes('//') || (path.length > 1 && path.endsWith('/'))) {
    return 308;
  }
  if (/%(?![0-9a-f]{2})/i.test(path)) return 500;
  return undefined;
}
