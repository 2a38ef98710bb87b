import { gzipSync } from 'node:zlib';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticate, getPrincipal, jwtBearer, sendJson } from '../../src/index.js';
import { signInAndApprove as approveAt, Browser } from '../helpers/browser.js';
import { parseReply, rawRequest, request, serve } from '../helpers/http.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

let server: RunningServer;

beforeAll(async () => {
  server = await startReferenceServer();
});

afterAll(async () => {
  await server?.stop();
});

const insecure = { execute: [client.allowInsecureRequests] };

async function configFor(clientId: string, secret?: string, basic = true) {
  const auth =
    secret === undefined
      ? client.None()
      : basic
        ? client.ClientSecretBasic(secret)
        : client.ClientSecretPost(secret);
  return client.discovery(new URL(server.url), clientId, undefined, auth, insecure);
}

/** Signs in and approves the consent page of `url` as `user`; returns the redirect's Location. */
/** An authorization request of the confidential demo-web client, with PKCE. */
async function webAuthorization(params: Record<string, string>) {
  const config = await configFor('demo-web', 'demo-web-secret');
  const verifier = client.randomPKCECodeVerifier();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: 'http://127.0.0.1:8080/callback',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    ...params,
  });
  return { config, verifier, url };
}

const signInAndApprove = (target: URL, user = 'alice') => approveAt(server.url, target, user);

async function verifyAccessToken(token: string) {
  const metadata = (await (
    await fetch(`${server.url}/.well-known/openid-configuration`)
  ).json()) as { jwks_uri: string };
  const jwks = createRemoteJWKSet(new URL(metadata.jwks_uri));
  return jwtVerify(token, jwks, { issuer: server.url, audience: server.url, typ: 'at+jwt' });
}

