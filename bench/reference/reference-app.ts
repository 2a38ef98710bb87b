/**
 * The reference server (examples/reference-server) as `npm start` runs it, in this process:
 * its config read by its own `loadConfig` from the environment, its app built by its own
 * `createApp`, served by a node:http server set up as main.ts sets up its own (no Host check
 * of node's, the same timeouts, the `clientError`, `checkContinue` and `upgrade` handlers),
 * but listening where the bench harness wants it (127.0.0.1, port 0, the port printed).
 *
 * The environment is the run's (`NODE_ENV=production`, as every bench server) plus what a
 * production deployment behind a TLS-terminating proxy sets: `TRUST_PROXY=1` (production
 * refuses to start without TLS otherwise; the load generator sends `X-Forwarded-Proto: https`
 * and `X-Forwarded-For`, as that proxy would), a fixed `BASE_URL`, the run's `SIGNING_KEY`
 * and `DEMO_API_KEY`, and `RATE_LIMIT=1e9` so the rate limit counts every request and never
 * triggers. Redis is not used (`REDIS_URL` empty): every store is in memory; `CORS_ORIGINS`
 * is the server's default list, as the other stacks'. `LOG_LEVEL=silent`: no access-log line
 * per request, as the other stacks write none (`info`, its default, for the row that logs).
 */
import { createServer } from 'node:http';
import { createCheckContinueHandler, createClientErrorHandler } from 'portico/http';
import { createApp, edgeMiddleware } from '../../examples/reference-server/app.js';
import { loadConfig } from '../../examples/reference-server/config.js';
import { serve } from '../lib/serve.js';
import { BASE_URL, CORS_ORIGINS, RATE_LIMIT, VARIABLES, variable } from './shared.js';

/**
 * Builds the reference app and serves it. The app imports `portico` (the package's own name,
 * which resolves to its build in dist/), as users' code does.
 */
export async function serveReference(logLevel: 'silent' | 'info' = 'silent'): Promise<void> {
  const config = loadConfig({
    ...process.env,
    TRUST_PROXY: '1',
    BASE_URL,
    CORS_ORIGINS: CORS_ORIGINS.join(','),
    REDIS_URL: '', // in memory, whatever the caller's environment says
    SIGNING_KEY: variable(VARIABLES.signingKeyFile),
    DEMO_API_KEY: variable(VARIABLES.apiKey),
    RATE_LIMIT: String(RATE_LIMIT),
    LOG_LEVEL: logLevel, // silent: no access log, as the other stacks log nothing
    PORT: '0',
    HOST: '127.0.0.1',
  });
  const app = await createApp(config, { baseUrl: BASE_URL });
  // main.ts: node's own Host check off (the app answers a problem instead)
  const server = createServer({ requireHostHeader: false }, app.listener);
  server.headersTimeout = 20_000;
  server.requestTimeout = 30_000;
  server.keepAliveTimeout = 5_000;
  server.on('clientError', createClientErrorHandler({ middleware: edgeMiddleware(config) }));
  server.on('checkContinue', createCheckContinueHandler(app.listener));
  server.on('upgrade', (req, socket, head) => app.upgrade(req, socket, head));
  serve(server);
}
