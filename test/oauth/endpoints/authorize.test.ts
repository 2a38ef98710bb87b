import { createHash } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createSessions } from '../../../src/auth/session/session.js';
import { silentLogger } from '../../../src/diagnostics/index.js';
import { createRouter } from '../../../src/http/routing/router.js';
import { securityHeaders } from '../../../src/http/security-headers.js';
import { defineClient } from '../../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../../src/oauth/clients/store.js';
import { createOAuthContext, type OAuthContext } from '../../../src/oauth/context.js';
import { createAuthorizeEndpoint } from '../../../src/oauth/endpoints/authorize.js';
import { escapeHtml } from '../../../src/oauth/pages/render.js';
import { codes, consents } from '../../../src/oauth/store/records.js';
import { MemoryRecordStore } from '../../../src/oauth/store/store.js';
import { hashToken } from '../../../src/oauth/tokens/issue.js';
import { createKeySet } from '../../../src/oauth/tokens/key-set.js';
import { hiddenInputs, sessionCookie } from '../../helpers/browser.js';
import { closeAll, type Listening, type Reply, request, serve } from '../../helpers/http.js';

const ISSUER = 'https://auth.example.test';
const WEB_CB = 'https://app.example.com/cb';
const SPA_CB = 'http://127.0.0.1:5173/callback';
const VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
const CHALLENGE = createHash('sha256').update(VERIFIER).digest('base64url');
const USERS: Record<string, { password: string; name: string; role: string }> = {
  alice: { password: 'alice-password', name: 'Alice Example', role: 'admin' },
  bob: { password: 'bob-password', name: 'Bob Example', role: 'user' },
};

let server: Listening;
let store: MemoryRecordStore;
let ctx: OAuthContext;

beforeAll(async () => {
  const scopes = ['openid', 'profile', 'email', 'offline_access', 'read:messages'];
  const clients = new MemoryClientStore([
    await defineClient({
      clientId: 'web',
      name: 'Web <App> & "Co"',
      secret: 'web-secret-123',
      grantTypes: ['authorization_code', 'refresh_token'],
      redirectUris: [WEB_CB],
      scopes,
    }),
    await defineClient({
      clientId: 'spa',
      grantTypes: ['authorization_code', 'refresh_token'],
      redirectUris: [SPA_CB, 'http://localhost:5173/callback'],
      scopes,
    }),
    await defineClient({
      clientId: 'tenant',
      secret: 'tenant-secret-123',
      grantTypes: ['authorization_code'],
      redirectUris: ['https://tenant.example.com/cb?tenant=a%20b&x=~'],
      scopes,
    }),
    await defineClient({
      clientId: 'native',
      grantTypes: ['authorization_code'],
      redirectUris: ['com.example.app:/oauth'],
      scopes,
    }),
    await defineClient({
      clientId: 'service',
      secret: 'service-secret-123',
      grantTypes: ['client_credentials'],
      redirectUris: ['https://svc.example.com/cb'],
      scopes: ['read:messages'],
    }),
  ]);
  store = new MemoryRecordStore();
  ctx = createOAuthContext({
    issuer: ISSUER,
    clients,
    keys: await createKeySet(),
    store,
    users: {
      verify(username, password) {
        const user = USERS[username];
        return user?.password === password
          ? { sub: username, name: user.name, role: user.role }
          : undefined;
      },
      get: (sub) => (USERS[sub] ? { sub, name: USERS[sub].name } : undefined),
    },
    // the clock read at each call, so that the prompt and max_age tests can move it
    sessions: createSessions({
      allowedOrigins: [ISSUER],
      cookie: { secure: false },
      now: () => Date.now(),
    }),
  });
  server = await serve(
    [securityHeaders(), createRouter({ '/authorize': createAuthorizeEndpoint(ctx) })],
    { logger: silentLogger },
  );
});

afterAll(closeAll);

// every test starts with no remembered consent: each asks for the consent page it needs
beforeEach(async () => {
  for (const sub of Object.keys(USERS)) {
    for (const grant of await consents(store).list(sub))
      await consents(store).delete(sub, grant.id);
  }
});

// ---- a small browser ------------------------------------------------------------------------

const authorize = (query: Record<string, string> | string, cookie?: string) =>
  request(server, `/authorize?${new URLSearchParams(query)}`, {
    headers: cookie === undefined ? {} : { Cookie: cookie },
  });

