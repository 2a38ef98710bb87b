import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { compose, type Middleware, type Next } from '../core/compose.js';
import { badRequest, notFound } from '../core/errors/errors.js';
import { type ErrorHandlerOptions, sendError } from '../core/problem.js';
import { traced } from '../diagnostics/request-tracing.js';

/** Options of {@link toNodeListener}. */
export interface NodeListenerOptions extends ErrorHandlerOptions {}

/**
 * The asterisk form (`OPTIONS * HTTP/1.1`) asks about the server as a whole: 204, as every
 * path answers OPTIONS. Any other method with it is a 400 (RFC 9112 §3.2.4).
 */
function answerAsterisk(req: IncomingMessage, res: ServerResponse, fail: (e: unknown) => void) {
  if (req.method !== 'OPTIONS') {
    fail(badRequest('The request target * is for OPTIONS only.', { code: 'ERR_ASTERISK_FORM' }));
    return;
  }
  res.statusCode = 204;
  res.end();
}

/**
 * Turns portico middleware into a `node:http` / `node:https` request listener. A request
 * that no middleware answers gets a 404 problem (`OPTIONS *`, about the server as a whole, a
 * 204); anything thrown becomes a problem answer.
 *
 * @example
 * ```ts
 * import { createServer } from 'node:http';
 * import { toNodeListener, requestId, securityHeaders, sendJson } from 'portico';
 *
 * createServer(toNodeListener([requestId(), securityHeaders(), (req, res) => sendJson(res, 200, { ok: true })]))
 *   .listen(3000);
 * ```
 */
export function toNodeListener(
  app: Middleware | readonly Middleware[],
  options: NodeListenerOptions = {},
): RequestListener {
  const handler = traced(typeof app === 'function' ? app : compose(app));
  return function porticoListener(req: IncomingMessage, res: ServerResponse) {
    const fail = (err: unknown) => sendError(req, res, err, options);
    const last: Next = () => {
      if (!res.headersSent) {
        if (req.url === '*') answerAsterisk(req, res, fail);
        else fail(notFound('Nothing is served at this path.'));
      }
      return Promise.resolve();
    };
    try {
      const result = handler(req, res, last);
      if (result instanceof Promise) result.then(undefined, fail);
    } catch (err) {
      fail(err);
    }
  };
}
