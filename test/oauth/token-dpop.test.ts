// DPoP at the token endpoint (RFC 9449 §5): bound access tokens (cnf.jkt, token_type DPoP),
// a public client's refresh token bound to its key, clients that require binding, bad proofs
// refused with invalid_dpop_proof; and the bound token at a resource of the same server.
import { randomUUID, type webcrypto } from 'node:crypto';
import {
  calculateJwkThumbprint,
  decodeJwt,
  exportJWK,
  generateKeyPair,
  type JWK,
  SignJWT,
} from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticate } from '../../src/auth/authenticate.js';
import { accessTokenHash } from '../../src/auth/dpop/dpop.js';
import { compose } from '../../src/core/compose.js';
import { getPrincipal } from '../../src/core/principal.js';
import { sendJson } from '../../src/core/send.js';
import { createRouter } from '../../src/http/routing/router.js';
import { defineClient } from '../../src/oauth/clients/client.js';
import { authorizationServerMetadata } from '../../src/oauth/endpoints/metadata.js';
import { createTokenEndpoint } from '../../src/oauth/endpoints/token.js';
import { ownAccessTokens } from '../../src/oauth/tokens/verify.js';
import { closeAll, json, type Listening, request, serve } from '../helpers/http.js';
import {
  expectError,
  ISSUER,
  pkce,
  plantCode,
  SPA_REDIRECT,
  startTokenServer,
  tokenRequest,
} from './token-fixtures.js';

type Key = { privateKey: webcrypto.CryptoKey; jwk: JWK; jkt: string };
const TOKEN_URL = `${new URL(ISSUER).origin}/token`;

async function newKey(): Promise<Key> {
  const pair = await generateKeyPair('ES256', { extractable: true });
  const jwk = await exportJWK(pair.publicKey);
  return { privateKey: pair.privateKey, jwk, jkt: await calculateJwkThumbprint(jwk, 'sha256') };
}

function proof(key: Key, claims: Record<string, unknown> = {}): Promise<string> {
  return new SignJWT({
    jti: randomUUID(),
    htm: 'POST',
    htu: TOKEN_URL,
    iat: Math.floor(Date.now() / 1000),
    ...claims,
  })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: key.jwk })
    .sign(key.privateKey);
}

let key: Key;
let other: Key;
let ctx: Awaited<ReturnType<typeof startTokenServer>>['ctx'];
let server: Listening;
let api: Listening;

beforeAll(async () => {
  key = await newKey();
  other = await newKey();
  ({ ctx, server } = await startTokenServer());
  const me = ownAccessTokens(ctx, { dpop: { origin: 'https://api.example.test' } });
  api = await serve(
    createRouter({
      '/token': { POST: createTokenEndpoint(ctx) },
      '/api/me': {
        GET: compose([
          authenticate([me]),
          (req, res) => sendJson(res, 200, { sub: getPrincipal(req)?.sub }),
        ]),
      },
    }),
  );
});
afterAll(closeAll);

const clientCredentials = (headers: Record<string, string> = {}, client = 'demo-service') =>
  tokenRequest(server, { grant_type: 'client_credentials' }, { client, headers });

