import type { IncomingMessage } from 'node:http';
import { compose, type Middleware, type Next } from '../../core/compose.js';
import { notFound } from '../../core/errors/errors.js';
import { getPrincipal, type Principal } from '../../core/principal.js';
import { type ErrorHandlerOptions, sendError } from '../../core/problem.js';
import { traced } from '../../diagnostics/request-tracing.js';
import { invalidOption } from '../../internal/options.js';
import { toIncomingMessage } from './request.js';
import { FetchServerResponse } from './response.js';
import { writeResponse } from './write-response.js';

/**
 * A Fetch-style handler: a Web `Request` in, a Web `Response` out. `host` is what the host
 * passes beside the request, handed on as it is: `@hono/node-server`'s `{ incoming, outgoing }`,
 * Deno's `info`, Bun's `server`, a Next.js route's `{ params }`.
 */
export type FetchHandler = (request: Request, host?: unknown) => Promise<Response>;

/** The handler a chain passes on to: any Fetch-style handler (a route, a framework's own). */
export type WebHandler = (request: Request, host?: unknown) => Response | Promise<Response>;

/**
 * Options of {@link toFetchHandler}.
 *
 * @example
 * ```ts
 * const options: FetchHandlerOptions = { handler: (request) => Response.json({ ok: true }) };
 * ```
 */
export interface FetchHandlerOptions extends ErrorHandlerOptions {
  /**
   * Answers the requests the chain passes on (`next()` after its last middleware), after
   * portico's middleware ran: its `Response` is written through them, so their header lines
   * (request id, security headers, CORS, rate limits, cookies) are on it, its own fields
   * winning over those of the same name, `Vary` merged.
   * @defaultValue none: a 404 problem, as `toNodeListener()` answers
   */
  handler?: WebHandler;
  /**
   * The client's IP address, which a Web `Request` does not carry: what the host knows of the
   * connection, from the request or the `host` argument beside it (`@hono/node-server`:
   * `host.incoming.socket.remoteAddress`; Deno: `host.remoteAddr.hostname`). Without it, every
   * request counts as one unknown client for the rate limits keyed by IP (a shared budget:
   * closed, not open), unless `trustProxy` reads it from `X-Forwarded-For`.
   * @defaultValue no address
   */
  clientAddress?: (request: Request, host?: unknown) => string | undefined;
}

/** The node request each Web `Request` ran as, for {@link principalOf} and the getters of `portico/core`. */
const incoming = new WeakMap<Request, IncomingMessage>();

/**
 * The node `IncomingMessage` that portico's middleware saw for `request`, for the getters
 * that take one (`getRequestId`, `getPrincipal`, `getSession`…); `undefined` for a request
 * that did not go through {@link toFetchHandler}.
 *
 * @example
 * ```ts
 * const id = getRequestId(incomingOf(request)!);
 * ```
 */
export function incomingOf(request: Request): IncomingMessage | undefined {
  return incoming.get(request);
}

/**
 * The principal that `authenticate()` found for `request`, in the handler the chain passes
 * on to; `undefined` when none ran or none found one.
 *
 * @example
 * ```ts
 * handler: (request) => Response.json({ sub: principalOf(request)?.sub }),
 * ```
 */
export function principalOf(request: Request): Principal | undefined {
  const req = incoming.get(request);
  return req === undefined ? undefined : getPrincipal(req);
}

function validated(options: FetchHandlerOptions): FetchHandlerOptions {
  const owner = 'toFetchHandler()';
  if (options === null || typeof options !== 'object') {
    throw invalidOption(`${owner}: options must be an object`);
  }
  for (const name of ['handler', 'clientAddress'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') {
      throw invalidOption(`${owner}: \`${name}\` must be a function`);
    }
  }
  return options;
}

/**
 * Runs portico middleware for a Web `Request` and answers its `Response`: for Fetch-style
 * hosts on Node (Hono, Next.js route handlers, `Bun.serve`-shaped servers). The middleware run
 * on a real node `IncomingMessage` and `ServerResponse`, so that every piece behaves as on
 * `node:http`: bodies read once with the same limits (`413`, `415`, `Content-Length`), the head
 * as node writes it, problems for what is thrown, a 404 problem for what nothing answers
 * (unless `handler` takes it), streams (`streamChannel()`'s SSE) as a streaming body that ends
 * when the reader goes away or the request's `signal` aborts. WebSocket upgrades do not exist
 * here: a Fetch handler has no socket to upgrade (see the guide for each runtime's own API).
 *
 * @example
 * ```ts
 * import { requestId, securityHeaders, authenticate, apiKeyAuth, MemoryApiKeyStore } from 'portico';
 * import { toFetchHandler, principalOf } from 'portico/fetch';
 *
 * const store = new MemoryApiKeyStore();
 * const fetchHandler = toFetchHandler([requestId(), securityHeaders(), authenticate([apiKeyAuth({ store })])], {
 *   handler: (request) => Response.json({ sub: principalOf(request)?.sub }),
 * });
 * const response = await fetchHandler(new Request('http://localhost/api/me'));
 * ```
 */
export function toFetchHandler(
  app: Middleware | readonly Middleware[],
  options: FetchHandlerOptions = {},
): FetchHandler {
  const { handler, clientAddress, ...errorOptions } = validated(options);
  const chain = traced(typeof app === 'function' ? app : compose(app));
  return function porticoFetch(request: Request, host?: unknown): Promise<Response> {
    const { req, stop } = toIncomingMessage(request, clientAddress?.(request, host));
    const res = new FetchServerResponse(req, () => abort(req, stop));
    incoming.set(request, req);
    res.once('finish', stop);
    request.signal.addEventListener('abort', () => abort(req, stop, res), { once: true });
    const fail = (err: unknown) => sendError(req, res, err, errorOptions);
    const last: Next =
      handler === undefined
        ? () => {
            if (!res.headersSent) fail(notFound('Nothing is served at this path.'));
            return Promise.resolve();
          }
        : async () => writeResponse(res, await handler(request, host));
    try {
      const result = chain(req, res, last);
      if (result instanceof Promise) result.then(undefined, fail);
    } catch (err) {
      fail(err);
    }
    return res.response;
  };
}

/** The client went away before the end of the answer: as node does, the request is aborted. */
function abort(req: IncomingMessage, stop: () => void, res?: FetchServerResponse): void {
  if (res?.writableFinished) return;
  if (!req.complete) {
    (req as { aborted: boolean }).aborted = true;
    req.emit('aborted');
  }
  stop();
  res?.clientGone();
}
