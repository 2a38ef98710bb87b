// The sites of the PAR and FAPI 2.0 suites: createAuthorizationServer behind the router on a
// real socket, one signed-in browser session, and the helpers that push, approve and redeem.
import { randomUUID, type webcrypto } from 'node:crypto';
import type { OutgoingHttpHeaders, RequestListener } from 'node:http';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { expect } from 'vitest';
import { toNodeListener } from '../../../src/adapters/node.js';
import { createSessions } from '../../../src/auth/session/session.js';
import { createRouter } from '../../../src/http/routing/router.js';
import { CLIENT_ASSERTION_TYPE } from '../../../src/oauth/clients/assertion.js';
import { defineClient, type OAuthClient } from '../../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../../src/oauth/clients/store.js';
import type { AuthorizationServerOptions } from '../../../src/oauth/context.js';
import { type AuthorizationServer, createAuthorizationServer } from '../../../src/oauth/server.js';
import { consents } from '../../../src/oauth/store/records.js';
import type { KeySet } from '../../../src/oauth/tokens/key-set.js';
import { hiddenInputs, sessionCookie } from '../../helpers/browser.js';
import { json, type Listening, listen, type Reply, request } from '../../helpers/http.js';
import { captureLogger } from '../../helpers/logger.js';
import { basic, pkce } from '../token-fixtures.js';

export const WEB = 'https://app.example.com/cb';
export const SPA = 'http://127.0.0.1:5173/callback';
/** Where `web` (and the clients like it) may send the browser after a sign-out. */
export const BYE = 'https://app.example.com/signed-out?from=op';
export const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };
export const SECRETS: Record<string, string> = {
  web: 'web-secret-123',
  other: 'other-secret-123',
  pushy: 'pushy-secret-123',
};

export type Key = { privateKey: webcrypto.CryptoKey; jwk: JWK; jkt: string; alg: string };
export async function newKey(alg = 'ES256'): Promise<Key> {
  const pair = await generateKeyPair(alg, { extractable: true });
  const jwk = { ...(await exportJWK(pair.publicKey)), alg };
  return { privateKey: pair.privateKey, jwk, jkt: await calculateJwkThumbprint(jwk), alg };
}

export interface Site {
  app: Listening;
  as: AuthorizationServer;
  cookie: string;
}

/** Where the sites log: their `error` lines must stay none. */
export const log = captureLogger();

/**
 * A site with the clients `web`, `other` (secrets), `pushy` (must push), `keyed`
 * (private_key_jwt with `clientKey`), `spa` (public), and `extra` ones.
 */
export async function startSite(
  keys: KeySet,
  clientKey: Key,
  options: Partial<AuthorizationServerOptions> = {},
  extra: OAuthClient[] = [],
): Promise<Site> {
  const scopes = ['openid', 'offline_access', 'read:messages'];
  const grantTypes = ['authorization_code', 'refresh_token'] as const;
  const web = {
    grantTypes: [...grantTypes],
    redirectUris: [WEB],
    postLogoutRedirectUris: [BYE],
    scopes,
  };
  const clients = new MemoryClientStore([
    await defineClient({ clientId: 'web', secret: SECRETS.web, ...web }),
    await defineClient({ clientId: 'other', secret: SECRETS.other, ...web }),
    await defineClient({
      clientId: 'pushy',
      secret: SECRETS.pushy,
      ...web,
      requirePushedAuthorizationRequests: true,
    }),
    await defineClient({ clientId: 'keyed', jwks: { keys: [clientKey.jwk] }, ...web }),
    await defineClient({
      clientId: 'spa',
      grantTypes: [...grantTypes],
      redirectUris: [SPA],
      scopes,
    }),
    ...extra,
  ]);
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
    logger: log,
    ...options,
  });
  listener = toNodeListener([createRouter(as.routes)], { logger: log });
  const page = await request(app, `/authorize?${authorizationQuery('web')}`);
  const signedIn = await request(app, '/authorize', {
    method: 'POST',
    headers: FORM,
    body: new URLSearchParams([
      ...hiddenInputs(page.body),
      ['username', 'alice'],
      ['password', 'alice-password'],
    ]).toString(),
  });
  expect(signedIn.status).toBe(200);
  return { app, as, cookie: sessionCookie(signedIn.headers)! };
}

