// Contract "OpenID Connect provider behaviour" (issue 26), from outside: authorization requests
// by POST, remembered consent with prompt=none and id_token_hint (driven by openid-client),
// the user's authorized apps at /api/grants and what revoking one ends, request objects
// refused at the redirect URI, and RP-Initiated Logout at /logout.
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser } from '../helpers/browser.js';
import {
  basic,
  expectLiveEnded,
  JSON_TYPE,
  openLive,
  throughAuthorize,
  WEB,
} from './guarded-helpers.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

let server: RunningServer;
let web: client.Configuration;

beforeAll(async () => {
  server = await startReferenceServer({ RATE_LIMIT: '1000' });
  web = await client.discovery(
    new URL(server.url),
    'demo-web',
    undefined,
    client.ClientSecretBasic('demo-web-secret'),
    { execute: [client.allowInsecureRequests] },
  );
});
afterAll(async () => {
  await server?.stop();
});

/** An authorization URL of demo-web built by openid-client, with its PKCE verifier. */
async function webRequest(params: Record<string, string> = {}) {
  const verifier = client.randomPKCECodeVerifier();
  const url = client.buildAuthorizationUrl(web, {
    redirect_uri: WEB.redirectUri,
    scope: 'openid read:messages',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state: 'st-op',
    ...params,
  });
  return { url, verifier };
}

/** The redirect a browser gets for `url` at once (no page in between): its URL. */
async function redirectedAt(browser: Browser, url: URL): Promise<URL> {
  const res = await browser.fetch(url);
  expect(res.status, await res.clone().text()).toBe(303);
  const location = new URL(res.headers.get('location')!);
  expect(`${location.origin}${location.pathname}`).toBe(WEB.redirectUri);
  return location;
}

/** demo-web's tokens for `user` in `browser` (signing in and consenting as needed). */
async function tokensIn(browser: Browser, user: string, params: Record<string, string> = {}) {
  const { url, verifier } = await webRequest(params);
  const back = await throughAuthorize(browser, url, WEB, user);
  return client.authorizationCodeGrant(web, back, {
    pkceCodeVerifier: verifier,
    expectedState: 'st-op',
  });
}

describe('POST /authorize (OIDC Core §3.1.2.1)', () => {
  it('behaves as the GET: the same sign-in page, then a code', async () => {
    const { url, verifier } = await webRequest();
    const browser = new Browser(server.url);
    const page = await browser.fetch(new URL('/authorize', server.url), {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: url.searchParams.toString(),
    });
    expect(page.status).toBe(200);
    const html = await page.clone().text();
    expect(html).toContain('name="password"');
    const signedIn = await browser.submit(
      page,
      { username: 'alice', password: 'alice-password' },
      new URL('/authorize', server.url),
    );
    // the consent page, unless alice's consent to demo-web is remembered already
    const consented =
      signedIn.status === 303
        ? signedIn
        : await browser.submit(
            signedIn,
            { decision: 'approve' },
            new URL('/authorize', server.url),
          );
    const back = new URL(consented.headers.get('location')!);
    const tokens = await client.authorizationCodeGrant(web, back, {
      pkceCodeVerifier: verifier,
      expectedState: 'st-op',
    });
    expect(tokens.claims()?.sub).toBe('alice');
  });
});

describe('remembered consent, prompt and id_token_hint', () => {
  it('asks once; then prompt=none (with the ID token as hint) returns a code silently', async () => {
    const browser = new Browser(server.url);
    const first = await tokensIn(browser, 'bob');
    const idToken = first.id_token!;
    // signed in, consented: no page at all
    const { url, verifier } = await webRequest({ prompt: 'none', id_token_hint: idToken });
    const silent = await redirectedAt(browser, url);
    expect(silent.searchParams.get('error')).toBeNull();
    const again = await client.authorizationCodeGrant(web, silent, {
      pkceCodeVerifier: verifier,
      expectedState: 'st-op',
    });
    expect(again.claims()?.sub).toBe('bob');
    // a request needing more scopes: the consent page again; prompt=none says so
    const wider = await webRequest({
      scope: 'openid read:messages write:messages',
      prompt: 'none',
    });
    expect((await redirectedAt(browser, wider.url)).searchParams.get('error')).toBe(
      'consent_required',
    );
    // prompt=consent always shows the page
    const asked = await browser.fetch((await webRequest({ prompt: 'consent' })).url);
    expect(asked.status).toBe(200);
    expect(await asked.text()).toContain('name="decision"');
    // another user's hint: that user must sign in
    const stranger = await webRequest({ prompt: 'none', id_token_hint: await otherUsersIdToken() });
    expect((await redirectedAt(browser, stranger.url)).searchParams.get('error')).toBe(
      'login_required',
    );
    // signed out: login_required
    const signedOut = await redirectedAt(
      new Browser(server.url),
      (await webRequest({ prompt: 'none' })).url,
    );
    expect(signedOut.searchParams.get('error')).toBe('login_required');
  });
});

/** An ID token of alice (in a browser of her own). */
async function otherUsersIdToken(): Promise<string> {
  return (await tokensIn(new Browser(server.url), 'alice')).id_token!;
}

