import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Middleware, Next } from '../../core/compose.js';
import { createContextKey, getContextValue, setContextValue } from '../../core/context.js';
import { notFound } from '../../core/errors/errors.js';
import { assertKnownOptions, booleanOption, invalidOption } from '../../internal/options.js';
import { answerOtherMethod, type MethodTable } from './methods.js';
import { getPathname } from './request-path.js';
import { type PathMatch, type RouteMatch, RouteTable } from './route-table.js';

export { type MethodTable, methods } from './methods.js';
export { canonicalPath, getPathname } from './request-path.js';
export type { RouteMatch } from './route-table.js';

const paramsKey = createContextKey<Readonly<Record<string, string>>>('params');
const EMPTY: Readonly<Record<string, string>> = Object.freeze({});

/**
 * The path parameters the router matched (`/api/messages/:id` → `{ id }`), percent-decoded.
 *
 * @example
 * ```ts
 * const { id } = getParams(req);
 * ```
 */
export function getParams(req: IncomingMessage): Readonly<Record<string, string>> {
  return getContextValue(req, paramsKey) ?? EMPTY;
}

const routeKey = createContextKey<RouteMatch>('route');

/**
 * The route matched for this request by the router that last ran its match step, if any: for
 * middleware between `router.match` and `router.dispatch` (authorization by route, logging,
 * metrics by pattern rather than by path).
 *
 * @example
 * ```ts
 * const timing: Middleware = async (req, _res, next) => {
 *   const started = performance.now();
 *   await next();
 *   metrics.observe(getRoute(req)?.route ?? 'unmatched', performance.now() - started);
 * };
 * ```
 */
export function getRoute(req: IncomingMessage): RouteMatch | undefined {
  return getContextValue(req, routeKey);
}

/**
 * A router: itself a middleware (match, then dispatch), and its two steps apart, for a chain
 * that must know the route before it serves it.
 */
export interface Router {
  /** Matches and dispatches in one step: `createRouter(routes)` used as one middleware. */
  (req: IncomingMessage, res: ServerResponse, next: Next): void | Promise<void>;
  /**
   * Matches the path once and stores the match on the request ({@link getRoute},
   * {@link getParams}). A known path asked with a method its table does not serve is
   * answered here: `405` with `Allow`, and `OPTIONS` `204` with `Allow`. Any other request
   * goes on to `next()`, an unknown path included: a later middleware may serve it.
   */
  readonly match: Middleware;
  /**
   * Runs the handler of the route `match` stored (no second match), or goes on to `next()`
   * when the path matched nothing. Without an earlier `match` (or when `req.url` changed
   * since), it matches first.
   */
  readonly dispatch: Middleware;
}

/** What a router's match step found for a request, under that router's own slot. */
interface Matched {
  readonly path: string;
  readonly found: PathMatch | undefined;
}

/**
 * A small path router: exact paths and `:name` segments, each served by a middleware or a
 * {@link MethodTable}.
 *
 * - **Matching.** The path (without the query; an absolute-form target gives its path) is
 *   compared in the normal form of {@link getPathname}: percent-encoded unreserved characters
 *   decoded (`/%61pi/messages` is `/api/messages`), and a path readers could take differently
 *   (an encoded `/` or `\`, a dot or empty segment, an invalid escape) a `400` problem; then
 *   case-sensitive, no trailing-slash folding. An exact path wins over a `:name` pattern;
 *   patterns are tried in the order given.
 * - **Parameters.** A `:name` stands for one whole, non-empty segment, percent-decoded
 *   (`%2F`, which would make it two segments to another reader, is a 400 problem, as is a bad
 *   encoding); names are distinct
 *   within a pattern. Read them with {@link getParams}.
 * - **Methods.** A known path with a method its table does not serve is a 405 with `Allow`;
 *   `OPTIONS` is a 204 with `Allow` unless the table has its own; `HEAD` is served by `GET`.
 * - **Unknown paths** go on to `next()`: a later middleware may serve them, and at the end of
 *   a chain the adapter (or {@link notFoundHandler}) answers 404.
 * - **Two steps.** `router.match` runs the match and answers 405/`OPTIONS` early, before
 *   authentication; `router.dispatch`, later in the chain, reuses that match.
 * - **Under {@link mount}**, the prefix is kept: routes are written with their full path.
 * - **Limits.** The router adds none of its own: node's `maxHeaderSize` (16 KiB by default)
 *   bounds the request line, hence the path. A path is split once, only when no exact path
 *   matched and the table has patterns, and a pattern is compared only with paths of its own
 *   segment count: the work per request is bounded by the table, not by the caller.
 *
 * @example
 * ```ts
 * const router = createRouter({
 *   '/api/messages': { GET: list, POST: create },
 *   '/api/messages/:id': { GET: read, PUT: replace, PATCH: update, DELETE: remove },
 * });
 * // as one middleware
 * compose([requestId(), router]);
 * // or in two steps: 405 and OPTIONS answered before any credential is checked
 * compose([router.match, authenticate(authenticators, { guard }), rateLimit(), router.dispatch]);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.5.6 | RFC 9110 §15.5.6}
 */
