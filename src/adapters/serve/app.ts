import type { Server as HttpServer, RequestListener } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { Middleware } from '../../core/compose.js';
import type { Logger } from '../../core/logger.js';
import { invalidOption } from '../../internal/options.js';
import type { UpgradeHandler } from '../../ws/upgrade.js';
import { toNodeListener } from '../node-listener.js';
import { OWNER } from './options.js';

/**
 * An app for {@link serve} that does more than answer requests: WebSocket upgrades, and what
 * a graceful close must end or release.
 *
 * @example
 * ```ts
 * const app: ServiceApp = {
 *   listener: toNodeListener([requestId(), router]),
 *   upgrade: createUpgradeHandler({ path: '/ws', onConnection: channels.handle }),
 *   beforeDrain: () => channels.close(), // WebSocket clients get 1001
 *   close: () => db.close(), // once no request is in flight
 * };
 * ```
 */
export interface ServiceApp {
  /** Answers every request (`toNodeListener(middleware)`, an Express or Koa app's handler). */
  listener: RequestListener;
  /**
   * For the server's `'upgrade'` event once the app is built (`createUpgradeHandler`); while
   * starting or closing, a WebSocket handshake is answered 503. Without it, a request that
   * asks to upgrade is served as the plain request it also is.
   */
  upgrade?: UpgradeHandler;
  /** For the server's `'connect'` event (a proxy); without it, `CONNECT` is answered 501. */
  connect?: UpgradeHandler;
  /**
   * Called first when the service closes, once it stopped accepting connections: end what
   * never ends by itself (event streams, WebSockets with 1001), so that the requests in
   * flight can drain.
   */
  beforeDrain?(): void | Promise<void>;
  /**
   * Called once no request is in flight and the tracked work is done: release what the
   * requests used (stores, pools, brokers).
   */
  close?(): void | Promise<void>;
}

/** What {@link serve} serves: middleware (given to `toNodeListener`), or a {@link ServiceApp}. */
export type ServeApp = readonly Middleware[] | ServiceApp;

/** Where a service listens. */
export interface ServeAddress {
  /** `http://127.0.0.1:3000` (`https://` with TLS, an IPv6 host in brackets). */
  url: string;
  /** The address listened on, as `127.0.0.1` or `::`. */
  host: string;
  /** The port listened on (the one picked, for port `0`). */
  port: number;
}

/** What a {@link ServeAppBuilder} is given: the address, the server, and `track`. */
export interface ServeContext extends ServeAddress {
  /** The node server (`node:http`, or `node:https` with `tls`). */
  server: HttpServer | HttpsServer;
  /**
   * Counts `work` the requests started and that must finish before the app's `close()` (a
   * fan-out, a queued webhook): a graceful close waits for it. Returns `work`.
   */
  track<T>(work: Promise<T>): Promise<T>;
}

/**
 * Builds the app once the server listens (and answers 503 meanwhile): for an app that needs
 * its own address (an OAuth issuer, links), or that takes time to start.
 */
export type ServeAppBuilder = (context: ServeContext) => ServeApp | Promise<ServeApp>;

const notAnApp = () =>
  invalidOption(
    `${OWNER}: the app must be an array of middleware, { listener, upgrade?, beforeDrain?, close? }, a promise of one, or a function building one`,
  );

/** Throws unless `app` is an array of middleware or a {@link ServiceApp}. */
function checkApp(app: unknown): void {
  if (Array.isArray(app)) {
    if (app.some((m) => typeof m !== 'function')) throw notAnApp();
    return;
  }
  if (app === null || typeof app !== 'object') throw notAnApp();
  const candidate = app as Partial<ServiceApp>;
  if (typeof candidate.listener !== 'function') throw notAnApp();
  for (const hook of ['upgrade', 'connect', 'beforeDrain', 'close'] as const) {
    if (candidate[hook] !== undefined && typeof candidate[hook] !== 'function') {
      throw invalidOption(`${OWNER}: the app's \`${hook}\` must be a function`);
    }
  }
}

/** Every form of {@link serve}'s `app`, made a builder; what can be checked now is. */
export function appSource(
  app: ServeApp | Promise<ServeApp> | ServeAppBuilder,
): (context: ServeContext) => Promise<ServeApp> {
  if (typeof app === 'function') {
    if (app.length >= 2) {
      throw invalidOption(
        `${OWNER}: a function given as the app builds it from the address (one parameter): give a middleware as [middleware], a request listener as { listener }`,
      );
    }
    return async (context) => app(context);
  }
  if (app === null || typeof app !== 'object') throw notAnApp();
  if (!('then' in app)) checkApp(app);
  return async () => app;
}

/** `app` as a {@link ServiceApp}: middleware is given to `toNodeListener` with `logger`. */
export function serviceApp(app: unknown, logger: Logger): ServiceApp {
  checkApp(app);
  if (Array.isArray(app)) return { listener: toNodeListener(app as Middleware[], { logger }) };
  return app as ServiceApp;
}
