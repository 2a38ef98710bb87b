// A request whose target is in absolute form with userinfo (RFC 9112 §3.2.2), written raw on
// a socket: node's client never sends one (it writes the origin form, userinfo as Basic).
import { parseReply, type RawReply, rawRequest } from './http.js';

/** What {@link absoluteFormGet} sends: who the userinfo names, and headers to add. */
export interface AbsoluteFormOptions {
  /** `user:password` put before the authority. */
  userinfo: string;
  /** Sent as they are, after `Host` and `Connection: close`. */
  headers?: Record<string, string>;
  /** `GET` unless given. */
  method?: string;
  /** `http` unless given: node accepts any scheme, and Express routes it by its path. */
  scheme?: string;
}

/** The target `<scheme>://<userinfo>@127.0.0.1:<port><pathAndQuery>`. */
export function absoluteTarget(
  port: number,
  pathAndQuery: string,
  userinfo: string,
  scheme = 'http',
): string {
  return `${scheme}://${userinfo}@127.0.0.1:${port}${pathAndQuery}`;
}

/** Sends one request with an absolute-form target on a new connection; the reply, parsed. */
export async function absoluteFormGet(
  port: number,
  pathAndQuery: string,
  { userinfo, headers = {}, method = 'GET', scheme }: AbsoluteFormOptions,
): Promise<RawReply> {
  const lines = [
    `${method} ${absoluteTarget(port, pathAndQuery, userinfo, scheme)} HTTP/1.1`,
    `Host: 127.0.0.1:${port}`,
    'Connection: close',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  return parseReply(await rawRequest(port, `${lines.join('\r\n')}\r\n\r\n`));
}
