// One small API on plain node:http: API key or bearer JWT, Problem Details, CORS, SSE and a
// WebSocket channel. Compare it line by line with examples/express and examples/koa.
// node --import tsx examples/node-http/server.ts   (env: PORT; listens on 127.0.0.1)
import { createServer } from 'node:http';
import {
  apiKeyAuth,
  authenticate,
  cors,
  createChannelProtocol,
  createCredentialGuard,
  createHub,
  createRouter,
  createUpgradeHandler,
  jwtBearer,
  MemoryApiKeyStore,
  mount,
  readJson,
  requirePrincipal,
  securityHeaders,
  sendJson,
  streamChannel,
  toNodeListener,
  unprocessable,
} from 'portico';
import { importApiKey } from 'portico/auth';
import {
  AUDIENCE,
  DEMO_API_KEY,
  DEMO_JWT_SECRET,
  ISSUER,
  ORIGIN,
  runIfMain,
} from '../frameworks/shared.js';

export async function createApp({ apiKey = DEMO_API_KEY, jwtSecret = DEMO_JWT_SECRET } = {}) {
  const keys = new MemoryApiKeyStore();
  await importApiKey(keys, apiKey, { owner: 'demo' });
  const authenticators = [
    apiKeyAuth({ store: keys }),
    jwtBearer({ secret: jwtSecret, issuer: ISSUER, audience: AUDIENCE }),
  ];
  // refused credentials on /api and at the /ws handshake: one budget per client IP
  const guard = createCredentialGuard();
  const hub = createHub(); // the channel SSE and WebSocket clients share
  const channels = createChannelProtocol({ hub });

  const app = toNodeListener([
    securityHeaders(),
    cors({ origins: [ORIGIN] }),
    mount('/api', authenticate(authenticators, { guard })),
    createRouter({
      '/api/hello': {
        GET: (req, res) => sendJson(res, 200, { hello: requirePrincipal(req).sub }),
      },
      '/api/events': {
        GET: (req, res) => {
          requirePrincipal(req); // a stream of a principal's data asks for one itself
          streamChannel(req, res, { hub, channel: 'messages' });
        },
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
    }),
  ]); // anything else: a 404 problem; every error: application/problem+json

  const server = createServer(app);
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
    await channels.close();
    await hub.close();
    server.closeAllConnections(); // event streams end with their sockets
    await new Promise((resolve) => server.close(resolve));
  }
  return { server, close };
}

await runIfMain(import.meta.url, 'node:http', 3010, () => createApp());
