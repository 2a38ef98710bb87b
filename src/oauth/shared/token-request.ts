import type { IncomingMessage } from 'node:http';
import type { OAuthClient } from '../clients/client.js';
import type { OAuthContext } from '../context.js';
import { OAuthError } from '../protocol/errors.js';
import { readOAuthForm } from '../protocol/form.js';
import { singleParams } from '../protocol/parameters.js';

/** A compact JWS: the only shape an access token of this server has (refresh tokens have no dot). */
const COMPACT_JWT = /^[\w-]+\.[\w-]+\.[\w-]+$/;

/** Whether `token` may be one of our access tokens, worth a signature check. */
export function looksLikeJwt(token: string): boolean {
  return COMPACT_JWT.test(token);
}

/**
 * Reads the form of a revocation or introspection request and authenticates its client.
 * A body that is not a form (or too large, or not UTF-8) is `invalid_request`, as OAuth
 * clients expect an RFC 6749 §5.2 error rather than a problem. `accept` may refuse the
 * authenticated client (by throwing) before anything else is looked at. `token` is required.
 * @internal
 */
export async function readTokenRequest(
  ctx: OAuthContext,
  req: IncomingMessage,
  accept: (client: OAuthClient) => void = () => {},
): Promise<{ client: OAuthClient; token: string; hint: string | undefined }> {
  const form = await readOAuthForm(req);
  const params = singleParams(form);
  const client = await ctx.authenticateClient(req, params);
  accept(client);
  const token = params.get('token');
  if (token === undefined || token === '') {
    throw new OAuthError('invalid_request', 'The parameter token is required.');
  }
  return { client, token, hint: params.get('token_type_hint') };
}
