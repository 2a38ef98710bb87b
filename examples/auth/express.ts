// Every authentication mechanism of portico mounted in one Express app (set up in mechanisms.ts): see docs/authentication.md.
// node --import tsx examples/auth/express.ts   (env: PORT, API_KEY, TLS_CERT + TLS_KEY + TLS_CA)
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { pathToFileURL } from 'node:url';
import express from 'express';
import { rateLimit, requirePrincipal, requireRole, requireScopes } from 'portico';
import { invalidCredentials } from 'portico/auth';
import { expressErrorHandler, expressNotFound, toExpress } from 'portico/express';
import { tlsServerOptions } from 'portico/http';
import { createMechanisms, LOGIN, runExample, type Settings } from './mechanisms.js';

export { AUDIENCE, CLIENT_ID, ISSUER, type Settings } from './mechanisms.js';

export async function createApp(settings: Settings): Promise<Server> {
  const { auth, sessions, checkPassword, verifyIdToken } = await createMechanisms(settings);

  const app = express();
  app.post('/login', express.json(), async (req, res) => {
    const user = await checkPassword(req, String(req.body?.username), String(req.body?.password));
    if (user === undefined) throw invalidCredentials(LOGIN, 'The user name or password is wrong.');
    await sessions.signIn(req, res, user);
    res.status(204).end();
  });
  app.post('/logout', async (req, res) => {
    await sessions.signOut(req, res);
    res.status(204).end();
  });
  app.post('/login/oidc', express.json(), async (req, res) => {
    const { sub, name } = await verifyIdToken(req.body?.idToken);
    await sessions.signIn(req, res, { sub, name, scopes: ['read:messages'] });
    res.status(204).end();
  });

  app.use('/api', toExpress([auth, rateLimit({ limit: 100, windowMs: 60_000 })]));
  app.get('/api/me', (req, res) => {
    const { sub, name, role, scopes, method } = requirePrincipal(req);
    res.json({ sub, name, role, scopes, method });
  });
  app.get('/api/messages', toExpress(requireScopes(['read:messages'])), (_req, res) => {
    res.json([{ id: 1, text: 'hello' }]);
  });
  app.get('/api/admin', toExpress(requireRole(['admin'])), (req, res) => {
    res.json({ admin: requirePrincipal(req).sub });
  });
  app.use(expressNotFound());
  app.use(expressErrorHandler()); // last: every error as application/problem+json

  const tls = settings.tls && tlsServerOptions(settings.tls);
  return tls ? createHttpsServer(tls, app) : createServer(app);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href)
  await runExample(createApp, '3001');
