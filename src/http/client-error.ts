import { randomUUID } from 'node:crypto';
import { IncomingMessage, type OutgoingHttpHeaders, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Middleware } from '../core/compose.js';
import { getRequestId } from '../core/context.js';
import { PROBLEM_TYPE } from '../core/problem.js';
import { middlewareOption, runOnRawSocket, writeRawAnswer } from '../core/raw-answer.js';

/**
 * The request line of RFC 9112 §3 should be allowed 8,000 octets at least: past 8 KiB, the
 * headers overflowed because of the target (a 414 URI Too Long, RFC 9110 §15.5.15), not the
 * header fields. Seen only when the chunk at fault starts with the request line.
 */
const LONG_REQUEST_LINE = 8 * 1024;

function requestLineTooLong(packet: Buffer | undefined): boolean {
  if (packet === undefined || !/^[A-Z][A-Z-]* \S/.test(packet.toString('latin1', 0, 32))) {
    return false;
  }
  const end = packet.indexOf('\n');
  return (end === -1 ? packet.length : end) > LONG_REQUEST_LINE;
}

function statusFor(error: NodeJS.ErrnoException & { rawPacket?: Buffer }): number {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return requestLineTooLong(error.rawPacket) ? 414 : 431;
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return 408;
    case 'HPE_INVALID_METHOD':
      // an unknown method token is 501; binary bytes (a TLS hello on the plain port) are 400
      return /^[A-Z][A-Z-]* /.test(error.rawPacket?.toString('latin1', 0, 32) ?? '') ? 501 : 400;
    default:
      return 400;
  }
}

/** Options of {@link createClientErrorHandler}. */
export interface ClientErrorHandlerOptions {
  /**
   * Middleware run before the answer, on a stand-in request (no method, URL or headers:
   * node could not read them; the real socket) and a response that is never sent: the
   * headers it sets go on the answer (`X-Request-ID`, the security headers), and a request
   * id it gives is quoted in the problem. Each must call `next()`; a throw or an answer of
   * its own changes nothing but stops the headers of the middleware after it.
   * @defaultValue none
   */
  middleware?: Middleware | readonly Middleware[];
}

/** A handler for a server's `'clientError'` event. */
export type ClientErrorHandler = (error: Error, socket: Duplex) => void;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function answer(socket: Duplex, error: Error, headers: OutgoingHttpHeaders, id?: string): void {
  const status = statusFor(error as NodeJS.ErrnoException);
  const title = STATUS_CODES[status] ?? 'Bad Request';
  const problem: Record<string, unknown> = {
    type: 'about:blank',
    title,
    status,
    detail:
      status === 431
        ? 'The request headers are too large.'
        : status === 414
          ? 'The request target (URL) is too long.'
          : status === 408
            ? 'The request took too long to arrive.'
            : 'The request could not be parsed as HTTP/1.1.',
  };
  // the occurrence, not the target: what node could not parse is never echoed
  problem.instance = `urn:uuid:${id !== undefined && UUID.test(id) ? id : randomUUID()}`;
  if (id !== undefined) problem.requestId = id;
  writeRawAnswer(
    socket,
    status,
    [headers, { 'Cache-Control': 'no-store' }],
    PROBLEM_TYPE,
    JSON.stringify(problem),
  );
}

/** Whether the socket can still be answered; if not, it is destroyed. */
function answerable(error: Error, socket: Duplex): boolean {
  if ((error as NodeJS.ErrnoException).code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return false;
  }
  return true;
}

/**
 * Answers requests node's parser refused (malformed request lines or headers, headers too
 * large, a target over 8 KiB, a header or request timeout) with a Problem Details body and closes the
 * connection, instead of node's bare `400` with no body. For `server.on('clientError', …)`;
 * {@link createClientErrorHandler} makes one that adds the headers of your middleware.
 *
 * @example
 * ```ts
 * const server = http.createServer(listener);
 * server.on('clientError', handleClientError);
 * ```
 * @see {@link https://nodejs.org/api/http.html#event-clienterror | Node.js: `'clientError'` event}
 */
export function handleClientError(error: Error, socket: Duplex): void {
  if (answerable(error, socket)) answer(socket, error, {});
}

/**
 * `handleClientError` with the headers every other answer of the service carries:
 * `middleware` runs on a stand-in request first, and what it sets goes on the problem
 * answer (a request id is quoted in it too).
 *
 * @example
 * ```ts
 * server.on('clientError', createClientErrorHandler({
 *   middleware: [requestId(), securityHeaders()],
 * }));
 * ```
 * @see {@link https://nodejs.org/api/http.html#event-clienterror | Node.js: `'clientError'` event}
 */
export function createClientErrorHandler(
  options: ClientErrorHandlerOptions = {},
): ClientErrorHandler {
  const middleware = middlewareOption('createClientErrorHandler()', options.middleware);
  if (middleware === undefined) return handleClientError;
  return function clientErrorHandler(error, socket) {
    if (!answerable(error, socket)) return;
    const req = new IncomingMessage(socket as Socket);
    runOnRawSocket(middleware, req).then(({ headers }) => {
      if (answerable(error, socket)) answer(socket, error, headers, getRequestId(req));
    });
  };
}
