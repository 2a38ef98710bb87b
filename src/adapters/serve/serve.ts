import {
  createServer as createHttpServer,
  type Server as HttpServer,
  type IncomingMessage,
  type RequestListener,
} from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import { HttpError, serviceUnavailable } from '../../core/errors/errors.js';
import { silentLogger } from '../../core/logger.js';
import { createCheckContinueHandler } from '../../http/body/continue.js';
import { createClientErrorHandler } from '../../http/client-error.js';
import { tlsServerOptions } from '../../http/https.js';
import { ignoreUpgrade } from '../../http/ignore-upgrade.js';
import { asksForWebSocket } from '../../internal/headers.js';
import { toNodeListener } from '../node-listener.js';
import {
  appSource,
  type ServeAddress,
  type ServeApp,
  type ServeAppBuilder,
  type ServiceApp,
  serviceApp,
} from './app.js';
import { closeService, type Lifecycle, listenForSignals, type Phase } from './close.js';
import { listenOn, urlOf } from './listen.js';
import { type ServeOptions, type ServeSettings, serveSettings } from './options.js';
import { refuseOnSocket } from './sockets.js';
import { createTraffic, type Traffic } from './traffic.js';

/** A running service: its server, where it listens, and its graceful close. */
export interface Service {
  /** The node server (`node:http`, or `node:https` with `tls`). */
  readonly server: HttpServer | HttpsServer;
  /** Where it listens, once it does (`undefined` before). */
  readonly url: string | undefined;
  /**
   * Resolves once the server accepts connections (answering 503 until the app is built);
   * rejects with a {@link ListenError} when it cannot listen (a port in use).
   */
  readonly listening: Promise<ServeAddress>;
  /**
   * Resolves once the app is built and answers; rejects with a {@link ListenError}, or with
   * what building the app threw (the service then closes itself).
   */
  readonly ready: Promise<ServeAddress>;
  /** `'starting'`, `'serving'`, `'closing'` or `'closed'`. */
  readonly state: 'starting' | 'serving' | 'closing' | 'closed';
  /**
   * Counts `work` (a fan-out, a queued webhook) until it settles: a graceful close waits for
   * it before the app's `close()`. Returns `work`.
   */
  track<T>(work: Promise<T>): Promise<T>;
  /**
   * Closes gracefully, as a signal does: stops accepting, answers the requests in flight
   * (`Connection: close`), calls the app's `beforeDrain()`, waits for the requests and the
   * tracked work, calls its `close()`, and resolves once the server is closed, or at the end
   * of `gracePeriod`, having closed every connection left. Every call gets the same promise.
   */
  close(): Promise<void>;
}

function createNodeServer(settings: ServeSettings, dispatch: RequestListener) {
  const server =
    settings.tls === undefined
      ? createHttpServer(settings.serverOptions, dispatch)
      : createHttpsServer(
          { ...tlsServerOptions(settings.tls), ...settings.serverOptions },
          dispatch,
        );
  // slow clients must not hold connections: bounded header, request and idle times
  server.headersTimeout = settings.headersTimeout;
  server.requestTimeout = settings.requestTimeout;
  server.keepAliveTimeout = settings.keepAliveTimeout;
  return server;
}

/** The listener while the app is being built: 503 with `Retry-After`, after `edge`. */
function startingListener(settings: ServeSettings): RequestListener {
  const refuse = () => {
    throw serviceUnavailable(settings.startingRetryAfter / 1000, 'The service is starting.');
  };
  const chain = settings.edge === undefined ? [refuse] : [settings.edge, refuse];
  // expected while starting: nothing worth a log line
  return toNodeListener(chain, { logger: silentLogger });
}

type Handler = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

/** The `'upgrade'` listener: the app's handler once built, else 503 (a WebSocket) or served. */
function upgradeListener(phase: Phase, settings: ServeSettings, traffic: Traffic): Handler {
  return (req, socket, head) => {
    const handler = phase.closing ? undefined : phase.app?.upgrade;
    if (handler !== undefined) {
      traffic.hold(socket);
      handler(req, socket, head);
      return;
    }
    // another protocol (h2c), or no handler at all: the plain request it also is
    const serving = phase.app !== undefined && !phase.closing;
    if ((serving || !asksForWebSocket(req)) && ignoreUpgrade(req, socket, head)) return;
    const detail = phase.closing ? 'The service is shutting down.' : 'The service is starting.';
    const retryAfter = settings.startingRetryAfter / 1000;
    refuseOnSocket(req, socket, settings.edge, serviceUnavailable(retryAfter, detail));
  };
}

/** The `'connect'` listener: the app's handler, else 501 (node would just drop it). */
function connectListener(phase: Phase, settings: ServeSettings, traffic: Traffic): Handler {
  const notProxy = new HttpError(501, 'This server is not a proxy: CONNECT is not supported.');
  return (req, socket, head) => {
    const handler = phase.closing ? undefined : phase.app?.connect;
    if (handler === undefined) {
      refuseOnSocket(req, socket, settings.edge, notProxy);
      return;
    }
    traffic.hold(socket);
    handler(req, socket, head);
  };
}

