import { randomUUID } from 'node:crypto';
import { type JWTPayload, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticate } from '../../src/auth/authenticate.js';
import { createSessions } from '../../src/auth/session/session.js';
import { compose, type Middleware } from '../../src/core/compose.js';
import { getPrincipal } from '../../src/core/principal.js';
import { sendJson } from '../../src/core/send.js';
import { createRouter } from '../../src/http/routing/router.js';
import { defineClient } from '../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../src/oauth/clients/store.js';
import {
  type AuthorizationServerOptions,
  createOAuthContext,
  type OAuthContext,
} from '../../src/oauth/context.js';
import { createIntrospectionEndpoint } from '../../src/oauth/endpoints/introspection.js';
import { createJwksEndpoint } from '../../src/oauth/endpoints/jwks.js';
import {
  authorizationServerMetadata,
  createMetadataEndpoint,
  DEFAULT_OAUTH_PATHS,
  metadataPaths,
} from '../../src/oauth/endpoints/metadata.js';
import { createRevocationEndpoint } from '../../src/oauth/endpoints/revocation.js';
import { createUserInfoEndpoint } from '../../src/oauth/endpoints/userinfo.js';
import { type RefreshTokenRecord, refreshTokens } from '../../src/oauth/store/records.js';
import { hashToken, newOpaqueToken, type UserClaims } from '../../src/oauth/tokens/issue.js';
import { createKeySet, type KeySet } from '../../src/oauth/tokens/key-set.js';
import { ownAccessTokens } from '../../src/oauth/tokens/verify.js';
import { closeAll, json, type Listening, type Reply, request, serve } from '../helpers/http.js';

const SCOPES = ['openid', 'profile', 'email', 'offline_access', 'read:messages', 'write:messages'];

const users = new Map<string, UserClaims>([
  [
    'alice',
    {
      sub: 'alice',
      name: 'Alice Example',
      role: 'admin',
      email: 'alice@example.com',
      email_verified: true,
    },
  ],
  ['bob', { sub: 'bob', name: 'Bob Example', role: 'user', email: 'bob@example.com' }],
  ['carol', { sub: 'carol', name: 'Carol Gone', role: 'user' }],
]);

const clients = new MemoryClientStore([
  // a resource server: it introspects the tokens presented to it, whoever they were issued to
  await defineClient({
    clientId: 'demo-service',
    secret: 'demo-service-secret',
    grantTypes: ['client_credentials'],
    redirectUris: [],
    scopes: ['read:messages', 'write:messages'],
    introspection: 'any',
  }),
  // a confidential client like any other: it introspects its own tokens only
  await defineClient({
    clientId: 'plain-service',
    secret: 'plain-service-secret',
    grantTypes: ['client_credentials'],
    redirectUris: [],
    scopes: ['read:messages'],
  }),
  await defineClient({
    clientId: 'demo-web',
    secret: 'demo-web-secret',
    grantTypes: ['authorization_code', 'refresh_token'],
    redirectUris: ['http://127.0.0.1:8080/callback'],
    scopes: SCOPES,
  }),
  await defineClient({
    clientId: 'demo-spa',
    grantTypes: ['authorization_code', 'refresh_token'],
    redirectUris: ['http://127.0.0.1:5173/callback'],
    scopes: SCOPES,
  }),
]);

/** A context served by every endpoint of this suite, at its own port (the issuer). */
interface Setup {
  ctx: OAuthContext;
  server: Listening;
  issuer: string;
}

async function setup(
  options: { keys?: KeySet } & Partial<AuthorizationServerOptions> = {},
): Promise<Setup> {
  let app: Middleware = (_req, _res, next) => next();
  const server = await serve((req, res, next) => app(req, res, next));
  const issuer = server.url;
  const ctx = createOAuthContext({
    issuer,
    clients,
    keys: options.keys ?? (await createKeySet()),
    users: {
      verify: () => undefined,
      get: (sub) => users.get(sub),
    },
    sessions: createSessions({ allowedOrigins: [issuer] }),
    ...options,
  });
  const metadata = createMetadataEndpoint(ctx);
  const me: Middleware = (req, res) => sendJson(res, 200, getPrincipal(req));
  app = createRouter({
    '/.well-known/oauth-authorization-server': metadata,
    '/.well-known/openid-configuration': metadata,
    '/.well-known/jwks.json': createJwksEndpoint(ctx),
    '/revoke': createRevocationEndpoint(ctx),
    '/introspect': createIntrospectionEndpoint(ctx),
    '/userinfo': createUserInfoEndpoint(ctx),
    '/api/me': { GET: compose([authenticate([ownAccessTokens(ctx)]), me]) },
  });
  return { ctx, server, issuer };
}

