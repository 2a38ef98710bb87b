import { type CredentialGuard, guardOption } from '../auth/credential-guard.js';
import {
  createDpopVerifier,
  type DpopVerifier,
  type DpopVerifierOptions,
} from '../auth/dpop/dpop.js';
import { MemoryReplayStore, type ReplayStore } from '../auth/replay/store.js';
import { processRevocations, type Revocations } from '../auth/revocations.js';
import type { Sessions } from '../auth/session/session.js';
import type { Duration } from '../core/duration.js';
import { type Logger, loggerOption } from '../core/logger.js';
import {
  assertKnownOptions,
  assertNotThenable,
  durationOption,
  invalidOption,
} from '../internal/options.js';
import { createClientAuthenticator } from './clients/authentication.js';
import type { OAuthClient } from './clients/client.js';
import {
  type ClientMetadataDocumentOptions,
  type ClientMetadataDocuments,
  clientMetadataDocumentsOption,
  withClientMetadataDocuments,
} from './clients/metadata-document.js';
import type { ClientStore } from './clients/store.js';
import {
  type AuthorizationServerFeatures,
  type ResolvedFeatures,
  resolveFeatures,
} from './features.js';
import { type ConfiguredResource, type ResourceDefinition, resolveResources } from './resources.js';
import { MemoryRecordStore, type RecordStore } from './store/store.js';
import type { TokenContext } from './tokens/context.js';
import {
  createTokenIssuer,
  type IdTokenClaimRelease,
  type TokenIssuer,
  type UserClaims,
} from './tokens/issue.js';
import type { KeySet } from './tokens/key-set.js';

/** The app's users, as the authorization server needs them. */
export interface OAuthUsers {
  /** Checks a sign-in; `undefined` for wrong credentials (take the same time either way). */
  verify(
    username: string,
    password: string,
  ): Promise<UserClaims | undefined> | UserClaims | undefined;
  /** The claims of a user, for ID tokens and UserInfo; `undefined` if the user is gone. */
  get(sub: string): Promise<UserClaims | undefined> | UserClaims | undefined;
}

