// The same sign-in as examples/sign-in/server.ts, on Express: portico's routes mounted as
// middleware, the principal read by an Express handler.
// node --import tsx examples/sign-in/express.ts   (env as for server.ts)
import { createServer, type Server } from 'node:http';
import { pathToFileURL } from 'node:url';
import express from 'express';
import { createRouter, securityHeaders } from 'portico';
import { expressErrorHandler, expressNotFound, toExpress } from 'portico/express';
import { createSignInDoor, HOME, type SignInSettings } from './shared.js';

export function createApp(settings: SignInSettings): Server {
  const { signIn, me, logout } = createSignInDoor(settings);
  const app = express();
  app.use(toExpress(securityHeaders()));
  app.use(toExpress(createRouter(signIn.routes))); // GET /login/oidc and its callback
  app.get('/', (_req, res) => {
    res.type('html').send(HOME);
  });
  app.get('/me', toExpress(me));
  app.post('/logout', toExpress(logout));
  app.use(expressNotFound());
  app.use(expressErrorHandler());
  return createServer(app);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { runExample } = await import('./settings.js');
  await runExample(createApp);
}
