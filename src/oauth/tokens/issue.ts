import { hash, randomBytes, randomUUID } from 'node:crypto';
import type { Duration } from '../../core/duration.js';
import type { JwtClaims as JWTPayload } from '../../core/jwt-types.js';
import { loadedJose, loadJose } from '../../internal/lazy.js';
import { assertNotThenable, durationOption } from '../../internal/options.js';
import type { KeySet } from './key-set.js';

/**
 * A new opaque value (code, refresh token, device code): 256 random bits, base64url.
 *
 * @example
 * ```ts
 * const refreshToken = newOpaqueToken(); // 43 base64url characters
 * await ctx.store.save('rt', hashToken(refreshToken), record, ttlMs);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-10.10 | RFC 6749 §10.10}
 */
export function newOpaqueToken(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * The store key of an opaque value: its SHA-256, base64url (high entropy: a fast hash fits).
 *
 * @example
 * ```ts
 * const found = await ctx.store.find('device', hashToken(deviceCode));
 * ```
 */
export function hashToken(value: string): string {
  return hash('sha256', value, 'base64url');
}

/**
 * The identity claims the app gives for a user (specification's claim tables).
 *
 * @see {@link https://openid.net/specs/openid-connect-core-1_0.html#StandardClaims | OpenID Connect Core §5.1}
 */
export interface UserClaims {
  sub: string;
  name?: string;
  role?: string;
  email?: string;
  email_verified?: boolean;
  picture?: string;
}

/** Options of `createTokenIssuer`. */
export interface TokenIssuerOptions {
  /** `iss` of every token: the exact issuer identifier of the server. */
  issuer: string;
  /** `aud` of access tokens. @defaultValue the issuer */
  audience?: string;
  /** The keys that sign the tokens: the newest active one signs. */
  keys: KeySet;
  /**
   * Access token lifetime, in milliseconds (tokens carry whole seconds: `exp` and `expires_in`
   * are rounded down). @defaultValue `900_000` (15 minutes, as the specification recommends)
   */
  accessTokenTtl?: Duration;
  /** ID token lifetime, in milliseconds. @defaultValue `3_600_000` (1 hour) */
  idTokenTtl?: Duration;
  /** Which user claims ID tokens carry: see {@link IdTokenClaimRelease}. @defaultValue `'scope'` */
  idTokenClaims?: IdTokenClaimRelease;
}

/**
 * Which user claims an ID token carries besides `sub`:
 *
 * - `'scope'`: those the granted scopes release (`name` and `picture` with `profile`,
 *   `email` and `email_verified` with `email`), as OpenID Connect Core §5.4 describes;
 * - `'all'`: every standard claim the user has (`name`, `picture`, `email`,
 *   `email_verified`) whenever `openid` is granted, for services whose clients read the
 *   identity from the ID token alone. UserInfo still answers by scope.
 */
export type IdTokenClaimRelease = 'scope' | 'all';

/**
 * What an access token is issued for.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc9068#section-2.2 | RFC 9068 §2.2}
 */
export interface AccessTokenRequest {
  sub: string;
  clientId: string;
  scope: readonly string[];
  /** The grant it belongs to (carried as `grant_id`), so that revoking the grant reaches it. */
  grantId?: string;
  /** `name` and `role` of a user. */
  user?: Pick<UserClaims, 'name' | 'role'>;
  /** The DPoP key the token is bound to (`cnf.jkt`, RFC 9449 §6): a thumbprint. */
  jkt?: string;
  /**
   * `aud`: the resources the token is for (RFC 8707, RFC 8693 §2.1).
   * @defaultValue the issuer's `audience`
   */
  audience?: string | readonly string[];
  /** `act`: who acts for `sub` (RFC 8693 §4.1), on a token minted by delegation. */
  act?: ActorClaim;
  /**
   * The latest the token may expire, epoch seconds: its lifetime is cut to end by then (a
   * token exchanged from another ends no later than it, RFC 8693).
   * @defaultValue none: the full `accessTokenTtl`
   */
  expiresAt?: number;
}

/**
 * The `act` claim of RFC 8693 §4.1: the party acting for the token's subject (`sub`, and
 * `client_id` for a client), with, nested in `act`, the one that acted before it in a chain
 * of delegations. Only the outermost names the current actor.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc8693#section-4.1 | RFC 8693 §4.1}
 */
export interface ActorClaim {
  readonly sub: string;
  readonly client_id?: string;
  readonly act?: ActorClaim;
}

/**
 * What an ID token is issued for.
 *
 * @see {@link https://openid.net/specs/openid-connect-core-1_0.html#IDToken | OpenID Connect Core §2}
 */
export interface IdTokenRequest {
  clientId: string;
  user: UserClaims;
  scope: readonly string[];
  nonce?: string;
  /** When the user signed in, epoch seconds. */
  authTime?: number;
}

const PROFILE: readonly (keyof UserClaims)[] = ['name', 'picture'];
const EMAIL: readonly (keyof UserClaims)[] = ['email', 'email_verified'];

/**
 * The user claims the granted scopes release (OpenID Connect Core §5.4).
 *
 * @example
 * ```ts
 * claimsForScopes({ sub: 'u-42', name: 'Alice', email: 'a@example.com' }, ['openid', 'profile']);
 * // { sub: 'u-42', name: 'Alice' }
 * ```
 * @see {@link https://openid.net/specs/openid-connect-core-1_0.html#ScopeClaims | OpenID Connect Core §5.4}
 */
export function claimsForScopes(
  user: UserClaims,
  scope: readonly string[],
): Record<string, unknown> {
  const claims: Record<string, unknown> = { sub: user.sub };
  const release = (names: readonly (keyof UserClaims)[]) => {
    for (const name of names) if (user[name] !== undefined) claims[name] = user[name];
  };
  if (scope.includes('profile')) release(PROFILE);
  if (scope.includes('email')) release(EMAIL);
  return claims;
}

/** Every scope that releases claims: {@link claimsForScopes} with it releases them all. */
const ALL_CLAIM_SCOPES: readonly string[] = ['profile', 'email'];

/**
 * Signs the server's tokens with the newest key of its {@link KeySet}: access tokens per
 * RFC 9068 (`typ: at+jwt`) and OpenID Connect ID tokens.
 *
 * @example
 * ```ts
 * const tokens = createTokenIssuer({ issuer: 'https://auth.example.com', keys });
 * const { token, expiresIn } = await tokens.accessToken({ sub: 'svc', clientId: 'svc', scope: ['read:messages'] });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9068 | RFC 9068}
 */
export function createTokenIssuer(options: TokenIssuerOptions) {
  const { issuer, keys } = options;
  const audience = options.audience ?? issuer;
  const owner = 'createTokenIssuer()';
  assertNotThenable(owner, 'keys', keys, 'keys: await createKeySet()');
  const accessTtl = durationOption(owner, 'accessTokenTtl', options.accessTokenTtl, 900_000);
  const idTtl = durationOption(owner, 'idTokenTtl', options.idTokenTtl, 3_600_000);
  const idClaims = options.idTokenClaims ?? 'scope';
  // JWTs count whole seconds (`exp`), and so does the token response (`expires_in`)
  const accessSeconds = Math.floor(accessTtl / 1000);
  const idSeconds = Math.floor(idTtl / 1000);

  async function sign(payload: JWTPayload, typ: string, seconds: number): Promise<string> {
    const key = keys.signingKey();
    const now = Math.floor(Date.now() / 1000);
    const { SignJWT } = loadedJose() ?? (await loadJose());
    return new SignJWT(payload)
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ })
      .setIssuer(issuer)
      .setIssuedAt(now)
      .setExpirationTime(now + seconds)
      .sign(key.privateKey);
  }

  return {
    issuer,
    audience,
    /** Access token lifetime, in milliseconds. */
    accessTokenTtl: accessTtl,
    /** An RFC 9068 access token; `expiresIn` is the response's `expires_in`, in seconds. */
    async accessToken(
      request: AccessTokenRequest,
    ): Promise<{ token: string; expiresIn: number; jti: string }> {
      const jti = randomUUID();
      const seconds = lifetimeOf(accessSeconds, request.expiresAt);
      const aud = request.audience ?? audience;
      const payload: JWTPayload = {
        sub: request.sub,
        aud: typeof aud === 'string' ? aud : [...aud],
        jti,
        client_id: request.clientId,
        scope: request.scope.join(' '),
      };
      if (request.user?.name !== undefined) payload.name = request.user.name;
      if (request.user?.role !== undefined) payload.role = request.user.role;
      if (request.grantId !== undefined) payload.grant_id = request.grantId;
      if (request.jkt !== undefined) payload.cnf = { jkt: request.jkt };
      if (request.act !== undefined) payload.act = structuredClone(request.act);
      const token = await sign(payload, 'at+jwt', seconds);
      return { token, expiresIn: seconds, jti };
    },
    /** An OpenID Connect ID token, with the user claims `idTokenClaims` says. */
    async idToken(request: IdTokenRequest): Promise<string> {
      const scope = idClaims === 'all' ? ALL_CLAIM_SCOPES : request.scope;
      const payload: JWTPayload = {
        ...claimsForScopes(request.user, scope),
        aud: request.clientId,
      };
      if (request.nonce !== undefined) payload.nonce = request.nonce;
      if (request.authTime !== undefined) payload.auth_time = request.authTime;
      return sign(payload, 'JWT', idSeconds);
    },
  };
}

/** Whole seconds of an access token: the configured lifetime, cut to end by `expiresAt`. */
function lifetimeOf(seconds: number, expiresAt: number | undefined): number {
  if (expiresAt === undefined) return seconds;
  const left = Math.floor(expiresAt) - Math.floor(Date.now() / 1000);
  if (!(left >= 1)) throw new Error('An access token cannot be issued past its `expiresAt`.');
  return Math.min(seconds, left);
}

/** The token issuer `createTokenIssuer` returns. */
export type TokenIssuer = ReturnType<typeof createTokenIssuer>;
