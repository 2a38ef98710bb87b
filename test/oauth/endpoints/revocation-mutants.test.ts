// The revocation endpoint (RFC 7009) and the UserInfo endpoint (OpenID Connect Core §5.3) at
// the edges the main suites leave out: the exact refusals (descriptions, challenges, problem
// details), the order the token_type_hint sets (shown with a JWT that is also planted as a
// refresh token, so that the two lookups give different answers), access tokens whose
// grant_id or jti is empty or not a string, and how long a token without a grant stays
// marked revoked. Every server, context and store is built inside its test.
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { afterAll, expect, it } from 'vitest';
import type { Middleware } from '../../../src/core/compose.js';
import { createRouter } from '../../../src/http/routing/router.js';
import type { AuthorizationServerOptions, OAuthContext } from '../../../src/oauth/context.js';
import { createRevocationEndpoint } from '../../../src/oauth/endpoints/revocation.js';
import { createUserInfoEndpoint } from '../../../src/oauth/endpoints/userinfo.js';
import { type RefreshTokenRecord, refreshTokens } from '../../../src/oauth/store/records.js';
import { MemoryRecordStore } from '../../../src/oauth/store/store.js';
import { hashToken, type UserClaims } from '../../../src/oauth/tokens/issue.js';
import { closeAll, json, type Listening, type Reply, request, serve } from '../../helpers/http.js';
import { endpointContext, ISSUER, SECRETS, userInfo } from './endpoint-fixtures.js';

afterAll(closeAll);

const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };
const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
const WEB = { Authorization: basic('web', SECRETS.web) };

/** A memory store that also writes down every grant (or token) it is told to revoke. */
class RecordingStore extends MemoryRecordStore {
  readonly revocations: [string, number][] = [];
  override revokeGrant(grantId: string, ttlMs: number): void {
    this.revocations.push([grantId, ttlMs]);
    super.revokeGrant(grantId, ttlMs);
  }
}

interface Setup {
  ctx: OAuthContext;
  server: Listening;
  store: RecordingStore;
  users: Map<string, UserClaims>;
  /** The errors the UserInfo endpoint threw, as it threw them (their `code` is not in the body). */
  thrown: unknown[];
}

/** Revocation at /revoke, UserInfo at /userinfo, on a context of their own. */
async function start(options: Partial<AuthorizationServerOptions> = {}): Promise<Setup> {
  const users = new Map<string, UserClaims>([
    ['alice', { sub: 'alice', name: 'Alice Example', email: 'alice@example.com' }],
  ]);
  const store = new RecordingStore();
  const ctx = await endpointContext((sub) => users.get(sub), { store, ...options });
  const thrown: unknown[] = [];
  const userInfo = createUserInfoEndpoint(ctx);
  const watched: Middleware = async (req, res, next) => {
    try {
      await userInfo.GET!(req, res, next);
    } catch (error) {
      thrown.push(error);
      throw error;
    }
  };
  const server = await serve(
    createRouter({ '/revoke': createRevocationEndpoint(ctx), '/userinfo': { GET: watched } }),
  );
  return { ctx, server, store, users, thrown };
}

function revoke(server: Listening, body: Record<string, string>): Promise<Reply> {
  return request(server, '/revoke', {
    method: 'POST',
    headers: { ...FORM, ...WEB },
    body: new URLSearchParams(body).toString(),
  });
}

/** Signs any payload with the server's key, for access tokens the issuer would never make. */
async function forge(ctx: OAuthContext, payload: Record<string, unknown>): Promise<string> {
  const key = ctx.keys.signingKey();
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({
    sub: 'alice',
    aud: ctx.tokens.audience,
    client_id: 'web',
    scope: 'openid',
    jti: randomUUID(),
    ...payload,
  })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt' })
    .setIssuer(ISSUER)
    .setIssuedAt(now)
    .setExpirationTime(now + 600)
    .sign(key.privateKey);
}

/** Writes `value` into the store as a refresh token of web, in a grant of its own. */
async function plantRefresh(ctx: OAuthContext, value: string): Promise<RefreshTokenRecord> {
  const record: RefreshTokenRecord = {
    clientId: 'web',
    sub: 'alice',
    scope: ['openid', 'offline_access'],
    grantId: randomUUID(),
    familyExpiresAt: Date.now() + 3_600_000,
  };
  await refreshTokens(ctx.store).save(hashToken(value), record, 3_600_000);
  return record;
}

