// DPoP server nonces (RFC 9449 §8, §9): the HMAC windows of createDpopNonces, a resource and
// the token endpoint answering use_dpop_nonce with DPoP-Nonce, and openid-client retrying
// with the nonce on its own.
import { randomUUID, type webcrypto } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticate } from '../../../src/auth/authenticate.js';
import { accessTokenHash, createDpopVerifier } from '../../../src/auth/dpop/dpop.js';
import { createDpopNonces } from '../../../src/auth/dpop/nonce.js';
import { jwtBearer } from '../../../src/auth/jwt/bearer.js';
import { createSessions } from '../../../src/auth/session/session.js';
import { compose } from '../../../src/core/compose.js';
import { getPrincipal } from '../../../src/core/principal.js';
import { sendJson } from '../../../src/core/send.js';
import { createRouter } from '../../../src/http/routing/router.js';
import { defineClient } from '../../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../../src/oauth/clients/store.js';
import { createAuthorizationServer } from '../../../src/oauth/server.js';
import { createKeySet } from '../../../src/oauth/tokens/key-set.js';
import { closeAll, json, type Listening, listen, request, serve } from '../../helpers/http.js';
import { AUDIENCE, ISSUER, makeKey, mint, type TestKey } from '../jwt/jwt-fixtures.js';

type Key = { privateKey: webcrypto.CryptoKey; jwk: JWK; jkt: string };
const ORIGIN = 'https://api.example.com';
const SECRET = 'a-nonce-secret-of-32-characters!!';

let issuer: TestKey;
let key: Key;

function proof(claims: Record<string, unknown>): Promise<string> {
  return new SignJWT({ jti: randomUUID(), iat: Math.floor(Date.now() / 1000), ...claims })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: key.jwk })
    .sign(key.privateKey);
}

beforeAll(async () => {
  issuer = await makeKey('k1');
  const pair = await generateKeyPair('ES256', { extractable: true });
  const jwk = await exportJWK(pair.publicKey);
  key = { privateKey: pair.privateKey, jwk, jkt: await calculateJwkThumbprint(jwk) };
});
afterAll(closeAll);

describe('createDpopNonces', () => {
  it('hands out one nonce per window, and takes it and the one before, never older', () => {
    let now = 1_000_000;
    const nonces = createDpopNonces({ secret: SECRET, lifetime: 10_000, now: () => now });
    const first = nonces.current();
    expect(first).toMatch(/^[\w-]{22}$/);
    now += 5_000;
    expect(nonces.current()).toBe(first);
    now += 6_000;
    const second = nonces.current();
    expect(second).not.toBe(first);
    expect(nonces.accepts(first)).toBe(true);
    expect(nonces.accepts(second)).toBe(true);
    now += 10_000;
    expect(nonces.accepts(first)).toBe(false);
    expect(nonces.accepts(second)).toBe(true);
  });

  it('agrees between processes with one secret, not with another; refuses what is not a nonce', () => {
    const now = () => 42_000;
    const a = createDpopNonces({ secret: SECRET, now });
    const b = createDpopNonces({ secret: SECRET, now });
    const c = createDpopNonces({ secret: 'another-secret-of-32-characters!!', now });
    expect(b.accepts(a.current())).toBe(true);
    expect(c.accepts(a.current())).toBe(false);
    for (const bad of [undefined, 42, '', 'x'.repeat(22), `${a.current()}x`]) {
      expect(a.accepts(bad)).toBe(false);
    }
  });

  it('refuses a short secret, a lifetime under a second, and unknown options', () => {
    expect(() => createDpopNonces({ secret: 'short' })).toThrow(/32 or more/);
    expect(() => createDpopNonces({ secret: SECRET, lifetime: 999 })).toThrow(
      /`lifetime` must be .*1000/,
    );
    expect(createDpopNonces({ secret: SECRET, lifetime: 1_000 }).current()).toMatch(/^[\w-]{22}$/);
    expect(() => createDpopNonces({ ttl: 5 } as never)).toThrow();
    expect(() => createDpopVerifier({ nonces: {} as never })).toThrow(/createDpopNonces/);
  });
});

