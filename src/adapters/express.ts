/**
 * Express (4 and 5) adapter: portico middleware as Express middleware ({@link toExpress}), and
 * the error and not-found handlers that answer with Problem Details
 * ({@link expressErrorHandler}, {@link expressNotFound}).
 *
 * @module portico/express
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { compose, type Middleware, type Next } from '../core/compose.js';
import { methodNotAllowed, notFound } from '../core/errors/errors.js';
import { getPrincipal, type Principal } from '../core/principal.js';
import { type ErrorHandlerOptions, sendError } from '../core/problem.js';
import { traced } from '../diagnostics/request-tracing.js';

declare global {
  // Express's own place for the caller (passport's `req.user`), declared as passport does so
  // that both declarations merge: with passport's types, `Express.User` gains the principal.
  namespace Express {
    /** The authenticated caller: portico's {@link Principal}. */
    interface User extends Principal {}
    interface Request {
      /** The principal found by portico's `authenticate()`, once its middleware has run. */
      user?: User | undefined;
    }
  }
}

/** Express's `next`, structurally (no dependency on Express's types). */
export type ExpressNext = (err?: unknown) => void;
/** An Express request handler, structurally. */
export type ExpressHandler = (req: IncomingMessage, res: ServerResponse, next: ExpressNext) => void;
/** An Express error handler (four parameters), structurally. */
export type ExpressErrorHandler = (
  err: unknown,
  req: IncomingMessage,
  res: ServerResponse,
  next: ExpressNext,
) => void;

/** Copies the principal found by `authenticate()` to `req.user`, where Express apps look. */
function exposePrincipal(req: IncomingMessage): void {
  const principal = getPrincipal(req);
  if (principal !== undefined) (req as { user?: Principal }).user = principal;
}

/**
 * Mounts portico middleware in Express. A portico `next()` continues with Express's next
 * handler; anything thrown or rejected goes to Express's error chain with `next(err)` — even
 * on Express 4, which would otherwise leave a rejected promise hanging. Under Express, the
 * promise returned by `next()` settles at once (Express does not report when the rest of
 * its chain has finished).
 *
 * The principal found by `authenticate()` is also at `req.user` in the Express handlers
 * that follow (passport's habit; typed through the global `Express.Request`), as with
 * `getPrincipal(req)`.
 *
 * Express answers a wrong method on a path of its own routes with a 404. For a 405 with
 * `Allow` (and `OPTIONS` answered with `Allow`), either end an Express route with
 * {@link expressMethodNotAllowed} (`app.route('/books').get(list).post(create).all(expressMethodNotAllowed())`),
 * or declare the methods of a path in a portico route table:
 * `createRouter({ '/books': { GET: list, POST: create } })` mounted through `toExpress`
 * answers `DELETE /books` with a 405 problem and `Allow: GET, POST, HEAD, OPTIONS`.
 *
 * @example
 * ```ts
 * const app = express();
 * app.use(toExpress([requestId(), securityHeaders(), cors({ origins }), authenticate([apiKeyAuth({ store })])]));
 * app.get('/hello', (req, res) => res.json({ hi: req.user?.sub }));
 * app.use(toExpress(createRouter({ '/books': { GET: listBooks, POST: addBook } }))); // 405s
 * app.use(expressNotFound());
 * app.use(expressErrorHandler());
 * ```
 */
export function toExpress(
  app: Middleware | readonly Middleware[],
  options: ErrorHandlerOptions = {},
): ExpressHandler {
  const handler = traced(typeof app === 'function' ? app : compose(app));
  return function porticoExpress(req, res, next) {
    let continued = false;
    const fail = (err: unknown) => {
      if (!continued) next(err);
      else sendError(req, res, err, options); // the chain already moved on; report it
    };
    const onward: Next = () => {
      continued = true;
      exposePrincipal(req);
      next();
      return Promise.resolve();
    };
    try {
      const result = handler(req, res, onward);
      if (result instanceof Promise) result.then(undefined, fail);
    } catch (err) {
      fail(err);
    }
  };
}

/**
 * The last error handler of an Express app: every error (portico's, Express's, `http-errors`)
 * answered as Problem Details, keeping headers set earlier (CORS, request id, rate limits).
 * What `express.json()` (or another body-parser middleware) refuses gets the problem
 * `readJson` gives on node:http: invalid JSON is `urn:portico:problem:invalid-json` with the
 * line and column where it broke, a body over the limit a 413, a charset or content coding it
 * does not take a 415, never with body-parser's message (which may quote the body).
 *
 * @example
 * ```ts
 * app.use(expressErrorHandler({ logger: pino() })); // 5xx logged with pino
 * ```
 */
export function expressErrorHandler(options: ErrorHandlerOptions = {}): ExpressErrorHandler {
  // Express tells error handlers by their four parameters: keep `next` in the signature.
  return function porticoErrorHandler(err, req, res, _next) {
    sendError(req, res, err, options);
  };
}

/**
 * Answers every request that reached it with a 404 problem (instead of Express's HTML page).
 *
 * @example
 * ```ts
 * app.use(expressNotFound());
 * ```
 */
export function expressNotFound(): ExpressHandler {
  return function porticoNotFound(req, res) {
    sendError(req, res, notFound('Nothing is served at this path.'));
  };
}

/** Express's route, as it sets `req.route` while dispatching to it (Express 4 and 5). */
interface ExpressRouteLike {
  methods?: Record<string, boolean | undefined>;
}

/** The methods an Express route serves, uppercase: `HEAD` with `GET`, and `OPTIONS`. */
function routeMethods(route: ExpressRouteLike | undefined): string[] {
  const methods = Object.keys(route?.methods ?? {})
    .filter((method) => method !== '_all' && route?.methods?.[method])
    .map((method) => method.toUpperCase());
  if (methods.includes('GET') && !methods.includes('HEAD')) methods.push('HEAD');
  if (!methods.includes('OPTIONS')) methods.push('OPTIONS');
  return methods;
}

/**
 * Ends an Express route (`app.route(path)`) with what Express leaves out: a method the route
 * does not serve is a 405 problem with `Allow` instead of a 404, and `OPTIONS` a 204 with
 * `Allow`. `Allow` lists the route's methods (`HEAD` with `GET`). Put it last, with `.all()`:
 * a method the route serves passes on (to the route's next handler, or Express's next route).
 *
 * @example
 * ```ts
 * app.route('/books').get(listBooks).post(addBook).all(expressMethodNotAllowed());
 * // DELETE /books → 405, Allow: GET, POST, HEAD, OPTIONS
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.5.6 | RFC 9110 §15.5.6}
 */
export function expressMethodNotAllowed(): ExpressHandler {
  return function porticoMethodNotAllowed(req, res, next) {
    const allow = routeMethods((req as { route?: ExpressRouteLike }).route);
    const method = req.method ?? 'GET';
    if (allow.includes(method) && method !== 'OPTIONS') return next();
    if (method !== 'OPTIONS') return sendError(req, res, methodNotAllowed(allow));
    res.statusCode = 204;
    res.setHeader('Allow', allow.join(', '));
    res.end();
  };
}