describe('the token endpoint with DPoP', () => {
  it('binds the access token to the proof’s key: cnf.jkt, token_type DPoP', async () => {
    const reply = await clientCredentials({ DPoP: await proof(key) });
    expect(reply.status, reply.body).toBe(200);
    const body = json<{ access_token: string; token_type: string }>(reply);
    expect(body.token_type).toBe('DPoP');
    expect(decodeJwt(body.access_token).cnf).toEqual({ jkt: key.jkt });
  });

  it('issues bearer tokens to a request without a proof', async () => {
    const body = json<{ access_token: string; token_type: string }>(await clientCredentials());
    expect(body.token_type).toBe('Bearer');
    expect(decodeJwt(body.access_token).cnf).toBeUndefined();
  });

  it.each([
    ['a proof for GET', async () => proof(key, { htm: 'GET' })],
    ['a proof for another URL', async () => proof(key, { htu: 'https://auth.example.test/other' })],
    [
      'a proof ten minutes old',
      async () => proof(key, { iat: Math.floor(Date.now() / 1000) - 600 }),
    ],
    ['a proof that is not a JWS', async () => 'nope'],
  ])('refuses %s with invalid_dpop_proof', async (_name, make) => {
    expectError(await clientCredentials({ DPoP: await make() }), 'invalid_dpop_proof');
  });

  it('refuses a replayed proof and two proofs', async () => {
    const once = await proof(key);
    expect((await clientCredentials({ DPoP: once })).status).toBe(200);
    expectError(await clientCredentials({ DPoP: once }), 'invalid_dpop_proof');
    const twice = await request(server, '/token', {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from('demo-service:demo-service-secret').toString('base64')}`,
        dpop: [await proof(key), await proof(key)],
      },
      body: 'grant_type=client_credentials',
    });
    expectError(twice, 'invalid_dpop_proof');
  });

  it('refuses a client that must have bound tokens when it sends no proof', async () => {
    const strictClient = await defineClient({
      clientId: 'bound-service',
      secret: 'bound-service-secret',
      grantTypes: ['client_credentials'],
      redirectUris: [],
      scopes: ['read:messages'],
      dpopBoundAccessTokens: true,
    });
    const { server: strict } = await startTokenServer({
      clients: { get: (id: string) => (id === 'bound-service' ? strictClient : undefined) },
    });
    const call = (headers: Record<string, string> = {}) =>
      request(strict, '/token', {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from('bound-service:bound-service-secret').toString('base64')}`,
          ...headers,
        },
        body: 'grant_type=client_credentials',
      });
    expectError(await call(), 'invalid_dpop_proof');
    expect((await call({ DPoP: await proof(key) })).status).toBe(200);
  });

  it('binds a public client’s refresh token: it refreshes only with a proof of the same key', async () => {
    const { verifier, challenge } = pkce();
    const { code } = await plantCode(ctx, {
      clientId: 'demo-spa',
      redirectUri: SPA_REDIRECT,
      codeChallenge: challenge,
    });
    const redeemed = await tokenRequest(
      server,
      {
        grant_type: 'authorization_code',
        code,
        redirect_uri: SPA_REDIRECT,
        code_verifier: verifier,
      },
      { client: 'demo-spa', headers: { DPoP: await proof(key) } },
    );
    expect(redeemed.status, redeemed.body).toBe(200);
    const { refresh_token: refresh, token_type } = json<{
      refresh_token: string;
      token_type: string;
    }>(redeemed);
    expect(token_type).toBe('DPoP');
    const refreshWith = async (headers: Record<string, string>) =>
      tokenRequest(
        server,
        { grant_type: 'refresh_token', refresh_token: refresh },
        { client: 'demo-spa', headers },
      );
    expectError(await refreshWith({}), 'invalid_grant');
    expectError(await refreshWith({ DPoP: await proof(other) }), 'invalid_grant');
    const refreshed = await refreshWith({ DPoP: await proof(key) });
    expect(refreshed.status, refreshed.body).toBe(200);
    expect(decodeJwt(json<{ access_token: string }>(refreshed).access_token).cnf).toEqual({
      jkt: key.jkt,
    });
  });

  it('the bound token works at a resource of the server with its proof, and not as Bearer', async () => {
    const { access_token: token } = json<{ access_token: string }>(
      await clientCredentials({ DPoP: await proof(key) }),
    );
    const resourceProof = await proof(key, {
      htm: 'GET',
      htu: 'https://api.example.test/api/me',
      ath: accessTokenHash(token),
    });
    const ok = await request(api, '/api/me', {
      headers: { authorization: `DPoP ${token}`, dpop: resourceProof },
    });
    expect(ok.status, ok.body).toBe(200);
    expect(json(ok)).toEqual({ sub: 'demo-service' });
    const stolen = await request(api, '/api/me', { headers: { authorization: `Bearer ${token}` } });
    expect(stolen.status).toBe(401);
  });

  it('announces its proof algorithms in discovery', () => {
    expect(authorizationServerMetadata(ctx).dpop_signing_alg_values_supported).toEqual([
      'ES256',
      'EdDSA',
      'PS256',
      'RS256',
    ]);
  });
});

