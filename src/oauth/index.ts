/**
 * The OAuth 2.0 / OpenID Connect authorization server: {@link createAuthorizationServer}, and the
 * signing keys ({@link createKeySet}), clients ({@link defineClient}), grants and endpoints it is
 * built from.
 *
 * @module portico/oauth
 */

export {
  type AuthorizeEndpointOptions,
  createAuthorizeEndpoint,
} from './authorize.js';
export { CLIENT_ASSERTION_TYPE } from './client-assertion.js';
export {
  type ClientAuthenticator,
  type ClientAuthenticatorOptions,
  createClientAuthenticator,
} from './client-auth.js';
export {
  type ClientDefinition,
  type ClientStore,
  defineClient,
  type GrantType,
  isConfidential,
  MemoryClientStore,
  type OAuthClient,
} from './clients.js';
export {
  type AuthorizationServerOptions,
  createOAuthContext,
  type OAuthContext,
  type OAuthUsers,
} from './context.js';
export {
  createDeviceAuthorizationEndpoint,
  createDeviceVerificationEndpoint,
  type DeviceAuthorizationOptions,
  type DeviceVerificationOptions,
} from './device.js';
export { createEndSessionEndpoint, type EndSessionEndpointOptions } from './end-session.js';
export {
  OAuthError,
  type OAuthErrorCode,
} from './errors.js';
export type {
  FormFields,
  FormPageOptions,
  FormTokenOptions,
  FormTokens,
} from './form-token.js';
export {
  authorizationCodeGrant,
  type GrantHandler,
  type TokenBinding,
  type TokenResponse,
  type UserGrant,
} from './grants/authorization-code.js';
export { clientCredentialsGrant } from './grants/client-credentials.js';
export {
  DEVICE_CODE_GRANT,
  deviceCodeGrant,
} from './grants/device-code.js';
export { refreshTokenGrant } from './grants/refresh-token.js';
export { type UserGrants, userGrants } from './grants.js';
export {
  createIntrospectionEndpoint,
  type IntrospectionResponse,
} from './introspect.js';
export {
  createJwksEndpoint,
  type JwksEndpointOptions,
} from './jwks-endpoint.js';
export {
  createKeySet,
  type KeySet,
  type KeySetOptions,
  type SigningAlgorithm,
  type SigningKey,
} from './key-set.js';
export {
  type AuthorizationServerMetadata,
  authorizationServerMetadata,
  createMetadataEndpoint,
  DEFAULT_OAUTH_PATHS,
  type MetadataOptions,
  type OAuthPaths,
} from './metadata.js';
export type { PendingIds } from './one-time-ids.js';
export {
  type OwnAccessTokenOptions,
  ownAccessTokens,
} from './own-tokens.js';
export {
  PAGE_LANGUAGES,
  type PageLanguage,
  type PageMessages,
  pageMessages,
} from './page-messages.js';
export {
  type ConsentPageData,
  type DeviceCodePageData,
  type DeviceDonePageData,
  defaultPages,
  type ErrorPageData,
  escapeHtml,
  hiddenInputs,
  type LoggedOutPageData,
  type LogoutPageData,
  type OAuthPages,
  type PageUser,
  type SignInPageData,
} from './pages.js';
export { createPushedAuthorizationEndpoint, REQUEST_URI_PREFIX } from './par.js';
export { createRevocationEndpoint } from './revoke.js';
export {
  type AuthorizationServer,
  type CreateAuthorizationServerOptions,
  createAuthorizationServer,
} from './server.js';
export {
  type AuthorizationCodeRecord,
  type Consumed,
  type DeviceCodeRecord,
  type GrantRecord,
  MemoryOAuthStore,
  type MemoryOAuthStoreOptions,
  type OAuthStore,
  type PushedAuthorizationRecord,
  type RefreshTokenRecord,
} from './store.js';
export { createTokenEndpoint } from './token-endpoint.js';
export {
  type AccessTokenRequest,
  createTokenIssuer,
  type IdTokenClaimRelease,
  type IdTokenRequest,
  type TokenIssuer,
  type TokenIssuerOptions,
  type UserClaims,
} from './tokens.js';
export {
  createUserInfoEndpoint,
  type UserInfoOptions,
} from './userinfo.js';
