// The OpenID Provider behaviours a certifiable OP needs beyond the authorization code flow
// (issue 26): authorization requests by POST, request objects refused as OpenID Connect Core
// §6 says, remembered consent and what `prompt`, `max_age` and `id_token_hint` make of it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeySet, type KeySet } from '../../src/oauth/key-set.js';
import { hiddenInputs } from '../helpers/browser.js';
import { closeAll, type Reply, request } from '../helpers/http.js';
import {
  authorizationQuery,
  type Key,
  log,
  newKey,
  post,
  type Site,
  startSite,
  WEB,
} from './par-fixtures.js';

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
  ])('%s with %s: redirected %s, no code for the outer parameters', async (method, name, value, error) => {
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
  });

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
