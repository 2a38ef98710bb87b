// What src/oauth/shared/token-request.ts decides for the introspection and revocation
// endpoints, over a real socket: only a token that is a compact JWS from end to end (three
// non-empty base64url segments, nothing before nor after) is checked against the server's
// keys; an opaque token, or one JWT-shaped only in part ('x!a.b.c', 'a.b.c!'), is looked up
// as a refresh token alone, without reading the keys, at introspection and at revocation
// (token_type_hint=access_token included); a real access token is still verified (the keys
// read) and answered. The keys are spied on through a KeySet of the test's own.
import { afterAll, expect, it, vi } from 'vitest';
import { createSessions } from '../../../src/auth/session/session.js';
import { createRouter } from '../../../src/http/routing/router.js';
import { defineClient } from '../../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../../src/oauth/clients/store.js';
import { createOAuthContext, type OAuthContext } from '../../../src/oauth/context.js';
import { createIntrospectionEndpoint } from '../../../src/oauth/endpoints/introspection.js';
import { createRevocationEndpoint } from '../../../src/oauth/endpoints/revocation.js';
import { createKeySet, type KeySet } from '../../../src/oauth/tokens/key-set.js';
import { closeAll, json, type Listening, type Reply, request, serve } from '../../helpers/http.js';

afterAll(closeAll);

const ISSUER = 'https://auth.example.test';
const KEYS = createKeySet({ algorithm: 'ES256' });
const CLIENTS = (async () =>
  new MemoryClientStore([
    await defineClient({
      clientId: 'web',
      secret: 'web-secret-1234',
      grantTypes: ['authorization_code', 'refresh_token'],
      redirectUris: ['https://app.example.com/cb'],
      scopes: ['openid', 'profile'],
    }),
  ]))();
const WEB = `Basic ${Buffer.from('web:web-secret-1234').toString('base64')}`;

/** Not JWTs: opaque, and JWT-shaped only after a first character, or up to a last one. */
const NOT_JWTS = ['not-a-jwt', 'x!a.b.c', 'a.b.c!', 'a.b.c.', '.a.b.c'];

/** Introspection and revocation on a context whose `keys.jwks` is a spy. */
async function setup(): Promise<{
  ctx: OAuthContext;
  server: Listening;
  jwks: ReturnType<typeof vi.fn<KeySet['jwks']>>;
}> {
  const shared = await KEYS;
  const jwks = vi.fn<KeySet['jwks']>(() => shared.jwks());
  const keys: KeySet = {
    signingKey: () => shared.signingKey(),
    jwks,
    rotate: (options) => shared.rotate(options),
  };
  const ctx = createOAuthContext({
    issuer: ISSUER,
    clients: await CLIENTS,
    keys,
    users: { verify: () => undefined, get: (sub) => ({ sub }) },
    sessions: createSessions({ allowedOrigins: [ISSUER] }),
  });
  const server = await serve(
    createRouter({
      '/introspect': createIntrospectionEndpoint(ctx),
      '/revoke': createRevocationEndpoint(ctx),
    }),
  );
  jwks.mockClear();
  return { ctx, server, jwks };
}

function post(server: Listening, path: string, body: Record<string, string>): Promise<Reply> {
  return request(server, path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Authorization: WEB },
    body: new URLSearchParams(body).toString(),
  });
}

it('introspection reads no key for a token that is not a compact JWS end to end', async () => {
  const { ctx, server, jwks } = await setup();
  for (const token of NOT_JWTS) {
    const reply = await post(server, '/introspect', { token });
    expect(reply.status).toBe(200);
    expect(json(reply)).toEqual({ active: false });
  }
  expect(jwks).not.toHaveBeenCalled();
  const { token } = await ctx.tokens.accessToken({
    sub: 'alice',
    clientId: 'web',
    scope: ['openid'],
  });
  expect(json(await post(server, '/introspect', { token }))).toMatchObject({
    active: true,
    sub: 'alice',
    client_id: 'web',
  });
  expect(jwks).toHaveBeenCalled();
});

it('revocation reads no key for a token that is not a compact JWS, hinted or not', async () => {
  const { ctx, server, jwks } = await setup();
  for (const token of NOT_JWTS) {
    for (const hint of [{}, { token_type_hint: 'access_token' }] as Record<string, string>[]) {
      const reply = await post(server, '/revoke', { token, ...hint });
      expect(reply.status).toBe(200);
    }
  }
  expect(jwks).not.toHaveBeenCalled();
  const { token } = await ctx.tokens.accessToken({
    sub: 'alice',
    clientId: 'web',
    scope: ['openid'],
    grantId: 'g-1',
  });
  expect((await post(server, '/revoke', { token })).status).toBe(200);
  expect(jwks).toHaveBeenCalled();
  expect(await ctx.store.isGrantRevoked('g-1')).toBe(true);
});
