import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Middleware } from '../core/compose.js';
import type { Duration } from '../core/duration.js';
import { JSON_TYPE, send } from '../core/send.js';
import { isToken } from '../internal/grammar.js';
import {
  assertKnownOptions,
  booleanOption,
  durationOption,
  invalidOption,
} from '../internal/options.js';
import { assertScopeTokens } from './scopes.js';

/**
 * Options of {@link protectedResource}: what RFC 9728 §2 lets a resource say of itself, in
 * camelCase (`scopesSupported` is `scopes_supported`), and how long it may be cached.
 */
export interface ProtectedResourceOptions {
  /**
   * The resource's identifier (RFC 9728 §1.2, RFC 8707 §2): an absolute `https` (or `http`)
   * URI without a fragment, query or user info, used exactly as given (the `resource` of the
   * document, the audience tokens for it carry).
   */
  resource: string;
  /** Issuer identifiers of the authorization servers whose tokens it takes. @defaultValue none */
  authorizationServers?: readonly string[];
  /** Where the resource's own signing keys are published. @defaultValue none */
  jwksUri?: string;
  /** The scopes the resource understands. @defaultValue none */
  scopesSupported?: readonly string[];
  /**
   * How it takes bearer tokens (RFC 6750 §2): `header`, `body`, `query`; `[]` for none.
   * @defaultValue `['header']`
   */
  bearerMethodsSupported?: readonly ('header' | 'body' | 'query')[];
  /** JWS algorithms of the resource's signed answers. @defaultValue none */
  resourceSigningAlgValuesSupported?: readonly string[];
  /** A name for people (RFC 9728 §2). @defaultValue none */
  resourceName?: string;
  /** A page for developers about the resource. @defaultValue none */
  resourceDocumentation?: string;
  /** Its policy page. @defaultValue none */
  resourcePolicyUri?: string;
  /** Its terms of service. @defaultValue none */
  resourceTosUri?: string;
  /** Whether it takes mutual-TLS bound tokens (RFC 8705). @defaultValue none */
  tlsClientCertificateBoundAccessTokens?: boolean;
  /** `authorization_details` types it understands (RFC 9396). @defaultValue none */
  authorizationDetailsTypesSupported?: readonly string[];
  /** JWS algorithms of the DPoP proofs it accepts (RFC 9449). @defaultValue none */
  dpopSigningAlgValuesSupported?: readonly string[];
  /** Whether it takes DPoP-bound tokens only. @defaultValue none */
  dpopBoundAccessTokensRequired?: boolean;
  /**
   * How long clients and caches may keep the document (`Cache-Control: public, max-age`, in
   * whole seconds), in milliseconds.
   * @defaultValue `3_600_000` (1 hour)
   */
  maxAge?: Duration;
}

/** The RFC 9728 §2 metadata document of a protected resource, as served. */
export interface ProtectedResourceMetadata {
  readonly resource: string;
  readonly authorization_servers?: readonly string[];
  readonly jwks_uri?: string;
  readonly scopes_supported?: readonly string[];
  readonly bearer_methods_supported: readonly string[];
  readonly resource_signing_alg_values_supported?: readonly string[];
  readonly resource_name?: string;
  readonly resource_documentation?: string;
  readonly resource_policy_uri?: string;
  readonly resource_tos_uri?: string;
  readonly tls_client_certificate_bound_access_tokens?: boolean;
  readonly authorization_details_types_supported?: readonly string[];
  readonly dpop_signing_alg_values_supported?: readonly string[];
  readonly dpop_bound_access_tokens_required?: boolean;
}

/**
 * A protected resource, as {@link protectedResource} made it: its identifier, where its
 * metadata is served, the document, and the routes that serve it. Give it to
 * `authenticate()`, `requireScopes()` and the WebSocket upgrade as `resource`: their
 * challenges then carry `resource_metadata`.
 */
export interface ProtectedResource {
  /** The resource's identifier, exactly as given. */
  readonly identifier: string;
  /**
   * The URL of its metadata (RFC 9728 §3.1): `/.well-known/oauth-protected-resource` inserted
   * between the host and the path (`https://h/mcp` →
   * `https://h/.well-known/oauth-protected-resource/mcp`).
   */
  readonly metadataUrl: string;
  /** The path of {@link ProtectedResource.metadataUrl}, where `routes` serves it. */
  readonly metadataPath: string;
  /** The document, frozen. */
  readonly metadata: ProtectedResourceMetadata;
  /**
   * The metadata route, a method table (`GET`, `HEAD`, `OPTIONS` answering a CORS preflight),
   * for `createRouter({ ...routes })`.
   */
  readonly routes: Readonly<
    Record<string, Readonly<Record<'GET' | 'HEAD' | 'OPTIONS', Middleware>>>
  >;
}

const OWNER = 'protectedResource()';
const WELL_KNOWN = '/.well-known/oauth-protected-resource';