let main: Setup;
let ctx: OAuthContext;

beforeAll(async () => {
  main = await setup();
  ctx = main.ctx;
});

afterAll(closeAll);

const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };
const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
const WEB = { Authorization: basic('demo-web', 'demo-web-secret') };
const SERVICE = { Authorization: basic('demo-service', 'demo-service-secret') };
const PLAIN = { Authorization: basic('plain-service', 'plain-service-secret') };

function post(
  path: string,
  body: Record<string, string>,
  headers: Record<string, string> = {},
  target: Setup = main,
): Promise<Reply> {
  return request(target.server, path, {
    method: 'POST',
    headers: { ...FORM, ...headers },
    body: new URLSearchParams(body).toString(),
  });
}

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

function me(token: string, target: Setup = main): Promise<Reply> {
  return request(target.server, '/api/me', { headers: bearer(token) });
}

/** An access token of alice for demo-web, in a grant of its own unless one is given. */
async function userToken(
  options: { scope?: string[]; grantId?: string; sub?: string; clientId?: string } = {},
  context: OAuthContext = ctx,
) {
  const sub = options.sub ?? 'alice';
  const user = users.get(sub);
  const grantId = options.grantId ?? randomUUID();
  const { token, jti } = await context.tokens.accessToken({
    sub,
    clientId: options.clientId ?? 'demo-web',
    scope: options.scope ?? ['openid', 'profile', 'email', 'read:messages'],
    grantId,
    user: { name: user?.name, role: user?.role },
  });
  return { token, jti, grantId };
}

/** A refresh token written into the store as the token endpoint would. */
async function refreshToken(
  record: Partial<RefreshTokenRecord> = {},
): Promise<{ value: string; record: RefreshTokenRecord }> {
  const value = newOpaqueToken();
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

/** Signs any payload with the server's current key, for tokens the issuer would never make. */
async function forge(
  payload: JWTPayload,
  typ = 'at+jwt',
  overrides: { iat?: number; exp?: number } = {},
): Promise<string> {
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
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ })
    .setIssuer(ctx.issuer)
    .setIssuedAt(overrides.iat ?? now)
    .setExpirationTime(overrides.exp ?? now + 600)
    .sign(key.privateKey);
}

