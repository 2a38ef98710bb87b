// The reference server signing users in at an upstream OpenID Provider (panva's oidc-provider
// on 127.0.0.1), as the contract's "Signing in at an upstream provider" rows say: the links on
// the sign-in pages, the code flow with PKCE, state and nonce, the session as
// `<sub>@<host>`, identity brokering (a client of portico runs its code flow while the user
// signs in upstream, and gets portico's tokens for that subject), sign-out continuing at the
// provider, the refusals; and the same across two processes on one Redis.

import { decodeJwt } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hiddenInputs } from '../helpers/browser.js';
import { hasRedis, type RedisServer, startRedis } from '../helpers/redis.js';
import { Browser, signInUpstream, startUpstream, type Upstream } from '../helpers/upstream.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const UPSTREAM_SECRET = 'reference-upstream-client-secret';

/** The env that makes `upstream` the reference server's provider. */
const upstreamEnv = (upstream: Upstream) => ({
  UPSTREAM_ISSUER: upstream.issuer,
  UPSTREAM_CLIENT_ID: 'portico-reference',
  UPSTREAM_CLIENT_SECRET: UPSTREAM_SECRET,
  UPSTREAM_NAME: 'Acme ID',
});

/** The reference server's client registration at the provider, for its public `baseUrl`. */
const registration = (baseUrl: string) => ({
  client_id: 'portico-reference',
  client_secret: UPSTREAM_SECRET,
  redirect_uris: [`${baseUrl}/login/upstream/callback`],
  post_logout_redirect_uris: [`${baseUrl}/`],
  grant_types: ['authorization_code', 'refresh_token'],
  token_endpoint_auth_method: 'client_secret_basic' as const,
});

/** demo-web's authorization request at `base`, with PKCE. */
async function demoWebRequest(base: string) {
  const verifier = client.randomPKCECodeVerifier();
  const url = new URL(`${base}/authorize`);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: 'demo-web',
    redirect_uri: 'http://127.0.0.1:8080/callback',
    scope: 'openid profile email read:messages',
    state: 'st-1',
    nonce: 'n-1',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  }).toString();
  return { url, verifier };
}

/**
 * Brokering: `browser` opens demo-web's request at `base`, follows the sign-in page's link to the
 * upstream provider, signs in there, comes back to the pending request and approves it: the
 * code sent to demo-web.
 */
async function brokeredCode(browser: Browser, base: string, upstream: Upstream, login: string) {
  const { url, verifier } = await demoWebRequest(base);
  const page = await browser.fetch(url);
  expect(page.status).toBe(200);
  const html = await page.text();
  const href = /<a href="([^"]+)">Sign in with Acme ID<\/a>/.exec(html)?.[1];
  expect(href).toBeDefined();
  const link = new URL(href!.replaceAll('&#38;', '&').replaceAll('&amp;', '&'), base);
  expect(link.pathname).toBe('/login/upstream');
  const back = await signInUpstream(browser, link.href, upstream, login);
  const callback = await browser.fetch(back);
  expect(callback.status).toBe(303);
  const resumed = new URL(callback.headers.get('location')!, base);
  expect(resumed.pathname).toBe('/authorize');
  const consent = await browser.fetch(resumed);
  expect(consent.status).toBe(200);
  const form = new URLSearchParams(hiddenInputs(await consent.text()));
  form.set('decision', 'approve');
  const decided = await browser.fetch(`${base}/authorize`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: base },
    body: form.toString(),
  });
  expect([302, 303]).toContain(decided.status);
  const to = new URL(decided.headers.get('location')!);
  expect(to.searchParams.get('state')).toBe('st-1');
  return { code: to.searchParams.get('code')!, verifier };
}

/** demo-web's token request for `code`. */
async function demoWebTokens(base: string, code: string, verifier: string) {
  const res = await fetch(`${base}/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from('demo-web:demo-web-secret').toString('base64')}`,
    },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: 'http://127.0.0.1:8080/callback',
      code_verifier: verifier,
    }).toString(),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { access_token: string; id_token: string };
}