/** An access token of web in a grant of its own that is also planted as a refresh token. */
async function doubleToken(ctx: OAuthContext) {
  const accessGrant = randomUUID();
  const { token } = await ctx.tokens.accessToken({
    sub: 'alice',
    clientId: 'web',
    scope: ['openid'],
    grantId: accessGrant,
  });
  const refresh = await plantRefresh(ctx, token);
  return { token, accessGrant, refreshGrant: refresh.grantId };
}

/** The RFC 6749 §5.2 error answer, headers included. */
function expectOAuthError(reply: Reply, body: Record<string, string>): void {
  expect(reply.status).toBe(400);
  expect(reply.headers['content-type']).toBe('application/json');
  expect(reply.headers['cache-control']).toBe('no-store');
  expect(json(reply)).toEqual(body);
}

const NO_TOKEN = {
  error: 'invalid_request',
  error_description: 'The parameter token is required.',
};

it('refuses an empty token as a missing one: invalid_request, exactly described', async () => {
  const { server, store } = await start();
  expectOAuthError(await revoke(server, { token: '' }), NO_TOKEN);
  expectOAuthError(await revoke(server, { token_type_hint: 'access_token' }), NO_TOKEN);
  expect(store.revocations).toEqual([]);
});

it('refuses the valid access token of another client with the exact description', async () => {
  const { ctx, server, store } = await start();
  const grantId = randomUUID();
  const { token } = await ctx.tokens.accessToken({
    sub: 'alice',
    clientId: 'other',
    scope: ['openid'],
    grantId,
  });
  expectOAuthError(await revoke(server, { token, token_type_hint: 'access_token' }), {
    error: 'invalid_request',
    error_description:
      'The client is not authorized to revoke this token: it was issued to another client.',
  });
  expect(store.revocations).toEqual([]);
});

it('tries the access token first with token_type_hint=access_token, and stops there', async () => {
  const { ctx, server, store } = await start();
  const { token, accessGrant, refreshGrant } = await doubleToken(ctx);
  const reply = await revoke(server, { token, token_type_hint: 'access_token' });
  expect(reply.status).toBe(200);
  expect(reply.body).toBe('');
  expect(reply.headers['cache-control']).toBe('no-store');
  expect(await ctx.store.isGrantRevoked(accessGrant)).toBe(true);
  expect(await ctx.store.isGrantRevoked(refreshGrant)).toBe(false);
  expect(await refreshTokens(ctx.store).find(hashToken(token))).toMatchObject({
    record: { grantId: refreshGrant },
  });
  expect(store.revocations.map(([id]) => id)).toEqual([accessGrant]);
});