describe('the authorization server with openid-client', () => {
  it('publishes discovery metadata with S256 only and the iss parameter', async () => {
    const config = await configFor('demo-service', 'demo-service-secret');
    const metadata = config.serverMetadata();
    expect(metadata.issuer).toBe(server.url);
    expect(metadata.code_challenge_methods_supported).toEqual(['S256']);
    expect(metadata.authorization_response_iss_parameter_supported).toBe(true);
    for (const endpoint of [
      'authorization_endpoint',
      'token_endpoint',
      'device_authorization_endpoint',
      'revocation_endpoint',
      'introspection_endpoint',
      'userinfo_endpoint',
      'jwks_uri',
    ] as const) {
      expect(String(metadata[endpoint]).startsWith(server.url)).toBe(true);
    }
    const jwks = (await (await fetch(String(metadata.jwks_uri))).json()) as {
      keys: Record<string, string>[];
    };
    expect(jwks.keys[0]).toMatchObject({
      kty: 'RSA',
      use: 'sig',
      alg: 'RS256',
      kid: expect.any(String),
    });
  });

  it('issues client_credentials tokens (Basic and post) that portico accepts on /api/me', async () => {
    for (const basic of [true, false]) {
      const config = await configFor('demo-service', 'demo-service-secret', basic);
      const tokens = await client.clientCredentialsGrant(config, { scope: 'read:messages' });
      expect(tokens.token_type.toLowerCase()).toBe('bearer');
      expect(tokens.expires_in).toBe(900);
      const { payload, protectedHeader } = await verifyAccessToken(tokens.access_token);
      expect(protectedHeader).toMatchObject({ alg: 'RS256', typ: 'at+jwt' });
      expect(payload).toMatchObject({
        sub: 'demo-service',
        client_id: 'demo-service',
        scope: 'read:messages',
      });
      const me = await fetch(`${server.url}/api/me`, {
        headers: { Authorization: `Bearer ${tokens.access_token}` },
      });
      // every field a string: a service is named by its client id, its role is `service`
      expect(await me.json()).toEqual({
        sub: 'demo-service',
        name: 'demo-service',
        role: 'service',
        method: 'bearer',
        scopes: ['read:messages'],
      });
    }
    // another service verifies the tokens knowing only the issuer URL (keys by discovery)
    const resource = await serve([
      authenticate([jwtBearer({ issuer: server.url, audience: server.url, typ: 'at+jwt' })]),
      (req, res) => sendJson(res, 200, getPrincipal(req)?.sub),
    ]);
    const issued = await client.clientCredentialsGrant(
      await configFor('demo-service', 'demo-service-secret'),
      {},
    );
    const checked = await request(resource, '/', {
      headers: { Authorization: `Bearer ${issued.access_token}` },
    });
    expect(checked.status).toBe(200);
    expect(checked.body).toBe('"demo-service"');
    await resource.close();

    const config = await configFor('demo-service', 'demo-service-secret');
    await expect(client.clientCredentialsGrant(config, { scope: 'openid' })).rejects.toMatchObject({
      error: 'invalid_scope',
    });
    // a 401 with a Basic challenge: openid-client reports the challenge's error
    const refused = await client
      .clientCredentialsGrant(await configFor('demo-service', 'wrong-secret'), {})
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(client.WWWAuthenticateChallengeError);
    const challenge = (
      refused as { cause: { scheme: string; parameters: Record<string, string> }[] }
    ).cause[0]!;
    expect(challenge).toMatchObject({ scheme: 'basic', parameters: { error: 'invalid_client' } });
  });

  it('runs authorization code + PKCE for the public SPA client, with state, nonce, iss, refresh and UserInfo', async () => {
    const config = await configFor('demo-spa');
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: 'http://127.0.0.1:5173/callback',
      scope: 'openid profile email read:messages',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    const location = await signInAndApprove(url);
    const callback = new URL(location);
    expect(`${callback.origin}${callback.pathname}`).toBe('http://127.0.0.1:5173/callback');
    expect(callback.searchParams.get('iss')).toBe(server.url);
    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      idTokenExpected: true,
    });
    expect(tokens.refresh_token).toBeTypeOf('string');
    const claims = tokens.claims()!;
    expect(claims).toMatchObject({
      sub: 'alice',
      aud: 'demo-spa',
      email: 'alice@example.com',
      name: 'Alice Example',
      nonce,
    });
    expect(decodeProtectedHeader(tokens.id_token!).typ).not.toBe('at+jwt');
    const { payload } = await verifyAccessToken(tokens.access_token);
    expect(payload).toMatchObject({
      sub: 'alice',
      name: 'Alice Example',
      role: 'admin',
      client_id: 'demo-spa',
    });

    const info = await client.fetchUserInfo(config, tokens.access_token, 'alice');
    expect(info).toMatchObject({
      sub: 'alice',
      email: 'alice@example.com',
      email_verified: expect.any(Boolean),
    });

    // an ID token is not an access token
    const idAsAccess = await fetch(`${server.url}/api/me`, {
      headers: { Authorization: `Bearer ${tokens.id_token}` },
    });
    expect(idAsAccess.status).toBe(401);

    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    // reusing the rotated token revokes the family: the new one stops working too
    await expect(client.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    await expect(client.refreshTokenGrant(config, refreshed.refresh_token!)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
  });

  it('puts every claim of the identity-token table in the ID token, even for scope openid alone', async () => {
    const { config, verifier, url } = await webAuthorization({ scope: 'openid' });
    const tokens = await client.authorizationCodeGrant(
      config,
      new URL(await signInAndApprove(url, 'bob')),
      { pkceCodeVerifier: verifier, idTokenExpected: true },
    );
    const claims = tokens.claims()!;
    expect(claims).toMatchObject({
      iss: server.url,
      sub: 'bob',
      aud: 'demo-web',
      name: 'Bob Example',
      email: 'bob@example.com',
      email_verified: true,
      picture: `${server.url}/avatars/bob.svg`,
      iat: expect.any(Number),
      exp: expect.any(Number),
    });
    // the picture is there to be shown, by a page of another origin too
    const picture = await fetch(claims.picture as string);
    expect(picture.status).toBe(200);
    expect(picture.headers.get('content-type')).toBe('image/svg+xml');
    expect(await picture.text()).toMatch(/^<svg [^>]*aria-label="Bob Example"/);
    // UserInfo still releases by scope: openid alone gives the subject only
    expect(await client.fetchUserInfo(config, tokens.access_token, 'bob')).toEqual({ sub: 'bob' });
  });

  it('refuses a second use of a code', async () => {
    const { config, verifier, url } = await webAuthorization({
      scope: 'openid read:messages',
      state: 'xyz',
    });
    const callback = new URL(await signInAndApprove(url, 'bob'));
    await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: 'xyz',
    });
    await expect(
      client.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: verifier,
        expectedState: 'xyz',
      }),
    ).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  it('shows an error page, never a redirect, for an unregistered redirect URI', async () => {
    const res = await fetch(
      `${server.url}/authorize?response_type=code&client_id=demo-spa&redirect_uri=${encodeURIComponent('http://127.0.0.1:5173/callback/../evil')}&code_challenge=${'a'.repeat(43)}&code_challenge_method=S256`,
      { redirect: 'manual' },
    );
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
  });

  it('runs the device flow, with revocation and introspection', async () => {
    const config = await configFor('demo-device');
    const start = await client.initiateDeviceAuthorization(config, {
      scope: 'openid read:messages',
    });
    expect(start.user_code).toMatch(/^[A-Z]{4}-[A-Z]{4}$/);
    expect(start.verification_uri).toBe(`${server.url}/device/verify`);
    const polled = client.pollDeviceAuthorizationGrant(config, start);
    // the user signs in on a second device and approves the code, typed in lower case without the dash
    const browser = new Browser(server.url);
    const verifyUrl = `${server.url}/device/verify`;
    const signIn = await browser.fetch(verifyUrl);
    let page = await browser.submit(
      signIn,
      { username: 'bob', password: 'bob-password' },
      verifyUrl,
    );
    if (page.status === 303 || page.status === 302)
      page = await browser.fetch(new URL(page.headers.get('location')!, verifyUrl));
    const typed = start.user_code.replace('-', '').toLowerCase();
    // the page shows the device and its scopes before its Allow approves (RFC 8628 §5.4)
    const confirm = await browser.submit(
      page,
      { user_code: typed, decision: 'approve' },
      verifyUrl,
    );
    expect(confirm.status).toBe(200);
    const decided = await browser.submit(
      confirm,
      { user_code: typed, decision: 'approve' },
      verifyUrl,
    );
    expect(decided.status).toBeLessThan(400);
    const tokens = await polled;
    const { payload } = await verifyAccessToken(tokens.access_token);
    expect(payload).toMatchObject({ sub: 'bob', client_id: 'demo-device' });

    // the resource server (introspection: 'any'); another client would see { active: false }
    const introspector = await configFor('demo-service', 'demo-service-secret');
    expect(await client.tokenIntrospection(introspector, tokens.access_token)).toMatchObject({
      active: true,
      sub: 'bob',
    });
    const web = await configFor('demo-web', 'demo-web-secret');
    expect(await client.tokenIntrospection(web, tokens.access_token)).toMatchObject({
      active: false,
    });
    const device = await configFor('demo-device');
    await client.tokenRevocation(device, tokens.refresh_token!);
    await expect(client.refreshTokenGrant(device, tokens.refresh_token!)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    expect(await client.tokenIntrospection(introspector, 'not-a-token')).toMatchObject({
      active: false,
    });
  }, 30_000);
});

