import { HttpError, PorticoError } from '../core/errors/errors.js';
import { invalidOption } from '../internal/options.js';

/**
 * The close codes registered for WebSocket (RFC 6455 §7.4.1 and the IANA "WebSocket Close
 * Code Number" registry), by name. `NO_STATUS`, `ABNORMAL` and `TLS_HANDSHAKE` are only ever
 * *reported* to an application; they must never be sent in a Close frame.
 *
 * @example
 * ```ts
 * socket.close(CloseCode.POLICY_VIOLATION, 'Origin not allowed');
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6455#section-7.4.1 | RFC 6455 §7.4.1}
 * @see {@link https://www.iana.org/assignments/websocket/websocket.xhtml#close-code-number | IANA WebSocket Close Code Number Registry}
 */
export const CloseCode = Object.freeze({
  /** 1000: the purpose of the connection has been fulfilled. */
  NORMAL: 1000,
  /** 1001: the endpoint is going away (server shutdown, browser left the page). */
  GOING_AWAY: 1001,
  /** 1002: the peer broke the protocol. */
  PROTOCOL_ERROR: 1002,
  /** 1003: a message of a type the endpoint cannot accept (binary on a text-only channel). */
  UNSUPPORTED_DATA: 1003,
  /** 1005: reported only: the Close frame carried no status code. */
  NO_STATUS: 1005,
  /** 1006: reported only: the connection dropped without a Close frame. */
  ABNORMAL: 1006,
  /** 1007: a message's data was inconsistent with its type (invalid UTF-8 in a text message). */
  INVALID_PAYLOAD: 1007,
  /** 1008: a message violated the endpoint's policy; the generic refusal. */
  POLICY_VIOLATION: 1008,
  /** 1009: a message was too big to process. */
  MESSAGE_TOO_BIG: 1009,
  /** 1010: sent by a client: the server did not negotiate an extension the client requires. */
  MANDATORY_EXTENSION: 1010,
  /** 1011: the server met an unexpected condition. */
  INTERNAL_ERROR: 1011,
  /** 1012: the service is restarting; the client may reconnect. */
  SERVICE_RESTART: 1012,
  /** 1013: temporary overload; the client should try again later. */
  TRY_AGAIN_LATER: 1013,
  /** 1014: a gateway or proxy received an invalid answer from upstream. */
  BAD_GATEWAY: 1014,
  /** 1015: reported only: the TLS handshake failed. */
  TLS_HANDSHAKE: 1015,
} as const);

/**
 * One of the registered close codes in {@link CloseCode}.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc6455#section-7.4.1 | RFC 6455 §7.4.1}
 */
export type CloseCodeValue = (typeof CloseCode)[keyof typeof CloseCode];

/**
 * The most bytes of UTF-8 a close reason may take: 125 bytes of control payload less the code.
 *
 * @example
 * ```ts
 * Buffer.byteLength(reason) <= MAX_CLOSE_REASON_BYTES; // fits in a Close frame
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6455#section-5.5 | RFC 6455 §5.5}
 */
export const MAX_CLOSE_REASON_BYTES = 123;

/**
 * Whether `code` may be sent in a Close frame: 1000–1003 and 1007–1014 from the registry, and
 * 3000–4999 (registered libraries and frameworks, then private use). The same rule as the `ws`
 * package's `isValidStatusCode`, so a code accepted here is one `ws` will send and accept.
 *
 * @example
 * ```ts
 * isSendableCloseCode(1000); // true
 * isSendableCloseCode(1006); // false: reported only
 * isSendableCloseCode(4001); // true
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6455#section-7.4.2 | RFC 6455 §7.4.2}
 */
export function isSendableCloseCode(code: number): boolean {
  return (
    Number.isInteger(code) &&
    ((code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) ||
      (code >= 3000 && code <= 4999))
  );
}

/**
 * Whether `code` is one an endpoint only reports to its application and never sends:
 * 1005 (no status), 1006 (abnormal closure), 1015 (TLS handshake failure).
 *
 * @example
 * ```ts
 * ws.on('close', (code) => { if (isReportedOnlyCloseCode(code)) log.warn('unclean close', code) });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6455#section-7.4.1 | RFC 6455 §7.4.1}
 */
