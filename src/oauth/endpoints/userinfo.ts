import { challenge } from '../../auth/authenticator.js';
import { bareBearerChallenge, withResourceParams } from '../../auth/challenge-list.js';
import {
  authenticationRequired,
  insufficientScope,
  invalidCredentials,
} from '../../auth/errors.js';
import { type ProtectedResource, resourceOption } from '../../auth/protected-resource.js';
import type { Middleware } from '../../core/compose.js';
import { sendJson } from '../../core/send.js';
import type { MethodTable } from '../../http/routing/router.js';
import { appendVary } from '../../internal/headers.js';
import type { OAuthContext } from '../context.js';
import { NO_STORE } from '../protocol/errors.js';
import { claimsForScopes } from '../tokens/issue.js';
import { ownAccessTokens } from '../tokens/verify.js';

/**
 * Options of {@link createUserInfoEndpoint}.
 *
 * @see {@link https://openid.net/specs/openid-connect-core-1_0.html#UserInfo | OpenID Connect Core §5.3}
 */
export interface UserInfoOptions {
  /** The realm quoted in the `WWW-Authenticate` challenges. @defaultValue `'userinfo'` */
  realm?: string;
  /**
   * The protected resource UserInfo belongs to (see `protectedResource()`): its `Bearer` and
   * `DPoP` challenges then carry `resource_metadata` (RFC 9728 §5.1), `Bearer` first.
   * @defaultValue none
   */
  resource?: ProtectedResource;
}

/**
 * The OpenID Connect UserInfo endpoint (Core §5.3), as a method table for `GET` and `POST`.
 * The caller sends an access token of this server as `Authorization: Bearer` (RFC 6750 §2.1),
 * or a DPoP-bound one as `Authorization: DPoP` with its `DPoP` proof (RFC 9449 §7, unless the
 * server's `dpop` is off), verified by {@link ownAccessTokens} (so a revoked grant or an ID
 * token is refused, and a bound token without its proof too). The
 * answer is the user's claims that the token's scopes release (`sub` always, `name` and
 * `picture` with `profile`, `email` and `email_verified` with `email`), as JSON with
 * `Cache-Control: no-store`.
 *
 * Errors follow RFC 6750 §3: no token is a 401 with a bare `Bearer` challenge; a bad,
 * expired or revoked token, or one whose user is gone, a 401 with
 * `error="invalid_token"`; a token without the `openid` scope a 403 with
 * `error="insufficient_scope"`. Their bodies are Problem Details.
 *
 * @example
 * ```ts
 * createRouter({ '/userinfo': createUserInfoEndpoint(ctx) });
 * ```
 * @see {@link https://openid.net/specs/openid-connect-core-1_0.html#UserInfo | OpenID Connect Core §5.3}
 */
export function createUserInfoEndpoint(
  ctx: OAuthContext,
  options: UserInfoOptions = {},
): MethodTable {
  const realm = options.realm ?? 'userinfo';
  const resource = resourceOption('createUserInfoEndpoint()', options.resource);
  // DPoP-bound tokens come with their proofs, checked against the issuer's origin
  const bearer = ownAccessTokens(ctx, {
    realm,
    ...(ctx.dpop !== undefined && {
      dpop: { origin: new URL(ctx.issuer).origin, verifier: ctx.dpop },
    }),
  });
  const algs = ctx.dpop?.algorithms.join(' ');
  // each answer names the scheme the token came with (RFC 6750 §3, RFC 9449 §7.1)
  const twins = (params: Record<string, string>) => ({
    Bearer: challenge('Bearer', { realm, ...params }),
    DPoP: challenge('DPoP', { realm, ...params, ...(algs !== undefined && { algs }) }),
  });
  const scopeChallenges = twins({
    error: 'insufficient_scope',
    error_description: 'The access token lacks the openid scope.',
    scope: 'openid',
  });
  const goneDetail = 'The access token is not valid.';
  const goneChallenges = twins({ error: 'invalid_token', error_description: goneDetail });

  const answer: Middleware = async (req, res) => {
    // the answer depends on the token: no shared cache may serve it to another caller
    appendVary(res, 'Authorization');
    const principal = await bearer.authenticate(req);
    if (principal === undefined) {
      throw authenticationRequired(bearer.challenge === undefined ? [] : [bearer.challenge]);
    }
    const scheme = principal.method === 'dpop' ? 'DPoP' : 'Bearer';
    if (!principal.scopes.includes('openid')) {
      throw insufficientScope(['openid'], scopeChallenges[scheme]);
    }
    const user = await ctx.users.get(principal.sub);
    if (user === undefined || user.sub !== principal.sub) {
      throw invalidCredentials(goneChallenges[scheme], goneDetail, 'ERR_JWT_INVALID');
    }
    sendJson(res, 200, claimsForScopes(user, principal.scopes), NO_STORE);
  };
  const params = resource && {
    resourceMetadata: resource.metadataUrl,
    bearer: bareBearerChallenge(bearer.challenge === undefined ? [] : [bearer.challenge]),
  };
  const userInfo: Middleware =
    params === undefined
      ? answer
      : async (req, res, next) => {
          try {
            await answer(req, res, next);
          } catch (error) {
            throw withResourceParams(error, params);
          }
        };
  return Object.freeze({ GET: userInfo, POST: userInfo });
}
