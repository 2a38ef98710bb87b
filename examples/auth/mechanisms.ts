// The authentication mechanisms of examples/auth/express.ts and koa.ts: set up once, with no
// framework in sight; each app only mounts them. See docs/authentication.md.
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, Server } from 'node:http';
import { exportJWK, SignJWT } from 'jose';
import {
  apiKeyAuth,
  authenticate,
  basicAuth,
  createCredentialGuard,
  createIdTokenVerifier,
  createSessions,
  hashPassword,
  jwtBearer,
  MemoryApiKeyStore,
  mtlsAuth,
  verifyPassword,
} from 'portico';
import { challenge, generateApiKey, importApiKey, isJwtError } from 'portico/auth';

/** The identity provider whose tokens the API accepts, and this app's client id there. */
export const ISSUER = 'https://id.example.com';
export const AUDIENCE = 'https://api.example.com';
export const CLIENT_ID = 'example-app';

/** The API key, the provider's public key, and PEMs to serve HTTPS with mutual TLS. */
export interface Settings {
  apiKey: string;
  providerKey: KeyObject;
  tls?: { cert: Buffer; key: Buffer; ca: Buffer };
  /** Refused credentials allowed per client IP in 15 minutes (default 10). */
  maxRefusals?: number;
}

/** Demo users (password: `<sub>-password`); a real service keeps them in its database. */
export const USERS = [
  { sub: 'alice', name: 'Alice', role: 'admin', scopes: ['read:messages', 'write:messages'] },
  { sub: 'bob', name: 'Bob', role: 'user', scopes: ['read:messages'] },
];
/** The challenge of a failed sign-in: not `Basic`, so browsers show no password dialog. */
export const LOGIN = challenge('Cookie', { realm: 'api', 'form-action': '/login' });

/** Every mechanism, ready to mount: `auth` guards `/api`, the rest serve sign-in and sign-out. */
export async function createMechanisms(settings: Settings) {
  const hashes = new Map<string, string>();
  for (const user of USERS) hashes.set(user.sub, await hashPassword(`${user.sub}-password`));
  // Refused credentials, wherever they are checked (here, /api and /login), count per client
  // IP: after 10 in 15 minutes, 429 without even checking the next one.
  const guard = createCredentialGuard({ limit: settings.maxRefusals ?? 10, windowMs: 15 * 60_000 });
  // An unknown name is checked against a dummy hash: it takes as long (no timing oracle).
  const verifyUser = async (username: string, password: string) =>
    (await verifyPassword(password, hashes.get(username)))
      ? USERS.find((user) => user.sub === username)
      : undefined;
  const checkPassword = (req: IncomingMessage, username: string, password: string) =>
    guard.attempt(req, () => verifyUser(username, password));

  // API key: the store keeps its SHA-256 hash only; the key may only read.
  const apiKeys = new MemoryApiKeyStore();
  await importApiKey(apiKeys, settings.apiKey, { owner: 'ci-bot', scopes: ['read:messages'] });
  const apiKey = apiKeyAuth({ store: apiKeys });

  // Basic: the password comes with every request (HTTPS only), checked against its scrypt hash.
  const basic = basicAuth({
    async verify(username, password) {
      const user = await verifyUser(username, password);
      return user && { ...user, method: 'basic' };
    },
  });

  // JWT bearer: RS256 access tokens of the provider, refused once 15 minutes old.
  const bearer = jwtBearer({
    publicKey: settings.providerKey,
    issuer: ISSUER,
    audience: AUDIENCE,
    typ: 'at+jwt',
    maxTokenAge: 15 * 60_000,
  });

  // Sessions: a random id in an HttpOnly, SameSite=Strict cookie (Secure over HTTPS).
  const sessions = createSessions({
    allowedOrigins: ['http://localhost:5173'],
    cookie: { secure: settings.tls !== undefined },
  });

  // OpenID Connect: an ID token issued to this app starts a session.
  const idTokens = createIdTokenVerifier({
    issuer: ISSUER,
    clientId: CLIENT_ID,
    jwks: { keys: [await exportJWK(settings.providerKey)] },
  });
  const verifyIdToken = (idToken: unknown) =>
    idTokens.verify(String(idToken)).catch((error: unknown) => {
      throw isJwtError(error) ? error.toHttpError(LOGIN) : error;
    });

  // Every /api request needs one credential, the first one present decides; with settings.tls
  // a client certificate issued by its CA counts too (mutual TLS, the principal named by CN).
  const mtls = settings.tls === undefined ? [] : [mtlsAuth()];
  const auth = authenticate([bearer, apiKey, sessions.authenticator, basic, ...mtls], { guard });

  return { auth, sessions, checkPassword, verifyIdToken };
}

/** Runs an example app from the command line: a key pair, an API key, a sample token. */
export async function runExample(
  createApp: (settings: Settings) => Promise<Server>,
  defaultPort: string,
) {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const { API_KEY: apiKey = generateApiKey(), PORT = defaultPort, ...env } = process.env;
  const [cert, key, ca] = [env.TLS_CERT, env.TLS_KEY, env.TLS_CA].map((f) => f && readFileSync(f));
  const tls = cert && key && ca ? { cert, key, ca } : undefined;
  const server = await createApp({ apiKey, providerKey: publicKey, tls });
  const token = await new SignJWT({ sub: 'alice', scope: 'read:messages' })
    .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt' })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setIssuedAt()
    .setExpirationTime('15m')
    .sign(privateKey);
  server.listen(Number(PORT), () => {
    // Demo only: a real service never prints or logs a credential.
    console.log(`listening on ${tls ? 'https' : 'http'}://localhost:${PORT}`);
    console.log(`X-API-Key: ${apiKey}\nAuthorization: Bearer ${token}`);
  });
}