export function isReportedOnlyCloseCode(code: number): boolean {
  return code === 1005 || code === 1006 || code === 1015;
}

/**
 * Whether `code` lies in the range reserved for private use by applications, 4000–4999.
 *
 * @example
 * ```ts
 * isApplicationCloseCode(4401); // true
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6455#section-7.4.2 | RFC 6455 §7.4.2}
 */
export function isApplicationCloseCode(code: number): boolean {
  return Number.isInteger(code) && code >= 4000 && code <= 4999;
}

/**
 * Shortens `reason` to at most {@link MAX_CLOSE_REASON_BYTES} (123) bytes of UTF-8, cutting
 * only between code points, so the result is always valid UTF-8. A lone surrogate becomes
 * U+FFFD, the character it would be sent as anyway.
 *
 * @example
 * ```ts
 * truncateCloseReason('é'.repeat(100)); // 61 × 'é', 122 bytes
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6455#section-5.5.1 | RFC 6455 §5.5.1}
 */
export function truncateCloseReason(reason: string): string {
  let out = '';
  let bytes = 0;
  for (let char of reason) {
    const unit = char.charCodeAt(0);
    if (char.length === 1 && unit >= 0xd800 && unit <= 0xdfff) char = '\uFFFD';
    const size = Buffer.byteLength(char, 'utf8');
    if (bytes + size > MAX_CLOSE_REASON_BYTES) break;
    out += char;
    bytes += size;
  }
  return out;
}

/** Options of {@link WebSocketCloseError} beyond its close code and reason. */
export interface WebSocketCloseErrorOptions {
  /** Stable code. @defaultValue `"ERR_WS_CLOSE"` */
  code?: string;
  /** The underlying error; kept for logs, never sent. @defaultValue none */
  cause?: unknown;
}

/**
 * A protocol error that carries its wire form: the close code to send and a reason already
 * truncated to fit a Close frame. Throw it from a message handler to close the connection.
 *
 * @example
 * ```ts
 * throw new WebSocketCloseError(CloseCode.UNSUPPORTED_DATA, 'Binary messages are not accepted.');
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6455#section-7.4 | RFC 6455 §7.4}
 */
export class WebSocketCloseError extends PorticoError {
  /** The close code to send; always one `isSendableCloseCode` accepts. */
  readonly closeCode: number;
  /** The reason to send, at most 123 bytes of UTF-8. */
  readonly reason: string;

  constructor(closeCode: number, reason = '', options: WebSocketCloseErrorOptions = {}) {
    if (!isSendableCloseCode(closeCode)) {
      throw invalidOption(`WebSocketCloseError: ${String(closeCode)} is not a sendable close code`);
    }
    const safe = truncateCloseReason(reason);
    super(safe || `WebSocket closed with ${closeCode}`, options.code ?? 'ERR_WS_CLOSE', {
      cause: options.cause,
    });
    this.closeCode = closeCode;
    this.reason = safe;
  }
}

/**
 * The close code that answers an error thrown while serving a WebSocket: a
 * {@link WebSocketCloseError}'s own code; for an {@link HttpError}, 413 → 1009 (too big),
 * 429 and 503 → 1013 (try again later), any other 4xx → 1008 (policy violation), 5xx → 1011;
 * anything else → 1011 (internal error).
 *
 * @example
 * ```ts
 * try { await handle(message) } catch (err) { socket.close(closeCodeFor(err)) }
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6455#section-7.4.1 | RFC 6455 §7.4.1}
 */
export function closeCodeFor(error: unknown): number {
  if (error instanceof WebSocketCloseError) return error.closeCode;
  if (error instanceof HttpError) {
    if (error.status === 413) return CloseCode.MESSAGE_TOO_BIG;
    if (error.status === 429 || error.status === 503) return CloseCode.TRY_AGAIN_LATER;
    if (error.status < 500) return CloseCode.POLICY_VIOLATION;
  }
  return CloseCode.INTERNAL_ERROR;
}
