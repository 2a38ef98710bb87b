import type { Duration } from '../core/duration.js';
import type { JwkSet as JSONWebKeySet, JwtClaims as JWTPayload } from '../core/jwt-types.js';
import {
  assertGivenOptions,
  assertKnownOptions,
  countOption,
  durationOption,
  invalidOption,
} from '../internal/options.js';
import { discoveredKeySource } from './jwt/discovery.js';
import { JwtError, jwtInvalid } from './jwt/error.js';
import {
  checkAlgorithms,
  type KeySource,
  parseHttpUrl,
  type RemoteJwksOptions,
  resolveKeySource,
} from './jwt/jwks.js';
import { type CoreVerifyOptions, safeEqual, verifyCompactJwt } from './jwt/verify.js';

/** Options of {@link createIdTokenVerifier}. */
export interface IdTokenVerifierOptions {
  /** The provider's issuer identifier, compared exactly with `iss`. Required. */
  issuer: string;
  /** This application's client id: the audience ID tokens must be issued to. Required. */
  clientId: string;
  /** The provider's keys, when known in advance. @defaultValue found through discovery */
  jwks?: JSONWebKeySet;
  /** The provider's JWKS URL. @defaultValue found through discovery */
  jwksUrl?: string | URL;
  /**
   * Find the JWKS through `<issuer>/.well-known/openid-configuration`, fetched once, on the
   * first verification; its `issuer` must equal {@link IdTokenVerifierOptions.issuer}.
   * @defaultValue `true` unless `jwks` or `jwksUrl` is given
   */
  discovery?: boolean;
  /** How the remote JWKS (and the discovery document) is fetched. @defaultValue see its members */
  jwksOptions?: RemoteJwksOptions;
  /** The algorithm allowlist (public-key algorithms only). @defaultValue `['RS256']` */
  algorithms?: readonly string[];
  /**
   * Leeway for `exp`, `iat` and `auth_time` (clock skew), in milliseconds.
   * @defaultValue `5_000` (5 seconds)
   */
  clockTolerance?: Duration;
  /**
   * Audiences besides `clientId` that an ID token may also name (OpenID Connect Core
   * §3.1.3.7: a token with untrusted extra audiences is refused).
   * @defaultValue none
   */
  trustedAudiences?: readonly string[];
  /** Longer tokens are refused before any parsing. @defaultValue `8192` */
  maxTokenLength?: number;
}

/**
 * What a verification checks beyond the token itself.
 *
 * @see {@link https://openid.net/specs/openid-connect-core-1_0.html#IDTokenValidation | OpenID Connect Core §3.1.3.7}
 */
export interface IdTokenVerifyOptions {
  /**
   * The `nonce` sent in the authentication request; the token must carry the same.
   * @defaultValue none (the `nonce` claim is not checked)
   */
  nonce?: string;
  /**
   * The `max_age` sent, in milliseconds (the request parameter counts seconds: `max_age=300`
   * is `maxAge: 300_000`): `auth_time` is then required and must be recent enough.
   * @defaultValue none (`auth_time` is not checked)
   */
  maxAge?: Duration;
}

/**
 * The claims of a verified ID token (OpenID Connect Core §2, §5.1), typed.
 *
 * @see {@link https://openid.net/specs/openid-connect-core-1_0.html#IDToken | OpenID Connect Core §2}
 * @see {@link https://openid.net/specs/openid-connect-core-1_0.html#StandardClaims | OpenID Connect Core §5.1}
 */
export interface IdTokenClaims extends JWTPayload {
  iss: string;
  sub: string;
  aud: string | string[];
  exp: number;
  iat: number;
  auth_time?: number;
  nonce?: string;
  azp?: string;
  acr?: string;
  amr?: string[];
  email?: string;
  email_verified?: boolean;
  name?: string;
  given_name?: string;
  family_name?: string;
  preferred_username?: string;
  picture?: string;
  locale?: string;
}

/** Verifies ID tokens: see {@link createIdTokenVerifier}. */
export interface IdTokenVerifier {
  /** Resolves with the typed claims, or rejects with a `JwtError`. */
  verify(idToken: string, options?: IdTokenVerifyOptions): Promise<IdTokenClaims>;
}

const OWNER = 'createIdTokenVerifier()';
const KNOWN = [
  'issuer',
  'clientId',
  'jwks',
  'jwksUrl',
  'discovery',
  'jwksOptions',
  'algorithms',
  'clockTolerance',
  'trustedAudiences',
  'maxTokenLength',
] as const satisfies readonly (keyof IdTokenVerifierOptions)[];
const STRING_CLAIMS = ['acr', 'email', 'name', 'given_name', 'family_name', 'picture', 'locale'];
const SUBJECT = 'ID token';

/** Keeps the typed claims only when they have their type (some providers send odd ones). */
function typed(payload: JWTPayload): IdTokenClaims {
  const claims: Record<string, unknown> = { ...payload };
  for (const name of [...STRING_CLAIMS, 'preferred_username', 'nonce', 'azp']) {
    if (name in claims && typeof claims[name] !== 'string') delete claims[name];
  }
  const verified = claims.email_verified;
  if (verified === 'true' || verified === 'false') claims.email_verified = verified === 'true';
  else if (verified !== undefined && typeof verified !== 'boolean') delete claims.email_verified;
  const { amr } = claims;
  if (amr !== undefined && !(Array.isArray(amr) && amr.every((m) => typeof m === 'string'))) {
    delete claims.amr;
  }
  return claims as IdTokenClaims;
}

