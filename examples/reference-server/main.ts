/**
 * The portico reference server: `npm start`. Its contract is ../shared/reference-server.md.
 */
import { createServer as createHttpServer, type RequestListener, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import {
  compose,
  createUpgradeHandler,
  HttpError,
  serviceUnavailable,
  toNodeListener,
  type UpgradeHandler,
} from 'portico';
import { silentLogger } from 'portico/diagnostics';
import {
  createCheckContinueHandler,
  createClientErrorHandler,
  tlsServerOptions,
} from 'portico/http';
import { createApp, edgeMiddleware, type ReferenceApp } from './app.js';
import { ConfigError, loadConfig, type ServerConfig } from './config.js';
import { createLogger } from './logging.js';

const SHUTDOWN_GRACE_MS = 8000;
/** node's own Host check answers a bare 400; the app's (`oneHost` in app.ts) a problem. */
const OWN_HOST_CHECK = { requireHostHeader: false };

function listeningUrl(server: Server, tls: boolean): string {
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  return `${tls ? 'https' : 'http'}://${host}:${port}`;
}

function start(config: ServerConfig): void {
  // JSON lines on stdout (pino): the access log and what went wrong, never a credential
  const logger = createLogger(config.logLevel);
  // Until the app is built (it needs the real address when BASE_URL is unset), answer 503,
  // with the request id and security headers of every answer
  const edge = edgeMiddleware(config);
  const starting = [
    ...edge,
    () => {
      throw serviceUnavailable(1, 'The service is starting.');
    },
  ];
  const quiet = { logger: silentLogger }; // expected while starting: nothing worth a log line
  let listener: RequestListener = toNodeListener(compose(starting), quiet);
  let stopping = false;
  const dispatch: RequestListener = (req, res) => {
    // draining: a keep-alive connection still gets its answer, and is then closed
    if (stopping) res.setHeader('Connection', 'close');
    listener(req, res);
  };
  const server = config.tls
    ? createHttpsServer(
        {
          ...tlsServerOptions({ cert: config.tls.cert, key: config.tls.key, ca: config.tls.ca }),
          ...OWN_HOST_CHECK,
        },
        dispatch,
      )
    : createHttpServer(OWN_HOST_CHECK, dispatch);
  // Slow clients must not hold connections: bounded header and request times.
  server.headersTimeout = 20_000;
  server.requestTimeout = 30_000;
  server.keepAliveTimeout = 5_000;

  // what node's parser refuses (400, 408, 414, 431) gets a problem with the same headers
  server.on('clientError', createClientErrorHandler({ middleware: edge }));
  // Expect: 100-continue: no 100 for a body over any route's limit (1 MiB), the 413 instead
  server.on('checkContinue', createCheckContinueHandler(dispatch));
  // WebSocket upgrades: refused with 503 until the app is built
  let upgrade: UpgradeHandler = createUpgradeHandler({
    path: '/ws',
    middleware: starting,
    onConnection: () => {},
    ...quiet,
  });
  server.on('upgrade', (req, socket, head) => upgrade(req, socket, head));
  // CONNECT asks for a tunnel, which only a proxy gives: 501 (node would just drop it)
  server.on(
    'connect',
    createUpgradeHandler({
      path: '/',
      middleware: [
        ...edge,
        () => {
          throw new HttpError(501, 'This server is not a proxy: CONNECT is not supported.');
        },
      ],
      onConnection: () => {},
      ...quiet, // the answer is the whole story: nothing to log
    }),
  );
  let app: ReferenceApp | undefined;

  // a port already taken (another server, an earlier run still going): say so plainly
  server.once('error', (err: NodeJS.ErrnoException) => {
    const where = `${config.host}:${config.port}`;
    const why =
      err.code === 'EADDRINUSE'
        ? `${where} is already in use: stop what listens there, or choose another PORT (PORT=0 picks a free one)`
        : err.code === 'EACCES'
          ? `${where} may not be opened by this user: choose a PORT above 1023`
          : `cannot listen on ${where} (${err.message})`;
    console.error(`portico reference server: ${why}`);
    process.exit(1);
  });
  server.listen(config.port, config.host, async () => {
    const url = listeningUrl(server, config.tls !== undefined);
    try {
      app = await createApp(config, config.baseUrl ?? url, logger);
      listener = app.listener;
      upgrade = app.upgrade;
      if (app.generatedDemoKey !== undefined) {
        console.log(`demo API key (owner alice, shown once): ${app.generatedDemoKey}`);
      }
      console.log(`portico reference server listening on ${url}`);
    } catch (err) {
      console.error('portico reference server: could not start', err);
      process.exit(1);
    }
  });

  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal} received: closing`);
    const force = setTimeout(() => {
      server.closeAllConnections();
      process.exit(0);
    }, SHUTDOWN_GRACE_MS);
    force.unref();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    // WebSocket clients get 1001, event streams end, the requests in flight finish and what
    // they started (fan-out, webhook queueing) is done: then the server's close can finish
    const appClosed = (app?.close() ?? Promise.resolve()).then(
      () => server.closeIdleConnections(),
      (error: unknown) => console.error('portico reference server: closing failed', error),
    );
    // exit once both are done: the last answer going out is not the end of its work
    Promise.all([closed, appClosed]).then(() => {
      clearTimeout(force);
      process.exit(0);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

try {
  start(loadConfig());
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(`portico reference server: ${err.message}`);
    process.exit(1);
  }
  throw err;
}