/** Options of the authorization server. */
export interface AuthorizationServerOptions {
  /** The issuer identifier: one exact string in metadata, tokens and `iss` parameters. */
  issuer: string;
  /**
   * The resources access tokens are for (RFC 8707): each `{ identifier, scopes?, name? }`, an
   * identifier being an absolute URI without a fragment, unique. A client names one or several
   * with `resource` at `/authorize`, `/par`, `/device` and `/token`; a token is for those
   * (`aud`), for the first (the default resource) when no `resource` is named anywhere.
   * Replaces `audience`: `audience: X` is `resources: [{ identifier: X }]`.
   * @defaultValue `[{ identifier: issuer }]`
   * @example
   * ```ts
   * resources: [{ identifier: 'https://api.example.com' }, { identifier: 'https://api.example.com/mcp', scopes: ['read:messages'] }],
   * ```
   */
  resources?: readonly ResourceDefinition[];
  /** The registered clients. */
  clients: ClientStore;
  /**
   * OAuth Client ID Metadata Documents: a client id that is an `https` URL with a path, and no
   * client of `clients`, is the client its document there describes (fetched through the
   * address guard, validated, cached; see `createClientMetadataDocuments()`). `true` for the
   * defaults (the document clients' scopes are then the server's `scopesSupported`), options,
   * or a resolver. Discovery says `client_id_metadata_document_supported: true`.
   * @defaultValue off: such a client id is an unknown client
   */
  clientMetadataDocuments?: boolean | ClientMetadataDocumentOptions | ClientMetadataDocuments;
  /** The keys that sign access and ID tokens, published at the JWKS endpoint. */
  keys: KeySet;
  /** Checks user credentials at sign-in and gives the claims of a user. */
  users: OAuthUsers;
  /** Who is signed in at `/authorize` and `/device/verify`: portico's cookie sessions. */
  sessions: Sessions;
  /**
   * Where codes, device codes, refresh tokens and revoked grants live; share one (Redis) between
   * the processes of one server.
   * @defaultValue a new {@link MemoryRecordStore}
   */
  store?: RecordStore;
  /** Access token lifetime, in milliseconds. @defaultValue `900_000` (15 minutes) */
  accessTokenTtl?: Duration;
  /** ID token lifetime, in milliseconds. @defaultValue `3_600_000` (1 hour) */
  idTokenTtl?: Duration;
  /**
   * Which user claims ID tokens carry: `'scope'`, those the granted scopes release (OpenID
   * Connect Core §5.4); `'all'`, every standard claim the user has whenever `openid` is
   * granted. UserInfo answers by scope either way.
   * @defaultValue `'scope'`
   */
  idTokenClaims?: IdTokenClaimRelease;
  /** Authorization code lifetime, in milliseconds (at most `60_000`). @defaultValue `60_000` (1 minute) */
  codeTtl?: Duration;
  /**
   * Absolute lifetime of a refresh-token family, in milliseconds.
   * @defaultValue `2_592_000_000` (30 days)
   */
  refreshTokenTtl?: Duration;
  /**
   * How long the refresh token just rotated may be used again by the same client (two tabs
   * refreshing at once) and get the same successor's family, instead of counting as reuse, in
   * milliseconds (at most `60_000`). Off by default; never weakens reuse detection after it.
   * @defaultValue `0` (off)
   */
  refreshGracePeriod?: Duration;
  /** Device code lifetime, in milliseconds. @defaultValue `600_000` (10 minutes) */
  deviceCodeTtl?: Duration;
  /**
   * Device polling interval, in milliseconds; the device is told whole seconds (RFC 8628
   * `interval`, rounded up). @defaultValue `5_000` (5 seconds)
   */
  devicePollInterval?: Duration;
  /**
   * Counts refused credentials per client IP: wrong passwords at the sign-in forms of
   * `/authorize` and `/device/verify`, failed client authentication at the token, PAR,
   * revocation, introspection and device endpoints, and at the token endpoint refused grants
   * (`invalid_grant`), DPoP proofs and client assertions too. Give the same guard as to
   * `authenticate()` and the WebSocket upgrade, so that they share one budget.
   * @defaultValue none
   */
  guard?: CredentialGuard;
  /**
   * Where the end of a grant or a token is announced (revocation, refresh-token reuse, a code
   * replayed), so that the streams opened with its tokens end.
   * @defaultValue `processRevocations()`, this process
   */
  revocations?: Revocations;
  /**
   * DPoP (RFC 9449) at the token endpoint: a request with a valid `DPoP` proof gets access
   * tokens bound to the proof's key (`cnf.jkt`, `token_type: DPoP`), and a public client's
   * refresh token bound to it too. The proof checks of `createDpopVerifier` (algorithms,
   * `maxAge`, the `replay` store shared by the processes of one service, apart from the
   * client assertions' `replay`); `false` turns DPoP off (a `DPoP` header is then ignored, and
   * clients requiring bound tokens are refused). A proof's `jti` is recorded only once the
   * rest of its request holds (the client, the grant; at a resource, the token and its binding).
   * @defaultValue `{}`: on, with the verifier's defaults (a `MemoryReplayStore` of its own)
   * @example
   * ```ts
   * const dpop = { maxAge: 60_000, replay: new RedisReplayStore({ client, prefix: 'app:dpop:' }) };
   * ```
   */
  dpop?: DpopVerifierOptions | false;
  /**
   * Which optional endpoints exist (the device flow, PAR, introspection, revocation,
   * end-session, UserInfo); discovery lists only those that are on.
   * @defaultValue every one on
   * @example
   * ```ts
   * createAuthorizationServer({ ...options, features: { deviceFlow: false, introspection: false } });
   * ```
   */
  features?: AuthorizationServerFeatures;
  /**
   * Every client must push its authorization requests to `/par` (RFC 9126 §5,
   * `require_pushed_authorization_requests`); a request sent straight to `/authorize` is
   * refused. Per client: `requirePushedAuthorizationRequests` in `defineClient`.
   * @defaultValue `false`
   */
  requirePushedAuthorizationRequests?: boolean;
  /**
   * How long a pushed authorization request's `request_uri` may be used, in milliseconds (at
   * most `600_000`); it is used once.
   * @defaultValue `60_000` (1 minute)
   */
  pushedRequestTtl?: Duration;
  /**
   * Holds clients to the FAPI 2.0 Security Profile: `true` for every client, or the ids of
   * the clients it applies to. Such a client must push its authorization requests (with a
   * `redirect_uri`), authenticate with `private_key_jwt` (PS256, ES256 or EdDSA, `aud` the
   * issuer alone), get DPoP-bound tokens only (proofs in PS256, ES256 or EdDSA), and keeps its
   * refresh token (no rotation). The server must sign with ES256 or EdDSA. What else the
   * profile asks is done for every client already, or left to the deployment: see
   * docs/oauth.md, "FAPI 2.0".
   * @defaultValue `false`
   */
  fapi2?: boolean | readonly string[];
  /**
   * Where the `jti` of client assertions (`private_key_jwt`) are remembered, so that each is
   * accepted once, charged to its client. DPoP proofs have a store of their own
   * (`dpop.replay`), so that neither can fill the other's: give `dpop.replay` too when you
   * give this one. Share each (`RedisReplayStore` from `portico/redis`, one prefix each)
   * between the processes of one server.
   * @defaultValue a new `MemoryReplayStore`
   * @example
   * ```ts
   * const server = createAuthorizationServer({
   *   ...options,
   *   replay: new RedisReplayStore({ client, prefix: 'app:assertion:' }),
   *   dpop: { replay: new RedisReplayStore({ client, prefix: 'app:dpop:' }) },
   * });
   * ```
   */
  replay?: ReplayStore;
  /**
   * Identity brokering: the sign-in pages of `/authorize` and `/device/verify` also link to
   * these upstream providers (`createSignIn()` of `portico/client` is one), each link returning
   * to the pending request once the user is signed in there (portico's session).
   * @defaultValue none: the username and password form only
   * @example
   * ```ts
   * const signIn = createSignIn({ ...options, providers: [google] });
   * const server = createAuthorizationServer({ ...options, signInWith: signIn });
   * ```
   */
  signInWith?: { links(returnTo: string): readonly SignInLink[] };
  /**
   * Where the authorization server logs: an `error` line when an endpoint fails unexpectedly
   * (its answer is then `server_error`), never a parameter, header or secret. A pino logger
   * is passed as it is.
   * @defaultValue portico's default logger (errors on stderr)
   */
  logger?: Logger;
}