/**
 * Creates a verifier of OpenID Connect ID tokens, checked as OpenID Connect Core §3.1.3.7
 * says: signature with the provider's keys (RS256 unless told), `iss` exactly, `aud`
 * holding the client id (and, with several audiences, `azp` equal to it), `exp`, `iat`,
 * `sub`, and when asked `nonce` (compared in constant time) and `max_age` against
 * `auth_time`. The provider's JWKS is found through discovery unless given.
 *
 * @example
 * ```ts
 * const idTokens = createIdTokenVerifier({ issuer: 'https://accounts.example.com', clientId });
 * const claims = await idTokens.verify(tokens.id_token, { nonce: session.nonce });
 * console.log(claims.email, claims.email_verified);
 * ```
 * @see {@link https://openid.net/specs/openid-connect-core-1_0.html#IDTokenValidation | OpenID Connect Core §3.1.3.7}
 */
export function createIdTokenVerifier(options: IdTokenVerifierOptions): IdTokenVerifier {
  const owner = OWNER;
  assertKnownOptions(owner, options, KNOWN);
  if (options === undefined || options === null)
    throw invalidOption(`${owner}: options are required`);
  const { issuer, clientId } = options;
  if (typeof issuer !== 'string' || issuer === '') {
    throw invalidOption(`${owner}: \`issuer\` is required`);
  }
  if (typeof clientId !== 'string' || clientId === '') {
    throw invalidOption(`${owner}: \`clientId\` is required`);
  }
  const extra = options.trustedAudiences ?? [];
  if (!Array.isArray(extra) || extra.some((a) => typeof a !== 'string' || a === '')) {
    throw invalidOption(`${owner}: \`trustedAudiences\` must be an array of strings`);
  }
  const trusted = new Set([clientId, ...extra]);
  const algorithms = checkAlgorithms(owner, options.algorithms ?? ['RS256'], false);
  const clockTolerance = durationOption(owner, 'clockTolerance', options.clockTolerance, 5_000);
  const maxTokenLength = countOption(owner, 'maxTokenLength', options.maxTokenLength, 8192, {
    min: 16,
  });
  assertGivenOptions(owner, options, ['jwks', 'jwksUrl']); // unset, not a silent discovery
  const given = options.jwks !== undefined || options.jwksUrl !== undefined;
  const discovery = options.discovery ?? !given;
  if (discovery && given) {
    throw invalidOption(`${owner}: give \`jwks\` or \`jwksUrl\`, or use \`discovery\`, not both`);
  }
  if (!discovery && !given) {
    throw invalidOption(`${owner}: without \`discovery\`, give \`jwks\` or \`jwksUrl\``);
  }
  const core: CoreVerifyOptions = {
    subject: SUBJECT,
    maxTokenLength,
    clockTolerance,
    jose: {
      algorithms,
      issuer,
      audience: clientId,
      clockTolerance: clockTolerance / 1000, // jose counts seconds
      requiredClaims: ['exp', 'iat', 'sub'],
    },
  };

  if (discovery) parseHttpUrl(owner, 'issuer', issuer);
  const source: KeySource = discovery
    ? discoveredKeySource(owner, issuer, algorithms, options.jwksOptions)
    : resolveKeySource(
        owner,
        { jwks: options.jwks, jwksUrl: options.jwksUrl, jwksOptions: options.jwksOptions },
        algorithms,
      ).source;

  return {
    async verify(idToken, checks = {}) {
      if (typeof idToken !== 'string' || idToken.length > maxTokenLength) throw jwtInvalid(SUBJECT);
      const { payload } = await verifyCompactJwt(idToken, source.key, core);
      const { aud, azp } = payload;
      const audiences = Array.isArray(aud) ? aud : [aud];
      if (typeof payload.sub !== 'string' || audiences.some((a) => !trusted.has(a as string))) {
        throw jwtInvalid(SUBJECT);
      }
      if ((audiences.length > 1 || azp !== undefined) && azp !== clientId) {
        throw jwtInvalid(SUBJECT);
      }
      if (checks.nonce !== undefined) {
        const { nonce } = payload;
        if (typeof nonce !== 'string' || !safeEqual(nonce, checks.nonce)) throw jwtInvalid(SUBJECT);
      }
      if (checks.maxAge !== undefined) {
        const maxAge = durationOption('verify()', 'maxAge', checks.maxAge, 0);
        const authTime = payload.auth_time;
        if (typeof authTime !== 'number') throw jwtInvalid(SUBJECT);
        const now = Math.floor(Date.now() / 1000);
        if (authTime + (maxAge + clockTolerance) / 1000 < now) {
          throw new JwtError('expired', 'The authentication is older than max_age allows.');
        }
      }
      return typed(payload);
    },
  };
}
