import type { IncomingMessage } from 'node:http';
import type { PeerCertificate } from 'node:tls';
import { createContextKey, getContextValue, setContextValue } from './context.js';
import { unauthorized } from './errors.js';
import type { JwtClaims as JWTPayload } from './jwt-types.js';

// The principal slot: who the caller is, once an authenticator has said so. It lives in core
// so that what runs after authentication (rate limits, channels, handlers) reads it without
// depending on the authenticators.

/** How a caller proved who it is. */
export type AuthMethod =
  | 'bearer'
  | 'dpop'
  | 'api_key'
  | 'session'
  | 'basic'
  | 'mtls'
  | (string & {});

/**
 * Who the caller is, as an authenticator found it. The same shape whatever the mechanism,
 * so that authorization (`requireScopes`, `requireRole`) and the app need not care.
 */
export interface Principal {
  /** Subject: the user or client identifier. */
  sub: string;
  /** Display name, when known. */
  name?: string;
  /** Role, when known (`admin`, `user`, …). */
  role?: string;
  /** Granted scopes (`<action>:<object>` and OpenID scopes). */
  scopes: readonly string[];
  /** The mechanism that authenticated the request. */
  method: AuthMethod;
  /** The verified JWT claims (bearer tokens, ID tokens). */
  claims?: Readonly<JWTPayload>;
  /** The verified client certificate (mutual TLS). */
  certificate?: Readonly<PeerCertificate>;
  /** The id (never the secret) of the API key used. */
  keyId?: string;
  /** The OAuth client the token was issued to, when known. */
  clientId?: string;
  /**
   * The ids under which the credential behind this principal can be revoked
   * (`api_key:<id>`, `session:<ref>`, `grant:<id>`, `token:<jti>`): a long-lived delivery
   * opened with it (an event stream, a WebSocket connection) watches them through
   * `Revocations` (`bindToCredential()`) and ends when one is revoked. Authenticators set them; none for a
   * credential that cannot be revoked (a client certificate, a password).
   */
  credentialIds?: readonly string[];
  /**
   * When the credential stops being valid, epoch milliseconds (a token's `exp`, a session's
   * absolute end, an API key's expiry): a long-lived delivery opened with it ends then.
   */
  expiresAt?: number;
}

/**
 * The slot holding the authenticated principal.
 *
 * @example
 * ```ts
 * getContextValue(req, principalKey); // the same as getPrincipal(req)
 * ```
 */
export const principalKey = createContextKey<Principal>('principal');

/**
 * The principal that `authenticate()` found for this request, if any.
 *
 * @example
 * ```ts
 * const me = getPrincipal(req);
 * if (me) sendJson(res, 200, { sub: me.sub, method: me.method });
 * ```
 */
export function getPrincipal(req: IncomingMessage): Principal | undefined {
  return getContextValue(req, principalKey);
}

/**
 * Records the principal of this request (authenticators and tests).
 *
 * @example
 * ```ts
 * setPrincipal(req, { sub: 'u-42', scopes: ['read:messages'], method: 'session' });
 * ```
 */
export function setPrincipal(req: IncomingMessage, principal: Principal): void {
  setContextValue(req, principalKey, principal);
}

/**
 * The principal of this request, or a 401 problem when there is none: for handlers behind
 * an optional `authenticate()`.
 *
 * @example
 * ```ts
 * const { sub } = requirePrincipal(req);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.5.2 | RFC 9110 §15.5.2}
 */
export function requirePrincipal(req: IncomingMessage): Principal {
  const principal = getPrincipal(req);
  if (principal === undefined) throw unauthorized('Authentication is required.');
  return principal;
}
