/**
 * Fastify (5) adapter: portico as a Fastify plugin, or its middleware as an `onRequest`
 * hook, and the error and not-found handlers that answer with Problem Details.
 *
 * @module fastify
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { compose, type Middleware } from '../core/compose.js';
import { notFound } from '../core/errors.js';
import { getPrincipal } from '../core/principal.js';
import { type ErrorHandlerOptions, sendError } from '../core/problem.js';
import {
  assertKnownOptions,
  booleanOption,
  functionOption,
  invalidOption,
} from '../internal/options.js';

/** The part of Fastify's request portico needs, structurally (no dependency on Fastify's types). */
export interface FastifyRequestLike {
  raw: IncomingMessage;
}

/** The part of Fastify's reply portico needs, structurally. */
export interface FastifyReplyLike {
  raw: ServerResponse;
  /** Tells Fastify the response is answered elsewhere: it neither answers nor warns. */
  hijack(): unknown;
  /** The headers set with `reply.header()`, which Fastify writes only when it answers. */
  getHeaders?(): Record<string, number | string | readonly string[] | undefined>;
}

/** An async Fastify `onRequest` hook, structurally. */
export type FastifyHook = (request: FastifyRequestLike, reply: FastifyReplyLike) => Promise<void>;
/** A Fastify error handler (for `setErrorHandler`), structurally. */
export type FastifyErrorHandler = (
  error: unknown,
  request: FastifyRequestLike,
  reply: FastifyReplyLike,
) => void;
/** A Fastify route handler (for `setNotFoundHandler`), structurally. */
export type FastifyHandler = (request: FastifyRequestLike, reply: FastifyReplyLike) => void;

/** Answers with the problem for `error` on the raw response, Fastify standing aside. */
function answer(
  request: FastifyRequestLike,
  reply: FastifyReplyLike,
  error: unknown,
  options?: ErrorHandlerOptions,
): void {
  const res = reply.raw;
  if (!res.headersSent) {
    // headers set with reply.header() join those already on the raw response
    for (const [name, value] of Object.entries(reply.getHeaders?.() ?? {})) {
      if (value !== undefined && !res.hasHeader(name)) {
        res.setHeader(name, value as number | string | string[]);
      }
    }
  }
  reply.hijack();
  sendError(request.raw, res, error, options);
}

/**
 * Mounts portico middleware in Fastify as an `onRequest` hook, which runs before routing,
 * body parsing and validation. When the chain calls `next()`, the hook resolves and Fastify
 * routes the request, keeping every header the middleware set (CORS, request id, security
 * headers, rate limits); under Fastify the promise returned by `next()` settles at once.
 * When the chain answers itself (a CORS preflight, an event stream it holds open), the reply
 * is hijacked, so Fastify neither routes nor answers again. A thrown or rejected error (a 401
 * from `authenticate`, a 429 from `rateLimit`) rejects the hook and reaches Fastify's error
 * handler — set {@link fastifyErrorHandler} for Problem Details — unless the response has
 * already started: then the connection is ended (and a 5xx reported to `onError`).
 *
 * Middleware that reads the body (`readJson`) belongs in routes, not here: Fastify parses
 * the body after `onRequest`.
 *
 * The principal found by `authenticate()` is also at `request.user` in the routes (the habit
 * of `@fastify/jwt`), as with `getPrincipal(request.raw)`. Declare it once with
 * `app.decorateRequest('user', null)` (Fastify keeps requests of one shape), and type it in
 * your app, since portico does not depend on Fastify's types:
 * `declare module 'fastify' { interface FastifyRequest { user?: Principal | null } }`.
 *
 * @example
 * ```ts
 * const app = Fastify();
 * app.decorateRequest('user', null);
 * app.addHook('onRequest', toFastify([requestId(), securityHeaders(), cors({ origins }), authenticate([apiKeyAuth({ store })])]));
 * app.get('/hello', async (request) => ({ hi: request.user?.sub }));
 * app.setNotFoundHandler(fastifyNotFound());
 * app.setErrorHandler(fastifyErrorHandler());
 * ```
 */
export function toFastify(
  app: Middleware | readonly Middleware[],
  options: ErrorHandlerOptions = {},
): FastifyHook {
  const handler = typeof app === 'function' ? app : compose(app);
  return async function porticoFastify(request, reply) {
    let continued = false;
    try {
      await handler(request.raw, reply.raw, () => {
        continued = true;
        const principal = getPrincipal(request.raw);
        if (principal !== undefined) (request as { user?: unknown }).user = principal;
        return Promise.resolve();
      });
    } catch (err) {
      if (!reply.raw.headersSent) throw err; // to Fastify's error handler
      answer(request, reply, err, options); // reported, and the connection ended
      return;
    }
    if (!continued) reply.hijack(); // the chain answered (or holds the response) itself
  };
}

