/**
 * Fastify (5) adapter: portico as a Fastify plugin, or its middleware as an `onRequest`
 * hook ({@link toFastify}), and the error and not-found handlers that answer with Problem Details.
 *
 * @module portico/fastify
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { compose, type Middleware } from '../core/compose.js';
import { notFound } from '../core/errors/errors.js';
import { loggerOption } from '../core/logger.js';
import { getPrincipal } from '../core/principal.js';
import {
  type ErrorHandlerOptions,
  REPRESENTATION_HEADERS,
  renderError,
  sendError,
  withEarlierCookies,
} from '../core/problem.js';
import { traced } from '../diagnostics/request-tracing.js';
import { assertKnownOptions, booleanOption, invalidOption } from '../internal/options.js';

/** The part of Fastify's request portico needs, structurally (no dependency on Fastify's types). */
export interface FastifyRequestLike {
  raw: IncomingMessage;
}

/** The part of Fastify's reply portico needs, structurally. */
export interface FastifyReplyLike {
  raw: ServerResponse;
  /** Tells Fastify the response is answered elsewhere: it neither answers nor warns. */
  hijack(): unknown;
  /** Sets the status of Fastify's answer. */
  code(statusCode: number): unknown;
  /** Sets a header of Fastify's answer (a `Set-Cookie` joins those set with `reply.header()`). */
  header(name: string, value: string | readonly string[]): unknown;
  /** A header of Fastify's answer: set with `reply.header()`, else on the raw response. */
  getHeader(name: string): number | string | readonly string[] | undefined;
  /** Removes a header from Fastify's answer and from the raw response. */
  removeHeader(name: string): unknown;
  /** Sets the serializer of this reply's payload. */
  serializer(fn: (payload: string) => string): unknown;
  /** Answers through Fastify: `onSend` hooks, then the response, then `onResponse` hooks. */
  send(payload: string): unknown;
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

/** The problem's body is JSON already: Fastify sends it as it is, its media type untouched. */
const asIs = (payload: string): string => payload;

/**
 * Answers with the problem for `error` through Fastify (`reply.send`), so the app's `onSend`
 * and `onResponse` hooks run; headers set earlier, on the raw response (by portico's chain) or
 * with `reply.header()`, are kept, the representation ones dropped, as `sendError` does. When
 * the response has already started, Fastify stands aside and the connection is ended.
 */
function answer(
  request: FastifyRequestLike,
  reply: FastifyReplyLike,
  error: unknown,
  options?: ErrorHandlerOptions,
): void {
  if (reply.raw.headersSent) {
    reply.hijack();
    sendError(request.raw, reply.raw, error, options); // reported, and the connection ended
    return;
  }
  const { status, headers, body } = renderError(request.raw, error, options);
  for (const name of REPRESENTATION_HEADERS) reply.removeHeader(name);
  const cookies = withEarlierCookies(reply.getHeader('set-cookie'), headers);
  // reply.header() would add the joined cookies to those already there: they replace them
  if (cookies !== undefined) reply.removeHeader('set-cookie');
  reply.code(status);
  for (const [name, value] of Object.entries({ ...headers, ...cookies })) {
    if (value !== undefined) reply.header(name, typeof value === 'number' ? String(value) : value);
  }
  reply.serializer(asIs); // without it, Fastify would add `; charset=utf-8` to the media type
  reply.send(body);
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
 * already started: then the connection is ended (and a 5xx logged to the `logger`).
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
  const handler = traced(typeof app === 'function' ? app : compose(app));
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
      if (!reply.raw.headersSent) throw err; // to Fastify's error handler, which answers
      reply.hijack();
      sendError(request.raw, reply.raw, err, options); // reported, and the connection ended
      return;
    }
    if (!continued) reply.hijack(); // the chain answered (or holds the response) itself
  };
}

/**
 * The error handler of a Fastify app: every error (portico's, Fastify's own with their
 * `statusCode`, 400 for a failed validation) answered as Problem Details, keeping headers set
 * earlier (CORS, request id, rate limits, and those set with `reply.header()`). What Fastify's
 * body parser refuses gets the problem `readJson` gives on node:http: invalid or empty JSON
 * is `urn:portico:problem:invalid-json`, a body too large a 413, a content type without a
 * parser a 415, never with Fastify's message. The problem is sent
 * through Fastify (`reply.send()` with the JSON of {@link renderError}), so the app's `onSend`
 * hooks see it (a string) and its headers, and may change them, and `onResponse` hooks run.
 *
 * @example
 * ```ts
 * app.setErrorHandler(fastifyErrorHandler({ logger: app.log })); // 5xx logged by Fastify's pino
 * ```
 */
export function fastifyErrorHandler(options: ErrorHandlerOptions = {}): FastifyErrorHandler {
  return function porticoErrorHandler(error, request, reply) {
    answer(request, reply, error, options);
  };
}

/**
 * Answers every request that reached it with a 404 problem (instead of Fastify's JSON),
 * through Fastify's `reply.send()`, as {@link fastifyErrorHandler} does.
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
  'logger',
] as const satisfies readonly (keyof FastifyPorticoOptions)[];

/** Validates the plugin's options once. */
function pluginOptions(options: FastifyPorticoOptions) {
  const owner = 'fastifyPortico()';
  assertKnownOptions(owner, options, PLUGIN_OPTIONS);
  const use = options?.use;
  if (typeof use !== 'function' && !Array.isArray(use)) {
    throw invalidOption(`${owner}: \`use\` must be a middleware or an array of middleware`);
  }
  return {
    use,
    notFound: booleanOption(owner, 'notFound', options.notFound, true),
    logger: loggerOption(owner, options.logger),
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
