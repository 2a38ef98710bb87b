import { narrowScopes } from '../clients/scope.js';
import { OAuthError } from '../protocol/errors.js';
import { resourcesOf, tokenAudience } from '../resources.js';
import { type RefreshTokenRecord, refreshTokens } from '../store/records.js';
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
} from './contract.js';

const invalid = () => new OAuthError('invalid_grant', 'The refresh token is invalid or expired.');

/** What refresh_token does: see {@link refreshTokenGrant}. */
const refresh: GrantHandler = async (ctx, client, params, binding) => {
  const hash = hashToken(requiredParameter(params, 'refresh_token'));
  const seen = await refreshTokens(ctx.store).find(hash);
  if (seen === undefined) throw invalid();
  const { record } = seen;
  if (record.clientId !== client.clientId) {
    throw new OAuthError('invalid_grant', 'The refresh token was issued to another client.');
  }
  const reused = async (usedAt: number) => {
    if (withinGrace(usedAt, ctx.settings.refreshGracePeriod)) return;
    await revokeGrant(ctx, record.grantId, revocationTtlMs(ctx, record.familyExpiresAt));
    throw new OAuthError(
      'invalid_grant',
      'The refresh token was already used; every token of its grant is revoked.',
    );
  };
  // a bound refresh token (a public client's, RFC 9449 §5) goes only with a proof of its key
  if (record.jkt !== undefined && record.jkt !== binding.jkt) {
    throw new OAuthError(
      'invalid_grant',
      'The refresh token is bound to a DPoP key: send a DPoP proof of that key with it.',
    );
  }
  if (seen.state === 'used') await reused(seen.usedAt);
  if (record.familyExpiresAt <= Date.now() || (await ctx.store.isGrantRevoked(record.grantId))) {
    throw invalid();
  }
  const scope = narrowScopes(record.scope, params.get('scope'));
  // RFC 8707: the grant's resources, or one of them; never another
  const audience = tokenAudience(ctx.resources, record.resources, resourcesOf(params));
  const user = await grantUser(ctx, record.sub);
  await assertCanIssue(ctx, binding);
  const grant = {
    user,
    scope,
    grantId: record.grantId,
    authTime: record.authTime,
    audience,
    family: familyOf(record),
  };
  // FAPI 2.0: no refresh-token rotation; the client's key authentication guards the token
  if (ctx.fapi2(client)) {
    if (seen.state === 'used') await reused(seen.usedAt);
    return issueUserTokens(ctx, client, { ...grant, keepRefreshToken: true }, binding);
  }
  const rotated = await refreshTokens(ctx.store).consume(hash);
  if (rotated === undefined) throw invalid();
  if (rotated.state === 'used') await reused(rotated.usedAt);
  // A reuse within the grace period, by this client (checked above), continues the family.
  return issueUserTokens(ctx, client, grant, binding);
};

function withinGrace(usedAt: number, graceMs: number): boolean {
  return graceMs > 0 && Date.now() - usedAt <= graceMs;
}

function familyOf(record: RefreshTokenRecord) {
  return {
    scope: record.scope,
    expiresAt: record.familyExpiresAt,
    ...(record.resources !== undefined && { resources: record.resources }),
  };
}

/**
 * The `refresh_token` grant (RFC 6749 §6), rotating: every use consumes the token and issues
 * a successor in the same family, whose absolute end never moves. Presenting a token that
 * was already rotated revokes the whole grant, successors and access tokens included
 * (RFC 9700 §4.14.2), except within `refreshGracePeriod` milliseconds of its rotation, by the same
 * client, where it gets a successor of its own (two tabs refreshing at once, Ory Hydra #1831);
 * after that window reuse revokes as always. A client held to FAPI 2.0 (`fapi2`) keeps its
 * refresh token instead: no successor is issued (the Security Profile asks the authorization server for no
 * rotation; the client's key authentication, and its DPoP key, guard the token). `scope` may narrow the access token's scope,
 * never widen it; the new refresh token keeps the original scope (RFC 6749 §6). Likewise
 * `resource` (RFC 8707) may narrow the new access token to one of the grant's resources,
 * never name another (`invalid_target`); the new refresh token keeps the grant's resources.
 *
 * Every check that can fail runs before the token is consumed, so a refused request (a
 * widened scope, a typo'd client) does not cost the client its token. A token presented by
 * another client is refused without being consumed or revoking anything: for a confidential
 * client, client authentication is what makes a stolen refresh token useless, and letting
 * any other client revoke the grant would only give whoever finds a token a way to sign the
 * user out.
 *
 * @example
 * ```ts
 * // a custom token endpoint: the grants take the context, the authenticated client and the
 * // form parameters (each at most once)
 * const params = singleParams(await readForm(req));
 * const answer = await refreshTokenGrant.handle(ctx, client, params, binding);
 * sendJson(res, 200, answer, NO_STORE);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-6 | RFC 6749 §6}
 * @see {@link https://www.rfc-editor.org/rfc/rfc9700#section-4.14.2 | RFC 9700 §4.14.2}
 */
export const refreshTokenGrant: Grant = defineGrant({
  type: 'refresh_token',
  parameters: ['refresh_token', 'scope', 'resource'],
  handle: refresh,
});
