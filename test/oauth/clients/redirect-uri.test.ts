// RFC 8252 §7.3 loopback redirect URIs: a registered loopback URI without a port matches any
// port (scheme, host, path and query exactly), one with a port only that port; every other
// URI compares exactly. And the shapes a registered client's redirect URI may have (§7.1).
// Over real sockets: /authorize and /par follow the same rule, and the token endpoint still
// wants the very redirect_uri of the authorization request.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  findRedirectUri,
  redirectUriMatches,
  redirectUriRefusal,
} from '../../../src/oauth/clients/redirect-uri.js';
import { createKeySet, type KeySet } from '../../../src/oauth/tokens/key-set.js';
import { closeAll, json, request } from '../../helpers/http.js';
import {
  approve,
  FORM,
  log,
  query,
  type RegistrationSite,
  register,
  startRegistrationSite,
} from '../endpoints/registration-fixtures.js';
import { pkce } from '../token-fixtures.js';

describe('redirectUriMatches (RFC 8252 §7.3)', () => {
  it.each([
    ['http://127.0.0.1/cb', 'http://127.0.0.1:53219/cb', true],
    ['http://[::1]/cb', 'http://[::1]:8080/cb', true],
    ['http://localhost/cb?x=1', 'http://localhost:1/cb?x=1', true],
    ['http://127.0.0.1/cb', 'http://127.0.0.1/cb', true],
    ['http://127.0.0.1:8080/cb', 'http://127.0.0.1:8080/cb', true],
    // a registered port is exact
    ['http://127.0.0.1:8080/cb', 'http://127.0.0.1:9090/cb', false],
    ['http://127.0.0.1:8080/cb', 'http://127.0.0.1/cb', false],
    // host, path, query and scheme stay exact
    ['http://127.0.0.1/cb', 'http://localhost:5000/cb', false],
    ['http://127.0.0.1/cb', 'http://127.0.0.1:5000/cb/', false],
    ['http://127.0.0.1/cb', 'http://127.0.0.1:5000/cb?x=1', false],
    ['http://127.0.0.1/cb', 'https://127.0.0.1:5000/cb', false],
    ['http://127.0.0.1/cb', 'http://127.0.0.1:5000/cb#f', false],
    ['http://127.0.0.1/cb', 'http://127.0.0.1:99999/cb', false],
    ['http://127.0.0.1/cb', 'http://127.0.0.1:5000@evil.example/cb', false],
    ['http://127.0.0.1/cb', 'http://127.0.0.1.evil.example:5000/cb', false],
    // not loopback: exact only
    ['https://app.example/cb', 'https://app.example:8443/cb', false],
    ['http://10.0.0.1/cb', 'http://10.0.0.1:80/cb', false],
  ])('%s matches %s: %s', (registered, requested, expected) => {
    expect(redirectUriMatches(registered, requested)).toBe(expected);
  });

  it('findRedirectUri answers the registered URI that matched', () => {
    expect(findRedirectUri(['https://a.example/cb', 'http://[::1]/cb'], 'http://[::1]:7/cb')).toBe(
      'http://[::1]/cb',
    );
    expect(findRedirectUri(['https://a.example/cb'], 'https://a.example/cb2')).toBeUndefined();
  });
});

