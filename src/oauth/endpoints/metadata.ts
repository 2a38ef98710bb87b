import type { Middleware } from '../../core/compose.js';
import type { Duration } from '../../core/duration.js';
import { JSON_TYPE, send } from '../../core/send.js';
import { methods } from '../../http/routing/router.js';
import { VCHARS } from '../../internal/grammar.js';
import { assertKnownOptions, durationOption, invalidOption } from '../../internal/options.js';
import { CLIENT_ASSERTION_ALGORITHMS } from '../clients/assertion.js';
import { DEFAULT_SCOPES } from '../clients/scope.js';
import type { OAuthContext } from '../context.js';
import type { Grant } from '../grants/contract.js';
import { grantRegistry } from '../grants/registry.js';

/** Where the authorization server's endpoints are served, as paths under the issuer. */
export interface OAuthPaths {
  authorize: string;
  /** Pushed authorization requests (RFC 9126). */
  par: string;
  token: string;
  device: string;
  deviceVerify: string;
  revoke: string;
  introspect: string;
  userinfo: string;
  jwks: string;
  /** RP-Initiated Logout 1.0 (`end_session_endpoint`). */
  endSession: string;
  /** Dynamic client registration (RFC 7591, `registration_endpoint`); each client's is below it. */
  register: string;
}

/**
 * The default {@link OAuthPaths}.
 *
 * @example
 * ```ts
 * DEFAULT_OAUTH_PATHS.token; // '/token'
 * createAuthorizationServer({ ...options, paths: { token: '/oauth/token' } });
 * ```
 */
export const DEFAULT_OAUTH_PATHS: Readonly<OAuthPaths> = Object.freeze({
  authorize: '/authorize',
  par: '/par',
  token: '/token',
  device: '/device',
  deviceVerify: '/device/verify',
  revoke: '/revoke',
  introspect: '/introspect',
  userinfo: '/userinfo',
  jwks: '/.well-known/jwks.json',
  endSession: '/session/end',
  register: '/register',
});

/**
 * Options of {@link authorizationServerMetadata} and {@link createMetadataEndpoint}.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc8414#section-2 | RFC 8414 §2}
 */
export interface MetadataOptions {
  /**
   * `scopes_supported`: the scopes clients may ask for (RECOMMENDED, not exhaustive).
   * @defaultValue `['openid', 'profile', 'email', 'offline_access']`
   */
  scopesSupported?: readonly string[];
  /**
   * How long clients may keep the metadata document (`Cache-Control: max-age`, written in
   * whole seconds), in milliseconds.
   * @defaultValue `300_000` (5 minutes)
   */
  maxAge?: Duration;
  /**
   * The grants the token endpoint answers: their types are `grant_types_supported`.
   * @defaultValue `defaultGrants`
   */
  grants?: readonly Grant[];
}

const METADATA_OPTIONS = [
  'scopesSupported',
  'maxAge',
  'grants',
] as const satisfies readonly (keyof MetadataOptions)[];

/**
 * The metadata document (RFC 8414 §2, OpenID Connect Discovery §3).
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc8414#section-2 | RFC 8414 §2}
 */
export interface AuthorizationServerMetadata {
  issuer: string;
  authorization_endpoint: string;
  /** When pushed authorization requests are on (`features`), as is every optional endpoint. */
  pushed_authorization_request_endpoint?: string;
  /** Every client must use PAR (RFC 9126 §5); some may be told so by their registration. */
  require_pushed_authorization_requests?: boolean;
  token_endpoint: string;
  device_authorization_endpoint?: string;
  revocation_endpoint?: string;
  introspection_endpoint?: string;
  userinfo_endpoint?: string;
  jwks_uri: string;
  /** OpenID Connect RP-Initiated Logout 1.0. */
  end_session_endpoint?: string;
  /** Dynamic client registration (RFC 7591 §3), when `features.registration` is on. */
  registration_endpoint?: string;
  response_types_supported: string[];
  response_modes_supported: string[];
  grant_types_supported: string[];
  scopes_supported: string[];
  token_endpoint_auth_methods_supported: string[];
  revocation_endpoint_auth_methods_supported?: string[];
  introspection_endpoint_auth_methods_supported?: string[];
  /** The algorithms of `private_key_jwt` client assertions, at every endpoint that takes them. */
  token_endpoint_auth_signing_alg_values_supported: string[];
  revocation_endpoint_auth_signing_alg_values_supported?: string[];
  introspection_endpoint_auth_signing_alg_values_supported?: string[];
  code_challenge_methods_supported: string[];
  authorization_response_iss_parameter_supported: boolean;
  subject_types_supported: string[];
  id_token_signing_alg_values_supported: string[];
  claims_supported: string[];
  claims_parameter_supported: boolean;
  request_parameter_supported: boolean;
  request_uri_parameter_supported: boolean;
  /** The DPoP proof algorithms the token endpoint takes (RFC 9449 §5.1), when DPoP is on. */
  dpop_signing_alg_values_supported?: string[];
  /** Client ids that are `https` URLs of client metadata documents are taken, when they are on. */
  client_id_metadata_document_supported?: boolean;
}

