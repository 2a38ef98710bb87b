// One small API on Koa 3: API key or bearer JWT, Problem Details, CORS, SSE and a
// WebSocket channel. Compare it line by line with examples/node-http and examples/express.
// node --import tsx examples/koa/server.ts   (env: PORT; listens on 127.0.0.1)
import { createServer } from 'node:http';
import Koa from 'koa';
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
  mount,
  readJson,
  requirePrincipal,
  securityHeaders,
  streamChannel,
  unprocessable,
} from 'portico';
import { importApiKey } from 'portico/auth';
import { notFoundHandler } from 'portico/http';
import { toKoa } from 'portico/koa';
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

  const app = new Koa();
  // first: every later error is answered as a problem (with these headers kept)
  app.use(
    toKoa([
      securityHeaders(),
      cors({ origins: [ORIGIN] }),
      mount('/api', authenticate(authenticators, { guard })),
    ]),
  );
  /** Serves `METHOD /path` (a router such as @koa/router does more). */
  const on = (route: string, handler: Koa.Middleware) =>
    app.use((ctx, next) => (`${ctx.method} ${ctx.path}` === route ? handler(ctx, next) : next()));
  on('GET /api/hello', (ctx) => {
    ctx.body = { hello: requirePrincipal(ctx.req).sub };
  });
  on('GET /api/events', (ctx) => {
    requirePrincipal(ctx.req); // a stream of a principal's data asks for one itself
    streamChannel(ctx.req, ctx.res, { hub, channel: 'messages' });
    ctx.respond = false; // the stream answers, not Koa
  });
  on('POST /api/messages', async (ctx) => {
    const text = (await readJson<{ text?: unknown } | null>(ctx.req))?.text;
    if (typeof text !== 'string' || text === '') {
      throw unprocessable([{ field: '/text', message: 'must be a non-empty string' }]);
    }
    const message = { from: requirePrincipal(ctx.req).sub, text };
    await hub.publish('messages', 'message', message);
    ctx.status = 201;
    ctx.body = message;
  });
  app.use(toKoa(notFoundHandler())); // last: anything else is a 404 problem

  const server = createServer(app.callback());
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

await runIfMain(import.meta.url, 'Koa', 3012, () => createApp());
