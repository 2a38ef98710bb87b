// The checks of an authorization request (authorize-request.ts), one by one over a real site:
// which errors are pages (no trustworthy redirect URI) and which are redirected to the client
// with their exact error, error_description and state; what a valid request keeps (its
// fields, dpop_jkt, max_age, prompt) and when a session may answer it.

import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createSessions } from '../../../src/auth/session/session.js';
import { checkAuthorizationRequest } from '../../../src/oauth/authorize/request.js';
import { defineClient, type OAuthClient } from '../../../src/oauth/clients/client.js';
import { escapeHtml } from '../../../src/oauth/pages/render.js';
import { createKeySet, type KeySet } from '../../../src/oauth/tokens/key-set.js';
import { hiddenInputs } from '../../helpers/browser.js';
import { closeAll, json, type Reply, request } from '../../helpers/http.js';
import {
  approveVia,
  authorizationQuery,
  forgetConsents,
  type Key,
  newKey,
  post,
  push,
  requestUriOf,
  SECRETS,
  type Site,
  startSite,
  WEB,
} from '../endpoints/par-fixtures.js';
import { basic, pkce } from '../token-fixtures.js';

const PREFIX = 'urn:ietf:params:oauth:request_uri:';
const MULTI = ['https://multi.example/one', 'https://multi.example/two'];

let keys: KeySet;
let clientKey: Key;
let site: Site;

/** Clients beyond the fixtures': two redirect URIs, none, and a store's client with no scopes. */
async function extraClients(): Promise<OAuthClient[]> {
  return [
    await defineClient({
      clientId: 'multi',
      grantTypes: ['authorization_code'],
      redirectUris: MULTI,
      scopes: ['openid', 'offline_access'],
    }),
    Object.freeze({
      clientId: 'bare',
      grantTypes: ['authorization_code'] as const,
      redirectUris: [],
      scopes: ['openid'],
    }),
    // a hand-written store's client, broken: its scopes are missing
    Object.freeze({
      clientId: 'scopeless',
      grantTypes: ['authorization_code'] as const,
      redirectUris: [WEB],
    } as unknown as OAuthClient),
  ];
}

beforeAll(async () => {
  keys = await createKeySet();
  clientKey = await newKey();
  site = await startSite(keys, clientKey, {}, await extraClients());
});

afterEach(() => {
  vi.restoreAllMocks();
});

afterAll(closeAll);

/** `GET /authorize` with `query` (and the session cookie when `cookie`). */
const authorize = (query: URLSearchParams | string, cookie?: string) =>
  request(
    site.app,
    `/authorize?${query}`,
    cookie === undefined ? {} : { headers: { Cookie: cookie } },
  );

/** The request of `web` with `changes` made: a value, or undefined to drop the parameter. */
function webRequest(changes: Record<string, string | undefined> = {}): URLSearchParams {
  const query = new URLSearchParams(authorizationQuery('web'));
  for (const [name, value] of Object.entries(changes)) {
    if (value === undefined) query.delete(name);
    else query.set(name, value);
  }
  return query;
}