describe('discovery metadata', () => {
  it('serves one document at both well-known paths, cacheable, with the exact issuer', async () => {
    const oauth = await request(main.server, '/.well-known/oauth-authorization-server');
    const oidc = await request(main.server, '/.well-known/openid-configuration');
    for (const reply of [oauth, oidc]) {
      expect(reply.status).toBe(200);
      expect(reply.headers['content-type']).toMatch(/^application\/json/);
      expect(reply.headers['cache-control']).toBe('public, max-age=300');
    }
    expect(oidc.body).toBe(oauth.body);
    const doc = json(oauth);
    expect(doc.issuer).toBe(main.issuer);
    expect(doc.issuer).toBe(ctx.tokens.issuer);
  });

  it('lists every endpoint under the issuer, the grants, S256 only and the iss parameter', async () => {
    const ALGS = ['ES256', 'EdDSA', 'Ed25519', 'PS256', 'RS256'];
    const doc = json(await request(main.server, '/.well-known/openid-configuration'));
    expect(doc).toMatchObject({
      authorization_endpoint: `${main.issuer}/authorize`,
      token_endpoint: `${main.issuer}/token`,
      device_authorization_endpoint: `${main.issuer}/device`,
      revocation_endpoint: `${main.issuer}/revoke`,
      introspection_endpoint: `${main.issuer}/introspect`,
      userinfo_endpoint: `${main.issuer}/userinfo`,
      jwks_uri: `${main.issuer}/.well-known/jwks.json`,
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256'],
      scopes_supported: ['openid', 'profile', 'email', 'offline_access'],
      token_endpoint_auth_methods_supported: [
        'client_secret_basic',
        'client_secret_post',
        'private_key_jwt',
        'none',
      ],
      revocation_endpoint_auth_methods_supported: [
        'client_secret_basic',
        'client_secret_post',
        'private_key_jwt',
        'none',
      ],
      introspection_endpoint_auth_methods_supported: [
        'client_secret_basic',
        'client_secret_post',
        'private_key_jwt',
      ],
      token_endpoint_auth_signing_alg_values_supported: ALGS,
      revocation_endpoint_auth_signing_alg_values_supported: ALGS,
      introspection_endpoint_auth_signing_alg_values_supported: ALGS,
    });
    expect([...(doc.grant_types_supported as string[])].sort()).toEqual([
      'authorization_code',
      'client_credentials',
      'refresh_token',
      'urn:ietf:params:oauth:grant-type:device_code',
    ]);
    expect(doc.claims_supported).toEqual(expect.arrayContaining(['sub', 'name', 'email']));
  });

  it('points jwks_uri at a key set that verifies the tokens', async () => {
    const doc = json<{ jwks_uri: string }>(
      await request(main.server, '/.well-known/oauth-authorization-server'),
    );
    const jwksUrl = new URL(doc.jwks_uri);
    expect(jwksUrl.origin).toBe(main.issuer);
    const jwks = json<{ keys: { kid: string }[] }>(await request(main.server, jwksUrl.pathname));
    const { token } = await userToken();
    const kid = JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()).kid;
    expect(jwks.keys.map((k) => k.kid)).toContain(kid);
  });

  it('builds endpoint URLs from custom paths and an issuer with a trailing slash', async () => {
    const other = createOAuthContext({
      issuer: 'https://auth.example.com/',
      clients,
      keys: ctx.keys,
      users: { verify: () => undefined, get: () => undefined },
      sessions: createSessions({ allowedOrigins: ['https://auth.example.com'] }),
    });
    const doc = authorizationServerMetadata(
      other,
      { token: '/oauth/token' },
      { scopesSupported: ['openid', 'read:messages'] },
    );
    expect(doc.issuer).toBe('https://auth.example.com/');
    expect(doc.token_endpoint).toBe('https://auth.example.com/oauth/token');
    expect(doc.revocation_endpoint).toBe('https://auth.example.com/revoke');
    expect(doc.scopes_supported).toEqual(['openid', 'read:messages']);
    expect(Object.isFrozen(DEFAULT_OAUTH_PATHS)).toBe(true);
    expect(() => authorizationServerMetadata(other, { tokne: '/t' } as never)).toThrow(
      /Did you mean `token`/,
    );
    expect(() => authorizationServerMetadata(other, { token: 'token' })).toThrow(TypeError);
  });

  it('knows where discovery looks for an issuer with a path', () => {
    expect(metadataPaths('https://auth.example.com')).toEqual([
      '/.well-known/oauth-authorization-server',
      '/.well-known/openid-configuration',
    ]);
    expect(metadataPaths('https://example.com/tenant')).toEqual([
      '/.well-known/oauth-authorization-server/tenant',
      '/tenant/.well-known/openid-configuration',
    ]);
  });

  it('answers HEAD and refuses POST with 405', async () => {
    const head = await request(main.server, '/.well-known/openid-configuration', {
      method: 'HEAD',
    });
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    const posted = await request(main.server, '/.well-known/openid-configuration', {
      method: 'POST',
    });
    expect(posted.status).toBe(405);
    expect(posted.headers.allow).toContain('GET');
  });
});