describe('a resource that requires nonces (RFC 9449 §9)', () => {
  let app: Listening;
  beforeAll(async () => {
    const nonces = createDpopNonces({ secret: SECRET });
    app = await serve([
      authenticate([
        jwtBearer({
          publicKey: issuer.pem,
          issuer: ISSUER,
          audience: AUDIENCE,
          dpop: { origin: ORIGIN, verifier: createDpopVerifier({ nonces }) },
        }),
      ]),
      (req, res) => sendJson(res, 200, { method: getPrincipal(req)?.method }),
    ]);
  });

  it('answers a proof without the nonce 401 use_dpop_nonce with DPoP-Nonce; the retry passes', async () => {
    const token = await mint(issuer, { cnf: { jkt: key.jkt } });
    const claims = { htm: 'GET', htu: `${ORIGIN}/api/me`, ath: accessTokenHash(token) };
    const first = await request(app, '/api/me', {
      headers: { authorization: `DPoP ${token}`, dpop: await proof(claims) },
    });
    expect(first.status).toBe(401);
    expect(first.headers['www-authenticate']).toMatch(/^DPoP realm="api", error="use_dpop_nonce"/);
    const nonce = first.headers['dpop-nonce'] as string;
    expect(nonce).toMatch(/^[\w-]{22}$/);
    const retry = await request(app, '/api/me', {
      headers: { authorization: `DPoP ${token}`, dpop: await proof({ ...claims, nonce }) },
    });
    expect(retry.status, retry.body).toBe(200);
    expect(json(retry)).toEqual({ method: 'dpop' });
    const wrong = await request(app, '/api/me', {
      headers: {
        authorization: `DPoP ${token}`,
        dpop: await proof({ ...claims, nonce: 'A'.repeat(22) }),
      },
    });
    expect(wrong.status).toBe(401);
    expect(wrong.headers['dpop-nonce']).toBe(nonce);
  });
});

describe('the token endpoint with nonces (RFC 9449 §8)', () => {
  let site: Listening;
  let issuerUrl: string;
  beforeAll(async () => {
    let listener: Parameters<typeof listen>[0] = (_req, res) => res.end();
    site = await listen((req, res) =>
      (listener as (a: typeof req, b: typeof res) => void)(req, res),
    );
    issuerUrl = site.url;
    const as = createAuthorizationServer({
      issuer: issuerUrl,
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
      sessions: createSessions({ allowedOrigins: [issuerUrl], cookie: { secure: false } }),
      dpop: { nonces: createDpopNonces({ secret: SECRET }) },
    });
    const router = createRouter({
      ...as.routes,
      '/api/me': {
        GET: compose([
          authenticate([as.bearer]),
          (req, res) => sendJson(res, 200, { sub: getPrincipal(req)?.sub }),
        ]),
      },
    });
    const { toNodeListener } = await import('../../../src/adapters/node.js');
    listener = toNodeListener([router]);
  });

  it('answers 400 use_dpop_nonce with DPoP-Nonce, then issues a bound token for the retry', async () => {
    const send = async (nonce?: string) =>
      request(site, '/token', {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from('svc:svc-secret-123').toString('base64')}`,
          dpop: await proof({ htm: 'POST', htu: `${issuerUrl}/token`, ...(nonce && { nonce }) }),
        },
        body: 'grant_type=client_credentials',
      });
    const first = await send();
    expect({ status: first.status, error: json(first).error }).toEqual({
      status: 400,
      error: 'use_dpop_nonce',
    });
    const nonce = first.headers['dpop-nonce'] as string;
    expect(nonce).toMatch(/^[\w-]{22}$/);
    const retry = await send(nonce);
    expect(retry.status, retry.body).toBe(200);
    expect(json(retry).token_type).toBe('DPoP');
  });

  it('openid-client retries with the nonce on its own, at the token endpoint and the resource', async () => {
    const config = await client.discovery(
      new URL(issuerUrl),
      'svc',
      undefined,
      client.ClientSecretBasic('svc-secret-123'),
      { execute: [client.allowInsecureRequests] },
    );
    const DPoP = client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256'));
    const tokens = await client.clientCredentialsGrant(
      config,
      { scope: 'read:messages' },
      { DPoP },
    );
    expect(tokens.token_type).toBe('dpop');
    const me = await client.fetchProtectedResource(
      config,
      tokens.access_token,
      new URL(`${issuerUrl}/api/me`),
      'GET',
      undefined,
      undefined,
      { DPoP },
    );
    expect(me.status).toBe(200);
    expect(await me.json()).toEqual({ sub: 'svc' });
  });
});
