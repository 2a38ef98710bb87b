// The introspection endpoint (src/oauth/endpoints/introspection.ts) answer by answer, and the revocation
// lifetime of a grant (src/oauth/tokens/revoke-grant.ts) as the revocation endpoint records it: the exact
// body for bound tokens (DPoP `cnf.jkt` is `token_type: 'DPoP'`, a certificate binding stays
// `Bearer`, `cnf` copied either way and absent otherwise), a token without `scope`, with an
// array `aud` or a non-string `client_id`, the exact refusal of a public client, the lookup
// order a `token_type_hint` chooses, a refresh-token family ending this very millisecond, and
// `revocationTtlMs` for a known, an ended and an unknown family end. Each test builds its own
// context and server (keys and clients are shared, being costly), so that the code under test
// runs inside the test.
import { randomUUID } from 'node:crypto';
import { type JWTPayload, SignJWT } from 'jose';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { createSessions } from '../../../src/auth/session/session.js';
import { createRouter } from '../../../src/http/routing/router.js';
import { defineClient } from '../../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../../src/oauth/clients/store.js';
import {
  type AuthorizationServerOptions,
  createOAuthContext,
  type OAuthContext,
} from '../../../src/oauth/context.js';
import { createIntrospectionEndpoint } from '../../../src/oauth/endpoints/introspection.js';
import { createRevocationEndpoint } from '../../../src/oauth/endpoints/revocation.js';
import { type RefreshTokenRecord, refreshTokens } from '../../../src/oauth/store/records.js';
import { hashToken, newOpaqueToken } from '../../../src/oauth/tokens/issue.js';
import { createKeySet, type KeySet } from '../../../src/oauth/tokens/key-set.js';
import { closeAll, json, type Listening, type Reply, request, serve } from '../../helpers/http.js';
import { basic, ISSUER } from '../token-fixtures.js';

afterAll(closeAll);
afterEach(() => {
  vi.restoreAllMocks();
});

const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };
const WEB = { Authorization: basic('demo-web', 'demo-web-secret') };
/** A resource server: it may introspect any access token (`introspection: 'any'`). */
const RS = { Authorization: basic('resource-server', 'resource-server-secret') };

let clients: MemoryClientStore | undefined;
let sharedKeys: KeySet | undefined;

/** demo-web, a resource server that introspects any access token, and a public SPA. */
async function makeClients(): Promise<MemoryClientStore> {
  clients ??= new MemoryClientStore([
    await defineClient({
      clientId: 'demo-web',
      secret: 'demo-web-secret',
      grantTypes: ['authorization_code', 'refresh_token'],
      redirectUris: ['http://127.0.0.1:8080/callback'],
      scopes: ['openid', 'offline_access', 'read:messages'],
    }),
    await defineClient({
      clientId: 'resource-server',
      secret: 'resource-server-secret',
      grantTypes: ['client_credentials'],
      redirectUris: [],
      scopes: ['read:messages'],
      introspection: 'any',
    }),
    await defineClient({
      clientId: 'demo-spa',
      grantTypes: ['authorization_code', 'refresh_token'],
      redirectUris: ['http://127.0.0.1:5173/callback'],
      scopes: ['openid', 'read:messages'],
    }),
  ]);
  return clients;
}

/** The revocation and introspection endpoints on a context of their own. */
async function setup(
  options: Partial<AuthorizationServerOptions> = {},
): Promise<{ ctx: OAuthContext; server: Listening }> {
  sharedKeys ??= await createKeySet({ algorithm: 'ES256' });
  const ctx = createOAuthContext({
    issuer: ISSUER,
    clients: await makeClients(),
    keys: sharedKeys,
    users: { verify: () => undefined, get: (sub) => ({ sub }) },
    sessions: createSessions({ allowedOrigins: [ISSUER] }),
    ...options,
  });
  const router = createRouter({
    '/revoke': createRevocationEndpoint(ctx),
    '/introspect': createIntrospectionEndpoint(ctx),
  });
  return { ctx, server: await serve(router) };
}

