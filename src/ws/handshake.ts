import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isToken } from '../internal/grammar.js';
import { countFieldLines } from '../internal/headers.js';

/**
 * The GUID a server appends to the client's key before hashing it (RFC 6455 §1.3).
 *
 * @example
 * ```ts
 * const accept = createHash('sha1').update(key + WEBSOCKET_GUID).digest('base64');
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6455#section-1.3 | RFC 6455 §1.3}
 */
export const WEBSOCKET_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/**
 * The only WebSocket protocol version portico speaks.
 *
 * A request with another `Sec-WebSocket-Version` is refused with 426 and
 * `Sec-WebSocket-Version: 13`.
 *
 * @example
 * ```ts
 * if (req.headers['sec-websocket-version'] !== WEBSOCKET_VERSION) refuse();
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6455#section-4.4 | RFC 6455 §4.4}
 */
export const WEBSOCKET_VERSION = '13';

/**
 * The parts of an `IncomingMessage` that `validateUpgradeRequest` reads.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc6455#section-4.2.1 | RFC 6455 §4.2.1}
 */
export type UpgradeRequestLike = Pick<
  IncomingMessage,
  'method' | 'httpVersion' | 'httpVersionMajor' | 'httpVersionMinor' | 'headers'
> &
  Partial<Pick<IncomingMessage, 'rawHeaders'>>;

/**
 * The result of `validateUpgradeRequest`: the key and offered subprotocols, or a refusal.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc6455#section-4.2.1 | RFC 6455 §4.2.1}
 */
export type UpgradeValidation =
  | {
      ok: true;
      /** The client's `Sec-WebSocket-Key`, to pass to `computeAcceptKey`. */
      key: string;
      /** The subprotocols the client offered, in its order of preference; may be empty. */
      protocols: string[];
    }
  | {
      ok: false;
      /** 426 when the version is not 13, 400 for any other fault. */
      status: 400 | 405 | 426;
      /** What is wrong, fit to send as the body of the refusal. */
      reason: string;
      /** Headers the refusal must carry (`Sec-WebSocket-Version` on 426). */
      headers?: Record<string, string>;
    };

const KEY = /^[+/0-9A-Za-z]{22}==$/;

/**
 * The `Sec-WebSocket-Accept` value that answers a client's `Sec-WebSocket-Key`: the base64 of
 * the SHA-1 of the key followed by {@link WEBSOCKET_GUID}.
 *
 * @example
 * ```ts
 * computeAcceptKey('dGhlIHNhbXBsZSBub25jZQ=='); // 's3pPLMBiTxaQ9kYGzzhZRbK+xOo='
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6455#section-4.2.2 | RFC 6455 §4.2.2}
 */
export function computeAcceptKey(key: string): string {
  return createHash('sha1')
    .update(key + WEBSOCKET_GUID)
    .digest('base64');
}

function header(req: UpgradeRequestLike, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** How many `Host` field lines the request carries (node keeps only the first in `headers`). */
function hostLines(req: UpgradeRequestLike): number {
  if (req.rawHeaders === undefined) return req.headers.host === undefined ? 0 : 1;
  return countFieldLines(req.rawHeaders, 'host');
}

function hasToken(value: string | undefined, token: string): boolean {
  if (value === undefined) return false;
  return value.split(',').some((part) => part.trim().toLowerCase() === token);
}

/** Splits a `Sec-WebSocket-Protocol` value into tokens; undefined if malformed or duplicated. */
function parseProtocols(value: string): string[] | undefined {
  const protocols: string[] = [];
  for (const part of value.split(',')) {
    const name = part.replace(/^[ \t]+|[ \t]+$/g, '');
    if (!isToken(name) || protocols.includes(name)) return undefined;
    protocols.push(name);
  }
  return protocols;
}

/**
 * Checks a client's opening handshake: method `GET`, HTTP/1.1 or later, exactly one `Host`
 * (RFC 9112 §3.2; counted in `rawHeaders` when given), `Upgrade` naming
 * `websocket`, `Connection` naming `upgrade`, `Sec-WebSocket-Version: 13` (else 426 with
 * `Sec-WebSocket-Version: 13`), a `Sec-WebSocket-Key` that is the canonical base64 of 16 bytes,
 * and a well-formed `Sec-WebSocket-Protocol` list. Pure: it only reads the request.
 *
 * @example
 * ```ts
 * server.on('upgrade', (req, socket) => {
 *   const result = validateUpgradeRequest(req);
 *   if (!result.ok) return refuse(socket, result.status, result.reason, result.headers);
 *   const accept = computeAcceptKey(result.key);
 * });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6455#section-4.2.1 | RFC 6455 §4.2.1}
 * @see {@link https://www.rfc-editor.org/rfc/rfc6455#section-4.4 | RFC 6455 §4.4}
 */
export function validateUpgradeRequest(req: UpgradeRequestLike): UpgradeValidation {
  if (req.method !== 'GET') {
    return {
      ok: false,
      status: 405,
      reason: 'The opening handshake must use GET.',
      headers: { Allow: 'GET' },
    };
  }
  const { httpVersionMajor: major, httpVersionMinor: minor } = req;
  if (!(major > 1 || (major === 1 && minor >= 1))) {
    return { ok: false, status: 400, reason: 'The opening handshake needs HTTP/1.1 or later.' };
  }
  if (hostLines(req) !== 1) {
    return { ok: false, status: 400, reason: 'The opening handshake must carry one Host header.' };
  }
  if (!hasToken(header(req, 'upgrade'), 'websocket')) {
    return { ok: false, status: 400, reason: 'Missing or invalid Upgrade header.' };
  }
  if (!hasToken(header(req, 'connection'), 'upgrade')) {
    return { ok: false, status: 400, reason: 'Missing or invalid Connection header.' };
  }
  if (header(req, 'sec-websocket-version')?.trim() !== WEBSOCKET_VERSION) {
    return {
      ok: false,
      status: 426,
      reason: 'Unsupported WebSocket version; only 13 is supported.',
      headers: { 'Sec-WebSocket-Version': WEBSOCKET_VERSION },
    };
  }
  const key = header(req, 'sec-websocket-key')?.trim();
  if (
    key === undefined ||
    !KEY.test(key) ||
    Buffer.from(key, 'base64').toString('base64') !== key
  ) {
    return { ok: false, status: 400, reason: 'Missing or invalid Sec-WebSocket-Key header.' };
  }
  const offered = header(req, 'sec-websocket-protocol');
  const protocols = offered === undefined ? [] : parseProtocols(offered);
  if (protocols === undefined) {
    return { ok: false, status: 400, reason: 'Invalid Sec-WebSocket-Protocol header.' };
  }
  return { ok: true, key, protocols };
}

/**
 * The subprotocol to answer with: the first one the client offered that the server supports,
 * honouring the client's order of preference; `undefined` when none matches, in which case
 * the response must carry no `Sec-WebSocket-Protocol` header. Names compare exactly.
 *
 * @example
 * ```ts
 * selectSubprotocol(['chat.v2', 'chat.v1'], ['chat.v1', 'chat.v2']); // 'chat.v2'
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6455#section-4.2.2 | RFC 6455 §4.2.2}
 */
export function selectSubprotocol(
  offered: readonly string[],
  supported: readonly string[] | ReadonlySet<string>,
): string | undefined {
  const set: ReadonlySet<string> = supported instanceof Set ? supported : new Set(supported);
  return offered.find((protocol) => set.has(protocol));
}
