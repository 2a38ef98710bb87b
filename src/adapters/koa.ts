/**
 * Koa (3) adapter: portico middleware as Koa middleware, answering errors as Problem Details
 * without dropping the headers already set.
 *
 * @module koa
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { compose, type Middleware } from '../core/compose.js';
import { type ErrorHandlerOptions, sendError } from '../core/problem.js';

/** The part of Koa's context portico needs, structurally (no dependency on Koa's types). */
export interface KoaContextLike {
  req: IncomingMessage;
  res: ServerResponse;
  respond?: boolean;
}

/** A Koa middleware, structurally. */
export type KoaMiddleware = (ctx: KoaContextLike, next: () => Promise<unknown>) => Promise<void>;

/**
 * Mounts portico middleware in Koa. A portico `next()` runs the rest of Koa's chain and
 * resolves when it is done. Errors thrown by portico *or by any Koa middleware after it*
 * are answered here as Problem Details, because Koa's own error path removes every header
 * already set (CORS, request id, rate limits) before answering.
 *
 * @example
 * ```ts
 * const app = new Koa();
 * app.use(toKoa([requestId(), securityHeaders(), cors({ origins })]));
 * app.use((ctx) => { ctx.body = { hi: true } });
 * ```
 */
export function toKoa(
  app: Middleware | readonly Middleware[],
  options: ErrorHandlerOptions = {},
): KoaMiddleware {
  const handler = typeof app === 'function' ? app : compose(app);
  return async function porticoKoa(ctx, next) {
    try {
      await handler(ctx.req, ctx.res, async () => {
        await next();
      });
    } catch (err) {
      sendError(ctx.req, ctx.res, err, options);
    }
    if (ctx.res.writableEnded || ctx.res.headersSent) ctx.respond = false;
  };
}
