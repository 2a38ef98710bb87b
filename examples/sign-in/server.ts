// Sign in with an OpenID Provider into portico's sessions, on node:http: `/login/oidc` sends
// the browser there (code + PKCE, state, nonce), its callback signs the user in, `/me` shows
// who, `POST /logout` ends the session here and at the provider.
// node --import tsx examples/sign-in/server.ts
//   (env: OIDC_ISSUER, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, SIGN_IN_SECRET, PORT; without
//    OIDC_ISSUER, a development provider starts on 127.0.0.1, where any username signs in)
import { createServer, type Server } from 'node:http';
import { pathToFileURL } from 'node:url';
import { createRouter, requestId, securityHeaders, send, toNodeListener } from 'portico';
import { createSignInDoor, HOME, type SignInSettings } from './shared.js';

export function createApp(settings: SignInSettings): Server {
  const { signIn, me, logout } = createSignInDoor(settings);
  const app = toNodeListener([
    requestId(),
    securityHeaders(),
    createRouter({
      ...signIn.routes, // GET /login/oidc and /login/oidc/callback
      '/': { GET: (_req, res) => send(res, 200, HOME, { 'Content-Type': 'text/html' }) },
      '/me': { GET: me },
      '/logout': { POST: logout },
    }),
  ]);
  return createServer(app);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { runExample } = await import('./settings.js');
  await runExample(createApp);
}