describe('createAuthorizationServer: its own bearer takes DPoP-bound tokens', () => {
  it('at the issuer’s origin, as method dpop, with a DPoP insufficient_scope', async () => {
    const { createAuthorizationServer } = await import('../../src/oauth/server.js');
    const { createKeySet } = await import('../../src/oauth/tokens/key-set.js');
    const { createSessions } = await import('../../src/auth/session/session.js');
    const { MemoryClientStore } = await import('../../src/oauth/clients/store.js');
    const { requireScopes } = await import('../../src/auth/authenticate.js');
    const issuer = 'https://as.example.test';
    const as = createAuthorizationServer({
      issuer,
      clients: new MemoryClientStore([
        await defineClient({
          clientId: 'svc',
          secret: 'svc-secret-123',
          grantTypes: ['client_credentials'],
          redirectUris: [],
          scopes: ['read:messages'],
        }),
      ]),
      keys: await createKeySet(),
      users: { verify: () => undefined, get: () => undefined },
      sessions: createSessions({ allowedOrigins: [issuer] }),
    });
    const site = await serve(
      createRouter({
        ...as.routes,
        '/api/me': {
          GET: compose([
            authenticate([as.bearer]),
            (req, res) => sendJson(res, 200, { method: getPrincipal(req)?.method }),
          ]),
        },
        '/api/admin': {
          GET: compose([
            authenticate([as.bearer]),
            requireScopes(['write:messages']),
            (_req, res) => sendJson(res, 200, {}),
          ]),
        },
      }),
    );
    const asProof = (claims: Record<string, unknown>) =>
      new SignJWT({ jti: randomUUID(), iat: Math.floor(Date.now() / 1000), ...claims })
        .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: key.jwk })
        .sign(key.privateKey);
    const issued = await request(site, '/token', {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from('svc:svc-secret-123').toString('base64')}`,
        dpop: await asProof({ htm: 'POST', htu: `${issuer}/token` }),
      },
      body: 'grant_type=client_credentials',
    });
    expect(issued.status, issued.body).toBe(200);
    const token = json<{ access_token: string }>(issued).access_token;
    const call = async (path: string) =>
      request(site, path, {
        headers: {
          authorization: `DPoP ${token}`,
          dpop: await asProof({ htm: 'GET', htu: `${issuer}${path}`, ath: accessTokenHash(token) }),
        },
      });
    const me = await call('/api/me');
    expect(me.status, me.body).toBe(200);
    expect(json(me)).toEqual({ method: 'dpop' });
    const admin = await call('/api/admin');
    expect(admin.status).toBe(403);
    expect(admin.headers['www-authenticate']).toMatch(/^DPoP error="insufficient_scope"/);
    // UserInfo takes the bound token with its proof too: this one lacks openid, told in DPoP
    const userinfo = await call('/userinfo');
    expect(userinfo.status, userinfo.body).toBe(403);
    expect(userinfo.headers['www-authenticate']).toMatch(
      /^DPoP realm="userinfo", error="insufficient_scope", .*algs="ES256 EdDSA PS256 RS256"/,
    );
    // the same token as Bearer, or with a proof for another path, is refused
    const asBearer = await request(site, '/userinfo', {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(asBearer.status).toBe(401);
    const wrongPath = await request(site, '/userinfo', {
      headers: {
        authorization: `DPoP ${token}`,
        dpop: await asProof({ htm: 'GET', htu: `${issuer}/api/me`, ath: accessTokenHash(token) }),
      },
    });
    expect(wrongPath.status).toBe(401);
    expect(wrongPath.headers['www-authenticate']).toMatch(
      /^DPoP realm="userinfo", error="invalid_dpop_proof"/,
    );
  });
});
