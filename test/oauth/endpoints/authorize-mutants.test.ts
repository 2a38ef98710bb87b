// /par, /authorize and its answers, checked to the word: the error descriptions and pages each
// refusal gives, where a pushed request is looked up, the separator added to a redirect URI,
// when a remembered consent answers silently, and what an approval keeps with its code.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { defineClient, type OAuthClient } from '../../../src/oauth/clients/client.js';
import type { MemoryClientStore } from '../../../src/oauth/clients/store.js';
import { appendQuery, createAuthorizeEndpoint } from '../../../src/oauth/endpoints/authorize.js';
import type { AuthorizationCodeRecord } from '../../../src/oauth/store/records.js';
import { createKeySet, type KeySet } from '../../../src/oauth/tokens/key-set.js';
import { hiddenInputs } from '../../helpers/browser.js';
import { closeAll, json, type Reply, request } from '../../helpers/http.js';
import { basic, pkce } from '../token-fixtures.js';
import {
  approveVia,
  assertionParams,
  authorizationQuery,
  authorizeWith,
  clientAssertion,
  dpopProof,
  forgetConsents,
  type Key,
  log,
  newKey,
  post,
  push,
  requestUriOf,
  SECRETS,
  type Site,
  startSite,
  WEB,
} from './par-fixtures.js';

/** A private-use redirect whose query names a web URL: still not a web redirect. */
const NATIVE = 'com.example.app:/oauth?from=https://app.example.com/';
const NATIVE_CONFIDENTIAL = 'com.example.app:/confidential';

let keys: KeySet;
let clientKey: Key;
let dpopKey: Key;
let site: Site;

beforeAll(async () => {
  keys = await createKeySet({ algorithm: 'ES256' });
  clientKey = await newKey();
  dpopKey = await newKey();
  const scopes = ['openid', 'offline_access', 'read:messages'];
  const grantTypes: ('authorization_code' | 'refresh_token')[] = ['authorization_code'];
  const extra: OAuthClient[] = [
    await defineClient({
      clientId: 'bank',
      jwks: { keys: [clientKey.jwk] },
      grantTypes,
      redirectUris: [WEB],
      scopes,
    }),
    await defineClient({ clientId: 'native', grantTypes, redirectUris: [NATIVE], scopes }),
    await defineClient({
      clientId: 'native-confidential',
      secret: 'native-confidential-secret',
      grantTypes,
      redirectUris: [NATIVE_CONFIDENTIAL],
      scopes,
    }),
  ];
  site = await startSite(keys, clientKey, { fapi2: ['bank'] }, extra);
});
afterAll(async () => {
  await closeAll();
  expect(log.errors).toEqual([]);
});

const described = (reply: Reply) => {
  const body = json<{ error: string; error_description?: string }>(reply);
  return { status: reply.status, error: body.error, error_description: body.error_description };
};

/** A push of `web` with the form `fields` exactly (no defaults but its Basic credentials). */
const pushForm = (fields: Record<string, string>, headers = {}) =>
  post(site, '/par', new URLSearchParams(fields), {
    Authorization: basic('web', SECRETS.web!),
    ...headers,
  });

const webPushFields = (extra: Record<string, string> = {}) => {
  const form = new URLSearchParams(authorizationQuery('web', extra));
  form.delete('client_id');
  return Object.fromEntries(form);
};

const get = (path: string, cookie?: string) =>
  request(site.app, path, { headers: cookie === undefined ? {} : { Cookie: cookie } });

/** The error page's status and its message, with no redirect. */
function expectPage(reply: Reply, status: number, message: string) {
  expect(reply.status, reply.body).toBe(status);
  expect(reply.headers.location).toBeUndefined();
  expect(reply.body).toContain(`<p role="alert">${message}</p>`);
}

function redirected(reply: Reply): URLSearchParams {
  expect(reply.status, reply.body).toBe(303);
  return new URL(reply.headers.location!).searchParams;
}

