import { type CredentialGuard, isCredentialGuard } from '../auth/credential-guard.js';
import { processRevocations, type Revocations } from '../auth/revocations.js';
import type { Sessions } from '../auth/session.js';
import { assertKnownOptions, invalidOption } from '../internal/options.js';
import { createClientAuthenticator } from './client-auth.js';
import type { ClientStore } from './clients.js';
import type { KeySet } from './key-set.js';
import { MemoryOAuthStore, type OAuthStore } from './store.js';
import {
  createTokenIssuer,
  type IdTokenClaimRelease,
  type TokenIssuer,
  type UserClaims,
} from './tokens.js';

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
  /** `aud` of access tokens. @defaultValue the issuer */
  audience?: string;
  /** The registered clients. */
  clients: ClientStore;
  /** The keys that sign access and ID tokens, published at the JWKS endpoint. */
  keys: KeySet;
  /** Checks user credentials at sign-in and gives the claims of a user. */
  users: OAuthUsers;
  /** Who is signed in at `/authorize` and `/device/verify`: portico's cookie sessions. */
  sessions: Sessions;
  /**
   * Where codes, device codes, refresh tokens and revoked grants live; share one (Redis) between
   * the processes of one server.
   * @defaultValue a new {@link MemoryOAuthStore}
   */
  store?: OAuthStore;
  /** Access token lifetime, seconds. @defaultValue `900` */
  accessTokenTtl?: number;
  /** ID token lifetime, seconds. @defaultValue `3600` */
  idTokenTtl?: number;
  /**
   * Which user claims ID tokens carry: `'scope'`, those the granted scopes release (OpenID
   * Connect Core §5.4); `'all'`, every standard claim the user has whenever `openid` is
   * granted. UserInfo answers by scope either way.
   * @defaultValue `'scope'`
   */
  idTokenClaims?: IdTokenClaimRelease;
  /** Authorization code lifetime, seconds (at most 60). @defaultValue `60` */
  codeTtl?: number;
  /** Absolute lifetime of a refresh-token family, seconds. @defaultValue `2_592_000` (30 days) */
  refreshTokenTtl?: number;
  /**
   * Seconds during which the refresh token just rotated may be used again by the same client
   * (two tabs refreshing at once) and get the same successor's family, instead of counting as
   * reuse. Off by default; never weakens reuse detection after it.
   * @defaultValue `0`
   */
  refreshGracePeriod?: number;
  /** Device code lifetime, seconds. @defaultValue `600` */
  deviceCodeTtl?: number;
  /** Device polling interval, seconds. @defaultValue `5` */
  devicePollInterval?: number;
  /**
   * Counts refused credentials per client IP: wrong passwords at the sign-in forms of
   * `/authorize` and `/device/verify`, failed client authentication at the token, PAR,
   * revocation, introspection and device endpoints. Give the same guard as to
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
}

/** Everything the endpoints share, built once from {@link AuthorizationServerOptions}. */
export interface OAuthContext {
  readonly issuer: string;
  readonly clients: ClientStore;
  readonly keys: KeySet;
  readonly users: OAuthUsers;
  readonly sessions: Sessions;
  readonly store: OAuthStore;
  readonly tokens: TokenIssuer;
  readonly authenticateClient: ReturnType<typeof createClientAuthenticator>;
  /** The guard of refused credentials, when one was given. */
  readonly guard: CredentialGuard | undefined;
  /** Where ended grants and tokens are announced. */
  readonly revocations: Revocations;
  readonly settings: {
    readonly codeTtl: number;
    readonly refreshTokenTtl: number;
    readonly refreshGracePeriod: number;
    readonly deviceCodeTtl: number;
    readonly devicePollInterval: number;
  };
}

const KNOWN = [
  'issuer',
  'audience',
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
];

function seconds(
  name: string,
  value: number | undefined,
  fallback: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 0 || value > max) {
    throw invalidOption(
      `createAuthorizationServer(): \`${name}\` must be an integer of seconds, 0–${max}`,
    );
  }
  return value;
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
  assertKnownOptions('createAuthorizationServer()', options, KNOWN);
  let issuerUrl: URL;
  try {
    issuerUrl = new URL(options.issuer);
  } catch {
    throw invalidOption('createAuthorizationServer(): `issuer` must be an absolute URL');
  }
  if (issuerUrl.search !== '' || issuerUrl.hash !== '') {
    throw invalidOption(
      'createAuthorizationServer(): `issuer` must have no query or fragment (RFC 8414 §2)',
    );
  }
  for (const [name, value] of [
    ['clients', options.clients],
    ['keys', options.keys],
    ['users', options.users],
    ['sessions', options.sessions],
  ] as const) {
    if (value === undefined || value === null)
      throw invalidOption(`createAuthorizationServer(): \`${name}\` is required`);
  }
  if (options.guard !== undefined && !isCredentialGuard(options.guard)) {
    throw invalidOption(
      'createAuthorizationServer(): `guard` must be a CredentialGuard (createCredentialGuard())',
    );
  }
  const tokens = createTokenIssuer({
    issuer: options.issuer,
    audience: options.audience,
    keys: options.keys,
    accessTokenTtl: seconds('accessTokenTtl', options.accessTokenTtl, 900),
    idTokenTtl: seconds('idTokenTtl', options.idTokenTtl, 3600),
    idTokenClaims: idTokenClaimsOf(options.idTokenClaims),
  });
  return Object.freeze({
    issuer: options.issuer,
    clients: options.clients,
    keys: options.keys,
    users: options.users,
    sessions: options.sessions,
    store: options.store ?? new MemoryOAuthStore(),
    tokens,
    authenticateClient: createClientAuthenticator(options.clients, options.guard),
    guard: options.guard,
    revocations: options.revocations ?? processRevocations(),
    settings: Object.freeze({
      codeTtl: seconds('codeTtl', options.codeTtl, 60, 60),
      refreshTokenTtl: seconds('refreshTokenTtl', options.refreshTokenTtl, 2_592_000),
      refreshGracePeriod: seconds('refreshGracePeriod', options.refreshGracePeriod, 0, 60),
      deviceCodeTtl: seconds('deviceCodeTtl', options.deviceCodeTtl, 600),
      devicePollInterval: seconds('devicePollInterval', options.devicePollInterval, 5),
    }),
  });
}