describe('JWKS', () => {
  it('publishes public keys with kid, use and alg, cacheable', async () => {
    const reply = await request(main.server, '/.well-known/jwks.json');
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toMatch(/^application\/json/);
    expect(reply.headers['cache-control']).toBe('public, max-age=300');
    const { keys } = json<{ keys: Record<string, unknown>[] }>(reply);
    expect(keys).toHaveLength(1);
    for (const key of keys) {
      expect(key).toMatchObject({ kty: 'RSA', use: 'sig', alg: 'RS256' });
      expect(typeof key.kid).toBe('string');
      for (const secret of ['d', 'p', 'q', 'dp', 'dq', 'qi'])
        expect(key).not.toHaveProperty(secret);
    }
  });

  it('after a rotation lists both keys, and tokens of either verify without a restart', async () => {
    const own = await setup();
    const before = await userToken({}, own.ctx);
    expect((await me(before.token, own)).status).toBe(200);

    const next = await own.ctx.keys.rotate({ immediately: true });
    const { keys } = json<{ keys: { kid: string }[] }>(
      await request(own.server, '/.well-known/jwks.json'),
    );
    expect(keys.map((k) => k.kid)).toHaveLength(2);
    expect(keys.map((k) => k.kid)).toContain(next.kid);

    const after = await userToken({}, own.ctx);
    const kidOf = (t: string) =>
      JSON.parse(Buffer.from(t.split('.')[0]!, 'base64url').toString()).kid;
    expect(kidOf(after.token)).toBe(next.kid);
    expect(kidOf(before.token)).not.toBe(next.kid);
    expect((await me(before.token, own)).status).toBe(200);
    expect((await me(after.token, own)).status).toBe(200);
  });

  it('stops accepting tokens of a key once it is no longer published', async () => {
    let clock = Date.now();
    const keys = await createKeySet({ now: () => clock, retainMs: 60_000, publishAheadMs: 0 });
    const own = await setup({ keys });
    const old = await userToken({}, own.ctx);
    expect((await me(old.token, own)).status).toBe(200);
    await keys.rotate();
    clock += 1;
    const fresh = await userToken({}, own.ctx);
    expect((await me(old.token, own)).status).toBe(200);
    clock += 61_000; // the old key is retired
    expect(
      json<{ keys: unknown[] }>(await request(own.server, '/.well-known/jwks.json')).keys,
    ).toHaveLength(1);
    const refused = await me(old.token, own);
    expect(refused.status).toBe(401);
    expect(refused.headers['www-authenticate']).toContain('error="invalid_token"');
    expect((await me(fresh.token, own)).status).toBe(200);
  });
});

describe('ownAccessTokens', () => {
  it('accepts the server’s access tokens with the issuer alone, as a full principal', async () => {
    const { token, jti } = await userToken();
    const reply = await me(token);
    expect(reply.status).toBe(200);
    expect(json(reply)).toMatchObject({
      sub: 'alice',
      name: 'Alice Example',
      role: 'admin',
      scopes: ['openid', 'profile', 'email', 'read:messages'],
      method: 'bearer',
      clientId: 'demo-web',
      claims: { iss: main.issuer, aud: main.issuer, jti, client_id: 'demo-web' },
    });
  });

  it('accepts a client_credentials token (no grant, sub = client id)', async () => {
    const { token } = await ctx.tokens.accessToken({
      sub: 'demo-service',
      clientId: 'demo-service',
      scope: ['read:messages'],
    });
    expect(json(await me(token))).toMatchObject({ sub: 'demo-service', clientId: 'demo-service' });
  });

  it('refuses an ID token offered as an access token', async () => {
    const idToken = await ctx.tokens.idToken({
      clientId: main.issuer, // even with the audience of access tokens
      user: users.get('alice')!,
      scope: ['openid'],
    });
    const reply = await me(idToken);
    expect(reply.status).toBe(401);
    expect(reply.headers['www-authenticate']).toContain('error="invalid_token"');
  });

  it('refuses the token of a revoked grant', async () => {
    const { token, grantId } = await userToken();
    expect((await me(token)).status).toBe(200);
    await ctx.store.revokeGrant(grantId, 60_000);
    const reply = await me(token);
    expect(reply.status).toBe(401);
    expect(reply.headers['www-authenticate']).toContain('error="invalid_token"');
  });

  it('refuses tokens of another issuer, another audience, expired, or without RFC 9068 claims', async () => {
    const foreign = createOAuthContext({
      issuer: 'https://elsewhere.example.com',
      clients,
      keys: ctx.keys, // the same keys: only iss differs
      users: { verify: () => undefined, get: () => undefined },
      sessions: createSessions({ allowedOrigins: ['https://elsewhere.example.com'] }),
    });
    const { token: elsewhere } = await foreign.tokens.accessToken({
      sub: 'alice',
      clientId: 'demo-web',
      scope: ['openid'],
    });
    const now = Math.floor(Date.now() / 1000);
    const tokens = [
      elsewhere,
      await forge({ aud: 'https://api.other.example.com' }),
      await forge({}, 'at+jwt', { iat: now - 1000, exp: now - 100 }),
      await forge({ client_id: undefined }),
      await forge({ grant_id: 42 }),
    ];
    for (const token of tokens) expect((await me(token)).status).toBe(401);
    expect((await me(await forge({}))).status).toBe(200);
  });

  it('validates its options when built', () => {
    expect(() => ownAccessTokens(ctx, { relm: 'x' } as never)).toThrow(/Did you mean `realm`/);
    expect(ownAccessTokens(ctx, { realm: 'messages' }).challenge).toBe('Bearer realm="messages"');
  });

  it('passes a good, unrevoked token to a custom toPrincipal', async () => {
    const auth = ownAccessTokens(ctx, {
      toPrincipal: (payload) => ({ sub: `x-${payload.sub}`, scopes: [], method: 'bearer' }),
    });
    const { token, grantId } = await userToken();
    const req = {
      headers: { authorization: `Bearer ${token}` },
      rawHeaders: ['Authorization', `Bearer ${token}`],
      url: '/',
    };
    expect(await auth.authenticate(req as never)).toMatchObject({ sub: 'x-alice' });
    await ctx.store.revokeGrant(grantId, 60_000);
    await expect(auth.authenticate(req as never)).rejects.toMatchObject({ status: 401 });
  });
});

