// The reference server's resource indicators (RFC 8707), as the contract's "Resource
// indicators" rows say, over real sockets and driven by openid-client v6 and oauth4webapi,
// which both send `resource`: the two resources BASE_URL and {BASE_URL}/mcp, invalid_target,
// the audience of each token, refresh narrowing, PAR, introspection and the API refusing
// /mcp-only tokens.
import { decodeJwt } from 'jose';
import * as oauth from 'oauth4webapi';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signInAndApprove } from '../helpers/browser.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const REDIRECT = 'http://127.0.0.1:8080/callback';
const insecure = { execute: [client.allowInsecureRequests] };

let server: RunningServer;
let web: client.Configuration;
let service: client.Configuration;
let base: string;
let mcp: string;

beforeAll(async () => {
  server = await startReferenceServer();
  base = server.url;
  mcp = `${server.url.replace(/\/$/, '')}/mcp`;
  const configFor = (id: string, secret: string) =>
    client.discovery(
      new URL(server.url),
      id,
      undefined,
      client.ClientSecretBasic(secret),
      insecure,
    );
  web = await configFor('demo-web', 'demo-web-secret');
  service = await configFor('demo-service', 'demo-service-secret');
});

afterAll(async () => {
  await server?.stop();
});

/** demo-web's code flow with openid-client, `resource` as given (repeated in the query). */
async function codeFlow(
  resources: string[],
  atToken: Record<string, string> = {},
  scope = 'openid profile offline_access read:messages write:messages',
) {
  const verifier = client.randomPKCECodeVerifier();
  const params = new URLSearchParams({
    redirect_uri: REDIRECT,
    scope,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  for (const resource of resources) params.append('resource', resource);
  const back = new URL(
    await signInAndApprove(server.url, client.buildAuthorizationUrl(web, params)),
  );
  return client.authorizationCodeGrant(web, back, { pkceCodeVerifier: verifier }, atToken);
}

const refusalOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'granted',
    (e: { error?: string; status?: number }) => `${e.status} ${e.error}`,
  );

const at = (path: string, token: string) =>
  fetch(`${server.url}${path}`, { headers: { Authorization: `Bearer ${token}` } });

describe('resource indicators at the reference server (RFC 8707)', () => {
  it('without any resource: aud BASE_URL, as for every existing client', async () => {
    const tokens = await codeFlow([]);
    expect(decodeJwt(tokens.access_token).aud).toBe(base);
    expect((await at('/api/me', tokens.access_token)).status).toBe(200);
  });

  it('a token for /mcp: aud /mcp, its scopes only, refused at /api, /userinfo and /events', async () => {
    const tokens = await codeFlow([mcp]);
    const claims = decodeJwt(tokens.access_token);
    expect(claims.aud).toBe(mcp);
    expect(claims.scope).toBe('read:messages write:messages');
    // the attack: the /mcp token replayed at the API of the default resource
    for (const path of ['/api/me', '/api/messages', '/userinfo', '/events']) {
      const res = await at(path, tokens.access_token);
      expect(res.status, path).toBe(401);
      expect(res.headers.get('www-authenticate'), path).toMatch(/error="invalid_token"/);
      await res.body?.cancel();
    }
  });

  it('several at /authorize: aud both, or the one the token request names; never another', async () => {
    const both = await codeFlow([base, mcp]);
    expect(decodeJwt(both.access_token).aud).toEqual([base, mcp]);
    const one = await codeFlow([base, mcp], { resource: mcp });
    expect(decodeJwt(one.access_token).aud).toBe(mcp);
    expect(await refusalOf(codeFlow([mcp], { resource: base }))).toBe('400 invalid_target');
  });

  it('a refresh keeps the grant resources, narrows to one, never widens (openid-client)', async () => {
    const both = await codeFlow([base, mcp]);
    const narrowed = await client.refreshTokenGrant(web, both.refresh_token!, { resource: mcp });
    expect(decodeJwt(narrowed.access_token).aud).toBe(mcp);
    const again = await client.refreshTokenGrant(web, narrowed.refresh_token!);
    expect(decodeJwt(again.access_token).aud).toEqual([base, mcp]);
    const mcpOnly = await codeFlow([mcp]);
    expect(
      await refusalOf(client.refreshTokenGrant(web, mcpOnly.refresh_token!, { resource: base })),
    ).toBe('400 invalid_target');
  });

  it('an unknown resource at /authorize is an invalid_target redirect to the client', async () => {
    const url = client.buildAuthorizationUrl(web, {
      redirect_uri: REDIRECT,
      scope: 'openid',
      state: 'st-1',
      code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
      code_challenge_method: 'S256',
      resource: 'https://elsewhere.example/api',
    });
    const res = await fetch(url, { redirect: 'manual' });
    expect(res.status).toBe(303);
    const back = new URL(res.headers.get('location')!);
    expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
    expect(back.searchParams.get('error')).toBe('invalid_target');
    expect(back.searchParams.get('state')).toBe('st-1');
  });

  it('PAR carries resource (openid-client buildAuthorizationUrlWithPAR)', async () => {
    const verifier = client.randomPKCECodeVerifier();
    const url = await client.buildAuthorizationUrlWithPAR(web, {
      redirect_uri: REDIRECT,
      scope: 'openid read:messages',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      resource: mcp,
    });
    const back = new URL(await signInAndApprove(server.url, url));
    const tokens = await client.authorizationCodeGrant(web, back, { pkceCodeVerifier: verifier });
    expect(decodeJwt(tokens.access_token).aud).toBe(mcp);
    expect(
      await refusalOf(
        client.buildAuthorizationUrlWithPAR(web, {
          redirect_uri: REDIRECT,
          scope: 'openid',
          code_challenge: await client.calculatePKCECodeChallenge(verifier),
          code_challenge_method: 'S256',
          resource: 'urn:not:configured',
        }),
      ),
    ).toBe('400 invalid_target');
  });

  it('client_credentials with oauth4webapi: one, several, none, unknown; introspection reads aud', async () => {
    const issuer = new URL(server.url);
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, {
        algorithm: 'oidc',
        [oauth.allowInsecureRequests]: true,
      }),
    );
    const demoService: oauth.Client = { client_id: 'demo-service' };
    const auth = oauth.ClientSecretBasic('demo-service-secret');
    const grant = async (params: URLSearchParams) =>
      oauth.processClientCredentialsResponse(
        as,
        demoService,
        await oauth.clientCredentialsGrantRequest(as, demoService, auth, params, {
          [oauth.allowInsecureRequests]: true,
        }),
      );
    const forMcp = await grant(new URLSearchParams({ resource: mcp }));
    expect(decodeJwt(forMcp.access_token).aud).toBe(mcp);
    const both = await grant(
      new URLSearchParams([
        ['resource', base],
        ['resource', mcp],
      ]),
    );
    expect(decodeJwt(both.access_token).aud).toEqual([base, mcp]);
    const none = await grant(new URLSearchParams());
    expect(decodeJwt(none.access_token).aud).toBe(base);
    const unknown = await grant(
      new URLSearchParams({ resource: 'https://elsewhere.example/' }),
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(unknown).toBeInstanceOf(oauth.ResponseBodyError);
    expect((unknown as oauth.ResponseBodyError).error).toBe('invalid_target');
    // the /mcp token is refused at the API, and reads active with its aud at introspection
    expect((await at('/api/me', forMcp.access_token)).status).toBe(401);
    expect((await at('/api/me', both.access_token)).status).toBe(200);
    const seen = await client.tokenIntrospection(service, forMcp.access_token);
    expect(seen).toMatchObject({ active: true, aud: mcp });
  });

  it('token exchange targets are the two resources by default', async () => {
    const subject = await codeFlow([]);
    const exchanged = await client.genericGrantRequest(
      service,
      'urn:ietf:params:oauth:grant-type:token-exchange',
      {
        subject_token: subject.access_token,
        subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        resource: mcp,
      },
    );
    expect(decodeJwt(exchanged.access_token).aud).toBe(mcp);
    // introspection of the exchanged /mcp token: active (it read inactive before resources)
    expect(await client.tokenIntrospection(service, exchanged.access_token)).toMatchObject({
      active: true,
      aud: mcp,
    });
  });
});