export function authorizationQuery(
  client: string,
  extra: Record<string, string> = {},
  challenge = pkce().challenge,
) {
  return new URLSearchParams({
    response_type: 'code',
    client_id: client,
    redirect_uri: client === 'spa' ? SPA : WEB,
    scope: 'openid offline_access',
    state: 'st-1',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...extra,
  }).toString();
}

export function post(
  site: Site,
  path: string,
  form: URLSearchParams | string,
  headers: OutgoingHttpHeaders = {},
) {
  return request(site.app, path, {
    method: 'POST',
    headers: { ...FORM, ...headers },
    body: form.toString(),
  });
}

/** Pushes the authorization request of `client` (authenticated as it would at /token). */
export function push(
  site: Site,
  client: string,
  extra: Record<string, string> = {},
  headers: OutgoingHttpHeaders = {},
  challenge?: string,
) {
  const form = new URLSearchParams(authorizationQuery(client, extra, challenge));
  const auth: OutgoingHttpHeaders = {};
  if (SECRETS[client] !== undefined) {
    form.delete('client_id');
    auth.Authorization = basic(client, SECRETS[client]!);
  }
  return post(site, '/par', form, { ...auth, ...headers });
}

/** Forgets alice's remembered consents: the next request of a client shows its consent page. */
export async function forgetConsents(site: Site): Promise<void> {
  const { store } = site.as.context;
  for (const grant of await consents(store).list('alice'))
    await consents(store).delete('alice', grant.id);
}

/**
 * The consent page of a request_uri, approved (or the code at once when alice's consent is
 * remembered): the code (or the reply when there is none).
 */
export async function approveVia(
  site: Site,
  path: string,
): Promise<{ reply: Reply; code?: string }> {
  const consent = await request(site.app, path, { headers: { Cookie: site.cookie } });
  const at = consent.status === 303 ? new URL(consent.headers.location!) : undefined;
  if (at?.searchParams.has('code')) return { reply: consent, code: at.searchParams.get('code')! };
  if (consent.status !== 200) return { reply: consent };
  const approved = await post(
    site,
    '/authorize',
    new URLSearchParams([...hiddenInputs(consent.body), ['decision', 'approve']]),
    { Cookie: site.cookie },
  );
  expect(approved.status, approved.body).toBe(303);
  const location = new URL(approved.headers.location!);
  return { reply: approved, code: location.searchParams.get('code') ?? undefined };
}

export function redeem(
  site: Site,
  code: string,
  verifier: string,
  client = 'web',
  headers: OutgoingHttpHeaders = {},
) {
  const form = new URLSearchParams({
    grant_type: 'authorization_code',
    code,
    redirect_uri: client === 'spa' ? SPA : WEB,
    code_verifier: verifier,
  });
  const auth: OutgoingHttpHeaders = {};
  if (SECRETS[client] === undefined) form.set('client_id', client);
  else auth.Authorization = basic(client, SECRETS[client]!);
  return post(site, '/token', form, { ...auth, ...headers });
}

export function dpopProof(site: Site, key: Key, path: string): Promise<string> {
  return new SignJWT({
    jti: randomUUID(),
    htm: 'POST',
    htu: `${site.app.url}${path}`,
    iat: Math.floor(Date.now() / 1000),
  })
    .setProtectedHeader({ alg: key.alg, typ: 'dpop+jwt', jwk: key.jwk })
    .sign(key.privateKey);
}

export const requestUriOf = (reply: Reply) => json<{ request_uri: string }>(reply).request_uri;
export const authorizeWith = (client: string, requestUri: string, extra = '') =>
  `/authorize?client_id=${client}&request_uri=${encodeURIComponent(requestUri)}${extra}`;

/** A client assertion (private_key_jwt) of `client`, signed by `key`, for the site. */
export function clientAssertion(
  site: Site,
  client: string,
  key: Key,
  claims: Record<string, unknown> = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({
    iss: client,
    sub: client,
    aud: site.app.url,
    jti: randomUUID(),
    exp: now + 60,
    ...claims,
  })
    .setProtectedHeader({ alg: key.alg })
    .sign(key.privateKey);
}

/** The form parameters that authenticate a client with an assertion. */
export const assertionParams = (assertion: string) => ({
  client_assertion_type: CLIENT_ASSERTION_TYPE,
  client_assertion: assertion,
});