function post(
  fields: readonly (readonly [string, string])[],
  cookie?: string,
  headers: Record<string, string> = {},
): Promise<Reply> {
  return request(server, '/authorize', {
    method: 'POST',
    headers: {
      'Content-Type': 'application/x-www-form-urlencoded',
      ...(cookie === undefined ? {} : { Cookie: cookie }),
      ...headers,
    },
    body: new URLSearchParams(fields.map(([n, v]): [string, string] => [n, v])).toString(),
  });
}

const webQuery = (extra: Record<string, string> = {}) => ({
  response_type: 'code',
  client_id: 'web',
  redirect_uri: WEB_CB,
  scope: 'openid profile',
  state: 'st-123',
  nonce: 'n-456',
  code_challenge: CHALLENGE,
  code_challenge_method: 'S256',
  ...extra,
});

/** Signs in from the sign-in page of `query`: the consent page's reply and the session cookie. */
async function signIn(query: Record<string, string>, user = 'alice') {
  const page = await authorize(query);
  expect(page.status).toBe(200);
  expect(page.body).toContain('name="password"');
  const reply = await post([
    ...hiddenInputs(page.body),
    ['username', user],
    ['password', USERS[user]!.password],
  ]);
  const cookie = sessionCookie(reply.headers);
  expect(reply.status).toBe(200);
  expect(cookie).toBeDefined();
  expect(reply.body).toContain('name="decision" value="approve"');
  return { consent: reply, cookie: cookie! };
}

function location(reply: Reply): URL {
  expect(reply.status).toBe(303);
  return new URL(reply.headers.location!);
}

