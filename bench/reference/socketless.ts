/**
 * A request through a listener without sockets, for the in-process tools
 * (bench/reference/in-process.ts, bench/reference/chain-costs.ts): node's own IncomingMessage
 * and ServerResponse for `GET /api/me` with the given header lines.
 */
import { IncomingMessage, type RequestListener, ServerResponse } from 'node:http';
import { Socket } from 'node:net';

const socket = new Socket();
type ParsedRequest = IncomingMessage & { _addHeaderLines(lines: string[], n: number): void };

/** One request through `listener`; settles with the status once `end()` is called. */
export function requestWithoutSocket(
  listener: RequestListener,
  lines: readonly string[],
): Promise<number> {
  const req = new IncomingMessage(socket) as ParsedRequest;
  req.method = 'GET';
  req.url = '/api/me';
  req.httpVersionMajor = 1;
  req.httpVersionMinor = 1;
  req.httpVersion = '1.1';
  req._addHeaderLines([...lines], lines.length);
  req.push(null);
  const res = new ServerResponse(req as IncomingMessage);
  return new Promise((resolve) => {
    const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
    res.end = ((...args: unknown[]) => {
      const ended = end(...args);
      // settled from the tick queue, after the ticks this request queued (its end of
      // stream, node's own): a loop of awaits alone never lets that queue run, and would
      // keep every request alive until the loop ends (all of them promoted, GC inflated)
      process.nextTick(resolve, res.statusCode);
      return ended;
    }) as ServerResponse['end'];
    listener(req, res);
  });
}
