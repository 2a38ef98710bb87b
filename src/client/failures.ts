// What a failed exchange with a provider is to the user: a 400 when the provider or the
// browser refused or sent what does not verify, a 502 when the provider could not be reached
// or answered what is not OAuth. Never a 500, never the provider's raw message as ours.
import { badGateway, badRequest } from '../core/errors/errors.js';
import { HttpError } from '../core/errors/http-error.js';
import { OAUTH_ERROR_CODE } from '../internal/grammar.js';

/** openid-client's codes of a response that arrived but does not verify (a 400). */
const REFUSED_CODES = new Set([
  'OAUTH_JWT_CLAIM_COMPARISON_FAILED',
  'OAUTH_JWT_TIMESTAMP_CHECK_FAILED',
  'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED',
  'OAUTH_KEY_SELECTION_FAILED',
  'OAUTH_INVALID_RESPONSE',
  'OAUTH_INVALID_REQUEST',
  'ERR_JWS_SIGNATURE_VERIFICATION_FAILED',
  'ERR_JWT_CLAIM_VALIDATION_FAILED',
  'ERR_JWT_EXPIRED',
]);

/** The answer to a failure of `step` at `label` (e.g. "exchanging the code"). */
export function providerFailure(error: unknown, label: string, step: string): HttpError {
  if (error instanceof HttpError) return error;
  const e = error as { name?: unknown; code?: unknown; error?: unknown; status?: unknown };
  // an OAuth error answer of the token endpoint (invalid_grant: a code of another session,
  // a PKCE verifier that does not match, a code used twice)
  if (e?.name === 'ResponseBodyError') {
    const status = typeof e.status === 'number' ? e.status : 0;
    if (status >= 500) return badGateway(`${label} failed while ${step}.`, { cause: error });
    const code = typeof e.error === 'string' && OAUTH_ERROR_CODE.test(e.error) ? e.error : 'error';
    return badRequest(`${label} refused the sign-in while ${step} (${code}). Start again.`, {
      cause: error,
    });
  }
  if (typeof e?.code === 'string' && REFUSED_CODES.has(e.code)) {
    return badRequest(`The answer of ${label} does not verify. Start again.`, { cause: error });
  }
  return badGateway(`${label} cannot be reached, or answered what is not OAuth.`, {
    cause: error,
  });
}
