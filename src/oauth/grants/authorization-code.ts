import type { OAuthClient } from '../clients.js';
import type { OAuthContext } from '../context.js';
import { OAuthError } from '../errors.js';
import { isCodeVerifier, verifyCodeVerifier } from '../pkce.js';
import { revocationTtlMs } from '../revocation.js';
import { hashToken, newOpaqueToken, type UserClaims } from '../tokens.js';

/**
 * A successful token response (RFC 6749 §5.1, OpenID Connect Core §3.1.3.3).
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-5.1 | RFC 6749 §5.1}
 */
export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
  refresh_token?: string;
  id_token?: string;
}

/** One grant of the token endpoint: the parameters (each at most once) of an authenticated client. */
export type GrantHandler = (
  ctx: OAuthContext,
  client: OAuthClient,
  params: ReadonlyMap<string, string>,
) => Promise<TokenResponse>;

/** What a user grant (code or device) issues tokens for. */
export interface UserGrant {
  /** The user, as `ctx.users.get()` gave it. */
  user: UserClaims;
  /** The scope of the access token (and of the ID token's claims). */
  scope: readonly string[];
  grantId: string;
  /** When the user signed in, epoch seconds. */
  authTime?: number;
  /** The `nonce` of the authentication request, for the ID token of a code exchange. */
  nonce?: string;
  /** The refresh-token family: its scope (the original grant's) and absolute end, epoch ms. */
  family: { scope: readonly string[]; expiresAt: number };
}

/** The user behind a grant, or `invalid_grant` if the app no longer knows them. */
export async function grantUser(ctx: OAuthContext, sub: string): Promise<UserClaims> {
  const user = await ctx.users.get(sub);
  if (user === undefined) throw new OAuthError('invalid_grant', 'The user of this grant is gone.');
  return user;
}

/**
 * Issues the tokens of a user grant: an access token carrying the grant id, a refresh token
 * of the family when the client may refresh (stored only as its hash, living until the
 * family ends), and an ID token when the scope has `openid`.
 */
export async function issueUserTokens(
  ctx: OAuthContext,
  client: OAuthClient,
  grant: UserGrant,
): Promise<TokenResponse> {
  const { user, scope, grantId } = grant;
  const access = await ctx.tokens.accessToken({
    sub: user.sub,
    clientId: client.clientId,
    scope,
    grantId,
    user: { name: user.name, role: user.role },
  });
  const response: TokenResponse = {
    access_token: access.token,
    token_type: 'Bearer',
    expires_in: access.expiresIn,
    scope: scope.join(' '),
  };
  const ttl = grant.family.expiresAt - Date.now();
  if (client.grantTypes.includes('refresh_token') && ttl > 0) {
    const refreshToken = newOpaqueToken();
    await ctx.store.saveRefreshToken(
      hashToken(refreshToken),
      {
        clientId: client.clientId,
        sub: user.sub,
        scope: [...grant.family.scope],
        grantId,
        ...(grant.authTime === undefined ? {} : { authTime: grant.authTime }),
        familyExpiresAt: grant.family.expiresAt,
      },
      ttl,
    );
    response.refresh_token = refreshToken;
  }
  if (scope.includes('openid')) {
    response.id_token = await ctx.tokens.idToken({
      clientId: client.clientId,
      user,
      scope,
      nonce: grant.nonce,
      authTime: grant.authTime,
    });
  }
  return response;
}

/** A required parameter, or `invalid_request`. */
export function required(params: ReadonlyMap<string, string>, name: string): string {
  const value = params.get(name);
  if (value === undefined || value === '') {
    throw new OAuthError('invalid_request', `The parameter ${name} is required.`);
  }
  return value;
}

/**
 * The `authorization_code` grant (RFC 6749 §4.1.3, RFC 7636 §4.5–4.6). The code is consumed
 * atomically whatever follows, so a failed check burns it. A second use by the client the
 * code was issued to is refused and revokes the grant: the refresh tokens issued from the code
 * fail, and its access tokens (carrying the grant id) read as revoked (RFC 6749 §4.1.2 and
 * §10.5). A replay by another client is only refused: it could not have redeemed the code, and
 * letting it revoke would hand whoever finds a spent code a way to sign the user out. The code
 * must belong to this client, `redirect_uri` must equal the authorization request's exactly,
 * and `code_verifier` must match the S256 challenge (a public client always has one).
 *
 * @example
 * ```ts
 * // a custom token endpoint: the grants take the context, the authenticated client and the
 * // form parameters (each at most once)
 * const params = singleParams(await readForm(req));
 * const answer = await authorizationCodeGrant(ctx, client, params);
 * sendJson(res, 200, answer, NO_STORE);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-4.1.3 | RFC 6749 §4.1.3}
 * @see {@link https://www.rfc-editor.org/rfc/rfc7636#section-4.6 | RFC 7636 §4.6}
 */
export const authorizationCodeGrant: GrantHandler = async (ctx, client, params) => {
  const code = required(params, 'code');
  const redirectUri = params.get('redirect_uri');
  const verifier = params.get('code_verifier');
  if (verifier !== undefined && !isCodeVerifier(verifier)) {
    throw new OAuthError(
      'invalid_request',
      'code_verifier must be 43–128 characters of A–Z, a–z, 0–9 and -._~',
    );
  }
  const consumed = await ctx.store.consumeCode(hashToken(code));
  if (consumed === undefined) {
    throw new OAuthError('invalid_grant', 'The authorization code is invalid or expired.');
  }
  const { record } = consumed;
  if (record.clientId !== client.clientId) {
    throw new OAuthError('invalid_grant', 'The authorization code was issued to another client.');
  }
  if (consumed.state === 'used') {
    await ctx.store.revokeGrant(record.grantId, revocationTtlMs(ctx));
    throw new OAuthError(
      'invalid_grant',
      'The authorization code was already used; the tokens issued from it are revoked.',
    );
  }
  // required when the authorization request had one (RFC 6749 §4.1.3), equal to it exactly
  if (redirectUri === undefined && record.redirectUriOmitted !== true) {
    throw new OAuthError(
      'invalid_request',
      'redirect_uri is required: the authorization request had one.',
    );
  }
  if (redirectUri !== undefined && record.redirectUri !== redirectUri) {
    throw new OAuthError(
      'invalid_grant',
      'redirect_uri does not match the one of the authorization request.',
    );
  }
  if (record.codeChallenge !== undefined) {
    if (verifier === undefined) {
      throw new OAuthError('invalid_grant', 'code_verifier is required for this code (PKCE).');
    }
    if (!verifyCodeVerifier(verifier, record.codeChallenge)) {
      throw new OAuthError('invalid_grant', 'code_verifier does not match the code challenge.');
    }
  } else if (verifier !== undefined) {
    throw new OAuthError('invalid_grant', 'This code was issued without a code challenge.');
  } else if (client.secretHash === undefined) {
    throw new OAuthError('invalid_grant', 'A public client must use PKCE.');
  }
  if (await ctx.store.isGrantRevoked(record.grantId)) {
    throw new OAuthError('invalid_grant', 'The grant was revoked.');
  }
  return issueUserTokens(ctx, client, {
    user: await grantUser(ctx, record.sub),
    scope: record.scope,
    grantId: record.grantId,
    authTime: record.authTime,
    nonce: record.nonce,
    family: {
      scope: record.scope,
      expiresAt: Date.now() + ctx.settings.refreshTokenTtl * 1000,
    },
  });
};