/** Builds the app once listening; puts it in service unless the service is closing. */
async function build(
  life: Pick<Lifecycle, 'phase' | 'server' | 'traffic'>,
  source: ReturnType<typeof appSource>,
  address: ServeAddress,
  settings: ServeSettings,
): Promise<ServiceApp> {
  const context = { ...address, server: life.server, track: life.traffic.track };
  const app = serviceApp(await source(context), settings.logger);
  // a close that began meanwhile only closes it: it never serves
  if (!life.phase.closing) life.phase.app = app;
  return app;
}

/**
 * Serves `app` on `node:http` (or `node:https`) with what every service needs at start and
 * stop. While the app is being built (a builder or a promise), every request gets a 503
 * problem with `Retry-After`, and a WebSocket handshake too. Headers, whole requests and
 * idle keep-alive connections have bounded times; a request node's parser refuses (400,
 * 408, 414, 431) is answered as a problem, with the headers of `edge`; `Expect:
 * 100-continue` is answered 100 only within `bodyLimit`; `CONNECT` gets a 501. On SIGTERM
 * or SIGINT (or `close()`), the service stops accepting, answers the requests in flight
 * with `Connection: close`, closes idle connections, calls the app's `beforeDrain()`, waits
 * for the requests and the tracked work, calls its `close()`, and after `gracePeriod`
 * closes whatever is left; then, after a signal, the process exits. A port in use (or one
 * this user may not open) rejects `ready` with a {@link ListenError} saying so.
 *
 * @example
 * ```ts
 * import { createRouter, requestId, securityHeaders, sendJson } from 'portico';
 * import { serve } from 'portico/node';
 *
 * const edge = [requestId(), securityHeaders()];
 * const router = createRouter({ '/hello': { GET: (req, res) => sendJson(res, 200, { hello: 'world' }) } });
 * const service = serve([...edge, router], { port: 3000, edge });
 * const { url } = await service.ready;
 * console.log(`listening on ${url}`);
 * ```
 * @see {@link https://nodejs.org/api/http.html#serverclosecallback | Node.js: `server.close()`}
 */
export function serve(
  app: ServeApp | Promise<ServeApp> | ServeAppBuilder,
  options: ServeOptions = {},
): Service {
  const settings = serveSettings(options);
  const source = appSource(app);
  const traffic = createTraffic(settings.logger);
  const starting = startingListener(settings);
  const phase: Phase = { app: undefined, closing: false, closed: false };
  const dispatch: RequestListener = (req, res) => {
    traffic.count(res);
    // draining: a keep-alive connection still gets its answer, and is then closed
    if (phase.closing) res.setHeader('Connection', 'close');
    (phase.app?.listener ?? starting)(req, res);
  };
  const server = createNodeServer(settings, dispatch);
  server.on('clientError', createClientErrorHandler({ middleware: settings.edge }));
  server.on('checkContinue', createCheckContinueHandler(dispatch, { limit: settings.bodyLimit }));
  server.on('upgrade', upgradeListener(phase, settings, traffic));
  server.on('connect', connectListener(phase, settings, traffic));
  return start({ phase, server, traffic }, settings, source);
}

function start(
  parts: Pick<Lifecycle, 'phase' | 'server' | 'traffic'>,
  settings: ServeSettings,
  source: ReturnType<typeof appSource>,
): Service {
  let url: string | undefined;
  const listening = listenOn(parts.server, settings.port, settings.host).then((info) => {
    url = urlOf(info, settings.tls !== undefined);
    return { url, host: info.address, port: info.port };
  });
  // whoever awaits `ready` alone must not get an unhandled `listening` too
  listening.catch(() => {});
  const built = listening.then((address) => build(parts, source, address, settings));
  built.catch(() => {});
  const life: Lifecycle = { ...parts, built, unlisten: () => {} };
  const close = () => closeService(life, settings, listening);
  const ready = life.built.then(
    () => listening,
    (error: unknown) => {
      close();
      throw error;
    },
  );
  life.unlisten = listenForSignals(life, settings, close);
  return handle(life, listening, ready, close, () => url);
}

function handle(
  life: Lifecycle,
  listening: Promise<ServeAddress>,
  ready: Promise<ServeAddress>,
  close: () => Promise<void>,
  url: () => string | undefined,
): Service {
  const { phase } = life;
  return {
    server: life.server,
    get url() {
      return url();
    },
    listening,
    ready,
    get state() {
      if (phase.closed) return 'closed';
      if (phase.closing) return 'closing';
      return phase.app === undefined ? 'starting' : 'serving';
    },
    track: life.traffic.track,
    close,
  };
}