describe('the reference server at the door (audit findings)', () => {
  /** Sends `GET <target>` over a raw socket, with the Host header of the server. */
  const rawGet = async (target: string) => {
    const { host, port } = new URL(server.url);
    return parseReply(
      await rawRequest(
        Number(port),
        `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
      ),
    );
  };

  it('accepts the absolute form of a request target (RFC 9112 §3.2.2)', async () => {
    const jwks = await rawGet(`${server.url}/.well-known/jwks.json`);
    expect(jwks.status, jwks.body).toBe(200);
    expect(JSON.parse(jwks.body).keys.length).toBeGreaterThan(0);
    // the /api credentials check (a mount) applies to the absolute form as well
    const messages = await rawGet(`${server.url}/api/messages`);
    expect(messages.status, messages.body).toBe(401);
    expect(messages.headers['www-authenticate']).toBeDefined();
  });

  it('answers an unknown or spent device_code with invalid_grant (RFC 8628 §3.5)', async () => {
    const poll = (deviceCode: string) =>
      request(server.url, '/token', {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
          device_code: deviceCode,
          client_id: 'demo-device',
        }).toString(),
      });
    const unknown = await poll('bogus');
    expect(unknown.status).toBe(400);
    expect(JSON.parse(unknown.body).error).toBe('invalid_grant');
    const started = await request(server.url, '/device', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'client_id=demo-device',
    });
    const pending = await poll(JSON.parse(started.body).device_code);
    expect(JSON.parse(pending.body).error).toBe('authorization_pending');
  });

  it('refuses a request body with a content coding, at /token as an OAuth error', async () => {
    const form = 'grant_type=client_credentials';
    const basic = `Basic ${Buffer.from('demo-service:demo-service-secret').toString('base64')}`;
    for (const body of [gzipSync(form), Buffer.from(form)]) {
      const reply = await request(server.url, '/token', {
        method: 'POST',
        headers: {
          'Content-Type': 'application/x-www-form-urlencoded',
          'Content-Encoding': 'gzip',
          Authorization: basic,
        },
        body,
      });
      expect(reply.status, reply.body).toBe(400);
      expect(JSON.parse(reply.body).error).toBe('invalid_request');
      expect(reply.headers['accept-encoding']).toBe('identity');
    }
  });
});
