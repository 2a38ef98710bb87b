// The DPoP proof of a request to one of the authorization server's own endpoints (the token
// endpoint, /par): one `DPoP` header, checked for POST at the endpoint's URL (the issuer's
// origin and the request's path), refused in the OAuth error format.
import type { IncomingMessage } from 'node:http';
import { type CheckedDpopProof, type DpopProof, DpopProofError } from '../../auth/dpop/dpop.js';
import { requestPath } from '../../core/problem.js';
import { fieldLines } from '../../internal/headers.js';
import type { OAuthContext } from '../context.js';
import { dpopRefusal, OAuthError } from '../protocol/errors.js';

/** The proofs of an endpoint: checked and recorded at once, or checked only (`check`). */
export interface EndpointProofs {
  /** The request's proof, checked and its `jti` recorded. */
  (req: IncomingMessage): Promise<DpopProof | undefined>;
  /**
   * The request's proof, checked, its `jti` left to `remember()` (whose refusal is an
   * `OAuthError` too): for an endpoint that records it once the rest of the request holds.
   */
  check(req: IncomingMessage): Promise<CheckedDpopProof | undefined>;
}

/** Runs a step of a proof's check, a refusal answered in the OAuth error format. */
async function refusing<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (error instanceof DpopProofError) throw dpopRefusal(error);
    throw error;
  }
}

/**
 * Checks the DPoP proof a POST to an endpoint of `ctx` carries: `undefined` when DPoP is off
 * or the request has no proof; a refused proof (or two) is an `OAuthError`
 * (`invalid_dpop_proof`, `use_dpop_nonce` with its `DPoP-Nonce`).
 */
export function createEndpointProofs(ctx: OAuthContext): EndpointProofs {
  const origin = new URL(ctx.issuer).origin;
  async function check(req: IncomingMessage): Promise<CheckedDpopProof | undefined> {
    const lines = fieldLines(req.rawHeaders, 'dpop');
    const { dpop } = ctx;
    if (dpop === undefined || lines.length === 0) return undefined;
    if (lines.length > 1) throw new OAuthError('invalid_dpop_proof', 'Send one DPoP proof.');
    const proof = await refusing(() =>
      dpop.check(lines[0], { method: 'POST', url: `${origin}${requestPath(req)}` }),
    );
    return Object.freeze({ ...proof, remember: () => refusing(proof.remember) });
  }
  async function endpointProof(req: IncomingMessage): Promise<DpopProof | undefined> {
    const proof = await check(req);
    await proof?.remember();
    return proof;
  }
  return Object.assign(endpointProof, { check });
}
