/**
 * The portico reference server: `npm start`. Its contract is ../shared/reference-server.md.
 */
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { handleClientError, tlsServerOptions } from 'portico';
import { createApp } from './app.js';
import { ConfigError, loadConfig, type ServerConfig } from './config.js';

const SHUTDOWN_GRACE_MS = 8000;

function listeningUrl(server: Server, tls: boolean): string {
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  return `${tls ? 'https' : 'http'}://${host}:${port}`;
}

function start(config: ServerConfig): void {
  const { listener } = createApp(config);
  const server = config.tls
    ? createHttpsServer(
        tlsServerOptions({ cert: config.tls.cert, key: config.tls.key, ca: config.tls.ca }),
        listener,
      )
    : createHttpServer(listener);
  // Slow clients must not hold connections: bounded header and request times.
  server.headersTimeout = 20_000;
  server.requestTimeout = 30_000;
  server.keepAliveTimeout = 5_000;

  server.on('clientError', handleClientError);

  server.listen(config.port, config.host, () => {
    const url = listeningUrl(server, config.tls !== undefined);
    console.log(`portico reference server listening on ${url}`);
  });

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal} received: closing`);
    const force = setTimeout(() => {
      server.closeAllConnections();
      process.exit(0);
    }, SHUTDOWN_GRACE_MS);
    force.unref();
    server.close(() => {
      clearTimeout(force);
      process.exit(0);
    });
    server.closeIdleConnections();
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