describe('revocation (RFC 7009)', () => {
  it('revokes a refresh token and its whole grant: 200 with an empty body', async () => {
    const { value, record } = await refreshToken();
    const access = await userToken({ grantId: record.grantId });
    expect((await me(access.token)).status).toBe(200);

    const reply = await post('/revoke', { token: value, token_type_hint: 'refresh_token' }, WEB);
    expect(reply.status).toBe(200);
    expect(reply.body).toBe('');
    expect(await refreshTokens(ctx.store).find(hashToken(value))).toBeUndefined();
    expect(await ctx.store.isGrantRevoked(record.grantId)).toBe(true);
    expect((await me(access.token)).status).toBe(401);
    expect(json(await post('/introspect', { token: access.token }, SERVICE))).toEqual({
      active: false,
    });
  });

  it('finds the token whatever the hint says, and ignores an unknown hint', async () => {
    const a = await refreshToken();
    expect(
      (await post('/revoke', { token: a.value, token_type_hint: 'access_token' }, WEB)).status,
    ).toBe(200);
    expect(await ctx.store.isGrantRevoked(a.record.grantId)).toBe(true);
    const b = await refreshToken();
    expect(
      (await post('/revoke', { token: b.value, token_type_hint: 'id_token' }, WEB)).status,
    ).toBe(200);
    expect(await ctx.store.isGrantRevoked(b.record.grantId)).toBe(true);
    const c = await userToken();
    expect(
      (await post('/revoke', { token: c.token, token_type_hint: 'refresh_token' }, WEB)).status,
    ).toBe(200);
    expect(await ctx.store.isGrantRevoked(c.grantId)).toBe(true);
  });

  it('revokes the grant of an access token of the client', async () => {
    const { value, record } = await refreshToken();
    const access = await userToken({ grantId: record.grantId });
    const reply = await post('/revoke', { token: access.token }, WEB);
    expect(reply.status).toBe(200);
    expect((await me(access.token)).status).toBe(401);
    expect(json(await post('/introspect', { token: value }, WEB))).toEqual({ active: false });
  });

  it('revokes a client_credentials access token (no grant) by itself, until it expires', async () => {
    const issue = () =>
      ctx.tokens.accessToken({
        sub: 'demo-service',
        clientId: 'demo-service',
        scope: ['read:messages'],
      });
    const revoked = await issue();
    const other = await issue();
    expect((await me(revoked.token)).status).toBe(200);
    const reply = await post(
      '/revoke',
      { token: revoked.token, token_type_hint: 'access_token' },
      SERVICE,
    );
    expect(reply.status).toBe(200);
    expect((await me(revoked.token)).status).toBe(401);
    expect(json(await post('/introspect', { token: revoked.token }, SERVICE))).toEqual({
      active: false,
    });
    // only that token: another one of the same client still works
    expect((await me(other.token)).status).toBe(200);
    expect(await ctx.store.isGrantRevoked(`jti:${revoked.jti}`)).toBe(true);
  });

  it('lets a public client revoke its own refresh token by its client_id', async () => {
    const { value, record } = await refreshToken({ clientId: 'demo-spa' });
    const reply = await post('/revoke', { token: value, client_id: 'demo-spa' });
    expect(reply.status).toBe(200);
    expect(await ctx.store.isGrantRevoked(record.grantId)).toBe(true);
  });

  it('answers 200 for unknown, malformed and expired tokens; refuses (400) and leaves be the tokens of another client', async () => {
    const foreignRefresh = await refreshToken({ clientId: 'demo-spa' });
    const foreignAccess = await userToken({ clientId: 'demo-spa' });
    const now = Math.floor(Date.now() / 1000);
    for (const token of [
      'no-such-token',
      'a.b.c',
      newOpaqueToken(),
      await forge({}, 'at+jwt', { iat: now - 1000, exp: now - 100 }),
    ]) {
      const reply = await post('/revoke', { token }, WEB);
      expect(reply.status).toBe(200);
      expect(reply.body).toBe('');
    }
    // RFC 7009 §2.1: a confidential client is told that the token is not its own
    for (const [token, hint] of [
      [foreignRefresh.value, 'refresh_token'],
      [foreignRefresh.value, 'access_token'],
      [foreignAccess.token, 'access_token'],
      [foreignAccess.token, 'refresh_token'],
    ]) {
      const reply = await post('/revoke', { token: token!, token_type_hint: hint! }, WEB);
      expect(reply.status).toBe(400);
      expect(reply.headers['cache-control']).toBe('no-store');
      expect(json(reply)).toMatchObject({ error: 'invalid_request' });
    }
    // a public client is refused the same way (§2.1), and nothing is revoked
    const ownedByWeb = await refreshToken();
    const asPublic = await post('/revoke', { token: ownedByWeb.value, client_id: 'demo-spa' });
    expect(asPublic.status).toBe(400);
    expect(json(asPublic)).toMatchObject({ error: 'invalid_request' });
    const webAccess = await userToken({ clientId: 'demo-web' });
    const accessAsPublic = await post('/revoke', { token: webAccess.token, client_id: 'demo-spa' });
    expect(accessAsPublic.status).toBe(400);
    expect((await me(webAccess.token)).status).toBe(200);
    expect(await ctx.store.isGrantRevoked(ownedByWeb.record.grantId)).toBe(false);
    expect(await refreshTokens(ctx.store).find(hashToken(foreignRefresh.value))).toMatchObject({
      state: 'fresh',
    });
    expect(await ctx.store.isGrantRevoked(foreignRefresh.record.grantId)).toBe(false);
    expect(await ctx.store.isGrantRevoked(foreignAccess.grantId)).toBe(false);
    expect((await me(foreignAccess.token)).status).toBe(200);
  });

  it('needs client authentication and a token', async () => {
    const { value, record } = await refreshToken();
    const anonymous = await post('/revoke', { token: value });
    expect(anonymous.status).toBe(401);
    expect(json(anonymous)).toMatchObject({ error: 'invalid_client' });
    const wrong = await post(
      '/revoke',
      { token: value },
      { Authorization: basic('demo-web', 'x') },
    );
    expect(wrong.status).toBe(401);
    expect(wrong.headers['www-authenticate']).toContain('Basic');
    expect(await ctx.store.isGrantRevoked(record.grantId)).toBe(false);

    const missing = await post('/revoke', {}, WEB);
    expect(missing.status).toBe(400);
    expect(missing.headers['content-type']).toBe('application/json');
    expect(missing.headers['cache-control']).toBe('no-store');
    expect(json(missing)).toMatchObject({ error: 'invalid_request' });
    const twice = await request(main.server, '/revoke', {
      method: 'POST',
      headers: { ...FORM, ...WEB },
      body: 'token=a&token=b',
    });
    expect(json(twice)).toMatchObject({ error: 'invalid_request' });
  });

  it('takes client_secret_post, refuses a body that is not a form and methods other than POST', async () => {
    const { value, record } = await refreshToken();
    const reply = await post('/revoke', {
      token: value,
      client_id: 'demo-web',
      client_secret: 'demo-web-secret',
    });
    expect(reply.status).toBe(200);
    expect(await ctx.store.isGrantRevoked(record.grantId)).toBe(true);
    const asJson = await request(main.server, '/revoke', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...WEB },
      body: JSON.stringify({ token: value }),
    });
    expect(asJson.status).toBe(400);
    expect(json(asJson)).toMatchObject({ error: 'invalid_request' });
    const get = await request(main.server, '/revoke');
    expect(get.status).toBe(405);
    expect(get.headers.allow).toContain('POST');
  });
});