function expectErrorPage(reply: Reply, status = 400) {
  expect(reply.status).toBe(status);
  expect(reply.headers.location).toBeUndefined();
  expect(reply.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(reply.headers['cache-control']).toBe('no-store');
}

// ---- tests ----------------------------------------------------------------------------------

describe('GET /authorize: client and redirect URI', () => {
  it('answers an unknown or missing client with a 400 page, never a redirect', async () => {
    expectErrorPage(await authorize(webQuery({ client_id: 'nobody' })));
    const { client_id: _, ...noClient } = webQuery();
    expectErrorPage(await authorize(noClient));
    expectErrorPage(await authorize(`${new URLSearchParams(webQuery())}&client_id=spa`));
  });

  it('compares the redirect URI exactly: no prefix, pattern, normalisation or re-encoding', async () => {
    const tries = [
      'https://app.example.com/cb/../cb',
      'https://app.example.com/cb/',
      'https://app.example.com/cb?extra=1',
      'https://app.example.com/cb#frag',
      'https://app.example.com/cbx',
      'https://app.example.com/c',
      'https://app.example.com',
      'HTTPS://app.example.com/cb',
      'https://APP.example.com/cb',
      'https://app.example.com:443/cb',
      'https://app.example.com%2Fcb',
      'https://app.example.com/%63b',
      'https://app.example.com.evil.example/cb',
      'https://evil.example/?https://app.example.com/cb',
      'https://app.example.com@evil.example/cb',
      'http://app.example.com/cb',
      ` ${WEB_CB}`,
      SPA_CB,
    ];
    for (const redirect_uri of tries) {
      const reply = await authorize(webQuery({ redirect_uri }));
      expectErrorPage(reply);
      expect(reply.body).toContain('not registered');
    }
    // double encoding in the raw query: decodes once to …%2Fcb, which is not registered
    const raw = new URLSearchParams(webQuery({ redirect_uri: 'X' }))
      .toString()
      .replace('redirect_uri=X', 'redirect_uri=https%3A%2F%2Fapp.example.com%252Fcb');
    expectErrorPage(await authorize(raw));
    // repeated redirect_uri
    expectErrorPage(await authorize(`${new URLSearchParams(webQuery())}&redirect_uri=${WEB_CB}`));
  });

  it('takes the only registered URI when none is sent, and requires one among several', async () => {
    const { redirect_uri: _, ...noUri } = webQuery();
    const reply = await authorize(noUri);
    expect(reply.status).toBe(200);
    expect(reply.body).toContain('name="password"');
    expectErrorPage(
      await authorize({ response_type: 'code', client_id: 'spa', code_challenge: CHALLENGE }),
    );
  });
});

describe('GET /authorize: errors redirected to the client (RFC 6749 §4.1.2.1)', () => {
  const cases: [string, Record<string, string>, string][] = [
    ['a response_type other than code', { response_type: 'token' }, 'unsupported_response_type'],
    [
      'response_type=code id_token',
      { response_type: 'code id_token' },
      'unsupported_response_type',
    ],
    [
      'a client without the code grant',
      { client_id: 'service', redirect_uri: 'https://svc.example.com/cb' },
      'unauthorized_client',
    ],
    ['an unknown scope', { scope: 'openid admin' }, 'invalid_scope'],
    ['a malformed scope', { scope: 'read:"x"' }, 'invalid_scope'],
    ['PKCE plain', { code_challenge: VERIFIER, code_challenge_method: 'plain' }, 'invalid_request'],
    [
      'a challenge without a method (plain by default)',
      { code_challenge_method: '' },
      'invalid_request',
    ],
    ['a method without a challenge', { code_challenge: '' }, 'invalid_request'],
    ['a malformed challenge', { code_challenge: 'short' }, 'invalid_request'],
    [
      'a challenge with padding',
      { code_challenge: `${CHALLENGE.slice(0, 42)}=` },
      'invalid_request',
    ],
    ['a lower-case method', { code_challenge_method: 's256' }, 'invalid_request'],
    ['response_mode=fragment', { response_mode: 'fragment' }, 'invalid_request'],
    ['an oversized nonce', { nonce: 'n'.repeat(1025) }, 'invalid_request'],
  ];
  for (const [what, extra, error] of cases) {
    it(`redirects ${what} as ${error}, with state and iss`, async () => {
      const reply = await authorize(webQuery(extra));
      const url = location(reply);
      const redirect = extra.redirect_uri ?? WEB_CB;
      expect(`${url.origin}${url.pathname}`).toBe(redirect);
      expect(url.searchParams.get('error')).toBe(error);
      expect(url.searchParams.get('error_description')).toBeTruthy();
      expect(url.searchParams.get('state')).toBe('st-123');
      expect(url.searchParams.get('iss')).toBe(ISSUER);
      expect(url.searchParams.has('code')).toBe(false);
    });
  }

  it('redirects a missing response_type as invalid_request', async () => {
    const { response_type: _, ...rest } = webQuery();
    expect(location(await authorize(rest)).searchParams.get('error')).toBe('invalid_request');
  });

  it('requires PKCE of public clients', async () => {
    const url = location(
      await authorize({
        response_type: 'code',
        client_id: 'spa',
        redirect_uri: SPA_CB,
        state: 's',
      }),
    );
    expect(url.origin + url.pathname).toBe(SPA_CB);
    expect(url.searchParams.get('error')).toBe('invalid_request');
    expect(url.searchParams.get('error_description')).toMatch(/PKCE/);
    expect(url.searchParams.get('state')).toBe('s');
  });

  it('requires PKCE of confidential clients too (RFC 9700 §2.1.1)', async () => {
    const { code_challenge: _, code_challenge_method: __, ...rest } = webQuery();
    const { cookie } = await signIn(webQuery());
    for (const reply of [await authorize(rest), await authorize(rest, cookie)]) {
      const url = location(reply);
      expect(`${url.origin}${url.pathname}`).toBe(WEB_CB);
      expect(url.searchParams.get('error')).toBe('invalid_request');
      expect(url.searchParams.get('error_description')).toMatch(/PKCE.*code_challenge/);
      expect(url.searchParams.get('state')).toBe('st-123');
      expect(url.searchParams.get('iss')).toBe(ISSUER);
      expect(url.searchParams.has('code')).toBe(false);
    }
  });

  it('refuses repeated parameters', async () => {
    const url = location(await authorize(`${new URLSearchParams(webQuery())}&scope=email`));
    expect(url.searchParams.get('error')).toBe('invalid_request');
    expect(url.searchParams.get('error_description')).toMatch(/scope/);
  });

  it('refuses an oversized state without echoing it', async () => {
    const url = location(await authorize(webQuery({ state: 's'.repeat(1025) })));
    expect(url.searchParams.get('error')).toBe('invalid_request');
    expect(url.searchParams.has('state')).toBe(false);
    expect(url.searchParams.get('iss')).toBe(ISSUER);
  });

  it('keeps the query of a registered redirect URI as registered', async () => {
    const reply = await authorize({
      response_type: 'token',
      client_id: 'tenant',
      state: 'x',
    });
    expect(reply.status).toBe(303);
    expect(reply.headers.location).toBe(
      `https://tenant.example.com/cb?tenant=a%20b&x=~&error=unsupported_response_type&error_description=${new URLSearchParams({ d: 'Only response_type=code is supported.' }).toString().slice(2)}&state=x&iss=${encodeURIComponent(ISSUER)}`,
    );
  });
});

describe('the pages', () => {
  it('serves an HTML sign-in form with a CSP that lets the consent redirect reach the client', async () => {
    const reply = await authorize(webQuery());
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(reply.headers['cache-control']).toBe('no-store');
    const csp = reply.headers['content-security-policy']!;
    expect(csp).toContain("form-action 'self' https://app.example.com;");
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('script-src');
    expect(reply.body).toContain('<form method="post">');
    expect(reply.body).toMatch(/<input [^>]*name="username"[^>]*autocomplete="username"/);
    expect(reply.body).toMatch(
      /<input type="password" [^>]*name="password"[^>]*autocomplete="current-password"/,
    );
    expect(reply.body).toMatch(/<label for="username">/);
    expect(reply.body).toContain('<html lang="en">');
    const fields = Object.fromEntries(hiddenInputs(reply.body));
    expect(fields).toMatchObject({ client_id: 'web', redirect_uri: WEB_CB, state: 'st-123' });
    expect(fields.csrf_token).toMatch(/^\d+\.[A-Za-z0-9_-]{43}$/);
  });

  it('escapes everything it shows', async () => {
    const state = '"><script>alert(1)</script>';
    const reply = await authorize(webQuery({ state }));
    expect(reply.body).not.toContain('<script>');
    expect(reply.body).toContain(escapeHtml(state));
    expect(reply.body).toContain('Web &lt;App&gt; &amp; &quot;Co&quot;');
    expect(Object.fromEntries(hiddenInputs(reply.body)).state).toBe(state);
  });

  it('allows a private-use scheme redirect by its scheme in form-action', async () => {
    const reply = await authorize({
      response_type: 'code',
      client_id: 'native',
      code_challenge: CHALLENGE,
      code_challenge_method: 'S256',
    });
    expect(reply.headers['content-security-policy']).toContain(
      "form-action 'self' com.example.app:;",
    );
  });

  it('gives the consent page the same CSP', async () => {
    const { consent } = await signIn(webQuery());
    expect(consent.headers['content-security-policy']).toContain(
      "form-action 'self' https://app.example.com;",
    );
    expect(consent.body).toContain('<form method="post">');
    expect(consent.body).toContain('<button type="submit" name="decision" value="deny">');
    expect(consent.body).toContain('Alice Example');
  });
});

describe('sign-in', () => {
  it('stays on our page after a wrong password: 401, no redirect, no session', async () => {
    const page = await authorize(webQuery());
    const reply = await post([
      ...hiddenInputs(page.body),
      ['username', 'alice'],
      ['password', 'nope'],
    ]);
    expect(reply.status).toBe(401);
    expect(reply.headers.location).toBeUndefined();
    expect(sessionCookie(reply.headers)).toBeUndefined();
    expect(reply.headers['www-authenticate']).toBe('Cookie cookie-name="session"');
    expect(reply.body).toContain('role="alert"');
    expect(reply.body).toContain('name="password"');
    expect(reply.body).toContain('value="alice"');
    // the page can be posted again
    const again = await post([
      ...hiddenInputs(reply.body),
      ['username', 'alice'],
      ['password', 'alice-password'],
    ]);
    expect(again.status).toBe(200);
    expect(again.body).toContain('value="approve"');
  });

  it('refuses a sign-in post without its form token, or with altered inputs', async () => {
    const page = await authorize(webQuery());
    const fields = hiddenInputs(page.body);
    const creds: [string, string][] = [
      ['username', 'alice'],
      ['password', 'alice-password'],
    ];
    const noToken = await post([...fields.filter(([n]) => n !== 'csrf_token'), ...creds]);
    expectErrorPage(noToken);
    expect(sessionCookie(noToken.headers)).toBeUndefined();
    const altered = fields.map(([n, v]): [string, string] => [
      n,
      n === 'scope' ? 'openid email' : v,
    ]);
    expectErrorPage(await post([...altered, ...creds]));
  });

  it('refuses a sign-in from a foreign origin (login CSRF)', async () => {
    const page = await authorize(webQuery());
    const reply = await post(
      [...hiddenInputs(page.body), ['username', 'alice'], ['password', 'alice-password']],
      undefined,
      { Origin: 'https://evil.example' },
    );
    expect(reply.status).toBe(403);
    expect(reply.headers.location).toBeUndefined();
    expect(sessionCookie(reply.headers)).toBeUndefined();
  });

  it('shows the consent page at once to a signed-in user', async () => {
    const { cookie } = await signIn(webQuery());
    const reply = await authorize(webQuery(), cookie);
    expect(reply.status).toBe(200);
    expect(reply.body).toContain('name="decision" value="approve"');
    expect(reply.body).not.toContain('name="password"');
  });
});

describe('consent', () => {
  it('approves: 303 to the redirect URI with code, state and iss; the code is stored by hash', async () => {
    const { consent, cookie } = await signIn(webQuery());
    const before = Math.floor(Date.now() / 1000);
    const reply = await post([...hiddenInputs(consent.body), ['decision', 'approve']], cookie);
    const url = location(reply);
    expect(reply.headers['cache-control']).toBe('no-store');
    expect(`${url.origin}${url.pathname}`).toBe(WEB_CB);
    expect([...url.searchParams.keys()].sort()).toEqual(['code', 'iss', 'state']);
    expect(url.searchParams.get('state')).toBe('st-123');
    expect(url.searchParams.get('iss')).toBe(ISSUER);
    const code = url.searchParams.get('code')!;
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(codes(store).consume(code)).toBeUndefined(); // never stored in clear
    const consumed = codes(store).consume(hashToken(code));
    expect(consumed?.state).toBe('fresh');
    expect(consumed?.record).toEqual({
      clientId: 'web',
      redirectUri: WEB_CB,
      sub: 'alice',
      scope: ['openid', 'profile'],
      codeChallenge: CHALLENGE,
      nonce: 'n-456',
      authTime: expect.any(Number),
      grantId: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(Math.abs(consumed!.record.authTime - before)).toBeLessThanOrEqual(2);
  });

  it('keeps the registered query and form-encodes what it adds', async () => {
    const query = {
      response_type: 'code',
      client_id: 'tenant',
      state: 'a b&c',
      code_challenge: CHALLENGE,
      code_challenge_method: 'S256',
    };
    const { consent, cookie } = await signIn(query);
    const reply = await post([...hiddenInputs(consent.body), ['decision', 'approve']], cookie);
    expect(reply.status).toBe(303);
    expect(reply.headers.location).toMatch(
      /^https:\/\/tenant\.example\.com\/cb\?tenant=a%20b&x=~&code=[A-Za-z0-9_-]{43}&state=a\+b%26c&iss=https%3A%2F%2Fauth\.example\.test$/,
    );
    const code = new URL(reply.headers.location!).searchParams.get('code')!;
    expect(codes(store).consume(hashToken(code))?.record).toMatchObject({
      redirectUri: 'https://tenant.example.com/cb?tenant=a%20b&x=~',
      codeChallenge: CHALLENGE,
      scope: ['openid', 'profile', 'email', 'offline_access', 'read:messages'],
    });
  });

  it('denies: 303 with error=access_denied, state and iss, and no code', async () => {
    const { consent, cookie } = await signIn(webQuery());
    const url = location(await post([...hiddenInputs(consent.body), ['decision', 'deny']], cookie));
    expect(`${url.origin}${url.pathname}`).toBe(WEB_CB);
    expect(url.searchParams.get('error')).toBe('access_denied');
    expect(url.searchParams.get('state')).toBe('st-123');
    expect(url.searchParams.get('iss')).toBe(ISSUER);
    expect(url.searchParams.has('code')).toBe(false);
  });

  it('runs the public-client PKCE flow', async () => {
    const query = {
      response_type: 'code',
      client_id: 'spa',
      redirect_uri: SPA_CB,
      scope: 'openid read:messages',
      state: 'spa-state',
      code_challenge: CHALLENGE,
      code_challenge_method: 'S256',
    };
    const { consent, cookie } = await signIn(query, 'bob');
    expect(consent.headers['content-security-policy']).toContain(
      "form-action 'self' http://127.0.0.1:5173;",
    );
    const url = location(
      await post([...hiddenInputs(consent.body), ['decision', 'approve']], cookie),
    );
    expect(`${url.origin}${url.pathname}`).toBe(SPA_CB);
    const record = codes(store).consume(hashToken(url.searchParams.get('code')!))?.record;
    expect(record).toMatchObject({ clientId: 'spa', sub: 'bob', codeChallenge: CHALLENGE });
  });

  it('refuses tampered hidden inputs without redirecting', async () => {
    const { consent, cookie } = await signIn(webQuery());
    const fields = hiddenInputs(consent.body);
    const change = (name: string, value: string) =>
      fields.map(([n, v]): [string, string] => [n, n === name ? value : v]);
    const tampered = [
      change('scope', 'openid profile email'),
      change('redirect_uri', 'https://evil.example/cb'),
      change('code_challenge', 'A'.repeat(43)),
      change('state', 'other'),
      change('client_id', 'tenant'),
      [...fields.filter(([n]) => n !== 'nonce')],
      [...fields, ['nonce', 'second'] as [string, string]],
      [...fields.filter(([n]) => n !== 'code_challenge_method')],
    ];
    for (const form of tampered) {
      const reply = await post([...form, ['decision', 'approve']], cookie);
      expectErrorPage(reply);
    }
  });

  it('refuses a consent post without its token, with a sign-in token, or from another session', async () => {
    const { consent, cookie } = await signIn(webQuery());
    const fields = hiddenInputs(consent.body);
    const withoutToken = fields.filter(([n]) => n !== 'csrf_token');
    expectErrorPage(await post([...withoutToken, ['decision', 'approve']], cookie));
    expectErrorPage(
      await post([...withoutToken, ['csrf_token', ''], ['decision', 'approve']], cookie),
    );
    const signInPage = await authorize(webQuery());
    expectErrorPage(
      await post([...hiddenInputs(signInPage.body), ['decision', 'approve']], cookie),
    );
    const other = await signIn(webQuery(), 'bob');
    expectErrorPage(await post([...fields, ['decision', 'approve']], other.cookie));
  });

  it('shows the sign-in form again when the session is gone, and refuses an unknown decision', async () => {
    const { consent, cookie } = await signIn(webQuery());
    const fields = hiddenInputs(consent.body);
    const signedOut = await post([...fields, ['decision', 'approve']]);
    expect(signedOut.status).toBe(401);
    expect(signedOut.headers.location).toBeUndefined();
    expect(signedOut.body).toContain('name="password"');
    expectErrorPage(await post([...fields, ['decision', 'maybe']], cookie));
    expectErrorPage(
      await post([...fields, ['decision', 'approve'], ['username', 'alice']], cookie),
    );
  });

  it('redirects an error found again at consent (the client lost a scope)', async () => {
    const { consent, cookie } = await signIn(webQuery({ scope: 'openid' }));
    const client = (await ctx.clients.get('web'))!;
    const clients = ctx.clients as MemoryClientStore;
    clients.replace({ ...client, scopes: ['profile'] });
    try {
      const url = location(
        await post([...hiddenInputs(consent.body), ['decision', 'approve']], cookie),
      );
      expect(url.searchParams.get('error')).toBe('invalid_scope');
      expect(url.searchParams.has('code')).toBe(false);
    } finally {
      clients.replace(client);
    }
  });

  it('answers a body that is not a form with an error page', async () => {
    const reply = await request(server, '/authorize', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '{}',
    });
    expectErrorPage(reply, 415);
    // a coded body: 415 with what may be sent instead (RFC 7694 §3)
    const coded = await request(server, '/authorize', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Encoding': 'gzip' },
      body: 'client_id=web',
    });
    expectErrorPage(coded, 415);
    expect(coded.headers['accept-encoding']).toBe('identity');
  });
});

describe('OpenID Connect prompt and max_age (Core §3.1.2.1)', () => {
  const error = (reply: Reply) => {
    const url = location(reply);
    expect(`${url.origin}${url.pathname}`).toBe(WEB_CB);
    expect(url.searchParams.has('code')).toBe(false);
    expect(url.searchParams.get('state')).toBe('st-123');
    expect(url.searchParams.get('iss')).toBe(ISSUER);
    return url.searchParams.get('error');
  };
  const isSignIn = (reply: Reply) => {
    expect(reply.status).toBe(200);
    return reply.body.includes('name="password"') && !reply.body.includes('value="approve"');
  };
  const isConsent = (reply: Reply) => {
    expect(reply.status).toBe(200);
    return reply.body.includes('value="approve"') && !reply.body.includes('name="password"');
  };

  it('remembers consent for clients whose redirect assures them, never for a private-use scheme (RFC 8252 §8.6)', async () => {
    const { cookie } = await signIn(webQuery());
    const nativeQuery = {
      response_type: 'code',
      client_id: 'native',
      scope: 'openid',
      state: 'st-n',
      code_challenge: CHALLENGE,
      code_challenge_method: 'S256',
    };
    const spaQuery = { ...nativeQuery, client_id: 'spa', redirect_uri: SPA_CB };
    for (const query of [nativeQuery, spaQuery]) {
      const page = await authorize(query, cookie);
      expect(isConsent(page)).toBe(true);
      const approved = await post([...hiddenInputs(page.body), ['decision', 'approve']], cookie);
      expect(location(approved).searchParams.get('code')).toMatch(/^[\w-]{20,}$/);
    }
    // a public web app (its origin gets the code): remembered
    expect(location(await authorize(spaQuery, cookie)).searchParams.get('code')).not.toBeNull();
    // any app on the device may claim com.example.app: asked every time, never silent
    expect(isConsent(await authorize(nativeQuery, cookie))).toBe(true);
    const silent = location(await authorize({ ...nativeQuery, prompt: 'none' }, cookie));
    expect(silent.searchParams.get('error')).toBe('consent_required');
  });

  it('prompt=none shows no page: login_required when signed out, consent_required when signed in', async () => {
    expect(error(await authorize(webQuery({ prompt: 'none' })))).toBe('login_required');
    const { cookie } = await signIn(webQuery());
    expect(error(await authorize(webQuery({ prompt: 'none' }), cookie))).toBe('consent_required');
    expect(error(await authorize(webQuery({ prompt: 'none', max_age: '0' }), cookie))).toMatch(
      /^(login_required|consent_required)$/,
    );
  });

  it('refuses prompt=none with another value, and a max_age that is not seconds', async () => {
    for (const extra of <Record<string, string>[]>[
      { prompt: 'none login' },
      { prompt: 'consent none' },
      { max_age: 'abc' },
      { max_age: '-1' },
      { max_age: '1.5' },
      { max_age: '99999999999' },
    ]) {
      expect(error(await authorize(webQuery(extra))), JSON.stringify(extra)).toBe(
        'invalid_request',
      );
    }
  });

  it('prompt=login asks a signed-in user to sign in again; the code carries the new auth_time', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    try {
      const { cookie } = await signIn(webQuery());
      vi.setSystemTime(Date.now() + 120_000);
      const page = await authorize(webQuery({ prompt: 'login' }), cookie);
      expect(isSignIn(page)).toBe(true);
      const signedIn = await post(
        [...hiddenInputs(page.body), ['username', 'alice'], ['password', 'alice-password']],
        cookie,
      );
      expect(isConsent(signedIn)).toBe(true);
      const fresh = sessionCookie(signedIn.headers)!;
      expect(fresh).toBeDefined();
      const reply = await post([...hiddenInputs(signedIn.body), ['decision', 'approve']], fresh);
      const code = location(reply).searchParams.get('code')!;
      const record = codes(store).consume(hashToken(code));
      expect(record?.state).toBe('fresh');
      expect(record!.record.authTime).toBe(Math.floor(Date.now() / 1000));
      // consent remembered: prompt=consent asks again, unknown values change nothing
      expect(isConsent(await authorize(webQuery({ prompt: 'consent' }), fresh))).toBe(true);
      for (const prompt of ['select_account', 'create']) {
        const again = location(await authorize(webQuery({ prompt }), fresh));
        expect(again.searchParams.get('code')).toMatch(/^[\w-]{20,}$/);
      }
    } finally {
      vi.useRealTimers();
    }
  });

  it('max_age asks for a new sign-in once the session is older than that', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    try {
      const { cookie } = await signIn(webQuery());
      vi.setSystemTime(Date.now() + 120_000);
      expect(isConsent(await authorize(webQuery({ max_age: '600' }), cookie))).toBe(true);
      expect(isSignIn(await authorize(webQuery({ max_age: '60' }), cookie))).toBe(true);
      expect(isSignIn(await authorize(webQuery({ max_age: '0' }), cookie))).toBe(true);
      expect(error(await authorize(webQuery({ max_age: '60', prompt: 'none' }), cookie))).toBe(
        'login_required',
      );
    } finally {
      vi.useRealTimers();
    }
  });
});
