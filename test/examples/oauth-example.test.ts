// examples/oauth/server.ts run in-process and driven by openid-client, as an application
// would: on node:http, and its middleware as a Fetch handler (portico/fetch, on
// @hono/node-server, as a Next.js route handler would host it). The code blocks of
// docs/oauth.md are checked to be that example's code.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import * as client from 'openid-client';
import { authenticate, jwtBearer, requirePrincipal, sendJson, toNodeListener } from 'portico';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, SERVICE_SECRET, SPA_ORIGIN } from '../../examples/oauth/server.js';
import { toFetchHandler } from '../../src/adapters/fetch/index.js';
import { nodeServerAddress } from '../helpers/adapters.js';
import { Browser } from '../helpers/browser.js';

const _root = new URL('../../', import.meta.url);
const REDIRECT_URI = `${SPA_ORIGIN}/callback`;
const servers: Server[] = [];
let issuer: string;

async function listen(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Listens first (the issuer is the real listening URL), then builds the app behind it. */
async function start(host: 'node:http' | 'fetch'): Promise<void> {
  const front = createServer();
  const url = await listen(front);
  const app = await createApp({ issuer: url });
  if (host === 'node:http') front.on('request', (req, res) => app.server.emit('request', req, res));
  else {
    const fetchHandler = toFetchHandler(app.middleware, { clientAddress: nodeServerAddress });
    front.on('request', getRequestListener(fetchHandler));
  }
  issuer = app.issuer;
}

afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

const configFor = (clientId: string, secret?: string) =>
  client.discovery(
    new URL(issuer),
    clientId,
    undefined,
    secret === undefined ? client.None() : client.ClientSecretBasic(secret),
    { execute: [client.allowInsecureRequests] },
  );

const hello = (token: string) =>
  fetch(`${issuer}/api/hello`, { headers: { Authorization: `Bearer ${token}` } });

describe.each(['node:http', 'fetch'] as const)(
  'examples/oauth/server.ts on %s with openid-client',
  (host) => {
    beforeAll(() => start(host));

    it('publishes discovery metadata at the issuer', async () => {
      const metadata = (await configFor('hello-spa')).serverMetadata();
      expect(metadata).toMatchObject({
        issuer,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/.well-known/jwks.json`,
        code_challenge_methods_supported: ['S256'],
        authorization_response_iss_parameter_supported: true,
      });
      expect(metadata.scopes_supported).toContain('read:hello');
      const jwks = await fetch(metadata.jwks_uri!);
      expect(jwks.headers.get('cache-control')).toBe('public, max-age=300');
    });

    it('gives the service a client_credentials token that /api/hello accepts', async () => {
      const config = await configFor('hello-service', SERVICE_SECRET);
      const tokens = await client.clientCredentialsGrant(config);
      expect(tokens).toMatchObject({ scope: 'read:hello', expires_in: 900 });
      expect(tokens.refresh_token).toBeUndefined();
      const res = await hello(tokens.access_token);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        hello: 'hello-service',
        sub: 'hello-service',
        clientId: 'hello-service',
      });

      const none = await fetch(`${issuer}/api/hello`);
      expect(none.status).toBe(401);
      expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
      // the token endpoint answers errors in the OAuth format, not as Problem Details
      const wrong = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: 'hello-service',
          client_secret: SERVICE_SECRET,
          scope: 'openid',
        }),
      });
      expect(wrong.status).toBe(400);
      expect(wrong.headers.get('content-type')).toBe('application/json');
      expect(await wrong.json()).toMatchObject({ error: 'invalid_scope' });
    });

    it('runs the code flow with PKCE through the HTML pages, then refreshes with rotation', async () => {
      const config = await configFor('hello-spa');
      const verifier = client.randomPKCECodeVerifier();
      const state = client.randomState();
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: REDIRECT_URI,
        scope: 'openid profile read:hello',
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
      });

      const browser = new Browser(issuer);
      const signIn = await browser.fetch(url);
      expect(signIn.status).toBe(200);
      expect(signIn.headers.get('content-security-policy')).toContain(
        `form-action 'self' ${SPA_ORIGIN}`,
      );
      const consent = await browser.submit(
        signIn,
        {
          username: 'alice',
          password: 'alice-password',
        },
        url,
      );
      expect(consent.status).toBe(200);
      const approved = await browser.submit(consent, { decision: 'approve' }, url);
      expect(approved.status).toBe(303);
      const callback = new URL(approved.headers.get('location')!);
      expect(callback.searchParams.get('iss')).toBe(issuer);

      const tokens = await client.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: verifier,
        expectedState: state,
        idTokenExpected: true,
      });
      expect(tokens.claims()).toMatchObject({
        sub: 'alice',
        aud: 'hello-spa',
        name: 'Alice Example',
      });
      expect(await (await hello(tokens.access_token)).json()).toMatchObject({
        hello: 'Alice Example',
        clientId: 'hello-spa',
      });
      // the SPA's origin may read the token endpoint's answers
      const preflight = await fetch(`${issuer}/token`, {
        method: 'OPTIONS',
        headers: {
          Origin: SPA_ORIGIN,
          'Access-Control-Request-Method': 'POST',
          'Access-Control-Request-Headers': 'content-type',
        },
      });
      expect(preflight.headers.get('access-control-allow-origin')).toBe(SPA_ORIGIN);

      const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
      expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
      expect((await hello(refreshed.access_token)).status).toBe(200);
      // the rotated token comes back: the whole grant is revoked, access tokens included
      await expect(client.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({
        error: 'invalid_grant',
      });
      await expect(
        client.refreshTokenGrant(config, refreshed.refresh_token!),
      ).rejects.toMatchObject({
        error: 'invalid_grant',
      });
      expect((await hello(refreshed.access_token)).status).toBe(401);
    });

    it('connects the device once a signed-in user enters its code', async () => {
      const config = await configFor('hello-tv');
      const start = await client.initiateDeviceAuthorization(config, { scope: 'read:hello' });
      const browser = new Browser(issuer);
      const page = await browser.fetch(start.verification_uri_complete!);
      const form = await browser.submit(
        page,
        {
          username: 'bob',
          password: 'bob-password',
        },
        start.verification_uri,
      );
      const done = await browser.submit(
        form,
        {
          user_code: start.user_code,
          decision: 'approve',
        },
        start.verification_uri,
      );
      expect(done.status).toBe(200);
      // approved before the first poll: poll at once rather than after `interval` seconds
      const tokens = await client.pollDeviceAuthorizationGrant(config, { ...start, interval: 0 });
      expect(await (await hello(tokens.access_token)).json()).toMatchObject({ sub: 'bob' });
    });

    it('issues tokens another service verifies from the JWKS alone', async () => {
      // docs/oauth.md: "Verifying portico's tokens from another service"
      const bearer = jwtBearer({
        jwksUrl: `${issuer}/.well-known/jwks.json`,
        issuer,
        audience: issuer,
        typ: 'at+jwt',
      });
      const api = await listen(
        createServer(
          toNodeListener([
            authenticate([bearer]),
            (req, res) => sendJson(res, 200, { sub: requirePrincipal(req).sub }),
          ]),
        ),
      );
      const config = await configFor('hello-service', SERVICE_SECRET);
      const { access_token } = await client.clientCredentialsGrant(config);
      const res = await fetch(api, { headers: { Authorization: `Bearer ${access_token}` } });
      expect(await res.json()).toEqual({ sub: 'hello-service' });
    });
  },
);
