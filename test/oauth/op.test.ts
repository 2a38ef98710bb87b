// The OpenID Provider behaviours a certifiable OP needs beyond the authorization code flow
// (issue 26): authorization requests by POST, request objects refused as OpenID Connect Core
// §6 says, remembered consent and what `prompt`, `max_age` and `id_token_hint` make of it.
import { decodeJwt, SignJWT } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createKeySet, type KeySet } from '../../src/oauth/tokens/key-set.js';
import { hiddenInputs, sessionCookie } from '../helpers/browser.js';
import { closeAll, type Reply, request } from '../helpers/http.js';
import {
  authorizationQuery,
  BYE,
  forgetConsents,
  type Key,
  log,
  newKey,
  post,
  redeem,
  SECRETS,
  type Site,
  startSite,
  WEB,
} from './endpoints/par-fixtures.js';
import { basic, pkce } from './token-fixtures.js';

let keys: KeySet;
let clientKey: Key;
let site: Site;

beforeAll(async () => {
  keys = await createKeySet();
  clientKey = await newKey();
  site = await startSite(keys, clientKey);
});
afterAll(async () => {
  await closeAll();
  expect(log.errors).toEqual([]);
});

/** The query of a 303 to the client's redirect URI (which it must be). */
function redirectedTo(reply: Reply, redirectUri = WEB): URLSearchParams {
  expect(reply.status, reply.body).toBe(303);
  const location = new URL(reply.headers.location!);
  expect(`${location.origin}${location.pathname}`).toBe(redirectUri);
  return location.searchParams;
}

describe('POST /authorize: an authorization request sent as a form (OIDC Core §3.1.2.1)', () => {
  it('shows the same consent page as the GET, with the request in its sealed inputs', async () => {
    const query = authorizationQuery('web', { nonce: 'n-1' });
    const byGet = await request(site.app, `/authorize?${query}`, {
      headers: { Cookie: site.cookie },
    });
    const byPost = await post(site, '/authorize', query, { Cookie: site.cookie });
    expect(byPost.status, byPost.body).toBe(200);
    const fields = (reply: Reply) =>
      hiddenInputs(reply.body).filter(([name]) => name !== 'csrf_token');
    expect(fields(byPost)).toEqual(fields(byGet));
    expect(new Map(fields(byPost)).get('nonce')).toBe('n-1');
  });

  it('approves a POSTed request into a code at the redirect URI', async () => {
    const page = await post(site, '/authorize', authorizationQuery('web'), {
      Cookie: site.cookie,
    });
    const approved = await post(
      site,
      '/authorize',
      new URLSearchParams([...hiddenInputs(page.body), ['decision', 'approve']]),
      { Cookie: site.cookie },
    );
    const params = redirectedTo(approved);
    expect(params.get('code')).toMatch(/^[\w-]{20,}$/);
    expect(params.get('state')).toBe('st-1');
  });

  it('checks a POSTed request as it checks a GET: errors redirected, unknown clients a page', async () => {
    const noPkce = new URLSearchParams(authorizationQuery('web'));
    noPkce.delete('code_challenge');
    noPkce.delete('code_challenge_method');
    const refused = redirectedTo(await post(site, '/authorize', noPkce, { Cookie: site.cookie }));
    expect(refused.get('error')).toBe('invalid_request');
    expect(refused.get('state')).toBe('st-1');
    const stranger = await post(site, '/authorize', authorizationQuery('nobody'));
    expect(stranger.status).toBe(400);
    expect(stranger.headers.location).toBeUndefined();
  });

  it('still refuses a form that is both a sign-in and a decision', async () => {
    const both = new URLSearchParams(authorizationQuery('web'));
    both.set('username', 'alice');
    both.set('decision', 'approve');
    const reply = await post(site, '/authorize', both, { Cookie: site.cookie });
    expect(reply.status).toBe(400);
    expect(reply.headers.location).toBeUndefined();
  });
});

