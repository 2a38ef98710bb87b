import { isConfidential } from '../clients/client.js';
import { resolveScopes } from '../clients/scope.js';
import { OAuthError } from '../protocol/errors.js';
import { audienceClaim, resourcesOf, scopeForAudience, tokenAudience } from '../resources.js';
import { assertCanIssue, defineGrant, type Grant, type GrantHandler } from './contract.js';

/** What client_credentials does: see {@link clientCredentialsGrant}. */
const issueToClient: GrantHandler = async (ctx, client, params, binding) => {
  if (!isConfidential(client)) {
    throw new OAuthError(
      'unauthorized_client',
      'client_credentials is for confidential clients only.',
    );
  }
  const audience = tokenAudience(ctx.resources, undefined, resourcesOf(params));
  const scope = scopeForAudience(
    ctx.resources,
    audience,
    resolveScopes(client, params.get('scope')),
  );
  await assertCanIssue(ctx, binding);
  const { jkt } = binding;
  const access = await ctx.tokens.accessToken({
    sub: client.clientId,
    clientId: client.clientId,
    scope,
    audience: audienceClaim(audience),
    ...(jkt !== undefined && { jkt }),
  });
  return {
    access_token: access.token,
    token_type: jkt === undefined ? 'Bearer' : 'DPoP',
    expires_in: access.expiresIn,
    scope: scope.join(' '),
  };
};

/**
 * The `client_credentials` grant (RFC 6749 §4.4), for confidential clients only: the access
 * token's `sub` is the client id. The requested scope must lie within the client's allowed
 * scopes (least privilege); without one, the client's `defaultScopes` are granted, else all
 * its scopes. `resource` (RFC 8707, repeatable) names the configured resources the token is
 * for (`aud`; the default resource without one), and its scope is cut to what they understand.
 * No refresh token (RFC 6749 §4.4.3) and no ID token: there is no user.
 *
 * @example
 * ```ts
 * const params = new Map([['scope', 'read:messages']]);
 * const answer = await clientCredentialsGrant.handle(ctx, client, params, {});
 * // { access_token: '…', token_type: 'Bearer', expires_in: 900, scope: 'read:messages' }
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-4.4 | RFC 6749 §4.4}
 */
export const clientCredentialsGrant: Grant = defineGrant({
  type: 'client_credentials',
  parameters: ['scope', 'resource'],
  handle: issueToClient,
});