/** The server's error log stays as it was once the server has finished with a request. */
async function expectNoNewErrors(before: number) {
  await new Promise((resolve) => setTimeout(resolve, 100));
  expect(log.errors.slice(before)).toEqual([]);
}

describe('par.ts: POST /par', () => {
  it('takes a DPoP proof with the dpop_jkt of its own key', async () => {
    const reply = await pushForm(webPushFields({ dpop_jkt: dpopKey.jkt }), {
      DPoP: await dpopProof(site, dpopKey, '/par'),
    });
    expect(reply.status, reply.body).toBe(201);
  });

  it('refuses a dpop_jkt of another key than the proof, saying so', async () => {
    const other = await newKey();
    const reply = await pushForm(webPushFields({ dpop_jkt: other.jkt }), {
      DPoP: await dpopProof(site, dpopKey, '/par'),
    });
    expect(described(reply)).toEqual({
      status: 400,
      error: 'invalid_dpop_proof',
      error_description: 'dpop_jkt is not the key of the DPoP proof.',
    });
  });

  it('refuses a request_uri in a push before anything else, a request object next', async () => {
    const both = await pushForm(
      webPushFields({ request_uri: 'https://app.example.com/request.jwt', request: 'e30.e30.' }),
    );
    expect(described(both)).toEqual({
      status: 400,
      error: 'invalid_request',
      error_description: 'A pushed request cannot carry a request_uri.',
    });
    const object = await pushForm(webPushFields({ request: 'e30.e30.' }));
    expect(described(object)).toEqual({
      status: 400,
      error: 'invalid_request',
      error_description: 'Request objects are not supported.',
    });
  });

  it('requires redirect_uri in the push of a FAPI 2.0 client', async () => {
    const form = new URLSearchParams(authorizationQuery('bank'));
    form.delete('client_id');
    form.delete('redirect_uri');
    for (const [name, value] of Object.entries(
      assertionParams(await clientAssertion(site, 'bank', clientKey)),
    )) {
      form.set(name, value);
    }
    expect(described(await post(site, '/par', form))).toEqual({
      status: 400,
      error: 'invalid_request',
      error_description: 'redirect_uri is required in a pushed request.',
    });
  });
});