describe('redirectUriRefusal (RFC 8252 §7, RFC 7591 §2)', () => {
  const all = ['https', 'loopback', 'private-use'] as const;
  it.each([
    'https://app.example/cb',
    'http://127.0.0.1/cb',
    'http://[::1]:8080/cb',
    'http://localhost/cb',
    'com.example.app:/oauth2redirect',
  ])('takes %s', (uri) => {
    expect(redirectUriRefusal(uri, all)).toBeUndefined();
  });
  it.each([
    ['javascript:alert(1)', /never allowed/],
    ['data:text/html,x', /never allowed/],
    ['vbscript:x', /never allowed/],
    ['file:///etc/passwd', /never allowed/],
    ['https://app.example/cb#', /fragment/],
    ['http://app.example/cb', /127\.0\.0\.1/],
    ['http://192.168.1.1/cb', /127\.0\.0\.1/],
    ['myapp:/cb', /private-use/],
    ['com.example.app://host/cb', /no authority/],
    ['https://u:p@app.example/cb', /credentials/],
    ['https://app.example/c b', /spaces/],
    ['/relative/cb', /absolute/],
  ])('refuses %s', (uri, why) => {
    expect(redirectUriRefusal(uri, all)).toMatch(why);
  });
  it('follows the allowed shapes', () => {
    expect(redirectUriRefusal('http://127.0.0.1/cb', ['https'])).toMatch(/not allowed/);
    expect(redirectUriRefusal('com.example.app:/cb', ['https', 'loopback'])).toMatch(/not allowed/);
    expect(redirectUriRefusal('https://a.example/cb', ['loopback'])).toMatch(/not allowed/);
  });
});

describe('loopback redirect URIs over real sockets: /authorize, /par and /token', () => {
  let keys: KeySet;
  let site: RegistrationSite;
  let portless: { client_id: string };
  let ported: { client_id: string };
  beforeAll(async () => {
    keys = await createKeySet();
    site = await startRegistrationSite(keys);
    const metadata = (redirect: string) => ({
      redirect_uris: [redirect],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code'],
    });
    portless = json(await register(site, metadata('http://127.0.0.1/cb')));
    ported = json(await register(site, metadata('http://127.0.0.1:8080/cb')));
  });
  afterAll(async () => {
    await closeAll();
    expect(log.errors).toEqual([]);
  });

  it('a portless registration takes any port; the code is redeemed with that exact URI only', async () => {
    const { verifier, challenge } = pkce();
    const uri = 'http://127.0.0.1:61000/cb';
    const { code } = await approve(site, `/authorize?${query(portless.client_id, uri, challenge)}`);
    const redeem = (redirectUri: string) =>
      request(site.app, '/token', {
        method: 'POST',
        headers: FORM,
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          client_id: portless.client_id,
          code,
          code_verifier: verifier,
          redirect_uri: redirectUri,
        }).toString(),
      });
    // the registered form, or another port: not the authorization request's URI
    const other = await redeem('http://127.0.0.1/cb');
    expect(other.status).toBe(400);
    expect(json(other).error).toBe('invalid_grant');
  });

  it('the same code flow succeeds with the exact URI of the request', async () => {
    const { verifier, challenge } = pkce();
    const uri = 'http://127.0.0.1:61001/cb';
    const { code, location } = await approve(
      site,
      `/authorize?${query(portless.client_id, uri, challenge)}`,
    );
    expect(location.port).toBe('61001');
    const tokens = await request(site.app, '/token', {
      method: 'POST',
      headers: FORM,
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        client_id: portless.client_id,
        code,
        code_verifier: verifier,
        redirect_uri: uri,
      }).toString(),
    });
    expect(tokens.status, tokens.body).toBe(200);
  });

  it('a registration with a port keeps it: another port is the error page, never a redirect', async () => {
    const page = await request(
      site.app,
      `/authorize?${query(ported.client_id, 'http://127.0.0.1:9090/cb')}`,
      { headers: { Cookie: site.cookie } },
    );
    expect(page.status).toBe(400);
    expect(page.headers.location).toBeUndefined();
    const pushed = await request(site.app, '/par', {
      method: 'POST',
      headers: FORM,
      body: query(ported.client_id, 'http://127.0.0.1:9090/cb'),
    });
    expect(pushed.status).toBe(400);
    const fine = await request(site.app, '/par', {
      method: 'POST',
      headers: FORM,
      body: query(portless.client_id, 'http://127.0.0.1:40000/cb'),
    });
    expect(fine.status, fine.body).toBe(201);
  });
});
