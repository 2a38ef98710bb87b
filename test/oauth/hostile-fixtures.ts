// The authorization server the hostile-*.test.ts suites attack: createAuthorizationServer
// behind the router on a real socket, one signed-in browser session, and codes from the real
// consent page. Call startHostileServer() in beforeAll; the bindings below are live.
import type { OutgoingHttpHeaders, RequestListener } from 'node:http';
import { expect } from 'vitest';
import { toNodeListener } from '../../src/adapters/node.js';
import { createSessions } from '../../src/auth/session/session.js';
import { createRouter } from '../../src/http/routing/router.js';
import { defineClient } from '../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../src/oauth/clients/store.js';
import { type AuthorizationServer, createAuthorizationServer } from '../../src/oauth/server.js';
import { createKeySet } from '../../src/oauth/tokens/key-set.js';
import { hiddenInputs, sessionCookie } from '../helpers/browser.js';
import { json, type Listening, listen, type Reply, request } from '../helpers/http.js';
import { captureLogger } from '../helpers/logger.js';
import { basic, pkce } from './token-fixtures.js';

export const WEB = 'https://app.example.com/cb';
export const LOOPBACK = 'http://127.0.0.1:8080/callback';
export const IDN = 'https://xn--bcher-kva.example/cb';
export const SPA = 'http://127.0.0.1:5173/callback';
export const SECRETS: Record<string, string> = { web: 'web-secret-123', other: 'other-secret-123' };
export const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };

export let app: Listening;
export let as: AuthorizationServer;
export let cookie: string;
/** Where the adapter and the authorization server log: its `error` lines must stay none. */
export const log = captureLogger();
/** What was logged as an error (5xx and `server_error` answers only): must stay empty. */
export const failures = log.errors;

export async function startHostileServer(): Promise<void> {
  const scopes = ['openid', 'profile', 'offline_access', 'read:messages'];
  const grantTypes = ['authorization_code', 'refresh_token'] as const;
  const clients = new MemoryClientStore([
    await defineClient({
      clientId: 'web',
      secret: SECRETS.web,
      grantTypes: [...grantTypes],
      redirectUris: [WEB, LOOPBACK, IDN],
      scopes,
    }),
    await defineClient({
      clientId: 'other',
      secret: SECRETS.other,
      grantTypes: [...grantTypes],
      redirectUris: [WEB],
      scopes,
    }),
    await defineClient({
      clientId: 'spa',
      grantTypes: [...grantTypes],
      redirectUris: [SPA],
      scopes,
    }),
  ]);
  // listen first: the issuer is the real address
  let listener: RequestListener = (_req, res) => res.end();
  app = await listen((req, res) => listener(req, res));
  as = createAuthorizationServer({
    issuer: app.url,
    clients,
    keys: await createKeySet(),
    users: {
      verify: (username, password) =>
        username === 'alice' && password === 'alice-password' ? { sub: 'alice' } : undefined,
      get: (sub) => (sub === 'alice' ? { sub, name: 'Alice' } : undefined),
    },
    sessions: createSessions({ allowedOrigins: [app.url], cookie: { secure: false } }),
    logger: log,
  });
  listener = toNodeListener([createRouter(as.routes)], { logger: log });
  // one signed-in browser session for every flow
  const page = await request(app, `/authorize?${query('web')}`);
  const signedIn = await post('/authorize', [
    ...hiddenInputs(page.body),
    ['username', 'alice'],
    ['password', 'alice-password'],
  ]);
  expect(signedIn.status).toBe(200);
  cookie = sessionCookie(signedIn.headers)!;
}

export function post(
  path: string,
  fields: [string, string][] | string,
  headers: OutgoingHttpHeaders = {},
) {
  const body = typeof fields === 'string' ? fields : new URLSearchParams(fields).toString();
  return request(app, path, { method: 'POST', headers: { ...FORM, ...headers }, body });
}
export function query(
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
/**
 * The code for `rawQuery`: through the consent page, or at once when the user's consent is
 * remembered (after the first approval of a client).
 */
export async function authorizeCode(rawQuery: string): Promise<string> {
  const consent = await request(app, `/authorize?${rawQuery}`, { headers: { Cookie: cookie } });
  if (consent.status === 303) return new URL(consent.headers.location!).searchParams.get('code')!;
  expect(consent.status, consent.body).toBe(200);
  const approved = await post(
    '/authorize',
    [...hiddenInputs(consent.body), ['decision', 'approve']],
    { Cookie: cookie },
  );
  expect(approved.status).toBe(303);
  return new URL(approved.headers.location!).searchParams.get('code')!;
}
/** A code for `client` (web by default) with a fresh PKCE pair. */
export async function codeFor(client = 'web', redirectUri = client === 'spa' ? SPA : WEB) {
  const { verifier, challenge } = pkce();
  const code = await authorizeCode(query(client, { redirect_uri: redirectUri }, challenge));
  return { code, verifier, redirectUri };
}
export function token(
  params: Record<string, string>,
  client = 'web',
  headers: OutgoingHttpHeaders = {},
) {
  const form = new URLSearchParams(params);
  const auth: OutgoingHttpHeaders = {};
  if (SECRETS[client] === undefined) form.set('client_id', client);
  else auth.Authorization = basic(client, SECRETS[client]!);
  return request(app, '/token', {
    method: 'POST',
    headers: { ...FORM, ...auth, ...headers },
    body: form.toString(),
  });
}
export const redeem = (
  c: { code: string; verifier: string; redirectUri: string },
  client = 'web',
) =>
  token(
    {
      grant_type: 'authorization_code',
      code: c.code,
      redirect_uri: c.redirectUri,
      code_verifier: c.verifier,
    },
    client,
  );
export async function isActive(accessToken: string): Promise<boolean> {
  const reply = await post('/introspect', [['token', accessToken]], {
    Authorization: basic('web', SECRETS.web!),
  });
  expect(reply.status).toBe(200);
  return json(reply).active === true;
}
export function expectErrorPage(reply: Reply) {
  expect(reply.status).toBe(400);
  expect(reply.headers.location).toBeUndefined();
  expect(reply.headers['content-type']).toBe('text/html; charset=utf-8');
}
export function expectRedirectError(reply: Reply, error: string, redirect = WEB) {
  expect(reply.status).toBe(303);
  const url = new URL(reply.headers.location!);
  expect(`${url.origin}${url.pathname}`).toBe(redirect);
  expect(url.searchParams.get('error')).toBe(error);
  expect(url.searchParams.has('code')).toBe(false);
  expect(url.searchParams.get('iss')).toBe(app.url);
  return url;
}
