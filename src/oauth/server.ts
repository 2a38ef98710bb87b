import { randomBytes } from 'node:crypto';
import type { Authenticator } from '../auth/authenticator.js';
import type { Duration } from '../core/duration.js';
import type { MethodTable } from '../http/routing/router.js';
import { assertGivenOptions, invalidOption } from '../internal/options.js';
import type { RateLimitStore } from '../rate-limit/store.js';
import { clientMetadataDocumentsOption } from './clients/metadata-document.js';
import type { RegistrationOptions } from './clients/registration-policy.js';
import { type UserConsents, userConsents } from './consents.js';
import {
  type AuthorizationServerOptions,
  createOAuthContext,
  type OAuthContext,
} from './context.js';
import { createAuthorizeEndpoint } from './endpoints/authorize.js';
import {
  createDeviceAuthorizationEndpoint,
  createDeviceVerificationEndpoint,
} from './endpoints/device-authorization.js';
import { createEndSessionEndpoint } from './endpoints/end-session.js';
import { createIntrospectionEndpoint } from './endpoints/introspection.js';
import { createJwksEndpoint } from './endpoints/jwks.js';
import {
  type AuthorizationServerMetadata,
  authorizationServerMetadata,
  createMetadataEndpoint,
  type MetadataOptions,
  metadataPaths,
  type OAuthPaths,
  resolveOAuthPaths,
} from './endpoints/metadata.js';
import { createPushedAuthorizationEndpoint } from './endpoints/par.js';
import { createRegistrationEndpoints } from './endpoints/registration.js';
import { createRevocationEndpoint } from './endpoints/revocation.js';
import { createTokenEndpoint } from './endpoints/token.js';
import { createUserInfoEndpoint } from './endpoints/userinfo.js';
import type { Grant } from './grants/contract.js';
import { DEVICE_CODE_GRANT } from './grants/device-code.js';
import { grantRegistry } from './grants/registry.js';
import type { OAuthPages } from './pages/render.js';
import type { ConfiguredResource } from './resources.js';
import { ownAccessTokens } from './tokens/verify.js';

/** Options of {@link createAuthorizationServer}: the server's, and where and how it is served. */
export interface CreateAuthorizationServerOptions extends AuthorizationServerOptions {
  /**
   * The grants of the token endpoint, each answering one `grant_type`: the token endpoint
   * dispatches on them (`unsupported_grant_type` for any other) and the metadata lists their
   * types (`grant_types_supported`). Add one by spreading the defaults
   * (`[...defaultGrants, tokenExchangeGrant({ … })]`), take one away by filtering them.
   * @defaultValue `defaultGrants`: authorization code, refresh token, client credentials, device code
   * @example
   * ```ts
   * grants: [...defaultGrants, tokenExchangeGrant({ targets: [issuer, `${issuer}/mcp`] })],
   * ```
   */
  grants?: readonly Grant[];
  /** Where each endpoint is mounted. @defaultValue `DEFAULT_OAUTH_PATHS` (`portico/oauth`) */
  paths?: Partial<OAuthPaths>;
  /**
   * More paths served by the token endpoint (e.g. `['/oauth/token']`); like every path, under
   * the issuer's own path when it has one.
   * @defaultValue none
   */
  tokenPathAliases?: readonly string[];
  /** HTML pages to use instead of portico's defaults. */
  pages?: Partial<OAuthPages>;
  /**
   * Key of the HMAC that binds the sign-in, consent and device forms. Give the same key to
   * every process of one service.
   * @defaultValue a random key per process
   */
  formKey?: string | Uint8Array;
  /**
   * Scopes advertised in the metadata (`scopes_supported`).
   * @defaultValue `['openid', 'profile', 'email', 'offline_access']`
   */
  scopesSupported?: MetadataOptions['scopesSupported'];
  /**
   * How long verifiers may keep the JWKS (`Cache-Control: max-age`), in milliseconds: keep it
   * at most the key set's `publishAheadMs` so verifiers see a new key before it signs.
   * @defaultValue `300_000` (5 minutes)
   */
  jwksMaxAge?: Duration;
  /**
   * Lifetime of the sign-in, consent and device forms, in milliseconds (at least `1_000`).
   * @defaultValue `900_000` (15 minutes)
   */
  formTtl?: Duration;
  /**
   * User codes a user may try per `deviceFailureWindow` at the device page, a right one
   * included (each is counted before it is looked up). @defaultValue `5`
   */
  deviceMaxFailures?: number;
  /**
   * The window of `deviceMaxFailures`, in milliseconds (at least `1_000`).
   * @defaultValue `900_000` (15 minutes)
   */
  deviceFailureWindow?: Duration;
  /**
   * Where user codes are counted: a shared store (`RedisRateLimitStore`) when several
   * processes serve the issuer. @defaultValue in memory
   */
  deviceFailureStore?: RateLimitStore;
  /**
   * The policy of dynamic client registration (RFC 7591), with `features: { registration:
   * true }`: who may register (open, or an initial access token), which redirect URIs, auth
   * methods, grant types and scopes, a `review` hook, and the throttle per client IP.
   * @defaultValue open, 10 registrations per client IP per hour, the safe shapes only
   * @example
   * ```ts
   * createAuthorizationServer({ ...options, features: { registration: true }, registration: { limit: 5 } });
   * ```
   */
  registration?: RegistrationOptions;
}

