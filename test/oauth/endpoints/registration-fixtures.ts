// A site for the dynamic registration suites: createAuthorizationServer with registration on,
// behind the router on a real socket, with a protected `/me` and a `/stream` bound to its
// credential (it ends when the credential does), and one signed-in browser session of alice.
import type { RequestListener, ServerResponse } from 'node:http';
import { expect } from 'vitest';
import { toNodeListener } from '../../../src/adapters/node.js';
import { authenticate } from '../../../src/auth/authenticate.js';
import { bindToCredential } from '../../../src/auth/revocations.js';
import { createSessions } from '../../../src/auth/session/session.js';
import { compose } from '../../../src/core/compose.js';
import { getPrincipal } from '../../../src/core/principal.js';
import { createRouter } from '../../../src/http/routing/router.js';
import { defineClient } from '../../../src/oauth/clients/client.js';
import {
  clientStores,
  MemoryClientStore,
  type WritableClientStore,
} from '../../../src/oauth/clients/store.js';
import {
  type AuthorizationServer,
  type CreateAuthorizationServerOptions,
  createAuthorizationServer,
} from '../../../src/oauth/server.js';
import type { KeySet } from '../../../src/oauth/tokens/key-set.js';
import { hiddenInputs, sessionCookie } from '../../helpers/browser.js';
import { type Listening, listen, type Reply, request } from '../../helpers/http.js';
import { captureLogger } from '../../helpers/logger.js';
import { pkce } from '../token-fixtures.js';

export const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };
export const JSON_BODY = { 'Content-Type': 'application/json' };

export interface RegistrationSite {
  app: Listening;
  as: AuthorizationServer;
  clients: WritableClientStore;
  cookie: string;
  /** The streams open on `/stream`, by the order they opened: each resolves with how it ended. */
  streams: Promise<string>[];
}

/** Where the sites log: their `error` lines must stay none. */
export const log = captureLogger();

/** A site with the configured client `web` and registration on (`options` added). */
export async function startRegistrationSite(
  keys: KeySet,
  options: Partial<CreateAuthorizationServerOptions> = {},
  stored: WritableClientStore = new MemoryClientStore([], { maxClients: 100 }),
): Promise<RegistrationSite> {
  const clients = clientStores(
    [
      await defineClient({
        clientId: 'web',
        secret: 'web-secret-123',
        grantTypes: ['authorization_code', 'refresh_token'],
        redirectUris: ['https://app.example.com/cb'],
        scopes: ['openid', 'offline_access', 'read:messages'],
      }),
    ],
    stored,
  );
  let listener: RequestListener = (_req, res) => res.end();
  const app = await listen((req, res) => listener(req, res));
  const as = createAuthorizationServer({
    issuer: app.url,
    clients,
    keys,
    users: {
      verify: (username, password) =>
        username === 'alice' && password === 'alice-password' ? { sub: 'alice' } : undefined,
      get: (sub) => (sub === 'alice' ? { sub, name: 'Alice' } : undefined),
    },
    sessions: createSessions({ allowedOrigins: [app.url], cookie: { secure: false } }),
    scopesSupported: ['openid', 'offline_access', 'read:messages'],
    logger: log,
    features: { registration: true },
    ...options,
  });
  const streams: Promise<string>[] = [];
  const protect = authenticate([as.bearer]);
  const me = async (req: Parameters<RequestListener>[0], res: ServerResponse) => {
    const principal = getPrincipal(req)!;
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ sub: principal.sub, clientId: principal.clientId }));
  };
  const stream = async (req: Parameters<RequestListener>[0], res: ServerResponse) => {
    const principal = getPrincipal(req)!;
    res.writeHead(200, { 'Content-Type': 'text/event-stream' });
    res.write(': open\n\n');
    streams.push(
      new Promise((resolve) => {
        const unbind = bindToCredential(principal, {
          revocations: as.context.revocations,
          onEnd: (reason, id) => {
            res.end(`event: end\ndata: ${reason} ${id ?? ''}\n\n`);
            resolve(`${reason} ${id ?? ''}`);
          },
        });
        res.on('close', unbind);
      }),
    );
  };
  listener = toNodeListener(
    [
      createRouter({
        ...as.routes,
        '/me': { GET: compose([protect, me]) },
        '/stream': { GET: compose([protect, stream]) },
      }),
    ],
    { logger: log },
  );
  const page = await request(app, `/authorize?${query('web', 'https://app.example.com/cb')}`);
  const signedIn = await request(app, '/authorize', {
    method: 'POST',
    headers: FORM,
    body: new URLSearchParams([
      ...hiddenInputs(page.body),
      ['username', 'alice'],
      ['password', 'alice-password'],
    ]).toString(),
  });
  expect(signedIn.status, signedIn.body).toBe(200);
  return { app, as, clients, cookie: sessionCookie(signedIn.headers)!, streams };
}

/** The query of an authorization request of `clientId` to `redirectUri`. */
export function query(
  clientId: string,
  redirectUri: string,
  challenge = pkce().challenge,
  scope = 'openid offline_access',
): string {
  return new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    scope,
    state: 'st-1',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
}

/** POSTs client metadata to /register as JSON. */
export function register(site: RegistrationSite, metadata: unknown, headers = {}): Promise<Reply> {
  return request(site.app, '/register', {
    method: 'POST',
    headers: { ...JSON_BODY, ...headers },
    body: typeof metadata === 'string' ? metadata : JSON.stringify(metadata),
  });
}

/** The consent page of an authorization request, approved (or remembered): the code. */
export async function approve(
  site: RegistrationSite,
  path: string,
): Promise<{ consent: Reply; code: string; location: URL }> {
  const consent = await request(site.app, path, { headers: { Cookie: site.cookie } });
  // a consent alice gave before answers at once
  if (consent.status === 303) {
    const location = new URL(consent.headers.location!);
    return { consent, code: location.searchParams.get('code')!, location };
  }
  expect(consent.status, consent.body).toBe(200);
  const approved = await request(site.app, '/authorize', {
    method: 'POST',
    headers: { ...FORM, Cookie: site.cookie },
    body: new URLSearchParams([...hiddenInputs(consent.body), ['decision', 'approve']]).toString(),
  });
  expect(approved.status, approved.body).toBe(303);
  const location = new URL(approved.headers.location!);
  return { consent, code: location.searchParams.get('code')!, location };
}