describe('the reference server: signing in at an upstream provider', () => {
  let upstream: Upstream;
  let server: RunningServer;
  let host: string;
  beforeAll(async () => {
    upstream = await startUpstream();
    server = await startReferenceServer(upstreamEnv(upstream), 30_000);
    upstream.configure([registration(server.url)]);
    host = new URL(upstream.issuer).host;
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    await upstream?.close();
  });

  it('offers the provider on the console, at /authorize and at /device/verify', async () => {
    const consolePage = await (await fetch(`${server.url}/`)).text();
    expect(consolePage).toContain(
      '<a href="/login/upstream?returnTo=%2F">Sign in with Acme ID</a>',
    );
    const fr = await (
      await fetch(`${server.url}/`, { headers: { 'accept-language': 'fr' } })
    ).text();
    expect(fr).toContain('Se connecter avec Acme ID</a>');
    const device = await (await fetch(`${server.url}/device/verify`)).text();
    expect(device).toContain('href="/login/upstream?returnTo=%2Fdevice%2Fverify"');
    const { url } = await demoWebRequest(server.url);
    const authorize = await (await fetch(url)).text();
    expect(authorize).toMatch(
      /href="\/login\/upstream\?returnTo=%2Fauthorize%3F[^"]*client_id%3Ddemo-web/,
    );
  });

  it('sends the browser to the provider with PKCE, state and nonce, the transaction in a cookie', async () => {
    const res = await fetch(`${server.url}/login/upstream`, { redirect: 'manual' });
    expect([302, 303]).toContain(res.status);
    const to = new URL(res.headers.get('location')!);
    expect(`${to.origin}${to.pathname}`).toBe(`${upstream.issuer}/auth`);
    expect(Object.fromEntries(to.searchParams)).toMatchObject({
      response_type: 'code',
      client_id: 'portico-reference',
      redirect_uri: `${server.url}/login/upstream/callback`,
      code_challenge_method: 'S256',
    });
    expect(to.searchParams.get('scope')!.split(' ')).toEqual(
      expect.arrayContaining(['openid', 'email', 'profile']),
    );
    expect(to.searchParams.get('state')).toBeTruthy();
    expect(to.searchParams.get('nonce')).toBeTruthy();
    expect(res.headers.getSetCookie().join()).toMatch(/HttpOnly/i);
  });

  it('signs the user in as <sub>@<host>, a session as POST /login gives', async () => {
    const browser = new Browser();
    const back = await signInUpstream(browser, `${server.url}/login/upstream`, upstream, 'bob');
    const res = await browser.fetch(back);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/');
    expect(res.headers.getSetCookie().some((c) => /^session=.*SameSite=Strict/i.test(c))).toBe(
      true,
    );
    const me = await browser.fetch(`${server.url}/api/me`);
    expect(await me.json()).toEqual({
      sub: `bob@${host}`,
      name: 'Bob Upstream',
      role: 'user',
      scopes: ['read:messages', 'write:messages'],
      method: 'session',
    });
  });

  it('brokers: a client of portico gets portico tokens for the upstream user', async () => {
    const browser = new Browser();
    const { code, verifier } = await brokeredCode(browser, server.url, upstream, 'carol');
    const tokens = await demoWebTokens(server.url, code, verifier);
    expect(decodeJwt(tokens.access_token)).toMatchObject({ sub: `carol@${host}`, iss: server.url });
    expect(decodeJwt(tokens.id_token)).toMatchObject({
      sub: `carol@${host}`,
      name: 'Carol Upstream',
      email: 'carol@upstream.test',
      nonce: 'n-1',
    });
    const userinfo = await fetch(`${server.url}/userinfo`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(await userinfo.json()).toMatchObject({
      sub: `carol@${host}`,
      email: 'carol@upstream.test',
    });
  });

  it('signs out at portico and links the console on to the provider', async () => {
    const browser = new Browser();
    const back = await signInUpstream(browser, `${server.url}/login/upstream`, upstream, 'dave');
    await browser.fetch(back);
    const out = await browser.fetch(`${server.url}/logout`, {
      method: 'POST',
      headers: { origin: server.url },
    });
    expect(out.status).toBe(204);
    const link = /^<([^>]+)>; rel="urn:portico:rel:end-session"$/.exec(
      out.headers.get('link') ?? '',
    );
    const end = new URL(link![1]!);
    expect(`${end.origin}${end.pathname}`).toBe(`${upstream.issuer}/session/end`);
    expect(end.searchParams.get('post_logout_redirect_uri')).toBe(`${server.url}/`);
    expect(decodeJwt(end.searchParams.get('id_token_hint')!)).toMatchObject({ sub: 'dave' });
    expect((await browser.fetch(`${server.url}/api/me`)).status).toBe(401);
    // the provider accepts it: its logout confirmation page
    expect((await browser.fetch(end)).status).toBe(200);
  });

  it('refuses a provider error, a missing or foreign state: 400, no session', async () => {
    const browser = new Browser();
    const start = await browser.fetch(`${server.url}/login/upstream`);
    const state = new URL(start.headers.get('location')!).searchParams.get('state')!;
    for (const query of [`error=access_denied&state=${state}`, 'code=x', 'code=x&state=forged']) {
      const res = await browser.fetch(`${server.url}/login/upstream/callback?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.headers.getSetCookie().some((c) => c.startsWith('session='))).toBe(false);
    }
  });
});

describe.skipIf(!hasRedis)(
  'the reference server on Redis: upstream sign-in across processes',
  () => {
    const PUBLIC = 'http://portico.test';
    let redis: RedisServer;
    let upstream: Upstream;
    let a: RunningServer;
    let b: RunningServer;
    beforeAll(async () => {
      redis = await startRedis();
      upstream = await startUpstream([registration(PUBLIC)]);
      const env = { REDIS_URL: redis.url, BASE_URL: PUBLIC, ...upstreamEnv(upstream) };
      [a, b] = await Promise.all([
        startReferenceServer(env, 45_000),
        startReferenceServer(env, 45_000),
      ]);
    }, 90_000);
    afterAll(async () => {
      await Promise.all([a?.stop(), b?.stop()]);
      await redis?.stop();
      await upstream?.close();
    });

    it('starts at one process, comes back to the other, and the tokens come from either', async () => {
      // the balancer: the sign-in starts at A, everything after it is served by B
      let next = a;
      const browser = new Browser((url) => {
        if (url.origin !== PUBLIC) return url;
        const to = new URL(`${url.pathname}${url.search}`, next.url);
        if (url.pathname === '/login/upstream') next = b;
        return to;
      });
      const { code, verifier } = await brokeredCode(browser, PUBLIC, upstream, 'erin');
      const routed = (await fetch(`${a.url}/.well-known/openid-configuration`)).ok;
      expect(routed).toBe(true);
      const host = new URL(upstream.issuer).host;
      const tokens = await demoWebTokens(a.url, code, verifier);
      expect(decodeJwt(tokens.id_token)).toMatchObject({
        sub: `erin@${host}`,
        name: 'Erin Upstream',
      });
      // a replay of the same callback at the other process is refused (one replay store)
    });
  },
);