/**
 * A link of the sign-in pages to an upstream provider (identity brokering): its label and
 * where it goes.
 *
 * @example
 * ```ts
 * const link: SignInLink = { label: 'Google', href: '/login/google?returnTo=%2Fauthorize' };
 * ```
 */
export interface SignInLink {
  readonly label: string;
  readonly href: string;
}

/** Everything the endpoints share, built once from {@link AuthorizationServerOptions}. */
export interface OAuthContext extends TokenContext {
  readonly issuer: string;
  readonly clients: ClientStore;
  /** The resolver of client metadata documents, when they are on. */
  readonly clientMetadataDocuments?: ClientMetadataDocuments | undefined;
  readonly keys: KeySet;
  readonly users: OAuthUsers;
  readonly sessions: Sessions;
  readonly store: RecordStore;
  readonly tokens: TokenIssuer;
  /** The resources tokens are issued for (RFC 8707), the default one first. */
  readonly resources: readonly ConfiguredResource[];
  readonly authenticateClient: ReturnType<typeof createClientAuthenticator>;
  /** The guard of refused credentials, when one was given. */
  readonly guard: CredentialGuard | undefined;
  /** Where ended grants and tokens are announced. */
  readonly revocations: Revocations;
  /** Where the endpoints log. */
  readonly logger: Logger;
  /** The DPoP proof verifier of the token endpoint, unless DPoP is off. */
  readonly dpop: DpopVerifier | undefined;
  /** Whether a client is held to the FAPI 2.0 Security Profile (the `fapi2` option). */
  readonly fapi2: (client: OAuthClient) => boolean;
  /** Which optional endpoints are on. */
  readonly features: ResolvedFeatures;
  /** The upstream providers the sign-in pages link to, given `returnTo`. */
  readonly signInLinks: (returnTo: string) => readonly SignInLink[];
  /** The validated durations, in milliseconds. */
  readonly settings: {
    readonly codeTtl: number;
    readonly refreshTokenTtl: number;
    readonly refreshGracePeriod: number;
    readonly deviceCodeTtl: number;
    readonly devicePollInterval: number;
    readonly pushedRequestTtl: number;
    readonly requirePushedAuthorizationRequests: boolean;
  };
}

const KNOWN = [
  'issuer',
  'resources',
  'clients',
  'keys',
  'users',
  'sessions',
  'store',
  'accessTokenTtl',
  'idTokenTtl',
  'idTokenClaims',
  'codeTtl',
  'refreshTokenTtl',
  'refreshGracePeriod',
  'deviceCodeTtl',
  'devicePollInterval',
  'guard',
  'revocations',
  'logger',
  'dpop',
  'replay',
  'requirePushedAuthorizationRequests',
  'pushedRequestTtl',
  'fapi2',
  'features',
  'clientMetadataDocuments',
  'signInWith',
] as const satisfies readonly (keyof AuthorizationServerOptions)[];

