import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { PROBLEM_TYPE } from '../core/problem.js';

function statusFor(error: NodeJS.ErrnoException & { rawPacket?: Buffer }): number {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return 431;
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return 408;
    case 'HPE_INVALID_METHOD':
      // an unknown method token is 501; binary bytes (a TLS hello on the plain port) are 400
      return /^[A-Z][A-Z-]* /.test(error.rawPacket?.toString('latin1', 0, 32) ?? '') ? 501 : 400;
    default:
      return 400;
  }
}

/**
 * Answers requests node's parser refused (malformed request lines or headers, headers too
 * large, a header or request timeout) with a Problem Details body and closes the
 * connection, instead of node's bare `400` with no body. For `server.on('clientError', …)`.
 *
 * @example
 * ```ts
 * const server = http.createServer(listener);
 * server.on('clientError', handleClientError);
 * ```
 * @see {@link https://nodejs.org/api/http.html#event-clienterror | Node.js: `'clientError'` event}
 */
export function handleClientError(error: Error, socket: Duplex): void {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const status = statusFor(error as NodeJS.ErrnoException);
  const title = STATUS_CODES[status] ?? 'Bad Request';
  const body = JSON.stringify({
    type: 'about:blank',
    title,
    status,
    detail:
      status === 431
        ? 'The request headers are too large.'
        : status === 408
          ? 'The request took too long to arrive.'
          : 'The request could not be parsed as HTTP/1.1.',
  });
  socket.end(
    `HTTP/1.1 ${status} ${title}\r\nContent-Type: ${PROBLEM_TYPE}\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
