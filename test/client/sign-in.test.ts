// createSignIn() against panva's oidc-provider on 127.0.0.1: the whole code flow with PKCE,
// state and nonce, the session it starts, sign-out with RP-initiated logout, and every refusal
// an attacker of the composition tries (state replayed or from another browser, a code from
// another session, returnTo to another origin, a provider down).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toNodeListener } from '../../src/adapters/node-listener.ts';
import { authenticate } from '../../src/auth/authenticate.ts';
import { createSessions } from '../../src/auth/session/session.ts';
import { upstreamProvider } from '../../src/client/provider.ts';
import { createSignIn, type SignIn } from '../../src/client/sign-in.ts';
import { compose } from '../../src/core/compose.ts';
import { getPrincipal } from '../../src/core/principal.ts';
import { sendJson } from '../../src/core/send.ts';
import { createRouter } from '../../src/http/routing/router.ts';
import { closeAll, type Listening, listen } from '../helpers/http.ts';
import { Browser, signInUpstream, startUpstream, type Upstream } from '../helpers/upstream.ts';

const SECRET = 'sign-in-test-secret-0123456789abcdef';
const CLIENT_SECRET = 'portico-app-secret';

let app: Listening;
let upstream: Upstream;
let signIn: SignIn;
const linked: unknown[] = [];