/** An authorization server: its routes for a router, and an authenticator for its own tokens. */
export interface AuthorizationServer {
  readonly context: OAuthContext;
  readonly paths: OAuthPaths;
  /** Every endpoint by path, for `createRouter({ ...server.routes })`. */
  readonly routes: Readonly<Record<string, MethodTable>>;
  /**
   * Verifies this server's access tokens for its default resource (the first of `resources`):
   * a token for another resource only is refused (401 `invalid_token`).
   */
  readonly bearer: Authenticator;
  /** The resources tokens are issued for (RFC 8707), the default one first. */
  readonly resources: readonly ConfiguredResource[];
  /**
   * Verifies this server's access tokens for one configured resource (RFC 8707): a token
   * whose `aud` does not include `identifier` is refused (401 `invalid_token`). An identifier
   * that is not configured is a `TypeError`, at once. One authenticator per identifier, made
   * once.
   *
   * @example
   * ```ts
   * const mcpAuth = authenticate([server.bearerFor('https://api.example.com/mcp')]);
   * ```
   */
  bearerFor(identifier: string): Authenticator;
  /**
   * Each user's authorized applications: list them, and revoke one (its tokens stop working,
   * its streams end, the consent is forgotten), for a "your authorized apps" page or API.
   */
  readonly consents: UserConsents;
  /** The RFC 8414 / OpenID Connect Discovery metadata. */
  metadata(): AuthorizationServerMetadata;
}

/**
 * The device flow's switch as the grants decide it: on only when the device grant is one of
 * them; switched on explicitly without it, the server refuses to start.
 */
function withDeviceFlow(
  options: AuthorizationServerOptions,
  hasDeviceGrant: boolean,
): AuthorizationServerOptions {
  const { features } = options;
  if (
    hasDeviceGrant ||
    features === null ||
    (features !== undefined && typeof features !== 'object')
  ) {
    return options;
  }
  if (features?.deviceFlow === true) {
    throw invalidOption(
      'createAuthorizationServer(): `features.deviceFlow` needs the device grant in `grants`',
    );
  }
  return { ...options, features: { ...features, deviceFlow: false } };
}

/**
 * Builds a complete OAuth 2.0 / OpenID Connect authorization server: authorization code with
 * PKCE, refresh tokens with rotation, client credentials and the device flow, revocation,
 * introspection, UserInfo, JWKS and discovery metadata, as routes for portico's router.
 * PKCE (`S256`) is required of every client at the authorization endpoint.
 *
 * Give it a credential guard (`guard`, see `createCredentialGuard()`) to throttle guessing:
 * wrong passwords at the sign-in forms of `/authorize` and `/device/verify` and failed client
 * authentication are counted per client IP, and a spent client is answered 429 before any
 * password is checked. The same guard given to `authenticate()` and to the WebSocket upgrade
 * makes one budget: refusals on any surface count against all of them.
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
 * @example One budget of refused credentials for the sign-in forms, the API and WebSockets:
 * ```ts
 * const store = new RedisRateLimitStore({ client: redis, prefix: 'refused:' });
 * const guard = createCredentialGuard({ store });
 * const auth = createAuthorizationServer({ ...options, guard });
 * const api = authenticate([auth.bearer, apiKeys], { guard });
 * const authenticators = [auth.bearer];
 * const upgrade = createUpgradeHandler({ path: '/ws', authenticators, guard, onConnection });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749 | RFC 6749}, {@link https://www.rfc-editor.org/rfc/rfc9700 | RFC 9700}
 */
