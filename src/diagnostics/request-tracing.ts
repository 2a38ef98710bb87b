import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Middleware, Next } from '../core/compose.js';
import { type RequestMessage, requestTracing } from './channels.js';

function run(
  handler: Middleware,
  req: IncomingMessage,
  res: ServerResponse,
  next: Next,
): Promise<void> {
  try {
    const result = handler(req, res, next);
    return result instanceof Promise ? result : Promise.resolve();
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * `handler`, run through the `portico:request` TracingChannel while it has subscribers (the
 * `start` and `end` around the call, `asyncStart`, `asyncEnd` and `error` when its promise
 * settles), as is otherwise. What `toNodeListener` and the adapters run.
 * @internal
 */
export function traced(handler: Middleware): Middleware {
  return function tracedRequest(req, res, next) {
    if (!requestTracing.hasSubscribers) return handler(req, res, next);
    const context: RequestMessage = { req, res };
    return requestTracing.tracePromise(run, context, undefined, handler, req, res, next);
  };
}