beforeAll(async () => {
  let handler: (req: never, res: never) => void = () => {};
  app = await listen((req, res) => handler(req as never, res as never));
  upstream = await startUpstream([
    {
      client_id: 'portico-app',
      client_secret: CLIENT_SECRET,
      redirect_uris: [`${app.url}/login/upstream/callback`],
      post_logout_redirect_uris: [`${app.url}/`],
      grant_types: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ]);
  const sessions = createSessions({ allowedOrigins: [app.url], cookie: { secure: false } });
  signIn = createSignIn({
    baseUrl: app.url,
    secret: SECRET,
    sessions,
    cookie: { secure: false },
    providers: [
      upstreamProvider({
        name: 'upstream',
        label: 'Upstream',
        issuer: upstream.issuer,
        clientId: 'portico-app',
        clientSecret: CLIENT_SECRET,
      }),
      upstreamProvider({
        name: 'down',
        issuer: 'http://127.0.0.1:1',
        clientId: 'x',
        timeout: 2_000,
      }),
    ],
    toUser({ provider, claims }) {
      linked.push(claims);
      if (claims.sub === 'mallory') return undefined;
      return {
        sub: `${claims.sub}@${provider.name}`,
        name: String(claims.name),
        scopes: ['read:messages'],
      };
    },
  });
  const me = compose([
    authenticate([sessions.authenticator]),
    (req, res) => sendJson(res, 200, { ...getPrincipal(req), claims: undefined }),
  ]);
  const router = createRouter({ ...signIn.routes, '/me': { GET: me } });
  handler = toNodeListener([router]) as never;
});
afterAll(async () => {
  await closeAll();
  await upstream.close();
});

async function signedIn(browser: Browser, login = 'alice', returnTo?: string) {
  const start = `${app.url}/login/upstream${returnTo === undefined ? '' : `?returnTo=${encodeURIComponent(returnTo)}`}`;
  const back = await signInUpstream(browser, start, upstream, login);
  return { back, res: await browser.fetch(back) };
}

describe('createSignIn(): the code flow at an OpenID Provider', () => {
  it('redirects to the provider with PKCE S256, state, nonce and the registered redirect URI', async () => {
    const browser = new Browser();
    const res = await browser.fetch(`${app.url}/login/upstream?returnTo=/me`);
    expect(res.status).toBe(303);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const to = new URL(res.headers.get('location')!);
    expect(to.origin).toBe(upstream.issuer);
    expect(Object.fromEntries(to.searchParams)).toMatchObject({
      response_type: 'code',
      client_id: 'portico-app',
      redirect_uri: `${app.url}/login/upstream/callback`,
      scope: 'openid email profile',
      code_challenge_method: 'S256',
    });
    expect(to.searchParams.get('state')).toMatch(/^[\w-]{43}$/);
    expect(to.searchParams.get('nonce')).toMatch(/^[\w-]{43}$/);
    expect(to.searchParams.get('code_challenge')).toMatch(/^[\w-]{43}$/);
    const [line] = res.headers.getSetCookie();
    expect(line).toMatch(/^portico-sign-in=[\w.-]+; Max-Age=600; Path=\/; HttpOnly; SameSite=Lax$/);
    // the cookie is sealed: nothing of the transaction reads in it
    expect(line).not.toContain(to.searchParams.get('state'));
  });

  it('signs the user in with the session, as toUser says, and returns to returnTo', async () => {
    const browser = new Browser();
    const { back, res } = await signedIn(browser, 'alice', '/me?tab=1');
    expect(back.pathname).toBe('/login/upstream/callback');
    expect(back.searchParams.get('iss')).toBe(upstream.issuer);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/me?tab=1');
    const cookies = res.headers.getSetCookie();
    expect(cookies.some((c) => /^portico-sign-in=; Max-Age=0/.test(c))).toBe(true);
    expect(cookies.some((c) => /^session=[\w-]{43}; .*SameSite=Strict/.test(c))).toBe(true);
    const me = await browser.fetch(`${app.url}/me`);
    expect(await me.json()).toMatchObject({
      sub: 'alice@upstream',
      name: 'Alice Upstream',
      method: 'session',
      scopes: ['read:messages'],
    });
    expect(linked.at(-1)).toMatchObject({
      sub: 'alice',
      email: 'alice@upstream.test',
      iss: upstream.issuer,
      aud: 'portico-app',
    });
  });

  it('continues with a page, not a redirect, after a cross-site arrival (SameSite=Strict)', async () => {
    const browser = new Browser();
    const back = await signInUpstream(browser, `${app.url}/login/upstream?returnTo=/me`, upstream);
    const res = await browser.fetch(back, { headers: { 'sec-fetch-site': 'cross-site' } });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('<meta http-equiv="refresh" content="0;url=/me">');
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
  });

  it('refuses a callback replayed with its cookie, and one without it', async () => {
    const browser = new Browser();
    const back = await signInUpstream(browser, `${app.url}/login/upstream`, upstream);
    const cookie = browser.jar(back).get('portico-sign-in')!;
    expect((await browser.fetch(back)).status).toBe(303);
    // the cookie is cleared; an attacker replays URL and cookie together
    const replayed = await fetch(back, {
      redirect: 'manual',
      headers: { cookie: `portico-sign-in=${cookie}` },
    });
    expect(replayed.status).toBe(400);
    expect(await replayed.json()).toMatchObject({
      status: 400,
      detail: /used already|Start again/,
    });
    const without = await fetch(back, { redirect: 'manual' });
    expect(without.status).toBe(400);
    expect(without.headers.getSetCookie().some((c) => c.startsWith('session='))).toBe(false);
  });

  it('refuses a state from another browser and a code injected into another session', async () => {
    const victim = new Browser();
    const attacker = new Browser();
    // the victim started a sign-in; the attacker's own callback URL (code, state) is fed to it
    await victim.fetch(`${app.url}/login/upstream`);
    const attackersBack = await signInUpstream(
      attacker,
      `${app.url}/login/upstream`,
      upstream,
      'mallory',
    );
    const fed = await victim.fetch(attackersBack);
    expect(fed.status).toBe(400);
    expect(fed.headers.getSetCookie().some((c) => c.startsWith('session='))).toBe(false);
    // the same code under the victim's own state: PKCE binds the code to the attacker's verifier
    const victimStart = await victim.fetch(`${app.url}/login/upstream`);
    const state = new URL(victimStart.headers.get('location')!).searchParams.get('state')!;
    const injected = new URL(attackersBack);
    injected.searchParams.set('state', state);
    const res = await victim.fetch(injected);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      detail: /refused the sign-in while exchanging the code \(invalid_grant\)/,
    });
    expect(res.headers.getSetCookie().some((c) => c.startsWith('session='))).toBe(false);
  });

  it('refuses a user toUser refuses (403), and a provider error (400)', async () => {
    const browser = new Browser();
    const { res } = await signedIn(browser, 'mallory');
    expect(res.status).toBe(403);
    expect(res.headers.getSetCookie().some((c) => c.startsWith('session='))).toBe(false);
    const start = await browser.fetch(`${app.url}/login/upstream`);
    const state = new URL(start.headers.get('location')!).searchParams.get('state')!;
    const denied = await browser.fetch(
      `${app.url}/login/upstream/callback?error=access_denied&state=${state}`,
    );
    expect(denied.status).toBe(400);
    expect(await denied.json()).toMatchObject({
      detail: 'The sign-in at Upstream was cancelled or refused.',
    });
  });

  it('refuses returnTo of another origin, and a repeated one', async () => {
    const browser = new Browser();
    for (const returnTo of ['https://evil.test/', '//evil.test/x', '/\\evil.test', 'me', '/a\nb']) {
      const res = await browser.fetch(
        `${app.url}/login/upstream?returnTo=${encodeURIComponent(returnTo)}`,
      );
      expect(res.status, returnTo).toBe(400);
      expect(res.headers.getSetCookie()).toEqual([]);
    }
    const twice = await browser.fetch(`${app.url}/login/upstream?returnTo=/a&returnTo=/b`);
    expect(twice.status).toBe(400);
  });

  it('answers 502 when the provider cannot be reached, and starts no transaction', async () => {
    const res = await new Browser().fetch(`${app.url}/login/down`);
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ status: 502, detail: /down cannot be reached/ });
    expect(res.headers.getSetCookie()).toEqual([]);
  });

  it('signs out at portico and continues to the provider with id_token_hint', async () => {
    const browser = new Browser();
    await signedIn(browser);
    let endSession: string | undefined;
    const out = createRouter({
      '/logout': {
        async POST(req, res) {
          endSession = await signIn.signOut(req, res, { postLogoutRedirectUri: `${app.url}/` });
          res.end();
        },
      },
    });
    const server = await listen(toNodeListener([out]) as never);
    const res = await fetch(`${server.url}/logout`, {
      method: 'POST',
      headers: { cookie: `session=${browser.jar(new URL(app.url)).get('session')}` },
    });
    expect(res.status).toBe(200);
    const url = new URL(endSession!);
    expect(url.origin + url.pathname).toBe(`${upstream.issuer}/session/end`);
    expect(url.searchParams.get('post_logout_redirect_uri')).toBe(`${app.url}/`);
    expect(url.searchParams.get('id_token_hint')).toMatch(/^eyJ/);
    // the session is over at portico
    expect((await browser.fetch(`${app.url}/me`)).status).toBe(401);
  });
});
