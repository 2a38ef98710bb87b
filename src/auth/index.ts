/**
 * Authentication and authorization: authenticators for API keys, Basic, JWT bearer tokens,
 * OpenID Connect ID tokens, mutual TLS and session cookies, `authenticate()` to combine them,
 * `requireScopes()` / `requireRole()` behind them, and `protectedResource()` (RFC 9728) to
 * say where clients find the authorization server.
 *
 * @module portico/auth
 */

export type { Jwk, JwkSet, JwtClaims, JwtHeader } from '../core/jwt-types.js';
export {
  type AuthMethod,
  getPrincipal,
  type Principal,
  principalKey,
  requirePrincipal,
  setPrincipal,
} from '../core/principal.js';
export {
  API_KEY_PATTERN,
  type ApiKeyFormatOptions,
  apiKeyPattern,
  DEFAULT_API_KEY_PREFIX,
  generateApiKey,
  hashApiKey,
  isWellFormedApiKey,
} from './api-key/api-key.js';
export {
  type ApiKeyAuthOptions,
  apiKeyAuth,
} from './api-key/authenticator.js';
export {
  type ApiKeyRecord,
  type ApiKeyStore,
  type CreateApiKeyOptions,
  createApiKey,
  type ImportApiKeyOptions,
  importApiKey,
  MAX_API_KEY_LENGTH,
  MemoryApiKeyStore,
} from './api-key/store.js';
export {
  type AuthenticateOptions,
  type Authentication,
  authenticate,
  type RequireScopesOptions,
  requireRole,
  requireScopes,
} from './authenticate.js';
export {
  type Authenticator,
  challenge,
} from './authenticator.js';
export {
  type BasicAuthOptions,
  basicAuth,
} from './basic.js';
export { getClientCertificate } from './certificate.js';
export {
  type CredentialGuard,
  type CredentialGuardOptions,
  createCredentialGuard,
} from './credential-guard.js';
export {
  accessTokenHash,
  type CheckedDpopProof,
  createDpopVerifier,
  type DpopProof,
  DpopProofError,
  type DpopProofErrorCode,
  type DpopRequest,
  type DpopVerifier,
  type DpopVerifierOptions,
} from './dpop/dpop.js';
export { createDpopNonces, type DpopNonceOptions, type DpopNonces } from './dpop/nonce.js';
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
  type JwtBearerDpopOptions,
  type JwtBearerIssuersOptions,
  type JwtBearerOptions,
  jwtBearer,
  principalFromClaims,
} from './jwt/bearer.js';
export type { JwtCacheOptions } from './jwt/cache.js';
export {
  isJwtError,
  JWT_ERROR_CODES,
  JwtError,
  type JwtErrorKind,
} from './jwt/error.js';
export type { JwtIssuerOptions } from './jwt/issuers.js';
export type { KeySourceOptions, RemoteJwksOptions } from './jwt/jwks.js';
export {
  createJwtVerifier,
  type JwtVerifier,
  type JwtVerifierOptions,
  type JwtVerifyContext,
  type VerifiedJwt,
} from './jwt/jwt.js';
export type { ClaimPath, JwtClaimMappingOptions } from './jwt/principal.js';
export {
  type MtlsOptions,
  mtlsAuth,
} from './mtls.js';
export {
  createIdTokenVerifier,
  type IdTokenClaims,
  type IdTokenVerifier,
  type IdTokenVerifierOptions,
  type IdTokenVerifyOptions,
} from './oidc.js';
export {
  hashPassword,
  needsRehash,
  type PasswordHashOptions,
  verifyPassword,
} from './password.js';
export {
  type ProtectedResource,
  type ProtectedResourceMetadata,
  type ProtectedResourceOptions,
  protectedResource,
} from './protected-resource.js';
export {
  MemoryReplayStore,
  type MemoryReplayStoreOptions,
  type ReplayStore,
} from './replay/store.js';
export {
  announceRevocation,
  apiKeyCredentialId,
  type BindToCredentialOptions,
  bindToCredential,
  type CredentialEnd,
  createRevocations,
  grantCredentialId,
  processRevocations,
  type Revocations,
  type RevocationsOptions,
  type RevocationTransport,
  sessionCredentialId,
  tokenCredentialId,
} from './revocations.js';
export {
  assertScopes,
  isValidScope,
  OPENID_SCOPES,
  parseScopes,
  scopesFromClaim,
} from './scopes.js';
export type { SessionCookieOptions } from './session/cookie.js';
export {
  createSessions,
  type SessionOptions,
  type Sessions,
  type SessionUpdate,
  type SessionUser,
} from './session/session.js';
export {
  MemorySessionStore,
  type MemorySessionStoreOptions,
  type SessionRecord,
  type SessionStore,
} from './session/store.js';
