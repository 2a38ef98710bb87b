// One small API on Express 5: API key or bearer JWT, Problem Details, CORS, SSE and a
// WebSocket channel. Compare it line by line with examples/node-http and examples/koa.
// node --import tsx examples/express/server.ts   (env: PORT; listens on 127.0.0.1)
import { createServer } from 'node:http';
import express from 'express';
import {
  apiKeyAuth,
  authenticate,
  cors,
  createChannelProtocol,
  createCredentialGuard,
  createHub,
  createUpgradeHandler,
  jwtBearer,
  MemoryApiKeyStore,
  requirePrincipal,
  securityHeaders,
  streamChannel,
  unprocessable,
} from 'portico';
import { importApiKey } from 'portico/auth';
import { expressErrorHandler, expressNotFound, toExpress } from 'portico/express';
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

  const app = express();
  app.use(toExpress([securityHeaders(), cors({ origins: [ORIGIN] })]));
  // Express's own mount decides what is under /api exactly as its routes match (any case)
  app.use('/api', toExpress(authenticate(authenticators, { guard })));
  app.get('/api/hello', (req, res) => {
    res.json({ hello: requirePrincipal(req).sub });
  });
  app.get('/api/events', (req, res) => {
    requirePrincipal(req); // a stream of a principal's data asks for one itself
    streamChannel(req, res, { hub, channel: 'messages' });
  });
  app.post('/api/messages', express.json(), async (req, res) => {
    const text = req.body?.text;
    if (typeof text !== 'string' || text === '') {
      throw unprocessable([{ field: '/text', message: 'must be a non-empty string' }]);
    }
    const message = { from: requirePrincipal(req).sub, text };
    await hub.publish('messages', 'message', message);
    res.status(201).json(message);
  });
  app.use(expressNotFound()); // anything else: a 404 problem
  app.use(expressErrorHandler()); // last: every error as application/problem+json

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

await runIfMain(import.meta.url, 'Express', 3011, () => createApp());
