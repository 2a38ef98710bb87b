// The contract row "client ID metadata documents": the reference server (a child process)
// takes a client whose client_id is an https URL, its document served on loopback by a real
// node:https server with a test CA (openssl) the child trusts through NODE_EXTRA_CA_CERTS, and
// CLIENT_METADATA_ALLOW_PRIVATE=1; without that variable, the loopback document is refused.
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signInAndApprove } from '../helpers/browser.js';
import { requireOpenssl } from '../helpers/tools.js';
import {
  type DocumentServer,
  makeTestTls,
  startDocumentServer,
  type TestTls,
} from '../oauth/clients/document-server.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const hasOpenssl = requireOpenssl();
const REDIRECT = 'http://127.0.0.1:8080/callback';
const insecure = { execute: [client.allowInsecureRequests] };

let tls: TestTls;
let docs: DocumentServer;
let server: RunningServer;
let guarded: RunningServer;
let seq = 0;

const documentOf = (url: string) => ({
  client_id: url,
  client_name: 'MCP Agent',
  redirect_uris: [REDIRECT],
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code', 'refresh_token'],
  scope: 'openid read:messages',
});
/** A document URL on 127.0.0.1 (an IP literal: no DNS in the child). */
const served = (doc: (url: string) => unknown, headers?: Record<string, string>) =>
  docs
    .json(`/agents/${++seq}/client.json`, (u) => doc(u.replace('localhost', '127.0.0.1')), headers)
    .replace('localhost', '127.0.0.1');

beforeAll(async () => {
  if (!hasOpenssl) return;
  tls = makeTestTls();
  docs = await startDocumentServer(tls);
  // one after the other, with time to spare: the machine may be busy
  server = await startReferenceServer(
    { CLIENT_METADATA_ALLOW_PRIVATE: '1', NODE_EXTRA_CA_CERTS: tls.caPath },
    60_000,
  );
  guarded = await startReferenceServer({ NODE_EXTRA_CA_CERTS: tls.caPath }, 150_000);
}, 150_000);

afterAll(async () => {
  await Promise.all([server?.stop(), guarded?.stop()]);
  await docs?.close();
  tls?.remove();
});

async function authorization(clientId: string, at: RunningServer, redirectUri = REDIRECT) {
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
    scope: 'openid read:messages',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state: 'agent-state',
  });
  return { config, verifier, url };
}

async function errorPage(clientId: string, at = server, redirectUri = REDIRECT) {
  const { url } = await authorization(clientId, at, redirectUri);
  const res = await fetch(url, { redirect: 'manual' });
  expect(res.status).toBe(400);
  expect(res.headers.get('location')).toBeNull();
  return (await res.text()).replaceAll('&#39;', "'").replaceAll('&quot;', '"');
}

describe.skipIf(!hasOpenssl)('the reference server: client ID metadata documents', () => {
  it('says so in discovery', async () => {
    const metadata = (await (
      await fetch(`${server.url}/.well-known/oauth-authorization-server`)
    ).json()) as Record<string, unknown>;
    expect(metadata.client_id_metadata_document_supported).toBe(true);
  });

  it('runs code + PKCE for a public client known by its document (openid-client), and /api/me takes the token', async () => {
    const id = served(documentOf, { 'cache-control': 'max-age=300' });
    const { config, verifier, url } = await authorization(id, server);
    const location = await signInAndApprove(server.url, url);
    const tokens = await client.authorizationCodeGrant(config, new URL(location), {
      pkceCodeVerifier: verifier,
      expectedState: 'agent-state',
    });
    expect(tokens.claims()?.aud).toBe(id);
    const me = await fetch(`${server.url}/api/me`, {
      headers: { Authorization: `Bearer ${tokens.access_token}` },
    });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ sub: 'alice', scopes: ['openid', 'read:messages'] });
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.access_token).toEqual(expect.any(String));
    expect(docs.hits.get(new URL(id).pathname)).toBe(1);
  });

  it.each<[string, (url: string) => unknown, RegExp]>([
    [
      'lies about its client_id',
      (u) => ({ ...documentOf(u), client_id: 'https://elsewhere.example/c.json' }),
      /names another client_id/,
    ],
    [
      'has a secret',
      (u) => ({ ...documentOf(u), client_secret: 'a-secret-value' }),
      /client secret/,
    ],
    ['is too big', (u) => ({ ...documentOf(u), pad: 'x'.repeat(6_000) }), /larger than 5120 bytes/],
  ])('answers the 400 error page when the document %s', async (_, doc, message) => {
    expect(await errorPage(served(doc))).toMatch(message);
  });

  it('answers the 400 error page for a redirect URI the document does not list, and a redirect', async () => {
    expect(await errorPage(served(documentOf), server, 'http://127.0.0.1:8080/other')).toContain(
      'The redirect URI is not registered for this application.',
    );
    const target = served(documentOf);
    const p = `/agents/${++seq}/moved.json`;
    docs.routes.set(p, (_req, res) => res.writeHead(302, { location: target }).end());
    expect(await errorPage(`https://127.0.0.1:${docs.port}${p}`)).toMatch(/not followed/);
  });

  it('refuses the loopback document without CLIENT_METADATA_ALLOW_PRIVATE, fetching nothing', async () => {
    const id = served(documentOf);
    expect(await errorPage(id, guarded)).toMatch(/address this server does not fetch from/);
    expect(await errorPage('https://169.254.169.254/latest/client.json', guarded)).toMatch(
      /address this server does not fetch from/,
    );
    expect(docs.hits.get(new URL(id).pathname)).toBeUndefined();
  });
});