const OWNER = 'createAuthorizationServer()';

/** The `signInWith` option, checked: its links for a `returnTo`, none without it. */
function signInLinksOf(
  signInWith: AuthorizationServerOptions['signInWith'],
): (returnTo: string) => readonly SignInLink[] {
  if (signInWith === undefined) return () => [];
  if (typeof signInWith?.links !== 'function') {
    throw invalidOption(
      `${OWNER}: \`signInWith\` must have a links(returnTo) method (createSignIn())`,
    );
  }
  return (returnTo) => signInWith.links(returnTo);
}

/** Which clients the FAPI 2.0 profile holds, checked against what the server can do. */
function fapi2Of(options: AuthorizationServerOptions): (client: OAuthClient) => boolean {
  const { fapi2 } = options;
  if (fapi2 === undefined || fapi2 === false) return () => false;
  const ids =
    fapi2 === true
      ? undefined
      : Array.isArray(fapi2) && fapi2.every((id) => typeof id === 'string')
        ? new Set(fapi2)
        : invalid();
  if (options.dpop === false) {
    throw invalidOption(`${OWNER}: \`fapi2\` needs DPoP (sender-constrained tokens)`);
  }
  const alg = options.keys?.signingKey().alg;
  if (alg !== 'ES256' && alg !== 'EdDSA') {
    throw invalidOption(
      `${OWNER}: \`fapi2\` needs keys that sign with ES256 or EdDSA (FAPI 2.0, cryptography)`,
    );
  }
  return ids === undefined ? () => true : (client) => ids.has(client.clientId);

  function invalid(): never {
    throw invalidOption(`${OWNER}: \`fapi2\` must be a boolean or a list of client ids`);
  }
}

/**
 * The token endpoint's DPoP verifier, with a replay store of its own: proofs never share the
 * client assertions' capacity. `replay` without `dpop.replay` is refused, rather than DPoP
 * proofs silently kept in this process while assertions are shared.
 */
function dpopOf(options: AuthorizationServerOptions): DpopVerifier | undefined {
  if (options.dpop === false) return undefined;
  if (options.replay !== undefined && options.dpop?.replay === undefined) {
    throw invalidOption(
      `${OWNER}: \`replay\` holds client assertions only: give DPoP proofs a store of their own in \`dpop.replay\` (a RedisReplayStore with another prefix), or \`dpop: false\``,
    );
  }
  return createDpopVerifier({
    ...options.dpop,
    replay: options.dpop?.replay ?? new MemoryReplayStore(),
  });
}

function booleanOf(name: string, value: boolean | undefined): boolean {
  if (value === undefined || typeof value === 'boolean') return value ?? false;
  throw invalidOption(`${OWNER}: \`${name}\` must be a boolean`);
}

function idTokenClaimsOf(value: IdTokenClaimRelease | undefined): IdTokenClaimRelease {
  if (value === undefined || value === 'scope' || value === 'all') return value ?? 'scope';
  throw invalidOption("createAuthorizationServer(): `idTokenClaims` must be 'scope' or 'all'");
}

/**
 * Validates the options once and builds the shared context.
 *
 * Each endpoint factory (`createTokenEndpoint`, `createAuthorizeEndpoint`, …) takes this
 * context; {@link createAuthorizationServer} builds one for you.
 *
 * @example
 * ```ts
 * const ctx = createOAuthContext({
 *   issuer: 'https://auth.example.com',
 *   clients: new MemoryClientStore([await defineClient({ … })]),
 *   keys: await createKeySet(),
 *   users: { verify: checkPassword, get: loadUser },
 *   sessions: createSessions({ allowedOrigins: ['https://auth.example.com'] }),
 * });
 * const token = createTokenEndpoint(ctx);
 * ```
 */
