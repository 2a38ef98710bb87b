// In-memory requests and responses for property tests: thousands of runs cannot afford a
// socket each. The request is a real IncomingMessage (headers folded by node's own rules), the
// response a real ServerResponse (so setHeader validates values as it does on the wire).
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';

/** What {@link fakeRequest} builds a request from. */
export interface FakeRequestInit {
  method?: string;
  url?: string;
  /** Header lines in order; a name may repeat. */
  headers?: readonly (readonly [string, string])[] | Readonly<Record<string, string>>;
  /** The body; the stream ends after it (or at once without one). */
  body?: string | Buffer;
}

type WithParser = IncomingMessage & { _addHeaderLines(lines: string[], n: number): void };

/** A request as node's parser would hand it over, with its body already queued. */
export function fakeRequest(init: FakeRequestInit = {}): IncomingMessage {
  const req = new IncomingMessage(new Socket()) as WithParser;
  req.method = init.method ?? 'GET';
  req.url = init.url ?? '/';
  req.httpVersionMajor = 1;
  req.httpVersionMinor = 1;
  req.httpVersion = '1.1';
  const lines: string[] = [];
  const list = Array.isArray(init.headers)
    ? (init.headers as readonly (readonly [string, string])[])
    : Object.entries(init.headers ?? {});
  for (const [name, value] of list) lines.push(name, value);
  // the parser's own entry point: fills rawHeaders, headers and headersDistinct alike
  req._addHeaderLines(lines, lines.length);
  if (init.body !== undefined && init.body.length > 0) req.push(init.body);
  req.push(null);
  return req;
}

/** A response whose status, headers and body can be read back once it has ended. */
export interface FakeResponse {
  res: ServerResponse;
  /** The body given to `end()`, as UTF-8 text (`undefined` before `end()`). */
  body(): string | undefined;
}

/** A real `ServerResponse` for `req`, without a socket; the body given to `end()` is kept. */
export function fakeResponse(req: IncomingMessage): FakeResponse {
  const res = new ServerResponse(req);
  let captured: string | undefined;
  const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
  res.end = ((...args: unknown[]) => {
    const chunk = args[0];
    if (typeof chunk === 'string') captured = chunk;
    else if (chunk instanceof Uint8Array) captured = Buffer.from(chunk).toString('utf8');
    else captured = '';
    return end(...args);
  }) as ServerResponse['end'];
  return { res, body: () => captured };
}
