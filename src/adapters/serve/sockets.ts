import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Middleware } from '../../core/compose.js';
import type { HttpError } from '../../core/errors/http-error.js';
import { PROBLEM_TYPE, toProblem } from '../../core/problem.js';
import { runOnRawSocket, writeRawAnswer } from '../../core/raw-answer.js';

const noop = () => {};

/**
 * Answers `error` as a problem on the raw socket of an upgrade or a `CONNECT`, with the
 * headers `edge` sets, and closes the connection.
 */
export function refuseOnSocket(
  req: IncomingMessage,
  socket: Duplex,
  edge: Middleware | undefined,
  error: HttpError,
): void {
  socket.on('error', noop);
  const ran = edge === undefined ? Promise.resolve({ headers: {} }) : runOnRawSocket(edge, req);
  ran.then(({ headers }) => {
    if (socket.destroyed) return;
    writeRawAnswer(
      socket,
      error.status,
      [headers, error.headers, { 'Cache-Control': 'no-store' }],
      PROBLEM_TYPE,
      JSON.stringify(toProblem(error, req)),
    );
  });
}
