/**
 * The OAuth 2.0 / OpenID Connect authorization server: {@link createAuthorizationServer}, and the
 * signing keys ({@link createKeySet}), clients ({@link defineClient}), grants and endpoints it is
 * built from.
 *
 * @module portico/oauth
 */

export { CLIENT_ASSERTION_TYPE } from './clients/assertion.js';
export {
  type ClientAuthenticator,
  type ClientAuthenticatorOptions,
  createClientAuthenticator,
} from './clients/authentication.js';
export {
  type ClientDefinition,
  type ClientProvenance,
  type ClientRegistration,
  defineClient,
  type GrantType,
  isConfidential,
  type OAuthClient,
} from './clients/client.js';
export {
  ClientMetadataDocumentError,
  type ClientMetadataDocumentOptions,
  type ClientMetadataDocumentReason,
  type ClientMetadataDocuments,
  createClientMetadataDocuments,
} from './clients/metadata-document.js';
export {
  findRedirectUri,
  type RedirectUriShape,
  redirectUriMatches,
  redirectUriRefusal,
} from './clients/redirect-uri.js';
export type {
  ClientMetadata,
  InitialAccessTokenCheck,
  RegistrationAuthMethod,
  RegistrationGrantType,
  RegistrationOptions,
} from './clients/registration-policy.js';
export {
  type ClientStore,
  clientStores,
  MemoryClientStore,
  type MemoryClientStoreOptions,
  type WritableClientStore,
} from './clients/store.js';
export { type UserConsents, userConsents } from './consents.js';
export {
  type AuthorizationServerOptions,
  createOAuthContext,
  type OAuthContext,
  type OAuthUsers,
  type SignInLink,
} from './context.js';
export {
  type AuthorizeEndpointOptions,
  createAuthorizeEndpoint,
} from './endpoints/authorize.js';
export {
  createDeviceAuthorizationEndpoint,
  createDeviceVerificationEndpoint,
  type DeviceAuthorizationOptions,
  type DeviceVerificationOptions,
} from './endpoints/device-authorization.js';
export {
  createEndSessionEndpoint,
  type EndSessionEndpointOptions,
} from './endpoints/end-session.js';
export {
  createIntrospectionEndpoint,
  type IntrospectionResponse,
} from './endpoints/introspection.js';
export {
  createJwksEndpoint,
  type JwksEndpointOptions,
} from './endpoints/jwks.js';
export {
  type AuthorizationServerMetadata,
  authorizationServerMetadata,
  createMetadataEndpoint,
  DEFAULT_OAUTH_PATHS,
  type MetadataOptions,
  type OAuthPaths,
} from './endpoints/metadata.js';
export { createPushedAuthorizationEndpoint, REQUEST_URI_PREFIX } from './endpoints/par.js';
export {
  createRegistrationEndpoints,
  type RegistrationEndpointOptions,
  type RegistrationEndpoints,
} from './endpoints/registration.js';
export { createRevocationEndpoint } from './endpoints/revocation.js';
export { createTokenEndpoint, type TokenEndpointOptions } from './endpoints/token.js';
export {
  createUserInfoEndpoint,
  type UserInfoOptions,
} from './endpoints/userinfo.js';
export type { AuthorizationServerFeatures, ResolvedFeatures } from './features.js';
export { authorizationCodeGrant } from './grants/authorization-code.js';
export { clientCredentialsGrant } from './grants/client-credentials.js';
export {
  assertCanIssue,
  defineGrant,
  type Grant,
  type GrantHandler,
  grantUser,
  issueUserTokens,
  requiredParameter,
  type TokenBinding,
  type TokenResponse,
  type UserGrant,
} from './grants/contract.js';
export {
  DEVICE_CODE_GRANT,
  deviceCodeGrant,
} from './grants/device-code.js';
export { refreshTokenGrant } from './grants/refresh-token.js';
export { defaultGrants } from './grants/registry.js';
export {
  TOKEN_EXCHANGE_GRANT,
  type TokenExchange,
  type TokenExchangeOptions,
  tokenExchangeGrant,
} from './grants/token-exchange.js';
export type {
  FormFields,
  FormPageOptions,
  FormTokenOptions,
  FormTokens,
} from './pages/form-token.js';
export {
  PAGE_LANGUAGES,
  type PageLanguage,
  type PageMessages,
  pageMessages,
} from './pages/messages.js';
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
} from './pages/render.js';
export {
  OAuthError,
  type OAuthErrorCode,
} from './protocol/errors.js';
export type { ConfiguredResource, ResourceDefinition } from './resources.js';
export {
  type AuthorizationServer,
  type CreateAuthorizationServerOptions,
  createAuthorizationServer,
} from './server.js';
export type { PendingIds } from './store/one-time-ids.js';
export type {
  AuthorizationCodeRecord,
  DeviceCodeRecord,
  GrantRecord,
  PushedAuthorizationRecord,
  RefreshTokenRecord,
} from './store/records.js';
export {
  type Consumed,
  type FoundRecord,
  MemoryRecordStore,
  type MemoryRecordStoreOptions,
  type RecordCondition,
  type RecordKeys,
  type RecordStore,
  type StoredRecord,
} from './store/store.js';
export type { TokenContext } from './tokens/context.js';
export {
  type AccessTokenRequest,
  type ActorClaim,
  createTokenIssuer,
  type IdTokenClaimRelease,
  type IdTokenRequest,
  type TokenIssuer,
  type TokenIssuerOptions,
  type UserClaims,
} from './tokens/issue.js';
export {
  createKeySet,
  type KeySet,
  type KeySetOptions,
  type SigningAlgorithm,
  type SigningKey,
} from './tokens/key-set.js';
export {
  type OwnAccessTokenOptions,
  ownAccessTokens,
} from './tokens/verify.js';
