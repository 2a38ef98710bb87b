import type { IncomingMessage } from 'node:http';
import type { Principal } from '../core/principal.js';
import { isToken, QUOTABLE } from '../internal/grammar.js';

/**
 * One authentication mechanism. `authenticate` returns the principal when its kind of
 * credential is present and good, `undefined` when it is absent, and throws a 401
 * {@link portico/core!HttpError} (from `invalidCredentials` or `expiredCredentials`) when it is
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
  /**
   * The request headers this mechanism reads its credential from (`Authorization`,
   * `X-API-Key`, `Cookie`): `authenticate()` lists them in `Vary`, as the answer depends on
   * them.
   */
  readonly headers?: readonly string[];
  /** Looks for this mechanism's credential and verifies it. */
  authenticate(req: IncomingMessage): Principal | undefined | Promise<Principal | undefined>;
}

/**
 * Quotes a challenge parameter value (RFC 9110 §5.6.4). Only what a quoted-string may hold
 * is accepted (tab, visible ASCII, space, and the octets 0x80–0xFF): a control character or
 * a character node could not send in a header throws, at configuration time.
 *
 * @example
 * ```ts
 * quoteParam('api "v2"'); // '"api \\"v2\\""'
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-5.6.4 | RFC 9110 §5.6.4}
 */
export function quoteParam(value: string): string {
  if (!QUOTABLE.test(value)) {
    throw new TypeError(
      'A challenge parameter may hold tab, space, visible ASCII and Latin-1 characters only',
    );
  }
  return `"${value.replace(/[\\"]/g, '\\$&')}"`;
}

/**
 * Builds a challenge: `Bearer realm="api", error="invalid_token"`. The scheme and the
 * parameter names must be tokens, the values what `quoteParam` accepts.
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
  if (!isToken(scheme))
    throw new TypeError(`The auth scheme must be a token, not ${JSON.stringify(scheme)}`);
  const parts: string[] = [];
  for (const [name, value] of Object.entries(params)) {
    if (!isToken(name)) {
      throw new TypeError(
        `A challenge parameter name must be a token, not ${JSON.stringify(name)}`,
      );
    }
    if (value !== undefined) parts.push(`${name}=${quoteParam(value)}`);
  }
  return parts.length === 0 ? scheme : `${scheme} ${parts.join(', ')}`;
}
