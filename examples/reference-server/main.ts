/**
 * The portico reference server: `npm start`. Its contract is ../shared/reference-server.md.
 */
import { ListenError, serve } from 'portico/node';
import { createApp, edgeMiddleware, type ReferenceApp } from './app.js';
import { ConfigError, loadConfig, type ServerConfig } from './config.js';
import { createLogger } from './logging.js';

/** Within the contract's 10 s from SIGTERM to the exit, with room to spare. */
const SHUTDOWN_GRACE_MS = 8000;

function start(config: ServerConfig): void {
  // JSON lines on stdout (pino): the access log and what went wrong, never a credential
  const logger = createLogger(config.logLevel);
  let app: ReferenceApp | undefined;
  const service = serve(
    // built once listening: the app needs the real address when BASE_URL is unset (503 until
    // then, WebSocket handshakes too)
    async ({ url, track }) => {
      app = await createApp(config, { baseUrl: config.baseUrl ?? url, track }, logger);
      return app;
    },
    {
      port: config.port,
      host: config.host,
      ...(config.tls && { tls: { cert: config.tls.cert, key: config.tls.key, ca: config.tls.ca } }),
      // node's own Host check answers a bare 400; the app's (`oneHost` in app.ts) a problem
      serverOptions: { requireHostHeader: false },
      // what every answer carries, whatever answers it (the 503 while starting, a request
      // node's parser refused, CONNECT): a request id and the security headers
      edge: edgeMiddleware(config),
      logger,
      gracePeriod: SHUTDOWN_GRACE_MS,
      onSignal: (signal) => console.log(`${signal} received: closing`),
    },
  );
  service.ready.then(
    ({ url }) => {
      if (app?.generatedDemoKey !== undefined) {
        console.log(`demo API key (owner alice, shown once): ${app.generatedDemoKey}`);
      }
      console.log(`portico reference server listening on ${url}`);
    },
    (err: unknown) => {
      // a port already taken (another server, an earlier run still going): said plainly
      if (err instanceof ListenError) {
        console.error(`portico reference server: ${err.message}; PORT and HOST set the address`);
      } else {
        console.error('portico reference server: could not start', err);
      }
      process.exit(1);
    },
  );
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
