/**
 * Koa (3) adapter: portico middleware as Koa middleware ({@link toKoa}), answering errors as
 * Problem Details without dropping the headers already set.
 *
 * @module portico/koa
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { compose, type Middleware } from '../core/compose.js';
import { getPrincipal, type Principal } from '../core/principal.js';
import { type ErrorHandlerOptions, sendError, toHttpError } from '../core/problem.js';
import { traced } from '../diagnostics/request-tracing.js';

/** The part of Koa's application portico needs, structurally: its `error` event. */
export interface KoaAppLike {
  emit(event: 'error', error: unknown, ctx: unknown): unknown;
  listeners(event: 'error'): readonly unknown[];
  /** Koa's default listener, which logs (portico's `logger` has already done so). */
  onerror?: unknown;
}

/** The part of Koa's context portico needs, structurally (no dependency on Koa's types). */
export interface KoaContextLike {
  req: IncomingMessage;
  res: ServerResponse;
  respond?: boolean;
  /** Koa's `ctx.state`, where the principal is put (`ctx.state.user`). */
  state?: object;
  /** Koa's application, told of the errors answered here (`app.on('error')`). */
  app?: KoaAppLike;
}

/** A Koa middleware, structurally. */
export type KoaMiddleware = (ctx: KoaContextLike, next: () => Promise<unknown>) => Promise<void>;

/**
 * The state portico fills in Koa: `ctx.state.user`, the principal found by `authenticate()`.
 *
 * @example
 * ```ts
 * const app = new Koa<KoaState>();
 * app.use((ctx) => { ctx.body = { sub: ctx.state.user?.sub } });
 * ```
 */
export interface KoaState {
  /** The principal found by portico's `authenticate()`, once its middleware has run. */
  user?: Principal;
}

/** Copies the principal found by `authenticate()` to `ctx.state.user`, where Koa apps look. */
function exposePrincipal(ctx: KoaContextLike): void {
  const principal = getPrincipal(ctx.req);
  if (principal !== undefined && ctx.state) (ctx.state as KoaState).user = principal;
}

/**
 * Tells `app.on('error')` of an error answered here, as Koa does for the errors it answers
 * itself: those not exposed to the caller (`expose: false`, or a status of 500 and above).
 * Not when only Koa's default listener would hear it: it would log what the `logger` logged.
 */
function report(ctx: KoaContextLike, err: unknown): void {
  const httpError = toHttpError(err);
  const exposed = (err as { expose?: unknown } | null)?.expose ?? httpError.expose;
  if (exposed === true && httpError.status < 500) return;
  const listeners = ctx.app?.listeners('error') ?? [];
  if (!ctx.app || listeners.every((listener) => listener === ctx.app?.onerror)) return;
  ctx.app.emit('error', err instanceof Error ? err : httpError, ctx);
}

/**
 * Mounts portico middleware in Koa. A portico `next()` runs the rest of Koa's chain and
 * resolves when it is done. Errors thrown by portico *or by any Koa middleware after it*
 * are answered here as Problem Details, because Koa's own error path removes every header
 * already set (CORS, request id, rate limits) before answering. As in Koa, an error not
 * exposed to the caller (a 5xx, or `expose: false`) still reaches `app.on('error')`, after
 * the answer: `app.emit('error', err, ctx)` (unless the only listener is Koa's default
 * logger, since portico's `logger` has logged it already).
 *
 * The principal found by `authenticate()` is also at `ctx.state.user` in the Koa middleware
 * that follows, as with `getPrincipal(ctx.req)`; type it with `new Koa<KoaState>()`.
 *
 * @example
 * ```ts
 * const app = new Koa<KoaState>();
 * app.use(toKoa([requestId(), securityHeaders(), cors({ origins }), authenticate([apiKeyAuth({ store })])]));
 * app.use((ctx) => { ctx.body = { hi: ctx.state.user?.sub } });
 * app.on('error', (err) => logger.error(err)); // the 5xx answered as problems
 * ```
 */
export function toKoa(
  app: Middleware | readonly Middleware[],
  options: ErrorHandlerOptions = {},
): KoaMiddleware {
  const handler = traced(typeof app === 'function' ? app : compose(app));
  return async function porticoKoa(ctx, next) {
    try {
      await handler(ctx.req, ctx.res, async () => {
        exposePrincipal(ctx);
        await next();
      });
    } catch (err) {
      sendError(ctx.req, ctx.res, err, options);
      report(ctx, err);
    }
    if (ctx.res.writableEnded || ctx.res.headersSent) ctx.respond = false;
  };
}
