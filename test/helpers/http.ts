// Plumbing shared by the suites that test portico over real sockets on 127.0.0.1.
import {
  type Agent,
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type RequestOptions as NodeRequestOptions,
  type OutgoingHttpHeaders,
  type RequestListener,
  type Server,
  type ServerResponse,
} from 'node:http';
import { Server as HttpsServer, request as httpsRequest } from 'node:https';
import { type AddressInfo, connect } from 'node:net';
import { expect } from 'vitest';
import { type NodeListenerOptions, toNodeListener } from '../../src/adapters/node.js';
import type { Middleware } from '../../src/core/compose.js';

/** What a request got back; the body is decoded as UTF-8 (empty for HEAD, 204, 304). */
export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Options of {@link request}. */
export interface RequestOptions {
  /** GET unless given. */
  method?: string;
  /** Sent as given, so `Host`, `Origin` and other headers fetch forbids work. */
  headers?: OutgoingHttpHeaders;
  /** One piece (node sets Content-Length), or an array written chunk by chunk (chunked coding). */
  body?: string | Buffer | readonly Buffer[];
  /** `false` (a fresh connection per request) unless given. */
  agent?: Agent | false;
  /** Speak HTTPS with these client options; `servername` is `localhost` unless given. */
  tls?: { ca?: Buffer; cert?: Buffer; key?: Buffer; servername?: string };
}

/** A server listening on 127.0.0.1 at an ephemeral port. */
export interface Listening {
  server: Server;
  port: number;
  /** `http://127.0.0.1:<port>` (or `https://…` for a TLS server), without a trailing slash. */
  url: string;
  /** Drops every connection (keep-alive ones too) and waits for the server to close. */
  close(): Promise<void>;
}

/** Servers opened by {@link listen} and not closed yet (each test file has its own set). */
const open = new Set<Listening>();

/** Sends one request with `node:http` (or `node:https`) and reads the whole reply. */
export function request(
  target: Listening | Server | number | string,
  path: string,
  init: RequestOptions = {},
): Promise<Reply> {
  const { hostname, port } = locate(target);
  const options: NodeRequestOptions = {
    host: hostname,
    port,
    path,
    method: init.method ?? 'GET',
    headers: init.headers,
    agent: init.agent ?? false,
  };
  return new Promise((resolve, reject) => {
    const collect = (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
      res.on('error', reject);
    };
    const req = init.tls
      ? httpsRequest({ ...options, servername: 'localhost', ...init.tls }, collect)
      : httpRequest(options, collect);
    req.on('error', reject);
    if (Array.isArray(init.body)) {
      for (const chunk of init.body) req.write(chunk);
      req.end();
    } else {
      req.end(init.body as string | Buffer | undefined);
    }
  });
}

/** Host and port of a listening server, a port on 127.0.0.1, or a base URL. */
function locate(target: Listening | Server | number | string): { hostname: string; port: number } {
  if (typeof target === 'number') return { hostname: '127.0.0.1', port: target };
  if (typeof target === 'string') {
    const url = new URL(target);
    return { hostname: url.hostname, port: Number(url.port) };
  }
  const server = 'server' in target ? target.server : target;
  return { hostname: '127.0.0.1', port: (server.address() as AddressInfo).port };
}

/**
 * Asserts that `reply` is an `application/problem+json` answer with `status` (and, given a
 * `slug`, the type `urn:portico:problem:<slug>`); returns the problem.
 */
export function expectProblem(
  reply: Reply,
  status: number,
  slug?: string,
): Record<string, unknown> {
  expect(reply.status, reply.body).toBe(status);
  expect(reply.headers['content-type']).toBe('application/problem+json');
  const problem = json(reply);
  if (slug !== undefined) expect(problem.type).toBe(`urn:portico:problem:${slug}`);
  expect(problem.status).toBe(status);
  return problem;
}

/** Parses a reply body as JSON (a plain record unless told otherwise). */
export function json<T = Record<string, unknown>>(reply: { body: string }): T {
  return JSON.parse(reply.body) as T;
}