export function createAuthorizationServer(
  options: CreateAuthorizationServerOptions,
): AuthorizationServer {
  // `formKey: process.env.FORM_KEY` unset would be a random key per process
  assertGivenOptions('createAuthorizationServer()', options, ['formKey']);
  const {
    paths: pathOptions,
    tokenPathAliases = [],
    pages,
    formKey,
    formTtl,
    scopesSupported,
    jwksMaxAge,
    deviceMaxFailures,
    deviceFailureWindow,
    deviceFailureStore,
    grants,
    registration,
    ...serverOptions
  } = options;
  // checked here, under this name; the device flow follows its grant unless switched on
  const registry = grantRegistry('createAuthorizationServer()', grants);
  // document clients may ask for the scopes the server advertises
  const documents = clientMetadataDocumentsOption(
    'createAuthorizationServer()',
    serverOptions.clientMetadataDocuments,
    scopesSupported,
  );
  const context = createOAuthContext(
    withDeviceFlow(
      documents === undefined
        ? serverOptions
        : { ...serverOptions, clientMetadataDocuments: documents },
      registry.has(DEVICE_CODE_GRANT),
    ),
  );
  const paths = resolveOAuthPaths(pathOptions);
  // an issuer with a path (https://host/auth) serves its endpoints under that path
  const prefix = new URL(context.issuer).pathname.replace(/\/$/, '');
  const metadataOptions: MetadataOptions = {
    ...(scopesSupported !== undefined && { scopesSupported }),
    ...(grants !== undefined && { grants }),
  };
  // one key for every form endpoint, so a form rendered by one is accepted by another
  const forms = {
    pages,
    formKey: formKey ?? randomBytes(32),
    ...(formTtl === undefined ? {} : { formTtl }),
  };
  const token = createTokenEndpoint(context, grants === undefined ? {} : { grants });
  const metadata = createMetadataEndpoint(context, paths, metadataOptions);
  const at = (path: string) => `${prefix}${path}`;
  const on = context.features;
  const routes: Record<string, MethodTable> = {
    [at(paths.authorize)]: createAuthorizeEndpoint(context, forms),
    [at(paths.token)]: { POST: token },
    [at(paths.jwks)]: {
      GET: createJwksEndpoint(context, jwksMaxAge === undefined ? {} : { maxAge: jwksMaxAge }),
    },
  };
  // the optional endpoints: one that is off is not routed at all (and not in discovery)
  if (on.endSession) routes[at(paths.endSession)] = createEndSessionEndpoint(context, forms);
  if (on.pushedAuthorizationRequests) {
    routes[at(paths.par)] = { POST: createPushedAuthorizationEndpoint(context) };
  }
  if (on.deviceFlow) {
    const verificationUri = `${context.issuer.replace(/\/$/, '')}${paths.deviceVerify}`;
    routes[at(paths.device)] = {
      POST: createDeviceAuthorizationEndpoint(context, { verificationUri }),
    };
    routes[at(paths.deviceVerify)] = createDeviceVerificationEndpoint(context, {
      ...forms,
      ...(deviceMaxFailures === undefined ? {} : { maxFailures: deviceMaxFailures }),
      ...(deviceFailureWindow === undefined ? {} : { failureWindow: deviceFailureWindow }),
      ...(deviceFailureStore === undefined ? {} : { failureStore: deviceFailureStore }),
    });
  }
  if (on.revocation) routes[at(paths.revoke)] = { POST: createRevocationEndpoint(context) };
  if (on.introspection) {
    routes[at(paths.introspect)] = { POST: createIntrospectionEndpoint(context) };
  }
  if (on.userinfo) routes[at(paths.userinfo)] = createUserInfoEndpoint(context);
  if (on.registration) {
    const { register, manage } = createRegistrationEndpoints(context, {
      policy: registration,
      registrationUri: `${context.issuer.replace(/\/$/, '')}${paths.register}`,
      scopes: authorizationServerMetadata(context, paths, metadataOptions).scopes_supported,
    });
    routes[at(paths.register)] = register;
    routes[`${at(paths.register)}/:client_id`] = manage;
  } else if (registration !== undefined) {
    throw invalidOption(
      'createAuthorizationServer(): `registration` needs `features: { registration: true }`',
    );
  }
  // the discovery documents' own paths already follow the issuer's (RFC 8414 §3)
  for (const path of metadataPaths(context.issuer)) routes[path] = { GET: metadata };
  for (const alias of tokenPathAliases) routes[at(alias)] = { POST: token };
  // this server's own tokens, DPoP-bound ones too (with their proofs, at the issuer's origin)
  const dpop =
    context.dpop === undefined
      ? {}
      : { dpop: { origin: new URL(context.issuer).origin, verifier: context.dpop } };
  const bearer = ownAccessTokens(context, dpop);
  const bearers = new Map<string, Authenticator>([[context.resources[0]!.identifier, bearer]]);
  const bearerFor = (identifier: string): Authenticator => {
    const resource = context.resources.find((held) => held.identifier === identifier);
    if (resource === undefined) {
      throw invalidOption(
        `bearerFor(): ${String(identifier)} is not one of the configured resources (${context.resources.map((held) => held.identifier).join(', ')})`,
      );
    }
    let found = bearers.get(resource.identifier);
    if (found === undefined) {
      found = ownAccessTokens(context, { ...dpop, resource: resource.identifier });
      bearers.set(resource.identifier, found);
    }
    return found;
  };
  return Object.freeze({
    context,
    paths,
    routes: Object.freeze(routes),
    bearer,
    resources: context.resources,
    bearerFor,
    consents: userConsents(context),
    metadata: () => authorizationServerMetadata(context, paths, metadataOptions),
  });
}