function post(
  server: Listening,
  path: string,
  body: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<Reply> {
  return request(server, path, {
    method: 'POST',
    headers: { ...FORM, ...headers },
    body: new URLSearchParams(body).toString(),
  });
}

/** Introspects `token` and checks the headers every answer carries; returns the body. */
async function introspect(
  server: Listening,
  body: Record<string, string>,
  headers: Record<string, string> = WEB,
): Promise<Record<string, unknown>> {
  const reply = await post(server, '/introspect', body, headers);
  expect(reply.status).toBe(200);
  expect(reply.headers['content-type']).toBe('application/json');
  expect(reply.headers['cache-control']).toBe('no-store');
  return json(reply);
}

/** Signs any payload with the server's key, as an access token (`at+jwt`) of the server. */
async function forge(ctx: OAuthContext, payload: JWTPayload): Promise<string> {
  const key = ctx.keys.signingKey();
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({
    sub: 'alice',
    aud: ctx.tokens.audience,
    client_id: 'demo-web',
    scope: 'openid',
    jti: randomUUID(),
    ...payload,
  })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt' })
    .setIssuer(ctx.issuer)
    .setIssuedAt(now)
    .setExpirationTime(now + 600)
    .sign(key.privateKey);
}

/** The claims of a token, read back (it was just signed here). */
function claims(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8'));
}

/** A refresh token of demo-web written into the store as the token endpoint would. */
async function plantRefresh(
  ctx: OAuthContext,
  record: Partial<RefreshTokenRecord> = {},
  value = newOpaqueToken(),
): Promise<{ value: string; record: RefreshTokenRecord }> {
  const full: RefreshTokenRecord = {
    clientId: 'demo-web',
    sub: 'alice',
    scope: ['openid', 'offline_access', 'read:messages'],
    grantId: randomUUID(),
    familyExpiresAt: Date.now() + 3_600_000,
    ...record,
  };
  await refreshTokens(ctx.store).save(hashToken(value), full, 3_600_000);
  return { value, record: full };
}

describe('introspection of access tokens', () => {
  it('describes a DPoP-bound access token as token_type DPoP, with its cnf', async () => {
    const { ctx, server } = await setup();
    const grantId = randomUUID();
    const { token, jti } = await ctx.tokens.accessToken({
      sub: 'alice',
      clientId: 'demo-web',
      scope: ['openid', 'read:messages'],
      grantId,
      jkt: 'NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs',
    });
    const { iat, exp } = claims(token);
    expect(await introspect(server, { token })).toEqual({
      active: true,
      scope: 'openid read:messages',
      client_id: 'demo-web',
      sub: 'alice',
      exp,
      iat,
      iss: ISSUER,
      aud: ISSUER,
      token_type: 'DPoP',
      jti,
      cnf: { jkt: 'NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs' },
    });
  });

  it('keeps a certificate-bound access token Bearer, with its cnf', async () => {
    const { ctx, server } = await setup();
    const jti = randomUUID();
    const token = await forge(ctx, {
      jti,
      cnf: { 'x5t#S256': 'bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2' },
    });
    const { iat, exp } = claims(token);
    expect(await introspect(server, { token })).toEqual({
      active: true,
      scope: 'openid',
      client_id: 'demo-web',
      sub: 'alice',
      exp,
      iat,
      iss: ISSUER,
      aud: ISSUER,
      token_type: 'Bearer',
      jti,
      cnf: { 'x5t#S256': 'bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2' },
    });
  });

  it('answers no cnf at all for an unbound bearer token', async () => {
    const { ctx, server } = await setup();
    const { token, jti } = await ctx.tokens.accessToken({
      sub: 'alice',
      clientId: 'demo-web',
      scope: ['read:messages'],
    });
    const { iat, exp } = claims(token);
    const body = await introspect(server, { token });
    expect(body).toEqual({
      active: true,
      scope: 'read:messages',
      client_id: 'demo-web',
      sub: 'alice',
      exp,
      iat,
      iss: ISSUER,
      aud: ISSUER,
      token_type: 'Bearer',
      jti,
    });
    expect(Object.keys(body)).not.toContain('cnf');
  });

  it('answers scope "" for a token without scope, and copies an array aud', async () => {
    const { ctx, server } = await setup();
    const jti = randomUUID();
    const token = await forge(ctx, {
      jti,
      scope: undefined,
      aud: [ISSUER, 'https://api.example.test'],
    });
    const { iat, exp } = claims(token);
    expect(claims(token)).not.toHaveProperty('scope');
    expect(await introspect(server, { token })).toEqual({
      active: true,
      scope: '',
      client_id: 'demo-web',
      sub: 'alice',
      exp,
      iat,
      iss: ISSUER,
      aud: [ISSUER, 'https://api.example.test'],
      token_type: 'Bearer',
      jti,
    });
  });

  it('leaves out a client_id that is not a string (to a resource server that may see any token)', async () => {
    const { ctx, server } = await setup();
    const jti = randomUUID();
    const token = await forge(ctx, { jti, client_id: 42 });
    const { iat, exp } = claims(token);
    const body = await introspect(server, { token }, RS);
    expect(body).toEqual({
      active: true,
      scope: 'openid',
      sub: 'alice',
      exp,
      iat,
      iss: ISSUER,
      aud: ISSUER,
      token_type: 'Bearer',
      jti,
    });
    expect(Object.keys(body)).not.toContain('client_id');
  });

  it('does not run an opaque token through the JWT verifier (no key lookup)', async () => {
    sharedKeys ??= await createKeySet({ algorithm: 'ES256' });
    const shared = sharedKeys;
    const jwks = vi.fn(() => shared.jwks());
    const keys: KeySet = {
      signingKey: () => shared.signingKey(),
      jwks,
      rotate: (options) => shared.rotate(options),
    };
    const { ctx, server } = await setup({ keys });
    const { value } = await plantRefresh(ctx);
    jwks.mockClear();
    expect(await introspect(server, { token: value })).toMatchObject({
      active: true,
      token_type: 'refresh_token',
    });
    expect(await introspect(server, { token: 'not-a-jwt' })).toEqual({ active: false });
    expect(jwks).not.toHaveBeenCalled();
    // a JWT-shaped token is checked against the keys
    const { token } = await ctx.tokens.accessToken({
      sub: 'alice',
      clientId: 'demo-web',
      scope: ['openid'],
    });
    expect(await introspect(server, { token })).toMatchObject({ active: true });
    expect(jwks).toHaveBeenCalled();
  });
});

describe('who may introspect', () => {
  it('refuses a public client with invalid_client and the exact description', async () => {
    const { ctx, server } = await setup();
    const { token } = await ctx.tokens.accessToken({
      sub: 'alice',
      clientId: 'demo-spa',
      scope: ['openid'],
    });
    const reply = await post(server, '/introspect', { token, client_id: 'demo-spa' });
    expect(reply.status).toBe(401);
    expect(reply.headers['content-type']).toBe('application/json');
    expect(reply.headers['cache-control']).toBe('no-store');
    expect(reply.headers['www-authenticate']).toBe('Basic realm="token", error="invalid_client"');
    expect(json(reply)).toEqual({
      error: 'invalid_client',
      error_description: 'Token introspection is open to confidential clients only.',
    });
  });
});

describe('introspection of refresh tokens', () => {
  it('finds a refresh token without a hint, and with any hint', async () => {
    const { ctx, server } = await setup();
    const familyExpiresAt = Date.now() + 86_400_000;
    const { value } = await plantRefresh(ctx, { familyExpiresAt });
    const expected = {
      active: true,
      scope: 'openid offline_access read:messages',
      client_id: 'demo-web',
      sub: 'alice',
      iss: ISSUER,
      token_type: 'refresh_token',
      exp: Math.floor(familyExpiresAt / 1000),
    };
    expect(await introspect(server, { token: value })).toEqual(expected);
    for (const hint of ['refresh_token', 'access_token', 'id_token']) {
      expect(await introspect(server, { token: value, token_type_hint: hint })).toEqual(expected);
    }
  });

  it('finds an access token with a refresh_token hint too (the other type is tried)', async () => {
    const { ctx, server } = await setup();
    const { token, jti } = await ctx.tokens.accessToken({
      sub: 'alice',
      clientId: 'demo-web',
      scope: ['read:messages'],
    });
    const { iat, exp } = claims(token);
    expect(await introspect(server, { token, token_type_hint: 'refresh_token' })).toEqual({
      active: true,
      scope: 'read:messages',
      client_id: 'demo-web',
      sub: 'alice',
      exp,
      iat,
      iss: ISSUER,
      aud: ISSUER,
      token_type: 'Bearer',
      jti,
    });
  });

  it('looks a refresh_token hint up as a refresh token first, anything else as an access token first', async () => {
    const { ctx, server } = await setup();
    // a string that is both: an access token of demo-web, and stored as a refresh token
    const { token, jti } = await ctx.tokens.accessToken({
      sub: 'alice',
      clientId: 'demo-web',
      scope: ['read:messages'],
    });
    const familyExpiresAt = Date.now() + 7_200_000;
    await plantRefresh(ctx, { sub: 'bob', scope: ['offline_access'], familyExpiresAt }, token);
    const { iat, exp } = claims(token);
    const asAccess = {
      active: true,
      scope: 'read:messages',
      client_id: 'demo-web',
      sub: 'alice',
      exp,
      iat,
      iss: ISSUER,
      aud: ISSUER,
      token_type: 'Bearer',
      jti,
    };
    const asRefresh = {
      active: true,
      scope: 'offline_access',
      client_id: 'demo-web',
      sub: 'bob',
      iss: ISSUER,
      token_type: 'refresh_token',
      exp: Math.floor(familyExpiresAt / 1000),
    };
    expect(await introspect(server, { token, token_type_hint: 'refresh_token' })).toEqual(
      asRefresh,
    );
    expect(await introspect(server, { token })).toEqual(asAccess);
    expect(await introspect(server, { token, token_type_hint: 'access_token' })).toEqual(asAccess);
    expect(await introspect(server, { token, token_type_hint: '' })).toEqual(asAccess);
    expect(await introspect(server, { token, token_type_hint: 'Refresh_Token' })).toEqual(asAccess);
  });

  it('answers inactive for a refresh token whose family ends this very millisecond', async () => {
    const { ctx, server } = await setup();
    const now = Date.now();
    vi.spyOn(Date, 'now').mockReturnValue(now);
    const ending = await plantRefresh(ctx, { familyExpiresAt: now });
    const next = await plantRefresh(ctx, { familyExpiresAt: now + 1 });
    expect(await introspect(server, { token: ending.value })).toEqual({ active: false });
    expect(await introspect(server, { token: next.value })).toMatchObject({
      active: true,
      token_type: 'refresh_token',
    });
  });

  it('answers exactly { active: false } for an unknown token and for another client', async () => {
    const { ctx, server } = await setup();
    const { value } = await plantRefresh(ctx);
    expect(await introspect(server, { token: newOpaqueToken() })).toEqual({ active: false });
    expect(await introspect(server, { token: value }, RS)).toEqual({ active: false });
    const other = await ctx.tokens.accessToken({
      sub: 'resource-server',
      clientId: 'resource-server',
      scope: ['read:messages'],
    });
    expect(await introspect(server, { token: other.token })).toEqual({ active: false });
  });
});

describe('how long a revoked grant stays known (revocationTtlMs)', () => {
  const ACCESS_TTL = 300_000;
  const REFRESH_TTL = 86_400_000;

  it('keeps the rest of the family plus one access-token lifetime, for a revoked refresh token', async () => {
    const { ctx, server } = await setup({
      accessTokenTtl: ACCESS_TTL,
      refreshTokenTtl: REFRESH_TTL,
    });
    const now = Date.now();
    vi.spyOn(Date, 'now').mockReturnValue(now);
    const revokeGrant = vi.spyOn(ctx.store, 'revokeGrant');
    const { value, record } = await plantRefresh(ctx, { familyExpiresAt: now + 600_000 });
    const reply = await post(server, '/revoke', { token: value }, WEB);
    expect(reply.status).toBe(200);
    expect(revokeGrant).toHaveBeenCalledTimes(1);
    expect(revokeGrant).toHaveBeenCalledWith(record.grantId, 600_000 + ACCESS_TTL);
  });

  it('keeps one access-token lifetime when the family has already ended', async () => {
    const { ctx, server } = await setup({
      accessTokenTtl: ACCESS_TTL,
      refreshTokenTtl: REFRESH_TTL,
    });
    const now = Date.now();
    vi.spyOn(Date, 'now').mockReturnValue(now);
    const revokeGrant = vi.spyOn(ctx.store, 'revokeGrant');
    const { value, record } = await plantRefresh(ctx, { familyExpiresAt: now - 5_000 });
    expect((await post(server, '/revoke', { token: value }, WEB)).status).toBe(200);
    expect(revokeGrant).toHaveBeenCalledWith(record.grantId, ACCESS_TTL);
  });

  it('keeps a whole refresh-token lifetime plus one access-token lifetime when the family end is unknown', async () => {
    const { ctx, server } = await setup({
      accessTokenTtl: ACCESS_TTL,
      refreshTokenTtl: REFRESH_TTL,
    });
    const revokeGrant = vi.spyOn(ctx.store, 'revokeGrant');
    const grantId = randomUUID();
    const { token } = await ctx.tokens.accessToken({
      sub: 'alice',
      clientId: 'demo-web',
      scope: ['openid'],
      grantId,
    });
    expect((await post(server, '/revoke', { token }, WEB)).status).toBe(200);
    expect(revokeGrant).toHaveBeenCalledTimes(1);
    expect(revokeGrant).toHaveBeenCalledWith(grantId, REFRESH_TTL + ACCESS_TTL);
  });
});