const KNOWN = [
  'resource',
  'authorizationServers',
  'jwksUri',
  'scopesSupported',
  'bearerMethodsSupported',
  'resourceSigningAlgValuesSupported',
  'resourceName',
  'resourceDocumentation',
  'resourcePolicyUri',
  'resourceTosUri',
  'tlsClientCertificateBoundAccessTokens',
  'authorizationDetailsTypesSupported',
  'dpopSigningAlgValuesSupported',
  'dpopBoundAccessTokensRequired',
  'maxAge',
] as const satisfies readonly (keyof ProtectedResourceOptions)[];

/** The resources {@link protectedResource} made: what `resource` options accept. */
const made = new WeakSet<object>();

/** An absolute http(s) URL option, without a fragment or user info. */
function urlOption(name: string, value: unknown, query = true): URL {
  let url: URL | undefined;
  try {
    url = typeof value === 'string' ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
    throw invalidOption(`${OWNER}: \`${name}\` must be an absolute https (or http) URL`);
  }
  if ((value as string).includes('#') || url.username !== '' || url.password !== '') {
    throw invalidOption(`${OWNER}: \`${name}\` must have no fragment and no user info`);
  }
  if (!query && (value as string).includes('?')) {
    throw invalidOption(`${OWNER}: \`${name}\` must have no query`);
  }
  return url;
}

function optionalUrl(name: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  urlOption(name, value);
  return value as string;
}