describe('request objects (OIDC Core §6, RFC 9101): not supported, and said so', () => {
  const unsigned = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(
    '{"scope":"openid read:messages"}',
  ).toString('base64url')}.`;

  it.each([
    ['GET', 'request', unsigned, 'request_not_supported'],
    ['POST', 'request', unsigned, 'request_not_supported'],
    ['GET', 'request_uri', 'https://app.example.com/request.jwt', 'request_uri_not_supported'],
    ['POST', 'request_uri', 'https://app.example.com/request.jwt', 'request_uri_not_supported'],
  ])(
    '%s with %s: redirected %s, no code for the outer parameters',
    async (method, name, value, error) => {
      const query = new URLSearchParams(authorizationQuery('web'));
      query.set(name, value);
      const reply =
        method === 'GET'
          ? await request(site.app, `/authorize?${query}`, { headers: { Cookie: site.cookie } })
          : await post(site, '/authorize', query, { Cookie: site.cookie });
      const params = redirectedTo(reply);
      expect(params.get('error')).toBe(error);
      expect(params.get('state')).toBe('st-1');
      expect(params.get('code')).toBeNull();
    },
  );

  it('answers a request object of an unknown client with a page, never a redirect', async () => {
    const reply = await request(
      site.app,
      `/authorize?client_id=nobody&redirect_uri=${encodeURIComponent(WEB)}&request=${unsigned}`,
    );
    expect(reply.status).toBe(400);
    expect(reply.headers.location).toBeUndefined();
  });

  it('says so in discovery', async () => {
    const metadata = await request(site.app, '/.well-known/openid-configuration');
    expect(JSON.parse(metadata.body)).toMatchObject({
      request_parameter_supported: false,
      request_uri_parameter_supported: false,
    });
  });
});

/** A GET of `/authorize` for `web` with `extra`, in alice's session unless `cookie` says. */
const authorize = (extra: Record<string, string> = {}, cookie = site.cookie) =>
  request(site.app, `/authorize?${authorizationQuery('web', extra)}`, {
    headers: cookie === '' ? {} : { Cookie: cookie },
  });

/** The consent page of `reply`, approved: the query of the redirect with the code. */
async function approveConsent(reply: Reply): Promise<URLSearchParams> {
  expect(reply.status, reply.body).toBe(200);
  expect(reply.body).toContain('name="decision"');
  return redirectedTo(
    await post(
      site,
      '/authorize',
      new URLSearchParams([...hiddenInputs(reply.body), ['decision', 'approve']]),
      { Cookie: site.cookie },
    ),
  );
}

/** An ID token of the site's issuer (or signed by `key`) for `sub`, expiring at `exp`. */
async function idToken(sub: string, exp: number, key = keys.signingKey().privateKey) {
  return new SignJWT({ sub, aud: 'web', iss: site.app.url })
    .setProtectedHeader({ alg: keys.signingKey().alg, kid: keys.signingKey().kid, typ: 'JWT' })
    .setIssuedAt(exp - 3600)
    .setExpirationTime(exp)
    .sign(key);
}

describe('remembered consent (OIDC Core §3.1.2.1, §3.1.2.4)', () => {
  beforeEach(() => forgetConsents(site));

  it('asks once: the same or fewer scopes then need no page, more scopes ask again', async () => {
    const first = await approveConsent(await authorize({ scope: 'openid' }));
    expect(first.get('code')).not.toBeNull();
    // remembered: straight back with a code and the state
    const again = redirectedTo(await authorize({ scope: 'openid' }));
    expect(again.get('code')).toMatch(/^[\w-]{20,}$/);
    expect(again.get('state')).toBe('st-1');
    // a scope never approved: the page again, listing it
    const wider = await authorize({ scope: 'openid offline_access' });
    expect(wider.status).toBe(200);
    expect(wider.body).toContain('offline_access');
    await approveConsent(wider);
    for (const scope of ['openid offline_access', 'openid', 'offline_access']) {
      expect(redirectedTo(await authorize({ scope })).get('code')).not.toBeNull();
    }
    // one consent per user and client, holding every scope approved
    expect(await site.as.consents.list('alice')).toEqual([
      {
        id: expect.any(String),
        sub: 'alice',
        clientId: 'web',
        scope: ['openid', 'offline_access'],
        createdAt: expect.any(Number),
      },
    ]);
  });

  it('prompt=consent always shows the page, consented or not', async () => {
    await approveConsent(await authorize({ scope: 'openid' }));
    const asked = await authorize({ scope: 'openid', prompt: 'consent' });
    expect(asked.status).toBe(200);
    expect(asked.body).toContain('name="decision"');
  });

  it('is the consent of one client only', async () => {
    await approveConsent(await authorize({ scope: 'openid' }));
    const other = await request(
      site.app,
      `/authorize?${authorizationQuery('other', { scope: 'openid' })}`,
      {
        headers: { Cookie: site.cookie },
      },
    );
    expect(other.status).toBe(200);
    expect(other.body).toContain('name="decision"');
  });

  it('prompt=none: login_required signed out, consent_required before consent, a code after', async () => {
    const signedOut = redirectedTo(await authorize({ prompt: 'none' }, ''));
    expect(signedOut.get('error')).toBe('login_required');
    expect(signedOut.get('state')).toBe('st-1');
    const notYet = redirectedTo(await authorize({ prompt: 'none' }));
    expect(notYet.get('error')).toBe('consent_required');
    await approveConsent(await authorize());
    const silent = redirectedTo(await authorize({ prompt: 'none' }));
    expect(silent.get('error')).toBeNull();
    expect(silent.get('code')).toMatch(/^[\w-]{20,}$/);
    expect(silent.get('state')).toBe('st-1');
    // more scopes than consented: the user must be asked
    const more = redirectedTo(await authorize({ prompt: 'none', scope: 'openid read:messages' }));
    expect(more.get('error')).toBe('consent_required');
  });

  it('id_token_hint: its user (expired hints too) gets a code silently; another user must sign in', async () => {
    await approveConsent(await authorize());
    const now = Math.floor(Date.now() / 1000);
    for (const exp of [now + 600, now - 86_400]) {
      const hint = await idToken('alice', exp);
      const silent = redirectedTo(await authorize({ prompt: 'none', id_token_hint: hint }));
      expect(silent.get('code')).toMatch(/^[\w-]{20,}$/);
    }
    const bobs = await idToken('bob', now + 600);
    const mismatch = redirectedTo(await authorize({ prompt: 'none', id_token_hint: bobs }));
    expect(mismatch.get('error')).toBe('login_required');
    // without prompt=none, the sign-in form
    const page = await authorize({ id_token_hint: bobs });
    expect(page.status).toBe(200);
    expect(page.body).toContain('name="password"');
  });

  it('refuses an id_token_hint this server did not sign, or an access token, as invalid_request', async () => {
    const now = Math.floor(Date.now() / 1000);
    const stranger = (await newKey('ES256')).privateKey;
    const forged = await new SignJWT({ sub: 'alice', aud: 'web', iss: site.app.url })
      .setProtectedHeader({ alg: 'ES256', kid: keys.signingKey().kid, typ: 'JWT' })
      .setExpirationTime(now + 600)
      .sign(stranger);
    const accessLike = await new SignJWT({ sub: 'alice', aud: 'web', iss: site.app.url })
      .setProtectedHeader({ alg: keys.signingKey().alg, kid: keys.signingKey().kid, typ: 'at+jwt' })
      .setExpirationTime(now + 600)
      .sign(keys.signingKey().privateKey);
    const otherIssuer = await new SignJWT({ sub: 'alice', aud: 'web', iss: 'https://evil.example' })
      .setProtectedHeader({ alg: keys.signingKey().alg, kid: keys.signingKey().kid, typ: 'JWT' })
      .setExpirationTime(now + 600)
      .sign(keys.signingKey().privateKey);
    for (const hint of [forged, accessLike, otherIssuer, 'not-a-jwt']) {
      const refused = redirectedTo(await authorize({ prompt: 'none', id_token_hint: hint }));
      expect(refused.get('error')).toBe('invalid_request');
      expect(refused.get('code')).toBeNull();
    }
  });

  it('issues every code of a consent under one grant; revoking it ends the tokens and forgets it', async () => {
    const { verifier, challenge } = pkce();
    const first = await approveConsent(await authorize({}));
    expect(first.get('code')).not.toBeNull();
    const code = redirectedTo(
      await request(site.app, `/authorize?${authorizationQuery('web', {}, challenge)}`, {
        headers: { Cookie: site.cookie },
      }),
    ).get('code')!;
    const tokens = JSON.parse((await redeem(site, code, verifier)).body) as {
      access_token: string;
      refresh_token: string;
    };
    const [grant] = await site.as.consents.list('alice');
    expect(decodeJwt(tokens.access_token).grant_id).toBe(grant!.id);
    expect(await site.as.consents.revoke('bob', grant!.id)).toBe(false);
    expect(await site.as.consents.revoke('alice', grant!.id)).toBe(true);
    expect(await site.as.consents.list('alice')).toEqual([]);
    // the refresh token is dead, the consent page is back
    const refreshed = await post(
      site,
      '/token',
      new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token }),
      { Authorization: basic('web', SECRETS.web!) },
    );
    expect(refreshed.status).toBe(400);
    expect(JSON.parse(refreshed.body).error).toBe('invalid_grant');
    expect((await authorize()).status).toBe(200);
    // a new consent is a new grant
    await approveConsent(await authorize());
    const [next] = await site.as.consents.list('alice');
    expect(next!.id).not.toBe(grant!.id);
  });
});

describe('RP-Initiated Logout 1.0 (end_session_endpoint)', () => {
  /** A session of alice of its own, so that ending it leaves the suite's one alone. */
  async function ownSession(): Promise<string> {
    const page = await request(site.app, `/authorize?${authorizationQuery('web')}`);
    const signedIn = await post(
      site,
      '/authorize',
      new URLSearchParams([
        ...hiddenInputs(page.body),
        ['username', 'alice'],
        ['password', 'alice-password'],
      ]),
    );
    return sessionCookie(signedIn.headers)!;
  }
  const logout = (params: Record<string, string>, cookie?: string) =>
    request(site.app, `/session/end?${new URLSearchParams(params)}`, {
      headers: cookie === undefined ? {} : { Cookie: cookie },
    });
  const isSignedIn = async (cookie: string) =>
    (
      await request(site.app, `/authorize?${authorizationQuery('web')}`, {
        headers: { Cookie: cookie },
      })
    ).body.includes('name="password"') === false;

  it('is in discovery', async () => {
    const metadata = JSON.parse(
      (await request(site.app, '/.well-known/openid-configuration')).body,
    );
    expect(metadata.end_session_endpoint).toBe(`${site.app.url}/session/end`);
  });

  it('asks, ends the session, and sends the browser to the registered URI with state', async () => {
    const cookie = await ownSession();
    const hint = await idToken('alice', Math.floor(Date.now() / 1000) - 86_400); // expired: fine
    const page = await logout(
      { id_token_hint: hint, post_logout_redirect_uri: BYE, state: 'bye-1' },
      cookie,
    );
    expect(page.status).toBe(200);
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.body).toContain('name="decision" value="logout"');
    // the page's form may be redirected to the client: its CSP allows that origin
    expect(page.headers['content-security-policy']).toContain('https://app.example.com');
    expect(await isSignedIn(cookie)).toBe(true);
    const done = await post(
      site,
      '/session/end',
      new URLSearchParams([...hiddenInputs(page.body), ['decision', 'logout']]),
      { Cookie: cookie },
    );
    expect(done.status).toBe(303);
    expect(done.headers.location).toBe(`${BYE}&state=bye-1`);
    expect(done.headers['set-cookie']?.join()).toMatch(/session=;/);
    expect(await isSignedIn(cookie)).toBe(false);
  });

  it('keeps the session when the user stays, still sending the browser back', async () => {
    const cookie = await ownSession();
    const page = await logout({ client_id: 'web', post_logout_redirect_uri: BYE }, cookie);
    const stayed = await post(
      site,
      '/session/end',
      new URLSearchParams([...hiddenInputs(page.body), ['decision', 'stay']]),
      { Cookie: cookie },
    );
    expect(stayed.status).toBe(303);
    expect(stayed.headers.location).toBe(BYE);
    expect(await isSignedIn(cookie)).toBe(true);
  });

  it('ends nothing for a form it did not render (another site, another session, a changed field)', async () => {
    const cookie = await ownSession();
    const other = await ownSession();
    const page = await logout({ client_id: 'web', post_logout_redirect_uri: BYE }, cookie);
    const fields = hiddenInputs(page.body);
    const forged = [
      fields.filter(([name]) => name !== 'csrf_token'),
      fields
        .map(([n, v]): [string, string] => (n === 'state' ? [n, 'x'] : [n, v]))
        .concat([['state', 'x']]),
    ];
    for (const form of forged) {
      const refused = await post(
        site,
        '/session/end',
        new URLSearchParams([...form, ['decision', 'logout']]),
        {
          Cookie: cookie,
        },
      );
      expect(refused.status).toBe(400);
      expect(refused.headers.location).toBeUndefined();
    }
    // the form of one session does not end another
    const crossed = await post(
      site,
      '/session/end',
      new URLSearchParams([...fields, ['decision', 'logout']]),
      { Cookie: other },
    );
    expect(crossed.status).toBe(400);
    expect(await isSignedIn(cookie)).toBe(true);
    expect(await isSignedIn(other)).toBe(true);
  });

  it('never redirects to a URI not registered for the client, nor without a known client', async () => {
    const hint = await idToken('alice', Math.floor(Date.now() / 1000) + 600);
    for (const params of [
      { client_id: 'web', post_logout_redirect_uri: 'https://evil.example/' },
      { client_id: 'web', post_logout_redirect_uri: `${BYE}&x=1` },
      { post_logout_redirect_uri: BYE }, // no client named
      { client_id: 'nobody', post_logout_redirect_uri: BYE },
      { client_id: 'other', id_token_hint: hint, post_logout_redirect_uri: BYE }, // not its token
      { id_token_hint: 'not-a-jwt', post_logout_redirect_uri: BYE },
    ] as Record<string, string>[]) {
      const refused = await logout(params, site.cookie);
      expect(refused.status, JSON.stringify(params)).toBe(400);
      expect(refused.headers.location).toBeUndefined();
    }
    const twice = await request(
      site.app,
      `/session/end?client_id=web&state=a&state=b&post_logout_redirect_uri=${encodeURIComponent(BYE)}`,
    );
    expect(twice.status).toBe(400);
  });

  it('sends a browser with no session back at once; without a URI, says it is signed out', async () => {
    const back = await logout({ client_id: 'web', post_logout_redirect_uri: BYE, state: 's' });
    expect(back.status).toBe(303);
    expect(back.headers.location).toBe(`${BYE}&state=s`);
    const page = await logout({});
    expect(page.status).toBe(200);
    expect(page.body).toContain('Signed out');
  });
});