/** Listens on 127.0.0.1, port 0: `listener` gets a new `node:http` server, a server is used as is. */
export async function listen(listener: RequestListener | Server): Promise<Listening> {
  const server = typeof listener === 'function' ? createServer(listener) : listener;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const scheme = server instanceof HttpsServer ? 'https' : 'http';
  const listening: Listening = {
    server,
    port,
    url: `${scheme}://127.0.0.1:${port}`,
    async close() {
      open.delete(listening);
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  open.add(listening);
  return listening;
}

/** Serves portico middleware through `toNodeListener` on a new server. */
export function serve(
  app: Middleware | readonly Middleware[],
  options?: NodeListenerOptions,
): Promise<Listening> {
  return listen(toNodeListener(app, options));
}

/** Closes every server this file opened with {@link listen} and has not closed yet. */
export async function closeAll(): Promise<void> {
  await Promise.all([...open].map((listening) => listening.close()));
}

/** Options of {@link rawRequest}. */
export interface RawOptions {
  /** How long the server has to close the connection before the promise rejects (default 5 s). */
  timeoutMs?: number;
  /** Ignore ECONNRESET / EPIPE, for a server that closes while a large request is still going out. */
  tolerateReset?: boolean;
}

/**
 * Writes `data` as it is over TCP and resolves with everything the server wrote (as latin1)
 * once it closes the connection; rejects if it has not closed within `timeoutMs`.
 */
export function rawRequest(
  port: number,
  data: string | Buffer,
  { timeoutMs = 5_000, tolerateReset = false }: RawOptions = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const socket = connect(port, '127.0.0.1', () => socket.write(data));
    const timer = setTimeout(() => {
      reject(
        new Error(`the server did not close within ${timeoutMs} ms; got ${JSON.stringify(text)}`),
      );
      socket.destroy();
    }, timeoutMs);
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (!(tolerateReset && (err.code === 'ECONNRESET' || err.code === 'EPIPE'))) reject(err);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(text);
    });
  });
}

/** A raw HTTP/1.1 reply taken apart. */
export interface RawReply {
  statusLine: string;
  /** The code of an `HTTP/1.1 NNN ` status line, else 0. */
  status: number;
  /** The header lines exactly as received. */
  lines: string[];
  /** Header values by lower-case name (the last one wins when a name repeats). */
  headers: Record<string, string>;
  /** What follows the blank line ('' if there is none). */
  body: string;
}

/** Splits the text {@link rawRequest} resolved with into status, headers and body. */
export function parseReply(text: string): RawReply {
  const end = text.indexOf('\r\n\r\n');
  const [statusLine = '', ...lines] = text.slice(0, end === -1 ? text.length : end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return {
    statusLine,
    status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusLine)?.[1] ?? 0),
    lines,
    headers,
    body: end === -1 ? '' : text.slice(end + 4),
  };
}

/** A reply with its body as the bytes sent. */
export interface BinaryReply {
  status: number;
  /** The reason phrase of the status line. */
  statusMessage: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** A request to `at`, the body kept as the bytes sent (no decoding, no agent). */
export function requestBytes(
  at: Listening,
  path: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<BinaryReply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port: at.port, path, method, headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            statusMessage: res.statusMessage ?? '',
            headers: res.headers,
            body: Buffer.concat(chunks),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/**
 * Counts the responses of `server` whose `close` listeners have all run (the limiter gives a
 * request back in one, when its response is done), and the microtasks they queued (a store
 * that gives back after its `init`): `closed(n)` resolves once `n` of them have. The client
 * can read a whole response before the server gets there: a fixed sleep is no proof.
 */
export function closedResponses(server: Server): (n: number) => Promise<void> {
  let closed = 0;
  const waiting: { n: number; resolve: () => void }[] = [];
  server.on('request', (_req, res: ServerResponse) => {
    res.once('close', () =>
      setImmediate(() => {
        closed++;
        for (const waiter of waiting.filter((w) => w.n <= closed)) {
          waiting.splice(waiting.indexOf(waiter), 1);
          waiter.resolve();
        }
      }),
    );
  });
  return (n) =>
    n <= closed ? Promise.resolve() : new Promise((resolve) => waiting.push({ n, resolve }));
}
