import type { Middleware } from '../../core/compose.js';
import { send } from '../../core/send.js';
import { methods } from '../../http/routing/router.js';
import type { OAuthClient } from '../clients/client.js';
import type { OAuthContext } from '../context.js';
import { NO_STORE, OAuthError } from '../protocol/errors.js';
import { oauthEndpoint } from '../shared/endpoint.js';
import { looksLikeJwt, readTokenRequest } from '../shared/token-request.js';
import { refreshTokens } from '../store/records.js';
import { hashToken } from '../tokens/issue.js';
import { revocationTtlMs, revokeGrant, revokeTokenById } from '../tokens/revoke-grant.js';
import { createAnyResourceVerifier } from '../tokens/verify.js';

/**
 * The token revocation endpoint (RFC 7009), for `POST`. The client authenticates as at the
 * token endpoint (`client_secret_basic`, `client_secret_post`, or its `client_id` alone for
 * a public client) and sends `token`, with an optional `token_type_hint` (`refresh_token`
 * or `access_token`; an unknown hint is ignored, and the other type is tried when the hinted
 * one does not match, §2.1).
 *
 * - A refresh token of this client: its whole grant is revoked (the refresh tokens of the
 *   family fail, the access tokens read as revoked to {@link ownAccessTokens} and
 *   introspection) and the token deleted.
 * - An access token of this server issued to this client: its grant is revoked when it has a
 *   `grant_id`; a token without one (`client_credentials`) is itself marked revoked (by its
 *   `jti`, until it expires).
 * - A token that is unknown, expired or already revoked: nothing happens, and the answer is
 *   the same (§2.2: invalid tokens cause no error).
 * - Every revocation is announced on `ctx.revocations` (`grant:<id>`, or `token:<jti>` for a
 *   token without a grant) before the answer, so that the streams opened with it end.
 * - A valid token issued to another client is not revoked, and the request is refused with
 *   `invalid_request`, as §2.1 asks, public clients included (whoever sends the token
 *   already holds it; it stays valid).
 *
 * Success is `200` with an empty body; errors are RFC 6749 §5.2 JSON (`invalid_request` for a
 * missing `token`, `invalid_client` 401 for failed client authentication). Other methods get
 * `405` with `Allow`.
 *
 * @example
 * ```ts
 * createRouter({ '/revoke': createRevocationEndpoint(ctx) });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc7009 | RFC 7009}
 */
export function createRevocationEndpoint(ctx: OAuthContext): Middleware {
  // a token for any configured resource (RFC 8707) is one of ours, and may be revoked
  const verifier = createAnyResourceVerifier(ctx);

  /** A valid token of another client: refused (§2.1). */
  function notTheirs(): never {
    throw new OAuthError(
      'invalid_request',
      'The client is not authorized to revoke this token: it was issued to another client.',
    );
  }

  async function revokeRefreshToken(client: OAuthClient, token: string): Promise<boolean> {
    const hash = hashToken(token);
    const found = await refreshTokens(ctx.store).find(hash);
    if (found === undefined) return false;
    const { record } = found;
    if (record.clientId !== client.clientId) return notTheirs();
    await revokeGrant(ctx, record.grantId, revocationTtlMs(ctx, record.familyExpiresAt));
    await refreshTokens(ctx.store).destroy(hash);
    return true;
  }

  async function revokeAccessToken(client: OAuthClient, token: string): Promise<boolean> {
    if (!looksLikeJwt(token)) return false;
    let payload: Awaited<ReturnType<typeof verifier.verify>>['payload'];
    try {
      ({ payload } = await verifier.verify(token));
    } catch {
      return false;
    }
    if (payload.client_id !== client.clientId) return notTheirs();
    const grantId = payload.grant_id;
    // a delegated token (token exchange, `act`) carries the grant of the user's consent to
    // another client: its acting client ends that token, never the user's grant
    if (typeof grantId === 'string' && grantId !== '' && payload.act === undefined) {
      await revokeGrant(ctx, grantId, revocationTtlMs(ctx));
    } else if (typeof payload.jti === 'string' && payload.jti !== '') {
      // no grant of its own (client credentials, or delegated): the token itself, marked
      // until it expires
      const left = (payload.exp ?? 0) * 1000 - Date.now();
      await revokeTokenById(ctx, payload.jti, Math.max(left, 0) + 60_000);
    }
    return true;
  }

  const handler = oauthEndpoint(async (req, res) => {
    const { client, token, hint } = await readTokenRequest(ctx, req);
    const order =
      hint === 'access_token'
        ? [revokeAccessToken, revokeRefreshToken]
        : [revokeRefreshToken, revokeAccessToken];
    for (const revoke of order) if (await revoke(client, token)) break;
    send(res, 200, undefined, NO_STORE);
  });
  return methods({ POST: handler });
}