describe('request objects (OIDC Core §6)', () => {
  it('refuses request and a foreign request_uri at the redirect URI', async () => {
    const browser = new Browser(server.url);
    for (const [name, value, error] of [
      ['request', 'eyJhbGciOiJub25lIn0.eyJzY29wZSI6Im9wZW5pZCJ9.', 'request_not_supported'],
      ['request_uri', 'https://rp.example/request.jwt', 'request_uri_not_supported'],
    ] as const) {
      const { url } = await webRequest({ [name]: value });
      const back = await redirectedAt(browser, url);
      expect(back.searchParams.get('error')).toBe(error);
      expect(back.searchParams.get('state')).toBe('st-op');
      expect(back.searchParams.get('code')).toBeNull();
    }
    const metadata = await (await fetch(`${server.url}/.well-known/openid-configuration`)).json();
    expect(metadata).toMatchObject({
      request_parameter_supported: false,
      request_uri_parameter_supported: false,
    });
  });
});

describe('your authorized apps: /api/grants', () => {
  const ALICE = { Authorization: basic('alice', 'alice-password') };
  const grantsOf = async (headers: Record<string, string>) => {
    const res = await fetch(`${server.url}/api/grants`, { headers });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    return (await res.json()) as {
      id: string;
      client_id: string;
      scopes: string[];
      createdAt: number;
    }[];
  };

  it('lists the consents; revoking one ends its tokens, streams and consent', async () => {
    const browser = new Browser(server.url);
    const tokens = await tokensIn(browser, 'alice');
    const [grant, ...others] = await grantsOf(ALICE);
    expect(others).toEqual([]);
    expect(grant).toEqual({
      id: expect.any(String),
      client_id: 'demo-web',
      scopes: ['openid', 'read:messages'],
      createdAt: expect.any(Number),
    });
    // a client's token may neither see nor end grants
    const bearer = { Authorization: `Bearer ${tokens.access_token}` };
    expect((await fetch(`${server.url}/api/grants`, { headers: bearer })).status).toBe(403);
    const byClient = await fetch(`${server.url}/api/grants/${grant!.id}`, {
      method: 'DELETE',
      headers: bearer,
    });
    expect(byClient.status).toBe(403);
    // another user does not end it
    const others404 = await fetch(`${server.url}/api/grants/${grant!.id}`, {
      method: 'DELETE',
      headers: { Authorization: basic('bob', 'bob-password') },
    });
    expect(others404.status).toBe(404);

    const post = (text: string, channel: string) =>
      fetch(`${server.url}/api/messages`, {
        method: 'POST',
        headers: { ...JSON_TYPE, Authorization: basic('alice', 'alice-password') },
        body: JSON.stringify({ text, channel }),
      });
    const live = await openLive(server.url, bearer, 'grants-op', post);
    const revoked = await fetch(`${server.url}/api/grants/${grant!.id}`, {
      method: 'DELETE',
      headers: ALICE,
    });
    expect(revoked.status).toBe(204);
    await expectLiveEnded(live, 'grants-op', /revoked|ended|expired/i, post);
    expect((await fetch(`${server.url}/api/me`, { headers: bearer })).status).toBe(401);
    await expect(
      client.refreshTokenGrant(web, tokens.refresh_token ?? 'none'),
    ).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    expect(await grantsOf(ALICE)).toEqual([]);
    // the consent is forgotten: prompt=none must ask
    const { url } = await webRequest({ prompt: 'none' });
    expect((await redirectedAt(browser, url)).searchParams.get('error')).toBe('consent_required');
    expect(
      (await fetch(`${server.url}/api/grants/${grant!.id}`, { method: 'DELETE', headers: ALICE }))
        .status,
    ).toBe(404);
  });
});

describe('RP-Initiated Logout at /logout', () => {
  it('is in discovery, asks, ends the session and goes back with state', async () => {
    expect(web.serverMetadata().end_session_endpoint).toBe(`${server.url}/logout`);
    const browser = new Browser(server.url);
    const tokens = await tokensIn(browser, 'bob');
    const url = client.buildEndSessionUrl(web, {
      id_token_hint: tokens.id_token!,
      post_logout_redirect_uri: 'http://127.0.0.1:8080/',
      state: 'bye',
    });
    const page = await browser.fetch(url);
    expect(page.status).toBe(200);
    const done = await browser.submit(page, { decision: 'logout' }, url);
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe('http://127.0.0.1:8080/?state=bye');
    // the OP session is over: prompt=none must sign in
    const { url: silent } = await webRequest({ prompt: 'none' });
    expect((await redirectedAt(browser, silent)).searchParams.get('error')).toBe('login_required');
  });

  it('never redirects to an unregistered URI; a bare POST /logout is the API sign-out (204)', async () => {
    const refused = await fetch(
      `${server.url}/logout?client_id=demo-web&post_logout_redirect_uri=${encodeURIComponent('https://evil.example/')}`,
      { redirect: 'manual' },
    );
    expect(refused.status).toBe(400);
    expect(refused.headers.get('location')).toBeNull();
    const spa = await fetch(
      `${server.url}/logout?client_id=demo-spa&post_logout_redirect_uri=${encodeURIComponent('http://localhost:5173/')}&state=s`,
      { redirect: 'manual' },
    );
    expect(spa.status).toBe(303);
    expect(spa.headers.get('location')).toBe('http://localhost:5173/?state=s');
    const api = await fetch(`${server.url}/logout`, {
      method: 'POST',
      headers: { Origin: server.url },
    });
    expect(api.status).toBe(204);
  });
});
