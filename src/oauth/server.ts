import { randomBytes } from 'node:crypto';
import type { Authenticator } from '../auth/authenticator.js';
import type { MethodTable } from '../http/router.js';
import { createAuthorizeEndpoint } from './authorize.js';
import {
  type AuthorizationServerOptions,
  createOAuthContext,
  type OAuthContext,
} from './context.js';
import { createDeviceAuthorizationEndpoint, createDeviceVerificationEndpoint } from './device.js';
import { createIntrospectionEndpoint } from './introspect.js';
import { createJwksEndpoint } from './jwks-endpoint.js';
import {
  type AuthorizationServerMetadata,
  authorizationServerMetadata,
  createMetadataEndpoint,
  type MetadataOptions,
  metadataPaths,
  type OAuthPaths,
  resolveOAuthPaths,
} from './metadata.js';
import { ownAccessTokens } from './own-tokens.js';
import type { OAuthPages } from './pages.js';
import { createRevocationEndpoint } from './revoke.js';
import { createTokenEndpoint } from './token-endpoint.js';
import { createUserInfoEndpoint } from './userinfo.js';

/** Options of {@link createAuthorizationServer}: the server's, and where and how it is served. */
export interface CreateAuthorizationServerOptions extends AuthorizationServerOptions {
  /** Where each endpoint is mounted. @defaultValue {@link DEFAULT_OAUTH_PATHS} */
  paths?: Partial<OAuthPaths>;
  /** More paths served by the token endpoint (e.g. `['/oauth/token']`). @defaultValue none */
  tokenPathAliases?: readonly string[];
  /** HTML pages to use instead of portico's defaults. */
  pages?: Partial<OAuthPages>;
  /**
   * Key of the HMAC that binds the sign-in, consent and device forms. Give the same key to
   * every process of one service.
   * @defaultValue a random key per process
   */
  formKey?: string | Uint8Array;
  /** Scopes advertised in the metadata. */
  scopesSupported?: MetadataOptions['scopesSupported'];
}

/** An authorization server: its routes for a router, and an authenticator for its own tokens. */
export interface AuthorizationServer {
  readonly context: OAuthContext;
  readonly paths: OAuthPaths;
  /** Every endpoint by path, for `createRouter({ ...server.routes })`. */
  readonly routes: Readonly<Record<string, MethodTable>>;
  /** Verifies this server's access tokens (resource servers in the same process). */
  readonly bearer: Authenticator;
  /** The RFC 8414 / OpenID Connect Discovery metadata. */
  metadata(): AuthorizationServerMetadata;
}

/**
 * Builds a complete OAuth 2.0 / OpenID Connect authorization server: authorization code with
 * PKCE, refresh tokens with rotation, client credentials and the device flow, revocation,
 * introspection, UserInfo, JWKS and discovery metadata, as routes for portico's router.
 *
 * @example
 * ```ts
 * const auth = createAuthorizationServer({
 *   issuer: 'https://auth.example.com',
 *   clients: new MemoryClientStore([await defineClient({ … })]),
 *   keys: await createKeySet(),
 *   users: { verify: checkPassword, get: loadUser },
 *   sessions: createSessions({ allowedOrigins: ['https://auth.example.com'] }),
 *   tokenPathAliases: ['/oauth/token'],
 * });
 * createServer(toNodeListener([requestId(), securityHeaders(), createRouter(auth.routes)]));
 * ```
 * @see https://www.rfc-editor.org/rfc/rfc6749, https://www.rfc-editor.org/rfc/rfc9700
 */
export function createAuthorizationServer(
  options: CreateAuthorizationServerOptions,
): AuthorizationServer {
  const {
    paths: pathOptions,
    tokenPathAliases = [],
    pages,
    formKey,
    scopesSupported,
    ...serverOptions
  } = options;
  const context = createOAuthContext(serverOptions);
  const paths = resolveOAuthPaths(pathOptions);
  const metadataOptions: MetadataOptions = scopesSupported === undefined ? {} : { scopesSupported };
  // one key for both form endpoints, so a form rendered by one is accepted by the other
  const forms = { pages, formKey: formKey ?? randomBytes(32) };
  const token = createTokenEndpoint(context);
  const metadata = createMetadataEndpoint(context, paths, metadataOptions);
  const routes: Record<string, MethodTable> = {
    [paths.authorize]: createAuthorizeEndpoint(context, forms),
    [paths.token]: { POST: token },
    [paths.device]: { POST: createDeviceAuthorizationEndpoint(context) },
    [paths.deviceVerify]: createDeviceVerificationEndpoint(context, forms),
    [paths.revoke]: { POST: createRevocationEndpoint(context) },
    [paths.introspect]: { POST: createIntrospectionEndpoint(context) },
    [paths.userinfo]: createUserInfoEndpoint(context),
    [paths.jwks]: { GET: createJwksEndpoint(context) },
  };
  for (const path of metadataPaths(context.issuer)) routes[path] = { GET: metadata };
  for (const alias of tokenPathAliases) routes[alias] = { POST: token };
  return Object.freeze({
    context,
    paths,
    routes: Object.freeze(routes),
    bearer: ownAccessTokens(context),
    metadata: () => authorizationServerMetadata(context, paths, metadataOptions),
  });
}
