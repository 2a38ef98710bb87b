/**
 * The application's side of OAuth, on openid-client v6 (an optional peer dependency:
 * `npm install openid-client@6`): {@link upstreamProvider} names an authorization server
 * this application is a client of; {@link createSignIn} signs users in there into portico's
 * sessions (identity brokering included: the authorization server's sign-in pages link to it).
 *
 * @module portico/client
 */

export {
  type DeviceCode,
  type DeviceSignInOptions,
  type DeviceTokens,
  deviceSignIn,
} from './device.js';
export {
  type ClientCredentialsOptions,
  clientCredentials,
  type TokenSource,
} from './machine-tokens.js';
export {
  type OAuth2ProviderOptions,
  type OidcProviderOptions,
  type UpstreamClaims,
  type UpstreamClientAuth,
  type UpstreamClientTls,
  type UpstreamProvider,
  type UpstreamProviderOptions,
  upstreamProvider,
} from './provider.js';
export type { SealKeys } from './seal.js';
export {
  createSignIn,
  type SignIn,
  type SignInOptions,
  type UpstreamIdentity,
} from './sign-in.js';
export type { UpstreamTokens } from './tokens.js';
