// The DPoP proof of a request to one of the authorization server's own endpoints (the token
// endpoint, /par): one `DPoP` header, checked for POST at the endpoint's URL (the issuer's
// origin and the request's path), refused in the OAuth error format.
import type { IncomingMessage } from 'node:http';
import { type DpopProof, DpopProofError } from '../auth/dpop.js';
import { requestPath } from '../core/problem.js';
import { fieldLines } from '../internal/headers.js';
import type { OAuthContext } from './context.js';
import { dpopRefusal, OAuthError } from './errors.js';

/**
 * Verifies the DPoP proof a POST to an endpoint of `ctx` carries: `undefined` when DPoP is off
 * or the request has no proof; a refused proof (or two) is an `OAuthError`
 * (`invalid_dpop_proof`, `use_dpop_nonce` with its `DPoP-Nonce`).
 */
export function createEndpointProofs(
  ctx: OAuthContext,
): (req: IncomingMessage) => Promise<DpopProof | undefined> {
  const origin = new URL(ctx.issuer).origin;
  return async function endpointProof(req) {
    const lines = fieldLines(req.rawHeaders, 'dpop');
    if (ctx.dpop === undefined || lines.length === 0) return undefined;
    if (lines.length > 1) throw new OAuthError('invalid_dpop_proof', 'Send one DPoP proof.');
    try {
      return await ctx.dpop.verify(lines[0], {
        method: 'POST',
        url: `${origin}${requestPath(req)}`,
      });
    } catch (error) {
      if (error instanceof DpopProofError) throw dpopRefusal(error);
      throw error;
    }
  };
}
