// The "after" of docs/migration.md: an Express 5 API that used helmet, cors, express-jwt (or
// passport-http-bearer), passport-headerapikey and express-rate-limit, moved to portico.
// node --import tsx examples/migration/server.ts   (env: PORT; listens on 127.0.0.1)
import { createServer } from 'node:http';
import express from 'express';
import {
  apiKeyAuth,
  authenticate,
  cors,
  jwtBearer,
  MemoryApiKeyStore,
  rateLimit,
  requirePrincipal,
  requireScopes,
  securityHeaders,
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

export async function createApp({
  apiKey = DEMO_API_KEY,
  jwtSecret = DEMO_JWT_SECRET,
  limit = 100, // requests per minute per API key, user or client IP
} = {}) {
  const app = express();

  // helmet(): the API defaults (CSP default-src 'none', X-Frame-Options DENY, HSTS over HTTPS),
  // and Express's X-Powered-By removed
  app.use(toExpress(securityHeaders()));

  // cors({ origin: [...] }): exact origins; a disallowed preflight gets no CORS headers
  app.use(toExpress(cors({ origins: [ORIGIN] })));

  // express-jwt / passport-http-bearer: HS256 here; prefer RS256 with jwksUrl or discovery
  const bearer = jwtBearer({
    secret: jwtSecret,
    algorithms: ['HS256'],
    issuer: ISSUER,
    audience: AUDIENCE,
    maxTokenAge: 15 * 60_000,
  });

  // passport-headerapikey: the store keeps the key's SHA-256 only; this key may only read
  const keys = new MemoryApiKeyStore();
  await importApiKey(keys, apiKey, { owner: 'ci-bot', scopes: ['read:messages'] });
  const apiKeys = apiKeyAuth({ store: keys });

  // express-rate-limit: after authenticate(), so it counts per API key, else user, else IP
  app.use(
    '/api',
    toExpress([authenticate([bearer, apiKeys]), rateLimit({ limit, windowMs: 60_000 })]),
  );

  app.get('/api/me', (req, res) => {
    const { sub, scopes, method } = requirePrincipal(req);
    res.json({ sub, scopes, method });
  });
  app.get('/api/messages', toExpress(requireScopes(['read:messages'])), (_req, res) => {
    res.json([{ id: 1, text: 'hello' }]);
  });
  app.post(
    '/api/messages',
    toExpress(requireScopes(['write:messages'])),
    express.json(),
    (req, res) => {
      res.status(201).json({ from: requirePrincipal(req).sub, text: String(req.body?.text) });
    },
  );

  app.use(expressNotFound()); // a 404 problem instead of Express's HTML page
  app.use(expressErrorHandler()); // last: every error as application/problem+json

  const server = createServer(app);
  async function close(): Promise<void> {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  return { server, close };
}

await runIfMain(import.meta.url, 'Migration', 3014, () => createApp());
