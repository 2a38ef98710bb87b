// A client known only by its metadata document (its client_id an https URL on loopback, a test
// CA made with openssl), driven through the authorization server by openid-client v6: code +
// PKCE, refresh; and each refusal as the 400 error page of /authorize (never a redirect) and
// invalid_client at /token.
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signInAndApprove } from '../../helpers/browser.js';
import { requireOpenssl } from '../../helpers/tools.js';
import { type RunningAuth, startAuth, USERS } from '../grants/fixtures.js';
import {
  type DocumentServer,
  loopback,
  makeTestTls,
  startDocumentServer,
  type TestTls,
} from './document-server.js';

const hasOpenssl = requireOpenssl();

const REDIRECT = 'http://127.0.0.1:3000/callback';
const insecure = { execute: [client.allowInsecureRequests] };

let tls: TestTls;
let docs: DocumentServer;
let running: RunningAuth;
let off: RunningAuth;
let guarded: RunningAuth;
let seq = 0;

const documentOf = (url: string) => ({
  client_id: url,
  client_name: 'Agent Example',
  redirect_uris: [REDIRECT],
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code', 'refresh_token'],
  scope: 'openid profile offline_access',
});
const path = (name: string) => `/${name}-${++seq}/client.json`;

const users = {
  verify: (username: string, password: string) =>
    password === `${username}-password` ? USERS[username] : undefined,
  get: (sub: string) => USERS[sub],
};

beforeAll(async () => {
  if (!hasOpenssl) return;
  tls = makeTestTls();
  docs = await startDocumentServer(tls);
  const documents = { allowPrivate: true, ca: tls.ca, lookup: loopback, timeout: '500ms' } as const;
  running = await startAuth([], { users, clientMetadataDocuments: documents });
  off = await startAuth([], { users });
  guarded = await startAuth([], { users, clientMetadataDocuments: { ca: tls.ca } });
});

afterAll(async () => {
  await Promise.all([running, off, guarded].map((r) => r?.listening.close()));
  await running?.auth.context.clientMetadataDocuments?.close();
  await docs?.close();
  tls?.remove();
});

/** The authorization request of `clientId`, with PKCE. */
async function authorization(clientId: string, at = running, redirectUri = REDIRECT) {
  const config = await client.discovery(
    new URL(at.url),
    clientId,
    undefined,
    client.None(),
    insecure,
  );
  const verifier = client.randomPKCECodeVerifier();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: 'openid offline_access',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state: 'st-1',
  });
  return { config, verifier, url };
}

/** The /authorize answer of `clientId`: the error page expected. */
async function errorPage(clientId: string, at = running, redirectUri = REDIRECT) {
  const { url } = await authorization(clientId, at, redirectUri);
  const res = await fetch(url, { redirect: 'manual' });
  expect(res.status).toBe(400);
  expect(res.headers.get('location')).toBeNull();
  expect(res.headers.get('content-type')).toMatch(/^text\/html/);
  return (await res.text()).replaceAll('&#39;', "'").replaceAll('&quot;', '"');
}