describe('introspection (RFC 7662)', () => {
  it('describes an active access token', async () => {
    const { token, jti } = await userToken({ scope: ['openid', 'read:messages'] });
    const reply = await post('/introspect', { token }, SERVICE);
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('application/json');
    expect(reply.headers['cache-control']).toBe('no-store');
    const body = json(reply);
    expect(body).toMatchObject({
      active: true,
      scope: 'openid read:messages',
      client_id: 'demo-web',
      sub: 'alice',
      iss: main.issuer,
      aud: main.issuer,
      token_type: 'Bearer',
      jti,
    });
    expect(typeof body.exp).toBe('number');
    expect(typeof body.iat).toBe('number');
    expect((body.exp as number) - (body.iat as number)).toBe(900);
  });

  it('describes an active refresh token to its own client', async () => {
    const familyExpiresAt = Date.now() + 86_400_000;
    const { value } = await refreshToken({ familyExpiresAt });
    const reply = await post(
      '/introspect',
      { token: value, token_type_hint: 'refresh_token' },
      { Authorization: basic('demo-web', 'demo-web-secret') },
    );
    expect(json(reply)).toEqual({
      active: true,
      scope: 'openid offline_access read:messages',
      client_id: 'demo-web',
      sub: 'alice',
      iss: main.issuer,
      token_type: 'refresh_token',
      exp: Math.floor(familyExpiresAt / 1000),
    });
    // another confidential client learns nothing about it
    expect(json(await post('/introspect', { token: value }, SERVICE))).toEqual({ active: false });
  });

  it('answers { active: false } for unknown, expired, revoked, rotated tokens and ID tokens', async () => {
    const now = Math.floor(Date.now() / 1000);
    const revoked = await userToken();
    await ctx.store.revokeGrant(revoked.grantId, 60_000);
    const rotated = await refreshToken();
    await refreshTokens(ctx.store).consume(hashToken(rotated.value));
    const revokedRefresh = await refreshToken();
    await ctx.store.revokeGrant(revokedRefresh.record.grantId, 60_000);
    const endedFamily = await refreshToken({ familyExpiresAt: Date.now() - 1 });
    const idToken = await ctx.tokens.idToken({
      clientId: 'demo-web',
      user: users.get('alice')!,
      scope: ['openid'],
    });
    for (const token of [
      'unknown',
      newOpaqueToken(),
      await forge({}, 'at+jwt', { iat: now - 1000, exp: now - 100 }),
      revoked.token,
      rotated.value,
      revokedRefresh.value,
      endedFamily.value,
      idToken,
      await forge({}, 'JWT'),
    ]) {
      const reply = await post('/introspect', { token }, WEB);
      expect(reply.status).toBe(200);
      expect(json(reply)).toEqual({ active: false });
    }
  });

  it('is closed to public clients and to unauthenticated callers', async () => {
    const { token } = await userToken();
    const spa = await post('/introspect', { token, client_id: 'demo-spa' });
    expect(spa.status).toBe(401);
    expect(json(spa)).toMatchObject({ error: 'invalid_client' });
    expect(spa.headers['www-authenticate']).toBe('Basic realm="token", error="invalid_client"');
    const nobody = await post('/introspect', { token });
    expect(nobody.status).toBe(401);
    expect(json(nobody)).toMatchObject({ error: 'invalid_client' });
    const wrong = await post(
      '/introspect',
      { token },
      { Authorization: basic('demo-service', 'no') },
    );
    expect(wrong.status).toBe(401);
  });

  it('tells a client only about its own access tokens (RFC 7662 §2.2)', async () => {
    const web = await userToken();
    const own = await ctx.tokens.accessToken({
      sub: 'plain-service',
      clientId: 'plain-service',
      scope: ['read:messages'],
    });
    // a confidential client fishing for another client's token learns nothing
    const hints: Record<string, string>[] = [
      {},
      { token_type_hint: 'access_token' },
      { token_type_hint: 'refresh_token' },
    ];
    for (const hint of hints) {
      const reply = await post('/introspect', { token: web.token, ...hint }, PLAIN);
      expect(reply.status).toBe(200);
      expect(json(reply)).toEqual({ active: false });
    }
    expect(json(await post('/introspect', { token: own.token }, PLAIN))).toMatchObject({
      active: true,
      client_id: 'plain-service',
      sub: 'plain-service',
    });
    // its own token, of the web client, to the web client
    expect(json(await post('/introspect', { token: web.token }, WEB))).toMatchObject({
      active: true,
      client_id: 'demo-web',
    });
  });

  it('tells a resource server registered with introspection: any about every access token', async () => {
    const web = await userToken();
    expect(json(await post('/introspect', { token: web.token }, SERVICE))).toMatchObject({
      active: true,
      client_id: 'demo-web',
      sub: 'alice',
    });
    // still never another client's refresh token
    const { value } = await refreshToken();
    expect(json(await post('/introspect', { token: value }, SERVICE))).toEqual({ active: false });
    await expect(
      defineClient({
        clientId: 'spa-rs',
        grantTypes: ['authorization_code'],
        redirectUris: ['https://spa.example/cb'],
        scopes: [],
        introspection: 'any',
      }),
    ).rejects.toThrow(/confidential/);
    await expect(
      defineClient({
        clientId: 'odd',
        secret: 'odd-secret-123',
        grantTypes: ['client_credentials'],
        redirectUris: [],
        scopes: [],
        introspection: 'all' as never,
      }),
    ).rejects.toThrow(/'own' or 'any'/);
  });

  it('needs a token, and takes client_secret_post', async () => {
    const missing = await post('/introspect', {}, SERVICE);
    expect(missing.status).toBe(400);
    expect(json(missing)).toMatchObject({ error: 'invalid_request' });
    const { token } = await userToken();
    const posted = await post('/introspect', {
      token,
      client_id: 'demo-service',
      client_secret: 'demo-service-secret',
    });
    expect(json(posted)).toMatchObject({ active: true });
    expect((await request(main.server, '/introspect')).status).toBe(405);
  });
});