/** The claims ID tokens and UserInfo may carry (see `claimsForScopes`). */
const CLAIMS = [
  'sub',
  'iss',
  'aud',
  'exp',
  'iat',
  'auth_time',
  'nonce',
  'name',
  'picture',
  'email',
  'email_verified',
];
const PATH_NAMES = Object.keys(DEFAULT_OAUTH_PATHS) as (keyof OAuthPaths)[];

/**
 * The paths with the defaults filled in, each checked to be an absolute path.
 *
 * @example
 * ```ts
 * resolveOAuthPaths({ token: '/oauth/token' }).token; // '/oauth/token'
 * resolveOAuthPaths().jwks; // '/.well-known/jwks.json'
 * ```
 */
export function resolveOAuthPaths(paths: Partial<OAuthPaths> = {}): OAuthPaths {
  assertKnownOptions('OAuthPaths', paths, PATH_NAMES);
  const resolved = { ...DEFAULT_OAUTH_PATHS, ...paths };
  for (const name of PATH_NAMES) {
    const path = resolved[name];
    if (
      typeof path !== 'string' ||
      !path.startsWith('/') ||
      !VCHARS.test(path) ||
      /[?#]/.test(path)
    ) {
      throw invalidOption(`OAuthPaths: \`${name}\` must be a path starting with /`);
    }
  }
  return resolved;
}

/** The issuer without a trailing slash: the base of every endpoint URL. */
function base(issuer: string): string {
  return issuer.endsWith('/') ? issuer.slice(0, -1) : issuer;
}

/**
 * The paths at which the metadata document is looked for: RFC 8414 §3 inserts
 * `/.well-known/oauth-authorization-server` before the issuer's path, OpenID Connect
 * Discovery §4 appends `/.well-known/openid-configuration` to it. For an issuer without a
 * path they are the two well-known paths at the root.
 *
 * @example
 * ```ts
 * metadataPaths('https://auth.example.com');
 * // ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8414#section-3 | RFC 8414 §3}
 */
export function metadataPaths(issuer: string): [string, string] {
  const path = new URL(issuer).pathname.replace(/\/$/, '');
  return [
    `/.well-known/oauth-authorization-server${path}`,
    `${path}/.well-known/openid-configuration`,
  ];
}

/**
 * The authorization server metadata (RFC 8414), also valid as an OpenID Connect Discovery
 * document: the exact issuer string of the tokens and `iss` parameters, every endpoint as
 * the issuer (without a trailing slash) followed by its path, the types of its `grants`
 * (`grant_types_supported`, by default those of `defaultGrants`), PKCE `S256`
 * only, and `authorization_response_iss_parameter_supported: true` (RFC 9207).
 * Client authentication is `client_secret_basic`, `client_secret_post`, `private_key_jwt`
 * (with its assertion algorithms) or `none`; introspection leaves out `none`: it is closed
 * to public clients.
 *
 * @example
 * ```ts
 * const doc = authorizationServerMetadata(ctx, { token: '/oauth/token' });
 * doc.token_endpoint; // 'https://auth.example.com/oauth/token'
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8414#section-2 | RFC 8414 §2}
 * @see {@link https://openid.net/specs/openid-connect-discovery-1_0.html#ProviderMetadata | OpenID Connect Discovery §3}
 */
export function authorizationServerMetadata(
  ctx: OAuthContext,
  paths: Partial<OAuthPaths> = {},
  options: MetadataOptions = {},
): AuthorizationServerMetadata {
  assertKnownOptions('authorizationServerMetadata()', options, METADATA_OPTIONS);
  const p = resolveOAuthPaths(paths);
  const url = (path: string) => base(ctx.issuer) + path;
  const scopes = options.scopesSupported ?? DEFAULT_SCOPES;
  if (!Array.isArray(scopes) || scopes.some((s) => typeof s !== 'string' || s === '')) {
    throw invalidOption('authorizationServerMetadata(): `scopesSupported` must be scope strings');
  }
  const confidential = ['client_secret_basic', 'client_secret_post', 'private_key_jwt'];
  const clientAuth = [...confidential, 'none'];
  const assertionAlgs = () => [...CLIENT_ASSERTION_ALGORITHMS];
  const on = ctx.features;
  return {
    issuer: ctx.issuer,
    authorization_endpoint: url(p.authorize),
    ...(on.pushedAuthorizationRequests && {
      pushed_authorization_request_endpoint: url(p.par),
      require_pushed_authorization_requests: ctx.settings.requirePushedAuthorizationRequests,
    }),
    token_endpoint: url(p.token),
    ...(on.deviceFlow && { device_authorization_endpoint: url(p.device) }),
    ...(on.revocation && { revocation_endpoint: url(p.revoke) }),
    ...(on.introspection && { introspection_endpoint: url(p.introspect) }),
    ...(on.userinfo && { userinfo_endpoint: url(p.userinfo) }),
    jwks_uri: url(p.jwks),
    ...(on.endSession && { end_session_endpoint: url(p.endSession) }),
    ...(on.registration && { registration_endpoint: url(p.register) }),
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: [
      ...grantRegistry('authorizationServerMetadata()', options.grants, ctx.features).keys(),
    ],
    scopes_supported: [...scopes],
    token_endpoint_auth_methods_supported: [...clientAuth],
    ...(on.revocation && {
      revocation_endpoint_auth_methods_supported: [...clientAuth],
      revocation_endpoint_auth_signing_alg_values_supported: assertionAlgs(),
    }),
    ...(on.introspection && {
      introspection_endpoint_auth_methods_supported: confidential,
      introspection_endpoint_auth_signing_alg_values_supported: assertionAlgs(),
    }),
    token_endpoint_auth_signing_alg_values_supported: assertionAlgs(),
    code_challenge_methods_supported: ['S256'],
    authorization_response_iss_parameter_supported: true,
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: [ctx.keys.signingKey().alg],
    claims_supported: [...CLAIMS],
    claims_parameter_supported: false,
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
    ...(ctx.dpop !== undefined && { dpop_signing_alg_values_supported: [...ctx.dpop.algorithms] }),
    ...(ctx.clientMetadataDocuments !== undefined && {
      client_id_metadata_document_supported: true,
    }),
  };
}

/**
 * Serves {@link authorizationServerMetadata} on `GET` (and `HEAD`) as `application/json`
 * with `Cache-Control: public, max-age=300` (`maxAge`, 5 minutes by default); other methods get `405`. Mount the one
 * middleware at both discovery paths (`metadataPaths`):
 * `/.well-known/oauth-authorization-server` (RFC 8414) and
 * `/.well-known/openid-configuration` (OpenID Connect Discovery). The document is built
 * once, here.
 *
 * @example
 * ```ts
 * const metadata = createMetadataEndpoint(ctx);
 * createRouter({
 *   '/.well-known/oauth-authorization-server': metadata,
 *   '/.well-known/openid-configuration': metadata,
 * });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8414#section-3 | RFC 8414 §3}
 */
export function createMetadataEndpoint(
  ctx: OAuthContext,
  paths: Partial<OAuthPaths> = {},
  options: MetadataOptions = {},
): Middleware {
  const body = JSON.stringify(authorizationServerMetadata(ctx, paths, options));
  const maxAge = durationOption('createMetadataEndpoint()', 'maxAge', options.maxAge, 300_000);
  const cacheControl = `public, max-age=${Math.floor(maxAge / 1000)}`;
  const headers = { 'Content-Type': JSON_TYPE, 'Cache-Control': cacheControl };
  return methods({
    GET(_req, res) {
      send(res, 200, body, headers);
    },
  });
}
