import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { DpopProofError } from '../../auth/dpop/dpop.js';
import { PorticoError } from '../../core/errors/errors.js';
import { toHttpError } from '../../core/problem.js';
import { send } from '../../core/send.js';

/**
 * The `error` codes of RFC 6749 §5.2, RFC 8628 §3.5, RFC 6750 §3.1 and OpenID Connect Core
 * §3.1.2.6 and RFC 7591 §3.2.2 that portico sends.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-5.2 | RFC 6749 §5.2}
 * @see {@link https://www.rfc-editor.org/rfc/rfc8628#section-3.5 | RFC 8628 §3.5}
 * @see {@link https://openid.net/specs/openid-connect-core-1_0.html#AuthError | OpenID Connect Core §3.1.2.6}
 */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'invalid_target'
  | 'access_denied'
  | 'unsupported_response_type'
  | 'server_error'
  | 'temporarily_unavailable'
  | 'authorization_pending'
  | 'slow_down'
  | 'expired_token'
  | 'invalid_token'
  | 'unsupported_token_type'
  | 'invalid_dpop_proof'
  | 'use_dpop_nonce'
  | 'login_required'
  | 'consent_required'
  | 'request_not_supported'
  | 'request_uri_not_supported'
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata';

const STATUS: Partial<Record<OAuthErrorCode, number>> = {
  invalid_client: 401,
  invalid_token: 401,
  server_error: 500,
  temporarily_unavailable: 503,
};

/**
 * An OAuth protocol error: rendered in the RFC 6749 §5.2 format (`error`,
 * `error_description`) rather than as Problem Details, because OAuth clients depend on it.
 *
 * @example
 * ```ts
 * throw new OAuthError('invalid_grant', 'The authorization code was already used.');
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-5.2 | RFC 6749 §5.2}
 */
export class OAuthError extends PorticoError {
  /** The `error` code. */
  readonly error: OAuthErrorCode;
  /** HTTP status: 400, or 401 for `invalid_client`, 5xx for server conditions. */
  readonly status: number;
  /** Headers the answer carries (`WWW-Authenticate` for HTTP client authentication). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    error: OAuthErrorCode,
    description: string,
    options: { status?: number; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(description, `ERR_OAUTH_${error.toUpperCase()}`, { cause: options.cause });
    this.error = error;
    this.status = options.status ?? STATUS[error] ?? 400;
    this.headers = options.headers ?? {};
  }
}

/**
 * Headers of every token-endpoint answer (RFC 6749 §5.1): never cached.
 *
 * @example
 * ```ts
 * sendJson(res, 200, tokenResponse, NO_STORE);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-5.1 | RFC 6749 §5.1}
 */
export const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' } as const;

/** The challenge of a 401 `invalid_client`: HTTP Basic client authentication (RFC 6749 §2.3.1). */
export const CLIENT_CHALLENGE = 'Basic realm="token", error="invalid_client"';

/**
 * Writes an OAuth error answer: `Content-Type: application/json` exactly, `no-store`, and
 * `{ error, error_description }`; a 401 always carries `WWW-Authenticate` (the error's own,
 * else a Basic challenge), also when the client authenticated in the form body.
 *
 * @example
 * ```ts
 * sendOAuthError(res, new OAuthError('invalid_grant', 'The refresh token is invalid or expired.'));
 * // 400 {"error":"invalid_grant","error_description":"The refresh token is invalid or expired."}
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-5.2 | RFC 6749 §5.2}
 */
export function sendOAuthError(res: ServerResponse, error: OAuthError): void {
  const body = JSON.stringify({ error: error.error, error_description: error.message });
  const headers: OutgoingHttpHeaders = { ...NO_STORE, ...error.headers };
  // every 401 names a scheme (RFC 9110 §15.5.2): the one clients can use besides the form
  if (
    error.status === 401 &&
    !res.hasHeader('WWW-Authenticate') &&
    !Object.keys(headers).some((name) => name.toLowerCase() === 'www-authenticate')
  ) {
    headers['WWW-Authenticate'] = CLIENT_CHALLENGE;
  }
  headers['Content-Type'] = 'application/json';
  send(res, error.status, body, headers);
}

/**
 * The OAuth answer to a failure that says "not now" rather than "no": an {@link OAuthError}
 * as it is, and a 429 or 503 (a spent credential guard, a full store, Redis down) as
 * `temporarily_unavailable` with its status and `Retry-After`, for OAuth clients read the
 * RFC 6749 §5.2 format. Anything else is `undefined` (a failure for the adapter to answer).
 *
 * @example
 * ```ts
 * } catch (error) {
 *   const answer = asOAuthError(error);
 *   if (answer === undefined) throw error;
 *   sendOAuthError(res, answer);
 * }
 * ```
 */
export function asOAuthError(error: unknown): OAuthError | undefined {
  if (error instanceof OAuthError) return error;
  const http = toHttpError(error);
  if (http.status !== 429 && http.status !== 503) return undefined;
  const retryAfter = http.headers['Retry-After'];
  return new OAuthError('temporarily_unavailable', http.detail, {
    status: http.status,
    headers: typeof retryAfter === 'string' ? { 'Retry-After': retryAfter } : {},
    cause: error,
  });
}

/**
 * A refused DPoP proof in the OAuth error format (RFC 9449 §5.2): 400 `invalid_dpop_proof`, or
 * `use_dpop_nonce` with the nonce to retry with in `DPoP-Nonce` (§8).
 *
 * @example
 * ```ts
 * try {
 *   await ctx.dpop.verify(proof, { method: 'POST', url });
 * } catch (error) {
 *   if (error instanceof DpopProofError) throw dpopRefusal(error);
 *   throw error;
 * }
 * ```
 */
export function dpopRefusal(error: DpopProofError): OAuthError {
  return new OAuthError(error.error, error.message, {
    ...(error.nonce !== undefined && { headers: { 'DPoP-Nonce': error.nonce } }),
  });
}