describe('UserInfo (OpenID Connect Core §5.3)', () => {
  it('answers the claims the scopes release, on GET and POST, never cached', async () => {
    const { token } = await userToken({ scope: ['openid', 'profile', 'email'] });
    for (const method of ['GET', 'POST']) {
      const reply = await request(main.server, '/userinfo', { method, headers: bearer(token) });
      expect(reply.status).toBe(200);
      expect(reply.headers['content-type']).toMatch(/^application\/json/);
      expect(reply.headers['cache-control']).toBe('no-store');
      expect(json(reply)).toEqual({
        sub: 'alice',
        name: 'Alice Example',
        email: 'alice@example.com',
        email_verified: true,
      });
    }
    const { token: bare } = await userToken({ scope: ['openid'] });
    expect(json(await request(main.server, '/userinfo', { headers: bearer(bare) }))).toEqual({
      sub: 'alice',
    });
  });

  it('needs the openid scope: 403 insufficient_scope', async () => {
    const { token } = await userToken({ scope: ['profile', 'read:messages'] });
    const reply = await request(main.server, '/userinfo', { headers: bearer(token) });
    expect(reply.status).toBe(403);
    expect(reply.headers['www-authenticate']).toMatch(/^Bearer /);
    expect(reply.headers['www-authenticate']).toContain('error="insufficient_scope"');
    expect(reply.headers['www-authenticate']).toContain('scope="openid"');
  });

  it('answers 401 with Bearer and DPoP challenges without a token, invalid_token for a bad one', async () => {
    const none = await request(main.server, '/userinfo');
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe(
      'Bearer realm="userinfo", DPoP realm="userinfo", algs="ES256 EdDSA PS256 RS256"',
    );
    const idToken = await ctx.tokens.idToken({
      clientId: 'demo-web',
      user: users.get('alice')!,
      scope: ['openid'],
    });
    const revoked = await userToken();
    await ctx.store.revokeGrant(revoked.grantId, 60_000);
    for (const token of ['not-a-token', idToken, revoked.token]) {
      const reply = await request(main.server, '/userinfo', { headers: bearer(token) });
      expect(reply.status).toBe(401);
      expect(reply.headers['www-authenticate']).toContain('error="invalid_token"');
    }
  });

  it('answers 401 invalid_token when the user is gone', async () => {
    const { token } = await userToken({ sub: 'carol', scope: ['openid'] });
    expect((await request(main.server, '/userinfo', { headers: bearer(token) })).status).toBe(200);
    users.delete('carol');
    const reply = await request(main.server, '/userinfo', { headers: bearer(token) });
    expect(reply.status).toBe(401);
    expect(reply.headers['www-authenticate']).toContain('error="invalid_token"');
  });

  it('refuses other methods with 405', async () => {
    const reply = await request(main.server, '/userinfo', { method: 'DELETE' });
    expect(reply.status).toBe(405);
    expect(reply.headers.allow).toContain('GET');
    expect(reply.headers.allow).toContain('POST');
  });
});
