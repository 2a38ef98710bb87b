import { badRequest, forbidden, type HttpError, unauthorized } from '../core/errors/errors.js';

/**
 * Problem type slugs of authentication and authorization failures.
 *
 * A problem's `type` is `PROBLEM_TYPE_BASE` followed by one of these slugs.
 *
 * @example
 * ```ts
 * if (problem.type === PROBLEM_TYPE_BASE + AUTH_PROBLEM.expired) await refreshToken();
 * ```
 */
export const AUTH_PROBLEM = {
  required: 'authentication-required',
  invalid: 'invalid-credentials',
  expired: 'credentials-expired',
  insufficientScope: 'insufficient-scope',
  forbiddenRole: 'forbidden-role',
} as const;

/**
 * 401 for a credential that was presented and is not valid (rule 4 of the specification:
 * "invalid"). The detail must say what is wrong in general terms only: never a key, a
 * secret, a token or which part of a signature failed.
 *
 * @example
 * ```ts
 * throw invalidCredentials('Basic realm="api"', 'The user name or password is not valid.');
 * // with more headers: a DPoP proof without the server's nonce (RFC 9449 §9)
 * throw invalidCredentials('DPoP error="use_dpop_nonce"', 'Use the nonce.', 'ERR_DPOP_NONCE', {
 *   'DPoP-Nonce': nonces.current(),
 * });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.5.2 | RFC 9110 §15.5.2}
 */
export function invalidCredentials(
  challenge: string | readonly string[],
  detail = 'The credentials are not valid.',
  code = 'ERR_AUTH_INVALID',
  headers?: Readonly<Record<string, string>>,
): HttpError {
  return unauthorized(detail, {
    challenge,
    code,
    typeSlug: AUTH_PROBLEM.invalid,
    title: 'Invalid credentials',
    ...(headers !== undefined && { headers }),
  });
}

/**
 * 401 for a credential that was valid and has expired (rule 4 of the specification: "expired").
 *
 * @example
 * ```ts
 * if (record.expiresAt < Date.now()) throw expiredCredentials('ApiKey realm="api"');
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.5.2 | RFC 9110 §15.5.2}
 */
export function expiredCredentials(
  challenge: string | readonly string[],
  detail = 'The credentials have expired.',
  code = 'ERR_AUTH_EXPIRED',
): HttpError {
  return unauthorized(detail, {
    challenge,
    code,
    typeSlug: AUTH_PROBLEM.expired,
    title: 'Credentials expired',
  });
}

/**
 * 401 when no credential of any accepted kind was presented; one challenge per scheme.
 *
 * @example
 * ```ts
 * throw authenticationRequired(['Bearer realm="api"', 'Basic realm="api", charset="UTF-8"']);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-11.6.1 | RFC 9110 §11.6.1}
 */
export function authenticationRequired(challenges: readonly string[]): HttpError {
  return unauthorized('Authentication is required.', {
    challenge: challenges.length > 0 ? challenges : undefined,
    code: 'ERR_AUTH_REQUIRED',
    typeSlug: AUTH_PROBLEM.required,
    title: 'Authentication required',
  });
}

/**
 * 400 for a request malformed in RFC 6750's sense (a token in two places, say).
 *
 * @example
 * ```ts
 * throw invalidAuthRequest('Send the access token in one place only.', 'Bearer error="invalid_request"');
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6750#section-3.1 | RFC 6750 §3.1}
 */
export function invalidAuthRequest(detail: string, challenge?: string): HttpError {
  return badRequest(detail, {
    code: 'ERR_AUTH_INVALID_REQUEST',
    typeSlug: 'invalid-request',
    title: 'Invalid request',
    headers: challenge === undefined ? undefined : { 'WWW-Authenticate': challenge },
  });
}

/**
 * 403 for a principal that lacks scopes; bearer callers also get the RFC 6750 challenge.
 *
 * @example
 * ```ts
 * throw insufficientScope(['write:messages']); // 403, `requiredScopes: ['write:messages']`
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6750#section-3.1 | RFC 6750 §3.1}
 */
export function insufficientScope(missing: readonly string[], challenge?: string): HttpError {
  return forbidden(`This needs the scope${missing.length > 1 ? 's' : ''} ${missing.join(' ')}.`, {
    code: 'ERR_INSUFFICIENT_SCOPE',
    typeSlug: AUTH_PROBLEM.insufficientScope,
    title: 'Insufficient scope',
    headers: challenge === undefined ? undefined : { 'WWW-Authenticate': challenge },
    extensions: { requiredScopes: [...missing] },
  });
}

/**
 * 403 for a principal whose role is not among those allowed.
 *
 * @example
 * ```ts
 * if (principal.role !== 'admin') throw forbiddenRole(['admin']);
 * ```
 */
export function forbiddenRole(roles: readonly string[]): HttpError {
  return forbidden(`This needs the role ${roles.join(' or ')}.`, {
    code: 'ERR_FORBIDDEN_ROLE',
    typeSlug: AUTH_PROBLEM.forbiddenRole,
    title: 'Forbidden',
  });
}
