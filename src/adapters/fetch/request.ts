import { IncomingMessage } from 'node:http';
import { FetchSocket } from './socket.js';

/** An `IncomingMessage` read from a Web `Request`, whose body is pulled only when read. */
type PulledMessage = IncomingMessage & {
  _read(size: number): void;
  _addHeaderLines(lines: string[], count: number): void;
  _consuming: boolean;
  _readableState: { readingMore: boolean };
};

/**
 * `request` as node's `IncomingMessage`, for portico middleware: the method, the path and
 * query as `req.url`, the header lines as `rawHeaders` (node derives `req.headers` from them,
 * as for a request it parsed), `Host` from the URL when the headers lack it, and the body
 * read from `request.body` only when a middleware reads it, so that a request nobody reads
 * is never pulled. `stop()` cancels what is left of the body and ends the request.
 * @internal
 */
export function toIncomingMessage(
  request: Request,
  remoteAddress: string | undefined,
): { req: IncomingMessage; stop: () => void } {
  // a host's lazy Request (@hono/node-server's) is made whole here, before the chain: one it
  // cannot make fails the host's own way
  const body = request.body;
  const url = new URL(request.url);
  const socket = new FetchSocket(remoteAddress, url.protocol === 'https:');
  const req = new IncomingMessage(socket as never) as PulledMessage;
  req.method = request.method;
  req.url = `${url.pathname}${url.search}`;
  req.httpVersion = '1.1';
  req.httpVersionMajor = 1;
  req.httpVersionMinor = 1;
  // as node's parser hands them over: req.headers and headersDistinct derive from these
  const lines = rawHeadersOf(request.headers, url.host);
  req._addHeaderLines(lines, lines.length);
  // the body is taken (and locked) only when a middleware reads it: until then the handler the
  // chain passes on to may read it itself
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  let reading = false;
  req._read = () => {
    // as IncomingMessage's own _read: the body is being consumed from now on
    req._consuming = true;
    req._readableState.readingMore = false;
    if (body === null) {
      finish(req);
      return;
    }
    if (reading) return;
    reading = true;
    // each chunk after a turn of the event loop, as from a socket: a body already whole (or
    // endless) in memory must not hold the loop in promise callbacks, where no timer runs
    setImmediate(() => {
      if (req.destroyed) return;
      reader ??= body.getReader();
      reader.read().then(
        ({ done, value }) => {
          reading = false;
          if (done) finish(req);
          else req.push(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
        },
        (err: unknown) => req.destroy(err instanceof Error ? err : new Error(String(err))),
      );
    });
  };
  const stop = () => {
    if (reader !== undefined) {
      if (!req.complete) reader.cancel().catch(() => {});
    } else if (body !== null && !body.locked) {
      body.cancel().catch(() => {});
    }
    if (!req.destroyed) req.destroy();
    socket.destroy();
  };
  return { req, stop };
}

function finish(req: IncomingMessage): void {
  req.complete = true;
  req.push(null);
}

/** The header lines of a Web `Headers`, `Set-Cookie` apart, with `Host` first when missing. */
function rawHeadersOf(headers: Headers, host: string): string[] {
  const raw: string[] = headers.has('host') ? [] : ['host', host];
  for (const [name, value] of headers) {
    if (name === 'set-cookie') continue;
    raw.push(name, value);
  }
  for (const cookie of headers.getSetCookie()) raw.push('set-cookie', cookie);
  return raw;
}
