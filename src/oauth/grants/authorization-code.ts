import { isConfidential, type OAuthClient } from '../clients/client.js';
import type { OAuthContext } from '../context.js';
import { OAuthError } from '../protocol/errors.js';
import { isCodeVerifier, verifyCodeVerifier } from '../protocol/pkce.js';
import { type AuthorizationCodeRecord, codes, refreshTokens } from '../store/records.js';
import { hashToken, newOpaqueToken, type UserClaims } from '../tokens/issue.js';
import { revocationTtlMs, revokeGrant } from '../tokens/revoke-grant.js';

/**
 * A successful token response (RFC 6749 §5.1, OpenID Connect Core §3.1.3.3).
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-5.1 | RFC 6749 §5.1}
 */
export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer' | 'DPoP';
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
  binding: TokenBinding,
) => Promise<TokenResponse>;

/**
 * What the tokens of a request are bound to (the key of its verified DPoP proof, if any), and
 * how the request's one-time ids are recorded.
 */
export interface TokenBinding {
  /** The RFC 7638 thumbprint of the proof's key: the access token's `cnf.jkt`. */
  jkt?: string;
  /**
   * Records the request's one-time JWT ids (its DPoP proof's and client assertion's `jti`),
   * refusing a replay (`invalid_dpop_proof`, `invalid_client`): `assertCanIssue` calls
   * it once every check of the grant has passed, before anything is spent, so that a refused
   * request records nothing and of two racing with one proof, one wins.
   * @defaultValue none: nothing to record (the token endpoint gives one)
   * @example
   * ```ts
   * const binding: TokenBinding = { jkt: proof.jkt, commit: () => proof.remember() };
   * ```
   */
  commit?: () => Promise<void>;
}

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
  /** The refresh token presented stays in use: no new one is issued (no rotation). */
  keepRefreshToken?: boolean;
}

/** The user behind a grant, or `invalid_grant` if the app no longer knows them. */
export async function grantUser(ctx: OAuthContext, sub: string): Promise<UserClaims> {
  const user = await ctx.users.get(sub);
  if (user === undefined) throw new OAuthError('invalid_grant', 'The user of this grant is gone.');
  return user;
}

/**
 * Before a grant spends anything (a code, a refresh token, a device code) or issues a token:
 * a store that cannot keep what the grant would write (`checkCapacity`, a bounded store at its
 * bound) refuses now with its 503, rather than after the code or token is spent; then the
 * request's one-time ids are recorded (`binding.commit`), a replayed proof or assertion
 * refused before the code is spent. Reuse and replay detection run before it, so that a
 * revocation is never put off.
 *
 * @example
 * ```ts
 * checkVerifier(record, verifier);
 * await assertCanIssue(ctx, binding); // 503 temporarily_unavailable while the store is full
 * const consumed = await codes(ctx.store).consume(hash);
 * ```
 */