export function createOAuthContext(options: AuthorizationServerOptions): OAuthContext {
  if (typeof options === 'object' && options !== null && 'audience' in options) {
    throw invalidOption(
      `${OWNER}: \`audience\` was replaced by \`resources\` (RFC 8707): write \`resources: [{ identifier: ${JSON.stringify((options as { audience?: unknown }).audience)} }]\``,
    );
  }
  assertKnownOptions(OWNER, options, KNOWN);
  let issuerUrl: URL;
  try {
    issuerUrl = new URL(options.issuer);
  } catch {
    throw invalidOption('createAuthorizationServer(): `issuer` must be an absolute URL');
  }
  if (/[?#]/.test(issuerUrl.href)) {
    throw invalidOption(
      'createAuthorizationServer(): `issuer` must have no query or fragment (RFC 8414 §2)',
    );
  }
  for (const [name, fix] of [
    ['clients', 'clients: new MemoryClientStore([await defineClient({ … })])'],
    ['keys', 'keys: await createKeySet()'],
    ['users', undefined],
    ['sessions', undefined],
    ['store', undefined],
    ['guard', undefined],
    ['revocations', undefined],
    ['replay', undefined],
  ] as const) {
    assertNotThenable(OWNER, name, options[name], fix);
  }
  for (const [name, value] of [
    ['clients', options.clients],
    ['keys', options.keys],
    ['users', options.users],
    ['sessions', options.sessions],
  ] as const) {
    if (value === undefined || value === null)
      throw invalidOption(`${OWNER}: \`${name}\` is required`);
  }
  const guard = guardOption('createAuthorizationServer()', options.guard);
  const documents = clientMetadataDocumentsOption(OWNER, options.clientMetadataDocuments);
  const clients = withClientMetadataDocuments(options.clients, documents);
  const replay = options.replay ?? new MemoryReplayStore();
  const dpop = dpopOf(options);
  const fapi2 = fapi2Of(options);
  const features = resolveFeatures(OWNER, options.features, {
    pushedAuthorizationRequests: [
      ...(options.requirePushedAuthorizationRequests === true
        ? ['requirePushedAuthorizationRequests']
        : []),
      ...(options.fapi2 !== undefined && options.fapi2 !== false ? ['fapi2'] : []),
    ],
  });
  // checked here under this factory's name; the issuer then takes them as written
  durationOption(OWNER, 'accessTokenTtl', options.accessTokenTtl, 900_000);
  durationOption(OWNER, 'idTokenTtl', options.idTokenTtl, 3_600_000);
  const resources = resolveResources(OWNER, options.resources, options.issuer);
  const tokens = createTokenIssuer({
    issuer: options.issuer,
    // the default resource: the `aud` of a token when no `resource` is named anywhere
    audience: resources[0]!.identifier,
    keys: options.keys,
    accessTokenTtl: options.accessTokenTtl,
    idTokenTtl: options.idTokenTtl,
    idTokenClaims: idTokenClaimsOf(options.idTokenClaims),
  });
  return Object.freeze({
    issuer: options.issuer,
    clients,
    clientMetadataDocuments: documents,
    keys: options.keys,
    users: options.users,
    sessions: options.sessions,
    store: options.store ?? new MemoryRecordStore(),
    tokens,
    resources,
    authenticateClient: createClientAuthenticator(clients, {
      guard: options.guard,
      issuer: options.issuer,
      replay,
      fapi2,
      // the keys of a self-described client are where its documents may be
      allowPrivateClientKeys: documents?.allowPrivate === true,
    }),
    guard,
    revocations: options.revocations ?? processRevocations(),
    logger: loggerOption(OWNER, options.logger),
    dpop,
    fapi2,
    features,
    signInLinks: signInLinksOf(options.signInWith),
    settings: Object.freeze({
      codeTtl: durationOption(OWNER, 'codeTtl', options.codeTtl, 60_000, { max: 60_000 }),
      refreshTokenTtl: durationOption(
        OWNER,
        'refreshTokenTtl',
        options.refreshTokenTtl,
        2_592_000_000,
      ),
      refreshGracePeriod: durationOption(
        OWNER,
        'refreshGracePeriod',
        options.refreshGracePeriod,
        0,
        { max: 60_000 },
      ),
      deviceCodeTtl: durationOption(OWNER, 'deviceCodeTtl', options.deviceCodeTtl, 600_000),
      devicePollInterval: durationOption(
        OWNER,
        'devicePollInterval',
        options.devicePollInterval,
        5_000,
      ),
      pushedRequestTtl: durationOption(
        OWNER,
        'pushedRequestTtl',
        options.pushedRequestTtl,
        60_000,
        {
          min: 1_000,
          max: 600_000,
        },
      ),
      requirePushedAuthorizationRequests: booleanOf(
        'requirePushedAuthorizationRequests',
        options.requirePushedAuthorizationRequests,
      ),
    }),
  });
}