export function createRouter(routes: Readonly<Record<string, Middleware | MethodTable>>): Router {
  const table = new RouteTable(routes);
  const own = createContextKey<Matched>('router');

  const lookUp = (req: IncomingMessage): PathMatch | undefined => {
    const path = getPathname(req);
    const stored = getContextValue(req, own);
    if (stored !== undefined && stored.path === path) return stored.found;
    const found = table.match(path);
    setContextValue(req, own, { path, found });
    if (found !== undefined) remember(req, found);
    return found;
  };

  const match: Middleware = function routerMatch(req, res, next) {
    const found = lookUp(req);
    const methods = found?.route.methods;
    if (methods !== undefined && answerOtherMethod(methods, req, res)) return;
    return next();
  };

  const dispatch = function routerDispatch(req: IncomingMessage, res: ServerResponse, next: Next) {
    const found = lookUp(req);
    if (found === undefined) return next();
    remember(req, found); // another router's match may have run in between
    const { handler, methods } = found.route;
    if (handler !== undefined) return handler(req, res, next);
    const byMethod = methods!.handlers.get(req.method ?? '');
    if (byMethod !== undefined) return byMethod(req, res, next);
    answerOtherMethod(methods!, req, res);
  };
  return Object.assign(dispatch, { match, dispatch: dispatch as Middleware }) as Router;
}

/** Stores a match where {@link getRoute} and {@link getParams} read it. */
function remember(req: IncomingMessage, found: PathMatch): void {
  setContextValue(req, routeKey, found.match);
  setContextValue(req, paramsKey, found.params);
}

/** Options of {@link mount}. */
export interface MountOptions {
  /**
   * Compare the prefix with the path's case as it is. By default `/api` also covers `/API` and
   * `/Api/…` (ASCII letters): Express routes case-insensitively unless told otherwise, and a
   * guard mounted on `/api` must cover every path the host router serves under it. Turn it
   * on only where the host router is case-sensitive too (node:http with portico's router,
   * Fastify, Koa routers), and the prefix is meant to cover one spelling alone.
   * @defaultValue false
   */
  caseSensitive?: boolean;
}

const MOUNT_OPTIONS = ['caseSensitive'] as const satisfies readonly (keyof MountOptions)[];

/**
 * Runs `middleware` only for paths under `prefix`; other requests go straight on. A path is
 * under `/api` when, in the normal form of {@link getPathname} (`/%61pi` is `/api`; a path
 * readers could take differently, such as `/x/../api` or `/api%2Fx`, is a `400` problem), it
 * is `/api`, or goes on with `/` (`/api/…`) or `;` (`/api;jsessionid=…`, which some routers
 * cut off), compared case-insensitively unless `caseSensitive` (`/API/…` too). Not
 * `/apiary`. The prefix is kept: `req.url` is left as it is, so what runs under the mount (a
 * router included) sees, and matches, the full path.
 *
 * Inside a framework, prefer the framework's own mount for a guard (`app.use('/api',
 * toExpress(authenticate(…)))`, a Fastify plugin under a `prefix`): the framework then decides
 * what is under `/api` exactly as it routes.
 *
 * @example
 * ```ts
 * mount('/api', rateLimit({ limit: 100 }))
 * mount('/Admin', adminOnly, { caseSensitive: true }) // node:http and portico's router
 * ```
 */
export function mount(
  prefix: string,
  middleware: Middleware,
  options: MountOptions = {},
): Middleware {
  if (typeof prefix !== 'string' || !prefix.startsWith('/')) {
    throw invalidOption('mount(): the prefix must start with /');
  }
  if (typeof middleware !== 'function') throw invalidOption('mount(): give a middleware');
  assertKnownOptions('mount()', options, MOUNT_OPTIONS);
  const caseSensitive = booleanOption('mount()', 'caseSensitive', options.caseSensitive, false);
  if (prefix === '/') return middleware;
  const base = prefix.endsWith('/') ? prefix.slice(0, -1) : prefix;
  const lower = base.toLowerCase();
  return function mounted(req, res, next) {
    const path = getPathname(req);
    const boundary =
      path.length === base.length || path[base.length] === '/' || path[base.length] === ';';
    const under =
      boundary &&
      (path.startsWith(base) ||
        (!caseSensitive && path.slice(0, base.length).toLowerCase() === lower));
    return under ? middleware(req, res, next) : next();
  };
}

/**
 * Ends a chain: every request that reaches it is a 404 problem. Put it last in Koa or any
 * host whose own "not found" answer is not a problem.
 *
 * @example
 * ```ts
 * app.use(toKoa([routes, notFoundHandler()]));
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.5.5 | RFC 9110 §15.5.5}
 */
export function notFoundHandler(detail = 'Nothing is served at this path.'): Middleware {
  return function notFoundMiddleware() {
    throw notFound(detail);
  };
}
