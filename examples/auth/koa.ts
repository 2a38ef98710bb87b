// Every authentication mechanism of portico mounted in one Koa app (set up in mechanisms.ts): see docs/authentication.md.
// node --import tsx examples/auth/koa.ts   (env: PORT, API_KEY, TLS_CERT + TLS_KEY + TLS_CA)
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { pathToFileURL } from 'node:url';
import Koa from 'koa';
import {
  rateLimit,
  readJson,
  requestId,
  requirePrincipal,
  requireRole,
  requireScopes,
} from 'portico';
import { invalidCredentials } from 'portico/auth';
import { notFoundHandler, tlsServerOptions } from 'portico/http';
import { toKoa } from 'portico/koa';
import { createMechanisms, LOGIN, runExample, type Settings } from './mechanisms.js';

export { AUDIENCE, CLIENT_ID, ISSUER, type Settings } from './mechanisms.js';

export async function createApp(settings: Settings): Promise<Server> {
  const { auth, sessions, checkPassword, verifyIdToken } = await createMechanisms(settings);

  const app = new Koa();
  app.use(toKoa(requestId())); // first: every later error is answered as a problem
  /** Serves `METHOD /path` with `stack` run in turn (a router such as @koa/router does more). */
  const on = (route: string, ...stack: Koa.Middleware[]) =>
    app.use((ctx, next) => {
      if (`${ctx.method} ${ctx.path}` !== route) return next();
      const run = async (i: number): Promise<void> => stack[i]?.(ctx, () => run(i + 1));
      return run(0);
    });
  on('POST /login', async (ctx) => {
    const body = await readJson<Record<string, unknown> | null>(ctx.req);
    const user = await checkPassword(ctx.req, String(body?.username), String(body?.password));
    if (user === undefined) throw invalidCredentials(LOGIN, 'The user name or password is wrong.');
    await sessions.signIn(ctx.req, ctx.res, user);
    ctx.status = 204;
  });
  on('POST /logout', async (ctx) => {
    await sessions.signOut(ctx.req, ctx.res);
    ctx.status = 204;
  });
  on('POST /login/oidc', async (ctx) => {
    const body = await readJson<Record<string, unknown> | null>(ctx.req);
    const { sub, name } = await verifyIdToken(body?.idToken);
    await sessions.signIn(ctx.req, ctx.res, { sub, name, scopes: ['read:messages'] });
    ctx.status = 204;
  });

  const guard = toKoa([auth, rateLimit({ limit: 100, windowMs: 60_000 })]);
  app.use((ctx, next) => (ctx.path.startsWith('/api/') ? guard(ctx, next) : next()));
  on('GET /api/me', (ctx) => {
    const { sub, name, role, scopes, method } = requirePrincipal(ctx.req);
    ctx.body = { sub, name, role, scopes, method };
  });
  on('GET /api/messages', toKoa(requireScopes(['read:messages'])), (ctx) => {
    ctx.body = [{ id: 1, text: 'hello' }];
  });
  on('GET /api/admin', toKoa(requireRole(['admin'])), (ctx) => {
    ctx.body = { admin: requirePrincipal(ctx.req).sub };
  });
  app.use(toKoa(notFoundHandler())); // last: a 404 problem

  const tls = settings.tls && tlsServerOptions(settings.tls);
  return tls ? createHttpsServer(tls, app.callback()) : createServer(app.callback());
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href)
  await runExample(createApp, '3002');