it('tries the refresh token first without a hint (or another one), and stops there', async () => {
  const { ctx, server, store } = await start();
  for (const hint of [undefined, 'refresh_token', 'id_token']) {
    const { token, accessGrant, refreshGrant } = await doubleToken(ctx);
    const reply = await revoke(server, {
      token,
      ...(hint !== undefined && { token_type_hint: hint }),
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toBe('');
    expect(await ctx.store.isGrantRevoked(refreshGrant)).toBe(true);
    expect(await ctx.store.isGrantRevoked(accessGrant)).toBe(false);
    expect(await refreshTokens(ctx.store).find(hashToken(token))).toBeUndefined();
    expect(store.revocations.at(-1)?.[0]).toBe(refreshGrant);
  }
  expect(store.revocations).toHaveLength(3);
});

it('goes on to the refresh token when a JWT-shaped token hinted as access token does not verify', async () => {
  const { ctx, server } = await start();
  // a token of this server's shape whose signature does not match
  const good = await forge(ctx, {});
  const [header, payload] = good.split('.');
  const bad = `${header}.${payload}.${Buffer.alloc(64, 7).toString('base64url')}`;
  const refresh = await plantRefresh(ctx, bad);
  const reply = await revoke(server, { token: bad, token_type_hint: 'access_token' });
  expect(reply.status).toBe(200);
  expect(await ctx.store.isGrantRevoked(refresh.grantId)).toBe(true);
  expect(await refreshTokens(ctx.store).find(hashToken(bad))).toBeUndefined();
});

it('revokes an access token with an empty grant_id by its jti, not the grant ""', async () => {
  const { ctx, server, store } = await start();
  const jti = randomUUID();
  const token = await forge(ctx, { grant_id: '', jti });
  const reply = await revoke(server, { token, token_type_hint: 'access_token' });
  expect(reply.status).toBe(200);
  expect(store.revocations.map(([id]) => id)).toEqual([`jti:${jti}`]);
  expect(await ctx.store.isGrantRevoked(`jti:${jti}`)).toBe(true);
  expect(await ctx.store.isGrantRevoked('')).toBe(false);
});

it('marks nothing for an access token without a grant whose jti is empty or not a string', async () => {
  const { ctx, server, store } = await start();
  for (const jti of ['', 42]) {
    const token = await forge(ctx, { jti });
    const reply = await revoke(server, { token, token_type_hint: 'access_token' });
    expect(reply.status).toBe(200);
    expect(reply.body).toBe('');
  }
  expect(store.revocations).toEqual([]);
  expect(await ctx.store.isGrantRevoked('jti:')).toBe(false);
  expect(await ctx.store.isGrantRevoked('jti:42')).toBe(false);
});

it('marks a token without a grant revoked until it expires, plus a minute', async () => {
  const { ctx, server, store } = await start();
  const { token, jti } = await ctx.tokens.accessToken({
    sub: 'web',
    clientId: 'web',
    scope: ['openid'],
  });
  const exp = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).exp as number;
  const before = Date.now();
  const reply = await revoke(server, { token });
  const after = Date.now();
  expect(reply.status).toBe(200);
  expect(store.revocations).toHaveLength(1);
  const [id, ttl] = store.revocations[0]!;
  expect(id).toBe(`jti:${jti}`);
  expect(ttl).toBeGreaterThanOrEqual(exp * 1000 - after + 60_000);
  expect(ttl).toBeLessThanOrEqual(exp * 1000 - before + 60_000);
  // 15 minutes of access token (less the part of a second exp rounds away) and the minute
  expect(ttl).toBeGreaterThan(900_000);
});

it('offers the DPoP challenge with its algs when the server takes DPoP', async () => {
  const { server } = await start();
  const none = await userInfo(server);
  expect(none.status).toBe(401);
  expect(none.headers['www-authenticate']).toBe(
    'Bearer realm="userinfo", DPoP realm="userinfo", algs="ES256 EdDSA PS256 RS256"',
  );
});

it('offers the bare Bearer challenge alone when the server has DPoP off, and still answers', async () => {
  const { ctx, server } = await start({ dpop: false });
  const none = await userInfo(server);
  expect(none.status).toBe(401);
  expect(none.headers['www-authenticate']).toBe('Bearer realm="userinfo"');
  const { token } = await ctx.tokens.accessToken({
    sub: 'alice',
    clientId: 'web',
    scope: ['openid', 'profile'],
  });
  const reply = await userInfo(server, token);
  expect(reply.status).toBe(200);
  expect(json(reply)).toEqual({ sub: 'alice', name: 'Alice Example' });
});

it('answers a token without openid 403 with the exact challenge and problem', async () => {
  const { ctx, server } = await start();
  const { token } = await ctx.tokens.accessToken({
    sub: 'alice',
    clientId: 'web',
    scope: ['profile'],
  });
  const reply = await userInfo(server, token);
  expect(reply.status).toBe(403);
  expect(reply.headers.vary).toBe('Authorization');
  expect(reply.headers['www-authenticate']).toBe(
    'Bearer realm="userinfo", error="insufficient_scope", ' +
      'error_description="The access token lacks the openid scope.", scope="openid"',
  );
  expect(reply.headers['content-type']).toBe('application/problem+json');
  expect(json(reply)).toEqual({
    type: 'urn:portico:problem:insufficient-scope',
    title: 'Insufficient scope',
    status: 403,
    detail: 'This needs the scope openid.',
    requiredScopes: ['openid'],
    instance: '/userinfo',
  });
});

it('answers 401 invalid_token, exactly, when the user is gone or has another sub', async () => {
  const { ctx, server, users, thrown } = await start();
  const { token } = await ctx.tokens.accessToken({
    sub: 'alice',
    clientId: 'web',
    scope: ['openid'],
  });
  const ok = await userInfo(server, token);
  expect(ok.status).toBe(200);
  expect(ok.headers.vary).toBe('Authorization');
  expect(json(ok)).toEqual({ sub: 'alice' });
  for (const change of [
    () => users.set('alice', { sub: 'bob', name: 'Bob' }),
    () => users.delete('alice'),
  ]) {
    change();
    const reply = await userInfo(server, token);
    expect(reply.status).toBe(401);
    expect(reply.headers.vary).toBe('Authorization');
    expect(reply.headers['www-authenticate']).toBe(
      'Bearer realm="userinfo", error="invalid_token", ' +
        'error_description="The access token is not valid."',
    );
    expect(json(reply)).toEqual({
      type: 'urn:portico:problem:invalid-credentials',
      title: 'Invalid credentials',
      status: 401,
      detail: 'The access token is not valid.',
      instance: '/userinfo',
    });
  }
  expect(thrown.map((error) => (error as { code?: string }).code)).toEqual([
    'ERR_JWT_INVALID',
    'ERR_JWT_INVALID',
  ]);
});