describe('par.ts: the pushed request taken at /authorize', () => {
  it('needs exactly one client_id with the request_uri, and keeps the request meanwhile', async () => {
    const requestUri = requestUriOf(await push(site, 'web'));
    const needs = 'A pushed request needs one request_uri and the client_id that pushed it.';
    const alone = await get(`/authorize?request_uri=${encodeURIComponent(requestUri)}`);
    expectPage(alone, 400, needs);
    const twice = await get(`${authorizeWith('web', requestUri)}&client_id=web`, site.cookie);
    expectPage(twice, 400, needs);
    // neither took the request from the store
    const taken = await get(authorizeWith('web', requestUri), site.cookie);
    expect(taken.status).not.toBe(400);
  });

  it('tells another client that the request is not its own, without taking it', async () => {
    const requestUri = requestUriOf(await push(site, 'web'));
    const consume = vi.spyOn(site.as.context.store, 'destroy');
    try {
      const stolen = await get(authorizeWith('other', requestUri), site.cookie);
      expectPage(stolen, 400, 'This request was pushed by another application.');
      expect(consume).not.toHaveBeenCalled();
    } finally {
      consume.mockRestore();
    }
    const taken = await get(authorizeWith('web', requestUri), site.cookie);
    expect(taken.status).not.toBe(400);
  });

  it('answers a request taken meanwhile (a concurrent use won) as used already', async () => {
    const requestUri = requestUriOf(await push(site, 'web'));
    const { store } = site.as.context;
    const consume = vi.spyOn(store, 'destroy').mockReturnValueOnce(false);
    try {
      const lost = await get(authorizeWith('web', requestUri), site.cookie);
      const used = 'This request has expired or was used already. Go back to the application.';
      expectPage(lost, 400, used);
      expect(consume).toHaveBeenCalledTimes(1);
    } finally {
      consume.mockRestore();
    }
  });

  it('asks the store for a request_uri of at most 256 characters only', async () => {
    const { store } = site.as.context;
    const read = vi.spyOn(store, 'find');
    try {
      const prefix = 'urn:ietf:params:oauth:request_uri:';
      const longest = `${prefix}${'A'.repeat(256 - prefix.length)}`;
      const unknown = 'This request has expired or was used already. Go back to the application.';
      expectPage(await get(authorizeWith('web', longest), site.cookie), 400, unknown);
      expect(read).toHaveBeenCalledTimes(1);
      expectPage(await get(authorizeWith('web', `${longest}A`), site.cookie), 400, unknown);
      expect(read).toHaveBeenCalledTimes(1);
    } finally {
      read.mockRestore();
    }
  });

  it('approves a pushed request from its consent form, the form carrying its request_uri', async () => {
    await forgetConsents(site);
    const requestUri = requestUriOf(await push(site, 'pushy'));
    const consent = await get(authorizeWith('pushy', requestUri), site.cookie);
    expect(consent.status, consent.body).toBe(200);
    expect(new Map(hiddenInputs(consent.body)).get('request_uri')).toBe(requestUri);
    const approved = await post(
      site,
      '/authorize',
      new URLSearchParams([...hiddenInputs(consent.body), ['decision', 'approve']]),
      { Cookie: site.cookie },
    );
    const params = redirected(approved);
    expect(params.get('error')).toBeNull();
    expect(params.get('code')).toMatch(/.{20,}/);
  });

  it('signs in from the sign-in form of a pushed request', async () => {
    await forgetConsents(site);
    const requestUri = requestUriOf(await push(site, 'pushy'));
    const page = await get(authorizeWith('pushy', requestUri));
    expect(page.status).toBe(200);
    const signedIn = await post(
      site,
      '/authorize',
      new URLSearchParams([
        ...hiddenInputs(page.body),
        ['username', 'alice'],
        ['password', 'alice-password'],
      ]),
    );
    expect(signedIn.status, signedIn.body).toBe(200);
    expect(signedIn.body).toContain('name="decision" value="approve"');
  });
});

