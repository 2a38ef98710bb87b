// The UserInfo endpoint (src/oauth/endpoints/userinfo.ts) with its `resource` option, over a
// real socket: the refusal of a `resource` not made by protectedResource() names
// createUserInfoEndpoint(); with a protected resource every challenge carries its
// resource_metadata (no token, a bad token, a token without openid, Bearer first), a 401 that
// brings no challenge of its own (thrown by the user lookup) gets the bare Bearer challenge
// with it, and a good token is still answered. Every server and context is built inside its
// test.
import { afterAll, expect, it } from 'vitest';
import { authenticationRequired } from '../../../src/auth/errors.js';
import { protectedResource } from '../../../src/auth/protected-resource.js';
import { createRouter } from '../../../src/http/routing/router.js';
import type { AuthorizationServerOptions, OAuthContext } from '../../../src/oauth/context.js';
import { createUserInfoEndpoint } from '../../../src/oauth/endpoints/userinfo.js';
import type { UserClaims } from '../../../src/oauth/tokens/issue.js';
import { closeAll, json, type Listening, serve } from '../../helpers/http.js';
import { endpointContext, ISSUER, userInfo } from './endpoint-fixtures.js';

afterAll(closeAll);

const RESOURCE = protectedResource({
  resource: `${ISSUER}/userinfo`,
  authorizationServers: [ISSUER],
});
const METADATA = `resource_metadata="${RESOURCE.metadataUrl}"`;
const ALGS = 'algs="ES256 EdDSA PS256 RS256"';

/** A context whose users are `get`'s (alice by default), for its own UserInfo. */
function context(
  get: (sub: string) => UserClaims | undefined = (sub) =>
    sub === 'alice' ? { sub: 'alice', name: 'Alice Example' } : undefined,
  options: Partial<AuthorizationServerOptions> = {},
): Promise<OAuthContext> {
  return endpointContext(get, options);
}

/** UserInfo with the protected resource, at /userinfo. */
async function start(ctx: OAuthContext): Promise<Listening> {
  return serve(createRouter({ '/userinfo': createUserInfoEndpoint(ctx, { resource: RESOURCE }) }));
}

it('names createUserInfoEndpoint() when resource is not made by protectedResource()', async () => {
  const ctx = await context();
  for (const resource of [{ metadataUrl: RESOURCE.metadataUrl }, `${ISSUER}/userinfo`]) {
    expect(() => createUserInfoEndpoint(ctx, { resource: resource as never })).toThrow(
      'createUserInfoEndpoint(): `resource` must be made by protectedResource()',
    );
  }
});

it('adds resource_metadata to every challenge with a protected resource, and still answers', async () => {
  const ctx = await context();
  const server = await start(ctx);
  const none = await userInfo(server);
  expect(none.status).toBe(401);
  expect(none.headers['www-authenticate']).toBe(
    `Bearer realm="userinfo", ${METADATA}, DPoP realm="userinfo", ${ALGS}, ${METADATA}`,
  );
  const bad = await userInfo(server, 'a.b.c');
  expect(bad.status).toBe(401);
  expect(bad.headers['www-authenticate']).toMatch(
    new RegExp(`^Bearer realm="userinfo", error="invalid_token", .*, ${METADATA}$`),
  );
  const { token: noOpenid } = await ctx.tokens.accessToken({
    sub: 'alice',
    clientId: 'web',
    scope: ['profile'],
  });
  const scope = await userInfo(server, noOpenid);
  expect(scope.status).toBe(403);
  expect(scope.headers['www-authenticate']).toBe(
    'Bearer realm="userinfo", error="insufficient_scope", ' +
      `error_description="The access token lacks the openid scope.", scope="openid", ${METADATA}`,
  );
  const { token } = await ctx.tokens.accessToken({
    sub: 'alice',
    clientId: 'web',
    scope: ['openid', 'profile'],
  });
  const ok = await userInfo(server, token);
  expect(ok.status).toBe(200);
  expect(json(ok)).toEqual({ sub: 'alice', name: 'Alice Example' });
});

it('offers the bare Bearer challenge, with resource_metadata, for a 401 without challenges', async () => {
  for (const dpop of [undefined, false] as const) {
    const ctx = await context(
      () => {
        throw authenticationRequired([]);
      },
      dpop === undefined ? {} : { dpop },
    );
    const server = await start(ctx);
    const { token } = await ctx.tokens.accessToken({
      sub: 'alice',
      clientId: 'web',
      scope: ['openid'],
    });
    const reply = await userInfo(server, token);
    expect(reply.status).toBe(401);
    expect(reply.headers['www-authenticate']).toBe(`Bearer realm="userinfo", ${METADATA}`);
  }
});
