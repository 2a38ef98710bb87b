import type { IncomingMessage } from 'node:http';
import type { PeerCertificate } from 'node:tls';
import { createContextKey, getContextValue, setContextValue } from './context.js';
import { type HttpError, unauthorized } from './errors/errors.js';
import type { JwtClaims as JWTPayload } from './jwt-types.js';
import { defaultLogger, log } from './logger.js';
import { requestPath } from './problem.js';

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
  /**
   * Roles, when the credential carries several (a token's `roles`, `cognito:groups` or
   * `realm_access.roles`, read where `jwtBearer`'s `rolesClaim` says); `requireRole` accepts
   * any of them as it accepts `role`.
   */
  roles?: readonly string[];
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
 * What `authenticate()` leaves on a request it let through without a principal (an optional
 * one, no credential sent): the 401 it answers for a missing credential, with its
 * authenticators' `WWW-Authenticate` challenges, for {@link requirePrincipal} to throw. Auth
 * fills this slot; core only reads it. @internal
 */
export const missingCredentialKey = createContextKey<() => HttpError>('missingCredential');

/** Whether the "before authenticate()" warning was given: once per process. */
let warnedBeforeAuthenticate = false;

const BEFORE_AUTHENTICATE =
  'requirePrincipal() ran before authenticate() for this request: no authenticator saw it, so ' +
  'its 401 has no WWW-Authenticate challenge. In Express, register the route after ' +
  '`app.use(toExpress(authenticate([...])))`, or mount authenticate() on the route itself.';

function warnBeforeAuthenticate(req: IncomingMessage): void {
  if (warnedBeforeAuthenticate) return;
  warnedBeforeAuthenticate = true;
  const fields = {
    component: 'auth',
    event: 'principal.before-authenticate',
    path: requestPath(req),
  };
  log(defaultLogger, 'warn', fields, BEFORE_AUTHENTICATE);
  // the default logger writes errors only: a process warning makes this one seen
  process.emitWarning(`${BEFORE_AUTHENTICATE} (path ${fields.path})`, {
    type: 'PorticoWarning',
    code: 'PORTICO_PRINCIPAL_BEFORE_AUTHENTICATE',
  });
}

/**
 * The principal of this request, or a 401 problem when there is none: for handlers behind
 * an optional `authenticate()`. The 401 carries the challenges of the authenticators that
 * `authenticate()` ran for this request (as its own 401 does); when no `authenticate()` ran
 * at all (an Express route registered before it), a warning says so, once per process.
 *
 * @example
 * ```ts
 * const { sub } = requirePrincipal(req);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.5.2 | RFC 9110 §15.5.2}
 */
export function requirePrincipal(req: IncomingMessage): Principal {
  const principal = getPrincipal(req);
  if (principal !== undefined) return principal;
  const missing = getContextValue(req, missingCredentialKey);
  if (missing !== undefined) throw missing();
  warnBeforeAuthenticate(req);
  throw unauthorized('Authentication is required.');
}
