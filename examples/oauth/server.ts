// An OAuth 2.0 / OpenID Connect authorization server and the API it protects, in one
// process: see docs/oauth.md.
// node --import tsx examples/oauth/server.ts   (env: PORT, ISSUER, SIGNING_KEY, FORM_KEY)
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { pathToFileURL } from 'node:url';
import {
  authenticate,
  compose,
  cors,
  createAuthorizationServer,
  createKeySet,
  createRouter,
  createSessions,
  defineClient,
  hashPassword,
  MemoryClientStore,
  type Middleware,
  requestId,
  requirePrincipal,
  requireScopes,
  securityHeaders,
  sendJson,
  toNodeListener,
  verifyPassword,
} from 'portico';

/** Where the single-page app runs: its redirect URI, and the origin CORS lets in. */
export const SPA_ORIGIN = 'http://localhost:5173';
/** Every scope a user-facing client may ask for. */
export const SCOPES = ['openid', 'profile', 'email', 'offline_access', 'read:hello'];
/** The demo service client's secret (a real one comes from a secret store). */
export const SERVICE_SECRET = 'hello-service-secret';

/** Demo users (password: `<sub>-password`); a real service keeps them in its database. */
const USERS = [
  { sub: 'alice', name: 'Alice Example', email: 'alice@example.com', role: 'admin' },
  { sub: 'bob', name: 'Bob Example', email: 'bob@example.com', role: 'user' },
];

export interface AppOptions {
  /** The issuer: this server's public URL, exactly. @defaultValue `http://localhost:3003` */
  issuer?: string;
  /** A PEM RS256 private key to sign with; without one, a new key at each start. */
  signingKey?: string;
  /** The HMAC key of the HTML forms, shared by every process; without one, a random key. */
  formKey?: string;
}

export async function createApp(
  options: AppOptions = {},
): Promise<{ server: Server; issuer: string; middleware: Middleware[] }> {
  const issuer = options.issuer ?? 'http://localhost:3003';

  // Clients: secrets are hashed at once (scrypt); redirect URIs are compared exactly.
  const clients = new MemoryClientStore([
    await defineClient({
      clientId: 'hello-service', // confidential: a machine with a secret, no user
      secret: SERVICE_SECRET,
      grantTypes: ['client_credentials'],
      redirectUris: [],
      scopes: ['read:hello'],
    }),
    await defineClient({
      clientId: 'hello-spa', // public: no secret, so PKCE (S256) is required
      name: 'Hello SPA',
      grantTypes: ['authorization_code', 'refresh_token'],
      redirectUris: [`${SPA_ORIGIN}/callback`],
      scopes: SCOPES,
      defaultScopes: ['openid', 'read:hello'],
    }),
    await defineClient({
      clientId: 'hello-tv', // public, on a device without a browser
      name: 'Hello TV',
      grantTypes: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
      redirectUris: [],
      scopes: SCOPES,
    }),
  ]);

  // Users: passwords as scrypt hashes; an unknown name is checked against a dummy hash.
  const hashes = new Map<string, string>();
  for (const user of USERS) hashes.set(user.sub, await hashPassword(`${user.sub}-password`));
  const users = {
    async verify(username: string, password: string) {
      const ok = await verifyPassword(password, hashes.get(username));
      return ok ? USERS.find((user) => user.sub === username) : undefined;
    },
    get: (sub: string) => USERS.find((user) => user.sub === sub),
  };

  // Who is signed in on the sign-in, consent and device pages: a cookie of this origin.
  const sessions = createSessions({
    allowedOrigins: [new URL(issuer).origin],
    cookie: { secure: issuer.startsWith('https:') },
  });

  // RS256 keys: a loaded key keeps tokens valid across restarts; none, a new one.
  const keys = await createKeySet(options.signingKey ? { keys: [options.signingKey] } : {});

  const auth = createAuthorizationServer({
    issuer,
    clients,
    keys,
    users,
    sessions,
    // given or left out, never `undefined`: an unset key is an error, not a silent random one
    ...(options.formKey !== undefined && { formKey: options.formKey }),
    scopesSupported: SCOPES,
  });

  // The API: this server's own access tokens, with the scope read:hello.
  const hello = compose([
    authenticate([auth.bearer]),
    requireScopes(['read:hello']),
    (req, res) => {
      const { sub, name, clientId } = requirePrincipal(req);
      sendJson(res, 200, { hello: name ?? sub, sub, clientId });
    },
  ]);

  const middleware = [
    requestId(),
    securityHeaders(),
    cors({ origins: [SPA_ORIGIN] }), // the SPA calls /token, /userinfo and /api with fetch
    createRouter({ ...auth.routes, '/api/hello': { GET: hello } }),
  ];
  // `middleware` runs on any host as it is: here node:http, or toFetchHandler(middleware)
  return { server: createServer(toNodeListener(middleware)), issuer, middleware };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { env } = process;
  const port = Number(env.PORT || 3003);
  const { server, issuer } = await createApp({
    issuer: env.ISSUER || `http://localhost:${port}`,
    signingKey: env.SIGNING_KEY && readFileSync(env.SIGNING_KEY, 'utf8'),
    formKey: env.FORM_KEY || undefined,
  });
  server.listen(port, () => console.log(`authorization server and API at ${issuer}`));
}