describe('authorize.ts: the endpoint', () => {
  it('names createAuthorizeEndpoint() in the error of an unknown option', () => {
    expect(() =>
      createAuthorizeEndpoint(site.as.context, { formKye: 'x' } as Record<string, unknown>),
    ).toThrow(/^createAuthorizeEndpoint\(\)/);
  });

  it('prompt=none: login_required and consent_required, each described', async () => {
    await forgetConsents(site);
    const query = `/authorize?${authorizationQuery('web', { prompt: 'none' })}`;
    const signedOut = redirected(await get(query));
    expect([signedOut.get('error'), signedOut.get('error_description')]).toEqual([
      'login_required',
      'The user must sign in.',
    ]);
    const signedIn = redirected(await get(query, site.cookie));
    expect([signedIn.get('error'), signedIn.get('error_description')]).toEqual([
      'consent_required',
      'The user must consent.',
    ]);
  });

  it('answers a consent form without a session with the sign-in form, saying why', async () => {
    await forgetConsents(site);
    const consent = await get(`/authorize?${authorizationQuery('web')}`, site.cookie);
    expect(consent.status).toBe(200);
    const reply = await post(
      site,
      '/authorize',
      new URLSearchParams([...hiddenInputs(consent.body), ['decision', 'approve']]),
    );
    expect(reply.status).toBe(401);
    expect(reply.body).toContain('Your session has ended. Sign in again.');
    expect(reply.body).toContain('name="password"');
  });

  it('describes a denial, and refuses a decision that is neither', async () => {
    await forgetConsents(site);
    const consent = await get(`/authorize?${authorizationQuery('web')}`, site.cookie);
    const decide = (decision: string) =>
      post(
        site,
        '/authorize',
        new URLSearchParams([...hiddenInputs(consent.body), ['decision', decision]]),
        { Cookie: site.cookie },
      );
    const denied = redirected(await decide('deny'));
    expect([denied.get('error'), denied.get('error_description')]).toEqual([
      'access_denied',
      'The user denied the request.',
    ]);
    expectPage(await decide('maybe'), 400, 'The decision must be approve or deny.');
  });

  it('refuses a consent form not pushed once its client must push', async () => {
    await forgetConsents(site);
    const consent = await get(`/authorize?${authorizationQuery('other')}`, site.cookie);
    expect(consent.status).toBe(200);
    const clients = site.as.context.clients as MemoryClientStore;
    const client = (await clients.get('other'))!;
    clients.replace({ ...client, requirePushedAuthorizationRequests: true });
    try {
      const reply = await post(
        site,
        '/authorize',
        new URLSearchParams([...hiddenInputs(consent.body), ['decision', 'approve']]),
        { Cookie: site.cookie },
      );
      const params = redirected(reply);
      expect([params.get('error'), params.get('error_description')]).toEqual([
        'invalid_request',
        'This client must push its authorization requests (PAR, RFC 9126).',
      ]);
      expect(params.has('code')).toBe(false);
    } finally {
      clients.replace(client);
    }
  });

  it('answers a sign-in form whose request fails again with that error alone', async () => {
    const page = await get(`/authorize?${authorizationQuery('other')}`);
    expect(page.status).toBe(200);
    const clients = site.as.context.clients as MemoryClientStore;
    const client = (await clients.get('other'))!;
    clients.replace({ ...client, scopes: ['read:messages'] });
    const before = log.errors.length;
    try {
      const reply = await post(
        site,
        '/authorize',
        new URLSearchParams([
          ...hiddenInputs(page.body),
          ['username', 'alice'],
          ['password', 'alice-password'],
        ]),
      );
      expect(redirected(reply).get('error')).toBe('invalid_scope');
      expect(reply.headers['set-cookie']).toBeUndefined();
    } finally {
      clients.replace(client);
    }
    await expectNoNewErrors(before);
  });
});

describe('authorize-answers.ts: redirects to the client', () => {
  it('adds a query to a redirect URI with the separator it needs', () => {
    const code = { code: 'c-1', state: undefined };
    expect(appendQuery('https://app.example.com/cb', code)).toBe(
      'https://app.example.com/cb?code=c-1',
    );
    expect(appendQuery('https://app.example.com/cb?', code)).toBe(
      'https://app.example.com/cb?code=c-1',
    );
    expect(appendQuery('https://app.example.com/cb?a=1&', code)).toBe(
      'https://app.example.com/cb?a=1&code=c-1',
    );
    expect(appendQuery('https://app.example.com/cb?a=1', code)).toBe(
      'https://app.example.com/cb?a=1&code=c-1',
    );
  });

  it('sends no Referer and nothing cacheable with a redirect', async () => {
    const reply = await get(`/authorize?${authorizationQuery('web', { prompt: 'none' })}`);
    expect(reply.status).toBe(303);
    expect(reply.headers['referrer-policy']).toBe('no-referrer');
    expect(reply.headers['cache-control']).toBe('no-store');
  });

  it('stops at an error page: nothing more is done for the request', async () => {
    const before = log.errors.length;
    const reply = await get(`/authorize?${authorizationQuery('nobody')}`, site.cookie);
    expect(reply.status).toBe(400);
    expect(reply.body).toContain('<h1>This request cannot be completed</h1>');
    await expectNoNewErrors(before);
  });

  it('stops at an error redirected to the client: nothing more is done for the request', async () => {
    const before = log.errors.length;
    const reply = await get(`/authorize?${authorizationQuery('web', { scope: 'admin' })}`);
    expect(redirected(reply).get('error')).toBe('invalid_scope');
    await expectNoNewErrors(before);
  });

  it('titles an error page other than 400 as something that went wrong', async () => {
    const reply = await request(site.app, '/authorize', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '{}',
    });
    expect(reply.status).toBe(415);
    expect(reply.body).toContain('<h1>Something went wrong</h1>');
  });

  it('shows the expired-form page for a form whose token does not match', async () => {
    const page = await get(`/authorize?${authorizationQuery('web')}`);
    const fields = new URLSearchParams([
      ...hiddenInputs(page.body),
      ['username', 'alice'],
      ['password', 'alice-password'],
    ]);
    fields.set('state', 'changed');
    expectPage(
      await post(site, '/authorize', fields),
      400,
      'This form has expired or was changed. Go back to the application and start again.',
    );
  });

  it('challenges with WWW-Authenticate on a refused sign-in only', async () => {
    const page = await get(`/authorize?${authorizationQuery('web')}`);
    expect(page.status).toBe(200);
    expect(page.headers['www-authenticate']).toBeUndefined();
    const wrong = await post(
      site,
      '/authorize',
      new URLSearchParams([
        ...hiddenInputs(page.body),
        ['username', 'alice'],
        ['password', 'wrong-password'],
      ]),
    );
    expect(wrong.status).toBe(401);
    expect(wrong.headers['www-authenticate']).toMatch(/^Cookie/);
  });
});