/** A 400 error page saying `message`, never a redirect. */
function expectPage(reply: Reply, message: string): void {
  expect(reply.status, reply.body).toBe(400);
  expect(reply.headers.location).toBeUndefined();
  expect(reply.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(reply.body).toContain(`<p role="alert">${escapeHtml(message)}</p>`);
}

/** An error redirected (303) to `uri` with `error`, `description`, the state and `iss`. */
function expectRedirect(
  reply: Reply,
  error: string,
  description: string,
  state: string | null = 'st-1',
  uri = WEB,
): void {
  expect(reply.status, reply.body).toBe(303);
  const at = new URL(reply.headers.location!);
  expect(`${at.origin}${at.pathname}`).toBe(uri);
  expect(at.searchParams.get('error')).toBe(error);
  expect(at.searchParams.get('error_description')).toBe(description);
  expect(at.searchParams.get('state')).toBe(state);
  expect(at.searchParams.get('iss')).toBe(site.app.url);
}

/** The sign-in page of a valid request (no session): 200 with the password field. */
function expectSignIn(reply: Reply, status = 200): void {
  expect(reply.status, reply.body).toBe(status);
  expect(reply.body).toContain('name="password"');
}

/** A consent form posted (a `decision`) with no session: the request is checked again. */
const decisionWithoutSession = (fields: [string, string][]) =>
  post(site, '/authorize', new URLSearchParams([...fields, ['decision', 'approve']]));

describe('authorize-request.ts', () => {
  describe('the client and its redirect URI: errors are pages', () => {
    it('says which of client_id is wrong: missing or repeated', async () => {
      expectPage(
        await authorize(webRequest({ client_id: undefined })),
        'The request does not say which application it comes from (client_id).',
      );
      const twice = webRequest();
      twice.append('client_id', 'other');
      expectPage(await authorize(twice), 'The request names its application more than once.');
    });

    it('refuses two redirect URIs with a page', async () => {
      const twice = webRequest();
      twice.append('redirect_uri', WEB);
      expectPage(await authorize(twice), 'The request gives more than one redirect URI.');
    });

    it('takes no default redirect URI from a client with none or with several', async () => {
      expectPage(
        await authorize(webRequest({ client_id: 'bare', redirect_uri: undefined })),
        'This application has no redirect URI to come back to.',
      );
      expectPage(
        await authorize(webRequest({ client_id: 'multi', redirect_uri: undefined })),
        'The request must say which redirect URI to come back to (redirect_uri).',
      );
      // named, one of the two is taken
      expectSignIn(await authorize(webRequest({ client_id: 'multi', redirect_uri: MULTI[1] })));
    });
  });

  describe('request objects', () => {
    it('redirects request_not_supported for a request object', async () => {
      expectRedirect(
        await authorize(webRequest({ request: 'eyJhbGciOiJub25lIn0.e30.' })),
        'request_not_supported',
        'Request objects (request) are not supported.',
      );
    });

    it('redirects request_uri_not_supported for a request_uri not issued by /par', async () => {
      expectRedirect(
        await authorize(webRequest({ request_uri: 'https://app.example.com/request.jwt' })),
        'request_uri_not_supported',
        'Request objects by reference (request_uri) are supported only from the pushed authorization request endpoint.',
      );
    });

    it('issues request_uris under urn:ietf:params:oauth:request_uri:', async () => {
      const pushed = await push(site, 'web');
      expect(pushed.status, pushed.body).toBe(201);
      const uri = requestUriOf(pushed);
      expect(uri.startsWith(PREFIX)).toBe(true);
      expect(uri.slice(PREFIX.length)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    });

    it('refuses a posted consent form of a pushed request once the session has ended', async () => {
      const fields = [...webRequest()] as [string, string][];
      expectPage(
        await decisionWithoutSession([...fields, ['request_uri', `${PREFIX}${'a'.repeat(43)}`]]),
        'This request must be started again from the application.',
      );
      // one issued request_uri among others is enough
      expectPage(
        await decisionWithoutSession([
          ...fields,
          ['request_uri', 'https://app.example.com/request.jwt'],
          ['request_uri', `${PREFIX}${'a'.repeat(43)}`],
        ]),
        'This request must be started again from the application.',
      );
    });

    it('checks a posted consent form without a session as a browser request', async () => {
      expectRedirect(
        await decisionWithoutSession([
          ...webRequest(),
          ['request_uri', 'https://app.example.com/request.jwt'],
        ]),
        'request_uri_not_supported',
        'Request objects by reference (request_uri) are supported only from the pushed authorization request endpoint.',
      );
      const pushy = new URLSearchParams(authorizationQuery('pushy'));
      expectRedirect(
        await decisionWithoutSession([...pushy]),
        'invalid_request',
        'This client must push its authorization requests (PAR, RFC 9126).',
      );
    });

    it('refuses a request being pushed that carries a request_uri (the check itself)', async () => {
      // /par refuses it before this check; the check refuses it too
      const params = webRequest({ request_uri: 'https://app.example.com/request.jwt' });
      expect(await checkAuthorizationRequest(site.as.context, params, 'par')).toEqual({
        kind: 'page',
        message: 'A pushed request cannot carry a request_uri.',
      });
    });
  });

  describe('the other parameters: errors are redirected with the state', () => {
    it('names code_challenge_method without code_challenge', async () => {
      expectRedirect(
        await authorize(webRequest({ code_challenge: undefined })),
        'invalid_request',
        'code_challenge_method without code_challenge.',
      );
    });

    it('takes a dpop_jkt of exactly 43 base64url characters', async () => {
      const { jkt } = await newKey();
      expectSignIn(await authorize(webRequest({ dpop_jkt: jkt })));
      for (const wrong of [`${jkt}x`, `x${jkt}`, `${jkt.slice(0, 42)}!`, jkt.slice(1)]) {
        expectRedirect(
          await authorize(webRequest({ dpop_jkt: wrong })),
          'invalid_request',
          'dpop_jkt must be a JWK SHA-256 thumbprint (43 base64url characters).',
        );
      }
    });

    it('requires response_type', async () => {
      expectRedirect(
        await authorize(webRequest({ response_type: undefined })),
        'invalid_request',
        'response_type is required.',
      );
    });

    it('takes response_mode=query and refuses the others', async () => {
      expectSignIn(await authorize(webRequest({ response_mode: 'query' })));
      expectRedirect(
        await authorize(webRequest({ response_mode: 'fragment' })),
        'invalid_request',
        'Only response_mode=query is supported.',
      );
    });

    it('takes a nonce of 1024 characters, not 1025', async () => {
      expectSignIn(await authorize(webRequest({ nonce: 'n'.repeat(1024) })));
      expectRedirect(
        await authorize(webRequest({ nonce: 'n'.repeat(1025) })),
        'invalid_request',
        'nonce must be at most 1024 characters.',
      );
    });

    it('refuses prompt=none with another value, but not with a stray space', async () => {
      expectRedirect(
        await authorize(webRequest({ prompt: 'none login' })),
        'invalid_request',
        'prompt=none cannot be combined with other prompt values.',
      );
      for (const prompt of ['none ', ' none', 'none  ']) {
        expectRedirect(
          await authorize(webRequest({ prompt })),
          'login_required',
          'The user must sign in.',
        );
      }
    });

    it('takes max_age as one to nine digits only', async () => {
      for (const maxAge of ['0', '10', '999999999']) {
        expectSignIn(await authorize(webRequest({ max_age: maxAge })));
      }
      for (const maxAge of ['x10', '10x', '-1', '1.5', '1e3', '1234567890', 'ten']) {
        expectRedirect(
          await authorize(webRequest({ max_age: maxAge })),
          'invalid_request',
          'max_age must be a number of seconds.',
        );
      }
    });

    it('refuses an id_token_hint this server did not issue', async () => {
      expectRedirect(
        await authorize(webRequest({ id_token_hint: 'not.an.id-token' })),
        'invalid_request',
        'id_token_hint is not an ID token issued by this server.',
      );
    });

    it('does not redirect a failure that is not an OAuth error', async () => {
      const reply = await authorize(webRequest({ client_id: 'scopeless', scope: undefined }));
      expect(reply.status).toBe(500);
      expect(reply.headers.location).toBeUndefined();
    });
  });

  describe('a valid request', () => {
    it('carries its non-empty parameters in the sign-in form, nothing else', async () => {
      const query = webRequest({ nonce: '', prompt: 'login', max_age: '60' });
      query.set('ui_locales', '');
      query.set('unknown', 'ignored');
      const reply = await authorize(query);
      expectSignIn(reply);
      const fields = hiddenInputs(reply.body).filter(([name]) => name !== 'csrf_token');
      expect(fields).toEqual([
        ['response_type', 'code'],
        ['client_id', 'web'],
        ['redirect_uri', WEB],
        ['scope', 'openid offline_access'],
        ['state', 'st-1'],
        ['code_challenge', query.get('code_challenge')],
        ['code_challenge_method', 'S256'],
        ['prompt', 'login'],
        ['max_age', '60'],
      ]);
    });

    it('lets a code asked without redirect_uri be redeemed without it', async () => {
      const { verifier, challenge } = pkce();
      const query = new URLSearchParams(authorizationQuery('web', {}, challenge));
      query.delete('redirect_uri');
      const { code } = await approveVia(site, `/authorize?${query}`);
      expect(code).toBeDefined();
      const redeemed = await post(
        site,
        '/token',
        new URLSearchParams({
          grant_type: 'authorization_code',
          code: code!,
          code_verifier: verifier,
        }),
        { Authorization: basic('web', SECRETS.web!) },
      );
      expect(redeemed.status, redeemed.body).toBe(200);
      expect(json(redeemed).access_token).toEqual(expect.any(String));
    });
  });

  describe('usableSession', () => {
    it('shows the sign-in form to a signed-in user asked prompt=login', async () => {
      await forgetConsents(site);
      const consent = await authorize(webRequest(), site.cookie);
      expect(consent.status).toBe(200);
      expect(consent.body).toContain('name="decision"');
      expectSignIn(await authorize(webRequest({ prompt: 'login' }), site.cookie));
    });

    it('shows the sign-in form when max_age is asked and no one is signed in', async () => {
      expectSignIn(await authorize(webRequest({ max_age: '60' })));
      expectSignIn(await authorize(webRequest({ max_age: '0' })));
    });

    it('keeps a session exactly max_age old, not a millisecond older', async () => {
      const now = vi.spyOn(Date, 'now');
      const t0 = 1_800_000_000_000;
      now.mockReturnValue(t0);
      const clock = await startSite(keys, clientKey, {
        sessions: createSessions({
          allowedOrigins: ['http://127.0.0.1'],
          cookie: { secure: false },
          now: () => Date.now(),
        }),
      });
      await forgetConsents(clock);
      const query = (maxAge: string) =>
        request(clock.app, `/authorize?${authorizationQuery('web', { max_age: maxAge })}`, {
          headers: { Cookie: clock.cookie },
        });
      now.mockReturnValue(t0 + 5000);
      const kept = await query('5');
      expect(kept.status, kept.body).toBe(200);
      expect(kept.body).toContain('name="decision"');
      now.mockReturnValue(t0 + 5001);
      expectSignIn(await query('5'));
    });
  });
});