/** A list of tokens (algorithms, types), non-empty, without duplicates. */
function tokenList(name: string, value: unknown, refused?: string): string[] | undefined {
  if (value === undefined) return undefined;
  if (
    !Array.isArray(value) ||
    value.length === 0 ||
    value.some((v) => !isToken(v) || v === refused) ||
    new Set(value).size !== value.length
  ) {
    throw invalidOption(
      `${OWNER}: \`${name}\` must be a non-empty list of distinct names${refused === undefined ? '' : ` (not \`${refused}\`)`}`,
    );
  }
  return Object.freeze(value.slice()) as string[];
}

/** Whether `value` is a resource {@link protectedResource} made. */
export function isProtectedResource(value: unknown): value is ProtectedResource {
  return typeof value === 'object' && value !== null && made.has(value);
}

/**
 * A `resource` option of another factory (`authenticate()`, the upgrade): `undefined` or a
 * resource {@link protectedResource} made.
 */
export function resourceOption(owner: string, value: unknown): ProtectedResource | undefined {
  if (value === undefined || isProtectedResource(value)) return value;
  throw invalidOption(`${owner}: \`resource\` must be made by protectedResource()`);
}

/**
 * Describes a protected resource (OAuth 2.0 Protected Resource Metadata, RFC 9728): its
 * identifier, the authorization servers whose tokens it takes, the scopes it understands, how
 * it takes tokens. The answer's `routes` serve the document at its well-known URL (the
 * path-suffixed form of §3.1 for an identifier with a path) on `GET` and `HEAD`: JSON,
 * `Cache-Control: public, max-age=…`, readable by any origin without credentials
 * (`Access-Control-Allow-Origin: *`, `Cross-Origin-Resource-Policy: cross-origin`; a CORS
 * preflight is answered there too, so mount the routes before a credentialed `cors()`).
 *
 * Give the resource to `authenticate()`, `requireScopes()` and `createUpgradeHandler()` as
 * `resource`: every `Bearer` and `DPoP` challenge they send then carries
 * `resource_metadata="<metadataUrl>"`, the way MCP clients and other agents find the
 * authorization server from a 401. Options are checked once (an unknown one is a `TypeError`
 * with a "did you mean").
 *
 * @example
 * ```ts
 * const api = protectedResource({
 *   resource: 'https://api.example.com/mcp',
 *   authorizationServers: ['https://auth.example.com'],
 *   scopesSupported: ['read:messages', 'write:messages'],
 *   resourceName: 'Example MCP server',
 * });
 * api.metadataUrl; // 'https://api.example.com/.well-known/oauth-protected-resource/mcp'
 * const auth = authenticate([bearer], { resource: api });
 * createRouter({ ...api.routes, '/mcp': { POST: compose([auth, mcp]) } });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9728 | RFC 9728}
 */
export function protectedResource(options: ProtectedResourceOptions): ProtectedResource {
  if (options === null || typeof options !== 'object') {
    throw invalidOption(`${OWNER}: give the options, with \`resource\``);
  }
  assertKnownOptions(OWNER, options, KNOWN);
  const url = urlOption('resource', options.resource, false);
  const identifier = options.resource;
  const path = url.pathname === '/' ? '' : url.pathname;
  // the router's patterns start a segment with `:`; such an identifier would name a pattern
  if (path.split('/').some((segment) => segment.startsWith(':'))) {
    throw invalidOption(`${OWNER}: \`resource\` must have no path segment starting with ':'`);
  }
  const metadataPath = `${WELL_KNOWN}${path}`;
  const metadataUrl = `${url.origin}${metadataPath}`;
  const servers = options.authorizationServers;
  if (servers !== undefined) {
    if (!Array.isArray(servers) || servers.length === 0) {
      throw invalidOption(`${OWNER}: \`authorizationServers\` must be a non-empty list of issuers`);
    }
    for (const issuer of servers) urlOption('authorizationServers', issuer, false);
  }
  const scopes = options.scopesSupported;
  if (scopes !== undefined) {
    if (!Array.isArray(scopes) || new Set(scopes).size !== scopes.length) {
      throw invalidOption(`${OWNER}: \`scopesSupported\` must be a list of distinct scopes`);
    }
    assertScopeTokens(OWNER, scopes);
  }
  const bearerMethods = options.bearerMethodsSupported ?? ['header'];
  if (
    !Array.isArray(bearerMethods) ||
    bearerMethods.some((m) => m !== 'header' && m !== 'body' && m !== 'query') ||
    new Set(bearerMethods).size !== bearerMethods.length
  ) {
    throw invalidOption(
      `${OWNER}: \`bearerMethodsSupported\` must list 'header', 'body' or 'query' (or be [])`,
    );
  }
  const text = (name: 'resourceName', value: unknown) => {
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || value.trim() === '' || value.length > 200) {
      throw invalidOption(`${OWNER}: \`${name}\` must be a non-empty string of at most 200`);
    }
    return value;
  };
  const flag = (
    name: 'tlsClientCertificateBoundAccessTokens' | 'dpopBoundAccessTokensRequired',
    value: unknown,
  ) => (value === undefined ? undefined : booleanOption(OWNER, name, value, false));
  const maxAge = durationOption(OWNER, 'maxAge', options.maxAge, 3_600_000);

  const entries: [string, unknown][] = [
    ['resource', identifier],
    ['authorization_servers', servers === undefined ? undefined : Object.freeze([...servers])],
    ['jwks_uri', optionalUrl('jwksUri', options.jwksUri)],
    ['scopes_supported', scopes === undefined ? undefined : Object.freeze([...scopes])],
    ['bearer_methods_supported', Object.freeze([...bearerMethods])],
    [
      'resource_signing_alg_values_supported',
      tokenList(
        'resourceSigningAlgValuesSupported',
        options.resourceSigningAlgValuesSupported,
        'none',
      ),
    ],
    ['resource_name', text('resourceName', options.resourceName)],
    ['resource_documentation', optionalUrl('resourceDocumentation', options.resourceDocumentation)],
    ['resource_policy_uri', optionalUrl('resourcePolicyUri', options.resourcePolicyUri)],
    ['resource_tos_uri', optionalUrl('resourceTosUri', options.resourceTosUri)],
    [
      'tls_client_certificate_bound_access_tokens',
      flag('tlsClientCertificateBoundAccessTokens', options.tlsClientCertificateBoundAccessTokens),
    ],
    [
      'authorization_details_types_supported',
      tokenList('authorizationDetailsTypesSupported', options.authorizationDetailsTypesSupported),
    ],
    [
      'dpop_signing_alg_values_supported',
      tokenList('dpopSigningAlgValuesSupported', options.dpopSigningAlgValuesSupported, 'none'),
    ],
    [
      'dpop_bound_access_tokens_required',
      flag('dpopBoundAccessTokensRequired', options.dpopBoundAccessTokensRequired),
    ],
  ];
  const metadata = Object.freeze(
    Object.fromEntries(entries.filter(([, v]) => v !== undefined)),
  ) as unknown as ProtectedResourceMetadata;
  const body = JSON.stringify(metadata);
  const headers = {
    'Content-Type': JSON_TYPE,
    'Cache-Control': `public, max-age=${Math.floor(maxAge / 1000)}`,
  };
  /** Readable by any origin, without credentials (a credentialed cors() may have run first). */
  const anyOrigin = (res: ServerResponse) => {
    res.removeHeader('Access-Control-Allow-Credentials');
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Cross-Origin-Resource-Policy', 'cross-origin');
  };
  const serve = (_req: IncomingMessage, res: ServerResponse) => {
    anyOrigin(res);
    send(res, 200, body, headers);
  };
  const preflight = (req: IncomingMessage, res: ServerResponse) => {
    res.setHeader('Allow', 'GET, HEAD, OPTIONS');
    if (req.headers.origin !== undefined && req.headers['access-control-request-method']) {
      anyOrigin(res);
      res.setHeader('Access-Control-Allow-Methods', 'GET, HEAD');
      // without credentials, `*` allows any request header (MCP-Protocol-Version, say)
      res.setHeader('Access-Control-Allow-Headers', '*');
      res.setHeader('Access-Control-Max-Age', '86400');
    }
    res.statusCode = 204;
    res.end();
  };
  const resource: ProtectedResource = Object.freeze({
    identifier,
    metadataUrl,
    metadataPath,
    metadata,
    routes: Object.freeze({
      // in the router's normal form: percent-encoded unreserved characters decoded
      [metadataPath.replace(/%[0-9A-Fa-f]{2}/g, (encoded) => {
        const char = String.fromCharCode(Number.parseInt(encoded.slice(1), 16));
        return /[A-Za-z0-9\-._~]/.test(char) ? char : encoded;
      })]: Object.freeze({ GET: serve, HEAD: serve, OPTIONS: preflight }),
    }),
  });
  made.add(resource);
  return resource;
}
