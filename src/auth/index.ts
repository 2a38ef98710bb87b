/**
 * Authentication and authorization: authenticators for API keys, Basic, JWT bearer tokens,
 * OpenID Connect ID tokens, mutual TLS and session cookies, `authenticate()` to combine them,
 * and `requireScopes()` / `requireRole()` behind them.
 *
 * @module auth
 */
export {
  type AuthenticateOptions,
  authenticate,
  type RequireScopesOptions,
  requireRole,
  requireScopes,
} from './authenticate.js';
export { type Authenticator, challenge, quoteParam } from './authenticator.js';
export { certificateThumbprint, getClientCertificate } from './certificate.js';
export {
  AUTH_PROBLEM,
  authenticationRequired,
  expiredCredentials,
  forbiddenRole,
  insufficientScope,
  invalidAuthRequest,
  invalidCredentials,
} from './errors.js';
export {
  type AuthMethod,
  getPrincipal,
  type Principal,
  principalKey,
  requirePrincipal,
  setPrincipal,
} from './principal.js';
export {
  assertScopes,
  isValidScope,
  OPENID_SCOPES,
  parseScopes,
  scopesFromClaim,
} from './scopes.js';
