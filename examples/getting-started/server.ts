// Steps 2 and 3 of docs/getting-started.md: the route of first-route.ts with CORS, security
// headers, a rate limit and Problem Details, then an event stream and a WebSocket channel.
// node --import tsx examples/getting-started/server.ts   (env: PORT; listens on 127.0.0.1)
import { createServer } from 'node:http';
import {
  apiKeyAuth,
  authenticate,
  compose,
  cors,
  createChannelProtocol,
  createCredentialGuard,
  createHub,
  createRouter,
  createUpgradeHandler,
  MemoryApiKeyStore,
  mount,
  rateLimit,
  readJson,
  requestId,
  requirePrincipal,
  securityHeaders,
  sendJson,
  streamChannel,
  toNodeListener,
  unprocessable,
} from 'portico';
import { importApiKey } from 'portico/auth';
import { DEMO_API_KEY, ORIGIN, runIfMain } from '../frameworks/shared.js';

export async function createApp({ apiKey = DEMO_API_KEY, limit = 100 } = {}) {
  const keys = new MemoryApiKeyStore();
  await importApiKey(keys, apiKey, { owner: 'demo' });
  const authenticators = [apiKeyAuth({ store: keys })];
  // Refused keys, on /api and at the /ws handshake alike, count per client IP: after 10 in 15
  // minutes that address gets 429 without its next key being checked.
  const guard = createCredentialGuard();

  // One hub: what is published on a channel reaches its SSE and WebSocket subscribers alike.
  const hub = createHub();
  const channels = createChannelProtocol({ hub });

  const app = toNodeListener([
    requestId(), // X-Request-ID on every answer, quoted by unexpected-error problems
    securityHeaders(), // CSP, nosniff, X-Frame-Options, Referrer-Policy…; HSTS over HTTPS only
    cors({ origins: [ORIGIN] }), // exact origins; preflights are answered here
    mount(
      '/api',
      compose([
        authenticate(authenticators, { guard }),
        rateLimit({ limit, windowMs: 60_000 }), // after authenticate(): counted per API key
      ]),
    ),
    createRouter({
      '/api/hello': {
        GET: (req, res) => sendJson(res, 200, { hello: requirePrincipal(req).sub }),
      },
      '/api/messages': {
        POST: async (req, res) => {
          const text = (await readJson<{ text?: unknown } | null>(req))?.text;
          if (typeof text !== 'string' || text === '') {
            throw unprocessable([{ field: '/text', message: 'must be a non-empty string' }]);
          }
          const message = { from: requirePrincipal(req).sub, text };
          await hub.publish('messages', 'message', message);
          sendJson(res, 201, message);
        },
      },
      '/api/events': {
        GET: (req, res) => {
          streamChannel(req, res, { hub, channel: 'messages' }); // Last-Event-ID resumes
        },
      },
    }),
  ]); // anything else: a 404 problem; every error: application/problem+json

  const server = createServer(app);
  // The WebSocket channel: Origin and API key are checked before the 101.
  server.on(
    'upgrade',
    createUpgradeHandler({
      path: '/ws',
      origins: [ORIGIN],
      authenticators,
      guard,
      onConnection: channels.handle,
    }),
  );

  async function close(): Promise<void> {
    await channels.close(); // WebSocket clients get 1001 (going away)
    await hub.close();
    server.closeAllConnections(); // event streams end with their sockets
    await new Promise((resolve) => server.close(resolve));
  }
  return { server, close };
}

await runIfMain(import.meta.url, 'Getting started', 3016, () => createApp());
