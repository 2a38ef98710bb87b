import type { IncomingMessage } from 'node:http';
import type { Principal } from './principal.js';

/**
 * One authentication mechanism. `authenticate` returns the principal when its kind of
 * credential is present and good, `undefined` when it is absent, and throws a 401
 * {@link HttpError} (from {@link invalidCredentials} or {@link expiredCredentials}) when it is
 * present but bad.
 *
 * @example
 * ```ts
 * const headerToken: Authenticator = {
 *   scheme: 'Token',
 *   challenge: 'Token realm="api"',
 *   authenticate(req) {
 *     const token = req.headers['x-token'];
 *     if (token === undefined) return undefined;
 *     if (token !== expected) throw invalidCredentials('Token', 'The token is not valid.');
 *     return { sub: 'service', scopes: [], method: 'token' };
 *   },
 * };
 * ```
 */
export interface Authenticator {
  /** A name for the mechanism (`Bearer`, `Basic`, `ApiKey`, `Session`, `mTLS`). */
  readonly scheme: string;
  /**
   * The `WWW-Authenticate` challenge this mechanism adds to a 401 when no credential was
   * presented at all (RFC 9110 §11.6.1), if it has one.
   */
  readonly challenge?: string;
  /** Looks for this mechanism's credential and verifies it. */
  authenticate(req: IncomingMessage): Principal | undefined | Promise<Principal | undefined>;
}

/**
 * Quotes a challenge parameter value (RFC 9110 §5.6.4), refusing CR/LF and controls.
 *
 * @example
 * ```ts
 * quoteParam('api "v2"'); // '"api \\"v2\\""'
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-5.6.4 | RFC 9110 §5.6.4}
 */
export function quoteParam(value: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing them is the point
  if (/[\u0000-\u001f\u007f]/.test(value)) {
    throw new TypeError('A challenge parameter must not contain control characters');
  }
  return `"${value.replace(/[\\"]/g, '\\$&')}"`;
}

/**
 * Builds a challenge: `Bearer realm="api", error="invalid_token"`.
 *
 * @example
 * ```ts
 * challenge('Basic', { realm: 'api', charset: 'UTF-8' }); // Basic realm="api", charset="UTF-8"
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-11.3 | RFC 9110 §11.3}
 */
export function challenge(
  scheme: string,
  params: Readonly<Record<string, string | undefined>> = {},
): string {
  const parts: string[] = [];
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined) parts.push(`${name}=${quoteParam(value)}`);
  }
  return parts.length === 0 ? scheme : `${scheme} ${parts.join(', ')}`;
}
