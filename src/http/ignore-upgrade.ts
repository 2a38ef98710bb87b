import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';

/** Fields that belong to the upgrade asked for, left out when the request is served as it is. */
const UPGRADE_FIELDS = new Set(['upgrade', 'http2-settings']);

/** The `Connection` options of an upgrade, dropped with it. */
const UPGRADE_OPTIONS = /^(?:upgrade|http2-settings)$/i;

/**
 * Serves a request that asked for a protocol upgrade the server does not take (HTTP/2 over
 * cleartext, `Upgrade: h2c`, which `curl --http2` asks for on every request; any protocol
 * but the one you handle) as the plain HTTP/1.1 request it also is. RFC 9110 §7.8 lets a
 * server ignore `Upgrade`; node, once a server listens for `'upgrade'`, hands every such
 * request to that listener instead of the request listener, so that without this a route
 * would answer 404 to `curl --http2`.
 *
 * The request's head is written again without `Upgrade`, `HTTP2-Settings` and their
 * `Connection` options, put back in front of what the socket still holds (`head`, the body),
 * and the socket is handed back to the server that accepted it, as a new connection (its
 * `'connection'` or, over TLS, `'secureConnection'` listeners run again). Returns `false`,
 * having done nothing, when that server is not known (a socket not accepted by a node
 * server) or the request is no upgrade (`CONNECT`, no `Upgrade` field); the caller then
 * answers the request itself.
 *
 * @example
 * ```ts
 * server.on('upgrade', (req, socket, head) => {
 *   if (!/\bwebsocket\b/i.test(req.headers.upgrade ?? '') && ignoreUpgrade(req, socket, head)) return;
 *   wsHandler(req, socket, head);
 * });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-7.8 | RFC 9110 §7.8}
 */
export function ignoreUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
  // CONNECT would come straight back through the server's 'connect' event
  if (req.method === 'CONNECT' || req.headers.upgrade === undefined) return false;
  const server = (socket as Duplex & { server?: Server }).server;
  if (server === undefined || server === null || typeof server.emit !== 'function') return false;
  if (socket.destroyed) return true;
  const lines = [`${req.method} ${req.url} HTTP/${req.httpVersion}`];
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const lower = name.toLowerCase();
    if (UPGRADE_FIELDS.has(lower)) continue;
    let value = raw[i + 1]!;
    if (lower === 'connection') {
      value = value
        .split(',')
        .map((option) => option.trim())
        .filter((option) => option !== '' && !UPGRADE_OPTIONS.test(option))
        .join(', ');
      if (value === '') continue;
    }
    lines.push(`${name}: ${value}`);
  }
  socket.unshift(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), head]));
  const encrypted = (socket as Duplex & { encrypted?: boolean }).encrypted === true;
  server.emit(encrypted ? 'secureConnection' : 'connection', socket);
  return true;
}