/**
 * The error handler of a Fastify app: every error (portico's, Fastify's own with their
 * `statusCode` — 400 for invalid JSON or a failed validation, 413 for a body too large, 415
 * for an unsupported content type) answered as Problem Details, keeping headers set earlier
 * (CORS, request id, rate limits, and those set with `reply.header()`).
 *
 * @example
 * ```ts
 * app.setErrorHandler(fastifyErrorHandler({ onError: (err) => logger.error(err) }));
 * ```
 */
export function fastifyErrorHandler(options: ErrorHandlerOptions = {}): FastifyErrorHandler {
  return function porticoErrorHandler(error, request, reply) {
    answer(request, reply, error, options);
  };
}

/**
 * Answers every request that reached it with a 404 problem (instead of Fastify's JSON).
 *
 * @example
 * ```ts
 * app.setNotFoundHandler(fastifyNotFound());
 * ```
 */
export function fastifyNotFound(): FastifyHandler {
  return function porticoNotFound(request, reply) {
    answer(request, reply, notFound('Nothing is served at this path.'));
  };
}

/** The part of a Fastify instance the plugin uses, structurally. */
export interface FastifyInstanceLike {
  addHook(name: 'onRequest', hook: FastifyHook): unknown;
  setErrorHandler(handler: FastifyErrorHandler): unknown;
  setNotFoundHandler(handler: FastifyHandler): unknown;
  decorateRequest(name: 'user', value: null): unknown;
  hasRequestDecorator(name: string): boolean;
}

/** Options of {@link fastifyPortico}. */
export interface FastifyPorticoOptions extends ErrorHandlerOptions {
  /** The portico middleware to run on every request of the context, as {@link toFastify} does. */
  use: Middleware | readonly Middleware[];
  /**
   * Set {@link fastifyNotFound} as the context's not-found handler (Fastify allows one per
   * context: turn it off when the app sets its own).
   * @defaultValue true
   */
  notFound?: boolean;
}

const PLUGIN_OPTIONS = [
  'use',
  'notFound',
  'onError',
] as const satisfies readonly (keyof FastifyPorticoOptions)[];

/** Validates the plugin's options once. */
function pluginOptions(options: FastifyPorticoOptions) {
  const owner = 'fastifyPortico()';
  assertKnownOptions(owner, options, PLUGIN_OPTIONS);
  const use = options?.use;
  if (typeof use !== 'function' && !Array.isArray(use)) {
    throw invalidOption(`${owner}: \`use\` must be a middleware or an array of middleware`);
  }
  const onError = functionOption(owner, 'onError', options.onError);
  return {
    use,
    notFound: booleanOption(owner, 'notFound', options.notFound, true),
    ...(onError ? { onError } : {}),
  };
}

/**
 * portico as a Fastify plugin: `await app.register(fastifyPortico, { use: [...] })` runs the
 * middleware on every request of the context it is registered in ({@link toFastify}), sets
 * {@link fastifyErrorHandler} and {@link fastifyNotFound}, and declares `request.user` with
 * `decorateRequest` (unless already declared, as by `@fastify/jwt`), where the principal
 * found by `authenticate()` is put. Like a plugin wrapped in `fastify-plugin`, it applies to
 * the context that registers it, its routes and children, and not to its siblings: register
 * it inside `app.register(async (api) => { … }, { prefix: '/api' })` to keep it to `/api`.
 * Type `request.user` in your app: `declare module 'fastify' { interface FastifyRequest { user?: Principal | null } }`.
 *
 * @example
 * ```ts
 * const app = Fastify();
 * await app.register(fastifyPortico, {
 *   use: [requestId(), securityHeaders(), cors({ origins }), authenticate([apiKeyAuth({ store })])],
 * });
 * app.get('/hello', async (request) => ({ hi: request.user?.sub }));
 * ```
 */
export async function fastifyPortico(
  fastify: FastifyInstanceLike,
  options: FastifyPorticoOptions,
): Promise<void> {
  const { use, notFound: setNotFound, ...errors } = pluginOptions(options);
  if (!fastify.hasRequestDecorator('user')) fastify.decorateRequest('user', null);
  fastify.addHook('onRequest', toFastify(use, errors));
  fastify.setErrorHandler(fastifyErrorHandler(errors));
  if (setNotFound) fastify.setNotFoundHandler(fastifyNotFound());
}
// what fastify-plugin sets: the plugin applies to the registering context, under its name
Object.assign(fastifyPortico, {
  [Symbol.for('skip-override')]: true,
  [Symbol.for('fastify.display-name')]: 'portico',
});
