// One small API on Hono 4 (@hono/node-server): API key or bearer JWT, Problem Details, CORS,
// SSE and a WebSocket channel. Compare it line by line with examples/node-http and examples/koa.
// node --import tsx examples/hono/server.ts   (env: PORT; listens on 127.0.0.1)
import type { Server } from 'node:http';
import { createAdaptorServer } from '@hono/node-server';
import { Hono } from 'hono';
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
  requirePrincipal,
  securityHeaders,
  streamChannel,
  unprocessable,
} from 'portico';
import { importApiKey } from 'portico/auth';
import { honoErrorHandler, honoNotFound, type PorticoVariables, toHono } from 'portico/hono';
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

  const app = new Hono<{ Variables: PorticoVariables }>();
  app.use(
    toHono([
      securityHeaders(),
      cors({ origins: [ORIGIN] }),
      mount('/api', authenticate(authenticators, { guard })),
      // the event stream is portico's own answer: a streaming body, ended when the client goes
      createRouter({
        '/api/events': {
          GET: (req, res) => {
            requirePrincipal(req); // a stream of a principal's data asks for one itself
            void streamChannel(req, res, { hub, channel: 'messages' });
          },
        },
      }),
    ]),
  );
  app.get('/api/hello', (c) => c.json({ hello: c.get('user')?.sub }));
  app.post('/api/messages', async (c) => {
    const body = await c.req.json<{ text?: unknown } | null>().catch(() => null);
    const text = body?.text;
    if (typeof text !== 'string' || text === '') {
      throw unprocessable([{ field: '/text', message: 'must be a non-empty string' }]);
    }
    const message = { from: c.get('user')!.sub, text };
    await hub.publish('messages', 'message', message);
    return c.json(message, 201);
  });
  app.notFound(honoNotFound()); // anything else is a 404 problem
  app.onError(honoErrorHandler()); // every error as application/problem+json

  const server = createAdaptorServer({ fetch: app.fetch }) as Server;
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

await runIfMain(import.meta.url, 'Hono', 3017, () => createApp());
