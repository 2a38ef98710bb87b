/**
 * Hono (4) adapter: portico middleware as Hono middleware ({@link toHono}), the principal at
 * `c.get('user')`, refusals and errors answered as Problem Details. Runs the chain through
 * `portico/fetch`, so every piece behaves as on `node:http`.
 *
 * @module portico/hono
 */

import type { Middleware } from '../core/compose.js';
import { notFound } from '../core/errors/errors.js';
import type { Principal } from '../core/principal.js';
import { type ErrorHandlerOptions, renderError } from '../core/problem.js';
import { incomingOf, principalOf, toFetchHandler } from './fetch/handler.js';
import { toIncomingMessage } from './fetch/request.js';

/** The part of Hono's context portico needs, structurally (no dependency on Hono's types). */
export interface HonoContextLike {
  req: { raw: Request };
  /** Hono's answer: read after `next()`, replaced by the one portico wrote. */
  res: Response;
  /** `@hono/node-server` puts node's request there: `env.incoming`. */
  env?: unknown;
  set(key: 'user', value: Principal): void;
}

/** A Hono middleware, structurally. */
export type HonoMiddleware = (c: HonoContextLike, next: () => Promise<void>) => Promise<void>;

/**
 * The variables portico sets on Hono's context: `user`, the principal `authenticate()` found.
 *
 * @example
 * ```ts
 * const app = new Hono<{ Variables: PorticoVariables }>();
 * app.get('/api/me', (c) => c.json({ sub: c.get('user')?.sub }));
 * ```
 */
export interface PorticoVariables {
  /** The principal found by portico's `authenticate()`, once its middleware has run. */
  user?: Principal;
}

/**
 * Options of {@link toHono}.
 *
 * @example
 * ```ts
 * app.use(toHono([requestId()], { logger: pino() }));
 * ```
 */
export interface HonoOptions extends ErrorHandlerOptions {
  /**
   * The client's IP address (for rate limits by IP).
   * @defaultValue on `@hono/node-server`, the socket's (`c.env.incoming.socket.remoteAddress`)
   */
  clientAddress?: (c: HonoContextLike) => string | undefined;
}

/** The address `@hono/node-server` knows: its node request's socket. */
function nodeServerAddress(c: HonoContextLike): string | undefined {
  const incoming = (c.env as { incoming?: { socket?: { remoteAddress?: unknown } } } | undefined)
    ?.incoming;
  const address = incoming?.socket?.remoteAddress;
  return typeof address === 'string' ? address : undefined;
}

/**
 * Mounts portico middleware in Hono. The chain runs first; what it passes on goes to the rest
 * of Hono's chain (`await next()`), with the principal at `c.get('user')`, and Hono's answer
 * is then written through portico's middleware, so that their header lines (request id,
 * security headers, CORS, rate limits, cookies) are on it. What the chain refuses or throws is
 * answered as a problem without reaching Hono's routes.
 *
 * @example
 * ```ts
 * import { Hono } from 'hono';
 * import { serve } from '@hono/node-server';
 * import { requestId, securityHeaders, authenticate, apiKeyAuth, MemoryApiKeyStore } from 'portico';
 * import { toHono, type PorticoVariables } from 'portico/hono';
 *
 * const store = new MemoryApiKeyStore();
 * const app = new Hono<{ Variables: PorticoVariables }>();
 * app.use(toHono([requestId(), securityHeaders(), authenticate([apiKeyAuth({ store })])]));
 * app.get('/api/me', (c) => c.json({ sub: c.get('user')?.sub }));
 * serve({ fetch: app.fetch, port: 3000 });
 * ```
 */
export function toHono(
  app: Middleware | readonly Middleware[],
  options: HonoOptions = {},
): HonoMiddleware {
  const { clientAddress = nodeServerAddress, ...errorOptions } = options;
  const contexts = new WeakMap<Request, { c: HonoContextLike; next: () => Promise<void> }>();
  const fetch = toFetchHandler(app, {
    ...errorOptions,
    clientAddress: (request) => {
      const entry = contexts.get(request);
      return entry === undefined ? undefined : clientAddress(entry.c);
    },
    handler: async (request) => {
      const { c, next } = contexts.get(request)!;
      const principal = principalOf(request);
      if (principal !== undefined) c.set('user', principal);
      await next();
      return c.res;
    },
  });
  return async function porticoHono(c, next) {
    contexts.set(c.req.raw, { c, next });
    const response = await fetch(c.req.raw);
    // Hono merges the headers of the answer it holds into a new one; this one has them already
    (c as { res: Response | undefined }).res = undefined;
    c.res = response;
  };
}

/** `error` as a problem `Response` for the request of `c` (the request portico saw, if it did). */
function problemResponse(
  c: HonoContextLike,
  error: unknown,
  options: ErrorHandlerOptions,
): Response {
  const request = c.req.raw;
  const req = incomingOf(request) ?? toIncomingMessage(request, undefined).req;
  const { status, headers, body } = renderError(req, error, options);
  const answer = new Headers();
  for (const [name, value] of Object.entries(headers)) {
    for (const line of Array.isArray(value) ? value : [value]) answer.append(name, line);
  }
  return new Response(request.method === 'HEAD' ? null : body, { status, headers: answer });
}

/**
 * Hono's error handler answering Problem Details: portico's errors as they are, Hono's
 * `HTTPException` (and any error with a `status`) by its status and message, anything else as
 * a 500 that reveals nothing (logged to `logger`). Behind {@link toHono}, the answer keeps the
 * header lines portico's middleware set.
 *
 * @example
 * ```ts
 * app.onError(honoErrorHandler({ logger }));
 * ```
 */
export function honoErrorHandler(
  options: ErrorHandlerOptions = {},
): (error: unknown, c: HonoContextLike) => Response {
  return (error, c) => problemResponse(c, error, options);
}

/**
 * Hono's not-found handler answering a 404 problem, as portico's other adapters do.
 *
 * @example
 * ```ts
 * app.notFound(honoNotFound());
 * ```
 */
export function honoNotFound(): (c: HonoContextLike) => Response {
  return (c) => problemResponse(c, notFound('Nothing is served at this path.'), {});
}