export async function assertCanIssue(ctx: OAuthContext, binding?: TokenBinding): Promise<void> {
  await ctx.store.checkCapacity?.(refreshTokens.kind);
  await binding?.commit?.();
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
  binding: TokenBinding,
): Promise<TokenResponse> {
  const { user, scope, grantId } = grant;
  const { jkt } = binding;
  const access = await ctx.tokens.accessToken({
    sub: user.sub,
    clientId: client.clientId,
    scope,
    grantId,
    user: { name: user.name, role: user.role },
    ...(jkt !== undefined && { jkt }),
  });
  const response: TokenResponse = {
    access_token: access.token,
    token_type: jkt === undefined ? 'Bearer' : 'DPoP',
    expires_in: access.expiresIn,
    scope: scope.join(' '),
  };
  const ttl = grant.family.expiresAt - Date.now();
  if (client.grantTypes.includes('refresh_token') && ttl > 0 && grant.keepRefreshToken !== true) {
    const refreshToken = newOpaqueToken();
    await refreshTokens(ctx.store).save(
      hashToken(refreshToken),
      {
        clientId: client.clientId,
        sub: user.sub,
        scope: [...grant.family.scope],
        grantId,
        ...(grant.authTime === undefined ? {} : { authTime: grant.authTime }),
        familyExpiresAt: grant.family.expiresAt,
        // a public client's refresh token is bound to its DPoP key (RFC 9449 §5)
        ...(jkt !== undefined && !isConfidential(client) && { jkt }),
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

/** The verifier of the request, or `invalid_request` when it is malformed. */
function codeVerifierOf(params: ReadonlyMap<string, string>): string | undefined {
  const verifier = params.get('code_verifier');
  if (verifier !== undefined && !isCodeVerifier(verifier)) {
    throw new OAuthError(
      'invalid_request',
      'code_verifier must be 43–128 characters of A–Z, a–z, 0–9 and -._~',
    );
  }
  return verifier;
}

const invalidCode = () =>
  new OAuthError('invalid_grant', 'The authorization code is invalid or expired.');

/** A code presented again by its own client: the grant is revoked (RFC 6749 §4.1.2). */
async function replayed(ctx: OAuthContext, record: AuthorizationCodeRecord): Promise<never> {
  await revokeGrant(ctx, record.grantId, revocationTtlMs(ctx));
  throw new OAuthError(
    'invalid_grant',
    'The authorization code was already used; the tokens issued from it are revoked.',
  );
}

/** `redirect_uri`: required when the authorization request had one (§4.1.3), equal to it exactly. */
function checkRedirectUri(record: AuthorizationCodeRecord, redirectUri: string | undefined): void {
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
}

/** PKCE, of every client (RFC 9700 §2.1.1): the verifier must match the code's S256 challenge. */
function checkVerifier(record: AuthorizationCodeRecord, verifier: string | undefined): void {
  if (record.codeChallenge === undefined) {
    throw new OAuthError(
      'invalid_grant',
      'This code was issued without a code challenge: every client must use PKCE.',
    );
  }
  if (verifier === undefined) {
    throw new OAuthError('invalid_grant', 'code_verifier is required for this code (PKCE).');
  }
  if (!verifyCodeVerifier(verifier, record.codeChallenge)) {
    throw new OAuthError('invalid_grant', 'code_verifier does not match the code challenge.');
  }
}

/**
 * A code whose authorization request named a DPoP key (`dpop_jkt`) is exchanged only with a
 * proof of that key (RFC 9449 §10): a code stolen on its way back is worth nothing without it.
 */
function checkDpopKey(record: AuthorizationCodeRecord, binding: TokenBinding): void {
  if (record.dpopJkt !== undefined && record.dpopJkt !== binding.jkt) {
    throw new OAuthError(
      'invalid_grant',
      'The authorization code is bound to a DPoP key (dpop_jkt): send a proof of that key.',
    );
  }
}

/**
 * The `authorization_code` grant (RFC 6749 §4.1.3, RFC 7636 §4.5–4.6). The code is read
 * first and checked — it must belong to this client, `redirect_uri` must equal the
 * authorization request's exactly, and `code_verifier` must match its S256 challenge (PKCE is
 * required of every client, RFC 9700 §2.1.1) — and only then consumed, atomically: a client
 * that sees another's code, or a request with a wrong verifier, cannot burn it for its
 * rightful owner. A second use by the client the code was issued to (found used at the read,
 * or losing the race to consume it) is refused and revokes the grant: the refresh tokens
 * issued from the code fail, and its access tokens (carrying the grant id) read as revoked
 * (RFC 6749 §4.1.2 and §10.5). A replay by another client is only refused: it could not have
 * redeemed the code, and letting it revoke would hand whoever finds a spent code a way to
 * sign the user out.
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
 * @see {@link https://www.rfc-editor.org/rfc/rfc9700#section-2.1.1 | RFC 9700 §2.1.1}
 */
export const authorizationCodeGrant: GrantHandler = async (ctx, client, params, binding) => {
  const hash = hashToken(required(params, 'code'));
  const verifier = codeVerifierOf(params);
  const seen = await codes(ctx.store).find(hash);
  if (seen === undefined) throw invalidCode();
  const { record } = seen;
  if (record.clientId !== client.clientId) {
    throw new OAuthError('invalid_grant', 'The authorization code was issued to another client.');
  }
  if (seen.state === 'used') return replayed(ctx, record);
  checkRedirectUri(record, params.get('redirect_uri'));
  checkVerifier(record, verifier);
  checkDpopKey(record, binding);
  await assertCanIssue(ctx, binding);
  const consumed = await codes(ctx.store).consume(hash);
  if (consumed === undefined) throw invalidCode();
  if (consumed.state === 'used') return replayed(ctx, record);
  if (await ctx.store.isGrantRevoked(record.grantId)) {
    throw new OAuthError('invalid_grant', 'The grant was revoked.');
  }
  return issueUserTokens(
    ctx,
    client,
    {
      user: await grantUser(ctx, record.sub),
      scope: record.scope,
      grantId: record.grantId,
      authTime: record.authTime,
      nonce: record.nonce,
      family: {
        scope: record.scope,
        expiresAt: Date.now() + ctx.settings.refreshTokenTtl,
      },
    },
    binding,
  );
};