describe('authorize-answers.ts: silent approval and the code kept', () => {
  /** Approves `query` on its consent page, then asks again: the second reply. */
  async function askTwice(query: string): Promise<Reply> {
    await forgetConsents(site);
    const first = await approveVia(site, `/authorize?${query}`);
    expect(first.code).toBeDefined();
    return get(`/authorize?${query}`, site.cookie);
  }

  it('never answers a public client with a private-use redirect silently, whatever its query', async () => {
    const again = await askTwice(
      new URLSearchParams({
        ...Object.fromEntries(new URLSearchParams(authorizationQuery('native'))),
        redirect_uri: NATIVE,
      }).toString(),
    );
    expect(again.status).toBe(200);
    expect(again.body).toContain('name="decision" value="approve"');
  });

  it('answers a confidential client with a private-use redirect silently once consented', async () => {
    const again = await askTwice(
      new URLSearchParams({
        ...Object.fromEntries(new URLSearchParams(authorizationQuery('native-confidential'))),
        redirect_uri: NATIVE_CONFIDENTIAL,
      }).toString(),
    );
    expect(again.status, again.body).toBe(303);
    expect(new URL(again.headers.location!).searchParams.get('code')).toMatch(/.{20,}/);
  });

  it('lets a code be redeemed without redirect_uri when the request named none', async () => {
    const { verifier, challenge } = pkce();
    const query = new URLSearchParams(authorizationQuery('web', {}, challenge));
    query.delete('redirect_uri');
    const { code } = await approveVia(site, `/authorize?${query}`);
    const tokens = await post(
      site,
      '/token',
      new URLSearchParams({
        grant_type: 'authorization_code',
        code: code!,
        code_verifier: verifier,
      }),
      { Authorization: basic('web', SECRETS.web!) },
    );
    expect(tokens.status, tokens.body).toBe(200);
  });

  it('keeps no dpop_jkt with a code the request bound to no key', async () => {
    const { store } = site.as.context;
    const save = vi.spyOn(store, 'save');
    try {
      await forgetConsents(site);
      const { code } = await approveVia(site, `/authorize?${authorizationQuery('web')}`);
      expect(code).toBeDefined();
      const saved = save.mock.calls.filter(([kind]) => kind === 'code');
      expect(saved).toHaveLength(1);
      const record = saved[0]![2] as AuthorizationCodeRecord;
      expect(record.redirectUri).toBe(WEB);
      expect(Object.keys(record)).not.toContain('dpopJkt');
      expect(Object.keys(record)).not.toContain('redirectUriOmitted');
    } finally {
      save.mockRestore();
    }
  });
});
