import type { OAuthContext } from '../context.js';
import { OAuthError } from '../protocol/errors.js';
import { isCodeVerifier, verifyCodeVerifier } from '../protocol/pkce.js';
import { resourcesOf, tokenAudience } from '../resources.js';
import { type AuthorizationCodeRecord, codes } from '../store/records.js';
import { hashToken } from '../tokens/issue.js';
import { revocationTtlMs, revokeGrant } from '../tokens/revoke-grant.js';
import {
  assertCanIssue,
  defineGrant,
  type Grant,
  type GrantHandler,
  grantUser,
  issueUserTokens,
  requiredParameter,
  type TokenBinding,
} from './contract.js';

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

/** What authorization_code does: see {@link authorizationCodeGrant}. */
const exchangeCode: GrantHandler = async (ctx, client, params, binding) => {
  const hash = hashToken(requiredParameter(params, 'code'));
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
  // RFC 8707 §2.2: one of the resources granted (or any configured, when none was named)
  const audience = tokenAudience(ctx.resources, record.resources, resourcesOf(params));
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
      audience,
      family: {
        scope: record.scope,
        expiresAt: Date.now() + ctx.settings.refreshTokenTtl,
        ...(record.resources !== undefined && { resources: record.resources }),
      },
    },
    binding,
  );
};

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
 * `resource` (RFC 8707, repeatable) names the resources the token is for: among those the
 * authorization request named, when it named any (`invalid_target` otherwise); none named,
 * the token is for every resource of the grant (or the default resource).
 *
 * @example
 * ```ts
 * // a custom token endpoint: the grants take the context, the authenticated client and the
 * // form parameters (each at most once)
 * const params = singleParams(await readForm(req));
 * const answer = await authorizationCodeGrant.handle(ctx, client, params, binding);
 * sendJson(res, 200, answer, NO_STORE);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-4.1.3 | RFC 6749 §4.1.3}
 * @see {@link https://www.rfc-editor.org/rfc/rfc7636#section-4.6 | RFC 7636 §4.6}
 * @see {@link https://www.rfc-editor.org/rfc/rfc9700#section-2.1.1 | RFC 9700 §2.1.1}
 */
export const authorizationCodeGrant: Grant = defineGrant({
  type: 'authorization_code',
  parameters: ['code', 'code_verifier', 'redirect_uri', 'resource'],
  handle: exchangeCode,
});
