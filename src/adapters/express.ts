/**
 * Express (4 and 5) adapter: portico middleware as Express middleware, and the error and
 * not-found handlers that answer with Problem Details.
 *
 * @module express
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { compose, type Middleware, type Next } from '../core/compose.js';
import { notFound } from '../core/errors.js';
import { type ErrorHandlerOptions, sendError } from '../core/problem.js';

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

/**
 * Mounts portico middleware in Express. A portico `next()` continues with Express's next
 * handler; anything thrown or rejected goes to Express's error chain with `next(err)` — even
 * on Express 4, which would otherwise leave a rejected promise hanging. Under Express, the
 * promise returned by `next()` settles at once (Express does not report when the rest of
 * its chain has finished).
 *
 * @example
 * ```ts
 * const app = express();
 * app.use(toExpress([requestId(), securityHeaders(), cors({ origins })]));
 * app.get('/hello', (req, res) => res.json({ hi: true }));
 * app.use(expressNotFound());
 * app.use(expressErrorHandler());
 * ```
 */
export function toExpress(
  app: Middleware | readonly Middleware[],
  options: ErrorHandlerOptions = {},
): ExpressHandler {
  const handler = typeof app === 'function' ? app : compose(app);
  return function porticoExpress(req, res, next) {
    let continued = false;
    const fail = (err: unknown) => {
      if (!continued) next(err);
      else sendError(req, res, err, options); // the chain already moved on; report it
    };
    const onward: Next = () => {
      continued = true;
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
 *
 * @example
 * ```ts
 * app.use(expressErrorHandler({ onError: (err) => logger.error(err) }));
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
