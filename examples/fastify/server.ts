// One small API on Fastify 5: API key or bearer JWT, Problem Details, CORS, SSE and a
// WebSocket channel. Compare it line by line with examples/express and examples/koa.
// node --import tsx examples/fastify/server.ts   (env: PORT; listens on 127.0.0.1)
import Fastify from 'fastify';
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
import { fastifyErrorHandler, fastifyNotFound, fastifyPortico, toFastify } from 'portico/fastify';
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

  const app = Fastify();
  // before routing: a preflight is answered here, other headers are kept
  app.addHook('onRequest', toFastify([securityHeaders(), cors({ origins: [ORIGIN] })]));
  // the guard lives in the /api context: it runs for exactly what Fastify routes there
  // (`/%61pi/events` included), a 401 or a 429 answered before the route runs
  await app.register(
    async (api) => {
      await api.register(fastifyPortico, { use: authenticate(authenticators, { guard }) });
      api.get('/hello', async (request) => ({ hello: requirePrincipal(request.raw).sub }));
      api.get('/events', (request, reply) => {
        requirePrincipal(request.raw); // a stream of a principal's data asks for one itself
        reply.hijack(); // the stream answers, not Fastify
        streamChannel(request.raw, reply.raw, { hub, channel: 'messages' });
      });
      api.post('/messages', async (request, reply) => {
        const text = (request.body as { text?: unknown } | null)?.text;
        if (typeof text !== 'string' || text === '') {
          throw unprocessable([{ field: '/text', message: 'must be a non-empty string' }]);
        }
        const message = { from: requirePrincipal(request.raw).sub, text };
        await hub.publish('messages', 'message', message);
        return reply.code(201).send(message);
      });
    },
    { prefix: '/api' },
  );
  app.setNotFoundHandler(fastifyNotFound()); // anything else: a 404 problem
  app.setErrorHandler(fastifyErrorHandler()); // every error as application/problem+json
  await app.ready();

  const server = app.server; // listened on by the caller (runIfMain, a test)
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
    await app.close(); // closes the server too
  }
  return { server, close };
}

await runIfMain(import.meta.url, 'Fastify', 3013, () => createApp());
