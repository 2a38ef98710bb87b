// An authorization server of createAuthorizationServer() on a real socket, its issuer the
// address it listens at, for the grant tests; served by portico's router as an app would.
import { createServer, type RequestListener } from 'node:http';
import { createRouter, createSessions, toNodeListener } from '../../../src/index.js';
import {
  type AuthorizationServer,
  type CreateAuthorizationServerOptions,
  createAuthorizationServer,
  createKeySet,
  type KeySet,
  MemoryClientStore,
  type OAuthClient,
  type UserClaims,
} from '../../../src/oauth/index.js';
import { type Listening, listen } from '../../helpers/http.js';

export const USERS: Record<string, UserClaims> = {
  alice: { sub: 'alice', name: 'Alice Example', role: 'admin', email: 'alice@example.com' },
  bob: { sub: 'bob', name: 'Bob Example', role: 'user' },
};

let keys: KeySet | undefined;

/** The shared signing keys of these tests (making RSA keys is slow). */
export async function testKeys(): Promise<KeySet> {
  keys ??= await createKeySet();
  return keys;
}

export interface RunningAuth {
  auth: AuthorizationServer;
  url: string;
  listening: Listening;
}

type Options = Partial<CreateAuthorizationServerOptions>;

/**
 * Starts a server with `clients` and the rest of `options` (or what `options` makes of the
 * server's URL); its issuer is its own URL.
 */
export async function startAuth(
  clients: readonly OAuthClient[],
  given: Options | ((url: string) => Options) = {},
): Promise<RunningAuth> {
  let app: RequestListener = (_req, res) => res.end();
  const listening = await listen(createServer((req, res) => app(req, res)));
  const { url } = listening;
  const options = typeof given === 'function' ? given(url) : given;
  const auth = createAuthorizationServer({
    issuer: url,
    clients: new MemoryClientStore(clients),
    keys: await testKeys(),
    users: { verify: () => undefined, get: (sub) => USERS[sub] },
    sessions: createSessions({ allowedOrigins: [url] }),
    ...options,
  });
  app = toNodeListener([createRouter(auth.routes)]);
  return { auth, url, listening };
}
