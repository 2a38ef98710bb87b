// The reference server's token exchange (RFC 8693), as docs/reference-server.md's contract row
// says, driven over HTTP with openid-client's generic grant request: demo-service trades a
// user's access token for one acting on the user's behalf, for one of the two resources.
import { generateKeyPairSync } from 'node:crypto';
import { createRemoteJWKSet, jwtVerify, SignJWT } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signInAndApprove } from '../helpers/browser.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';

let server: RunningServer;
let service: client.Configuration;
let web: client.Configuration;

const insecure = { execute: [client.allowInsecureRequests] };
const configFor = (clientId: string, secret: string) =>
  client.discovery(
    new URL(server.url),
    clientId,
    undefined,
    client.ClientSecretBasic(secret),
    insecure,
  );

beforeAll(async () => {
  server = await startReferenceServer();
  service = await configFor('demo-service', 'demo-service-secret');
  web = await configFor('demo-web', 'demo-web-secret');
});

afterAll(async () => {
  await server?.stop();
});

/** A user's access token, through demo-web's authorization code flow (PKCE). */
async function userToken(user = 'alice', scope = 'openid read:messages write:messages') {
  const verifier = client.randomPKCECodeVerifier();
  const url = client.buildAuthorizationUrl(web, {
    redirect_uri: 'http://127.0.0.1:8080/callback',
    scope,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  const back = new URL(await signInAndApprove(server.url, url, user));
  return client.authorizationCodeGrant(web, back, { pkceCodeVerifier: verifier });
}

const exchange = (
  config: client.Configuration,
  subjectToken: string,
  more: Record<string, string> = {},
) =>
  client.genericGrantRequest(config, TOKEN_EXCHANGE, {
    subject_token: subjectToken,
    subject_token_type: ACCESS_TOKEN,
    ...more,
  });

/** The OAuth `error` of a refused exchange. */
const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => 'granted',
    (e: { error?: string; status?: number }) => `${e.status} ${e.error}`,
  );

async function verified(token: string, audience: string) {
  const jwks = createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`));
  const { payload } = await jwtVerify(token, jwks, { issuer: server.url, audience, typ: 'at+jwt' });
  return payload;
}

const me = (token: string) =>
  fetch(`${server.url}/api/me`, { headers: { Authorization: `Bearer ${token}` } });

describe('token exchange at the reference server (RFC 8693)', () => {
  it('lists the grant type in discovery', () => {
    expect(service.serverMetadata().grant_types_supported).toContain(TOKEN_EXCHANGE);
    expect(service.serverMetadata().grant_types_supported).toContain('client_credentials');
  });

  it('gives demo-service a token acting for the user: sub the user, act demo-service, aud BASE_URL', async () => {
    const subject = await userToken('alice');
    const subjectClaims = await verified(subject.access_token, server.url);
    const tokens = await exchange(service, subject.access_token, { scope: 'read:messages' });
    expect(tokens).toMatchObject({
      issued_token_type: ACCESS_TOKEN,
      token_type: 'bearer',
      scope: 'read:messages',
    });
    expect(tokens.refresh_token).toBeUndefined();
    const claims = await verified(tokens.access_token, server.url);
    expect(claims).toMatchObject({
      sub: 'alice',
      act: { sub: 'demo-service' },
      client_id: 'demo-service',
      aud: server.url,
      scope: 'read:messages',
    });
    expect(claims.act).toEqual({ sub: 'demo-service' });
    // no later than the subject token
    expect(claims.exp).toBeLessThanOrEqual(subjectClaims.exp!);
    expect(tokens.expires_in).toBeLessThanOrEqual(subjectClaims.exp! - Date.now() / 1000 + 1);
    const answer = await me(tokens.access_token);
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({ sub: 'alice' });
  });

  it('without scope, keeps what both the subject token and demo-service have', async () => {
    const subject = await userToken('bob', 'openid profile read:messages write:messages');
    const tokens = await exchange(service, subject.access_token);
    expect(tokens.scope).toBe('read:messages write:messages');
  });

  it('mints for the resource asked for: {BASE_URL}/mcp', async () => {
    const subject = await userToken();
    const mcp = `${server.url.replace(/\/$/, '')}/mcp`;
    const tokens = await exchange(service, subject.access_token, { resource: mcp });
    expect((await verified(tokens.access_token, mcp)).aud).toBe(mcp);
    // a token for /mcp is not one for the API
    expect((await me(tokens.access_token)).status).toBe(401);
    const base = await exchange(service, subject.access_token, { resource: server.url });
    expect((await verified(base.access_token, server.url)).aud).toBe(server.url);
  });

  it('refuses another client, other targets, wider scopes and unknown token types', async () => {
    const subject = (await userToken()).access_token;
    expect(await refusal(exchange(web, subject))).toBe('400 unauthorized_client');
    expect(
      await refusal(exchange(service, subject, { resource: 'https://elsewhere.example/' })),
    ).toBe('400 invalid_target');
    expect(await refusal(exchange(service, subject, { scope: 'read:messages admin' }))).toBe(
      '400 invalid_scope',
    );
    const narrow = (await userToken('alice', 'openid read:messages')).access_token;
    expect(await refusal(exchange(service, narrow, { scope: 'write:messages' }))).toBe(
      '400 invalid_scope',
    );
    expect(
      await refusal(
        exchange(service, subject, { requested_token_type: 'urn:example:token-type:magic' }),
      ),
    ).toBe('400 invalid_request');
    expect(
      await refusal(
        exchange(service, subject, {
          subject_token_type: 'urn:ietf:params:oauth:token-type:saml2',
        }),
      ),
    ).toBe('400 invalid_request');
    expect(
      await refusal(
        client.genericGrantRequest(service, TOKEN_EXCHANGE, { subject_token: subject }),
      ),
    ).toBe('400 invalid_request');
  });

  it('refuses subject and actor tokens that are not live tokens of this server', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const forged = await new SignJWT({ client_id: 'demo-web', scope: 'read:messages', jti: 'x' })
      .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: 'forged' })
      .setIssuer(server.url)
      .setAudience(server.url)
      .setSubject('alice')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);
    expect(await refusal(exchange(service, forged))).toBe('400 invalid_grant');
    expect(await refusal(exchange(service, 'not-a-token'))).toBe('400 invalid_grant');
    const subject = await userToken();
    // an ID token is not an access token
    expect(await refusal(exchange(service, subject.id_token!))).toBe('400 invalid_grant');
    expect(
      await refusal(
        exchange(service, subject.access_token, {
          actor_token: forged,
          actor_token_type: ACCESS_TOKEN,
        }),
      ),
    ).toBe('400 invalid_grant');
    // demo-service's own token is a good actor token
    const own = await client.clientCredentialsGrant(service, { scope: 'read:messages' });
    const acted = await exchange(service, subject.access_token, {
      actor_token: own.access_token,
      actor_token_type: ACCESS_TOKEN,
    });
    expect((await verified(acted.access_token, server.url)).act).toEqual({ sub: 'demo-service' });
  });

  it("ends the exchanged token when the subject token's grant is revoked", async () => {
    const subject = await userToken();
    const tokens = await exchange(service, subject.access_token);
    expect((await me(tokens.access_token)).status).toBe(200);
    expect(await client.tokenIntrospection(service, tokens.access_token)).toMatchObject({
      active: true,
      sub: 'alice',
      client_id: 'demo-service',
    });
    await client.tokenRevocation(web, subject.refresh_token ?? subject.access_token);
    expect((await me(tokens.access_token)).status).toBe(401);
    expect(await client.tokenIntrospection(service, tokens.access_token)).toMatchObject({
      active: false,
    });
    // and the subject token can no longer be exchanged
    expect(await refusal(exchange(service, subject.access_token))).toBe('400 invalid_grant');
  });
});