describe.skipIf(!hasOpenssl)('a client of a metadata document at the authorization server', () => {
  it('says client_id_metadata_document_supported in discovery when on, not when off', async () => {
    const on = (await (
      await fetch(`${running.url}/.well-known/oauth-authorization-server`)
    ).json()) as Record<string, unknown>;
    expect(on.client_id_metadata_document_supported).toBe(true);
    const notOn = await (await fetch(`${off.url}/.well-known/openid-configuration`)).json();
    expect(notOn).not.toHaveProperty('client_id_metadata_document_supported');
  });

  it('gets tokens with code + PKCE as a public client, and refreshes them (openid-client)', async () => {
    const id = docs.json(path('agent'), documentOf, { 'cache-control': 'max-age=60' });
    const { config, verifier, url } = await authorization(id);
    const location = await signInAndApprove(running.url, url);
    expect(location.startsWith(`${REDIRECT}?`)).toBe(true);
    const tokens = await client.authorizationCodeGrant(config, new URL(location), {
      pkceCodeVerifier: verifier,
      expectedState: 'st-1',
    });
    expect(tokens.access_token).toEqual(expect.any(String));
    expect(tokens.claims()?.aud).toBe(id);
    expect(tokens.scope?.split(' ').sort()).toEqual(['offline_access', 'openid']);
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.access_token).not.toBe(tokens.access_token);
    // the document was fetched once: the rest came from the cache (max-age=60)
    expect(docs.hits.get(new URL(id).pathname)).toBe(1);
  });

  it('is unknown when documents are off', async () => {
    const id = docs.json(path('off'), documentOf);
    expect(await errorPage(id, off)).toContain('The application that sent you here is not known.');
    expect(docs.hits.get(new URL(id).pathname)).toBeUndefined();
  });

  it.each<[string, (url: string) => unknown, RegExp]>([
    [
      'lies about its client_id',
      (u) => ({ ...documentOf(u), client_id: `${u}?x` }),
      /names another client_id/,
    ],
    ['has a secret', (u) => ({ ...documentOf(u), client_secret: 'shh-shh-shh' }), /client secret/],
    ['is too big', (u) => ({ ...documentOf(u), pad: 'x'.repeat(6_000) }), /larger than 5120 bytes/],
  ])('shows the error page when the document %s', async (_, doc, message) => {
    const id = docs.json(path('bad'), doc);
    expect(await errorPage(id)).toMatch(message);
  });

  it('shows the error page when the redirect URI is not in the document', async () => {
    const id = docs.json(path('other-uri'), documentOf);
    expect(await errorPage(id, running, 'http://127.0.0.1:3000/evil')).toContain(
      'The redirect URI is not registered for this application.',
    );
  });

  it('shows the error page for a body that is not JSON, a redirect, a slow server', async () => {
    const p1 = path('html');
    docs.routes.set(p1, (_req, res) => res.writeHead(200).end('<!doctype html>'));
    expect(await errorPage(`${docs.origin}${p1}`)).toMatch(/is not JSON/);
    const p2 = path('redirect');
    const target = docs.json(path('target'), documentOf);
    docs.routes.set(p2, (_req, res) => res.writeHead(301, { location: target }).end());
    expect(await errorPage(`${docs.origin}${p2}`)).toMatch(/redirect, which is not followed/);
    const p3 = path('slow');
    docs.routes.set(p3, () => {});
    expect(await errorPage(`${docs.origin}${p3}`)).toMatch(/took longer than 500 ms/);
  });

  it('shows the error page for an http: client id', async () => {
    expect(await errorPage(`http://127.0.0.1:${docs.port}/client.json`)).toMatch(
      /must be an https: URL/,
    );
  });

  it('shows the error page for a private address without allowPrivate', async () => {
    const id = docs.json(path('private'), documentOf).replace('localhost', '127.0.0.1');
    expect(await errorPage(id, guarded)).toMatch(/address this server does not fetch from/);
    expect(await errorPage('https://169.254.169.254/latest/client.json', guarded)).toMatch(
      /address this server does not fetch from/,
    );
    expect(docs.hits.get(new URL(id).pathname)).toBeUndefined();
  });

  it('shows the sign-out error page for a client_id whose document cannot be used', async () => {
    const id = docs.json(path('logout'), (u) => ({ ...documentOf(u), client_secret: 'x-x-x-x-x' }));
    const res = await fetch(
      `${running.url}/session/end?${new URLSearchParams({ client_id: id })}`,
      { redirect: 'manual' },
    );
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(await res.text()).toMatch(/carries a client secret/);
  });

  it('answers invalid_client at /token (and /par) for a document that cannot be used', async () => {
    const id = docs.json(path('token'), (u) => ({
      ...documentOf(u),
      client_id: 'https://x.example/c',
    }));
    for (const endpoint of ['/token', '/par']) {
      const res = await fetch(`${running.url}${endpoint}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          client_id: id,
          grant_type: 'authorization_code',
          code: 'x',
          response_type: 'code',
          redirect_uri: REDIRECT,
        }),
      });
      expect(res.status).toBe(401);
      const body = (await res.json()) as Record<string, string>;
      expect(body.error).toBe('invalid_client');
      expect(body.error_description).toMatch(/names another client_id/);
    }
  });

  it('refuses at /token a client whose document has gone bad since the code was issued', async () => {
    const p = path('turns');
    let good = true;
    docs.routes.set(p, (_req, res) => {
      const url = `${docs.origin}${p}`;
      const doc = good ? documentOf(url) : { ...documentOf(url), client_secret: 'now-a-secret' };
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify(doc));
    });
    const id = `${docs.origin}${p}`;
    const { config, verifier, url } = await authorization(id);
    const location = await signInAndApprove(running.url, url);
    good = false;
    const refused = (await client
      .authorizationCodeGrant(config, new URL(location), {
        pkceCodeVerifier: verifier,
        expectedState: 'st-1',
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      )) as { status?: number; response?: Response };
    expect(refused?.status).toBe(401);
    const body = (await refused.response!.json()) as Record<string, string>;
    expect(body).toMatchObject({ error: 'invalid_client' });
    expect(body.error_description).toMatch(/client secret/);
  });
});
