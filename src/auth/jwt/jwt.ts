import type { Duration } from '../../core/duration.js';
import {
  assertGivenOptions,
  assertKnownOptions,
  countOption,
  durationOption,
  invalidOption,
} from '../../internal/options.js';
import { cacheDeadline, type JwtCacheOptions, VerifiedTokenCache } from './cache.js';
import { claimRules } from './claim-rules.js';
import { discoveredKeySource } from './discovery.js';
import { jwtInvalid } from './error.js';
import { checkAlgorithms, type KeySourceOptions, resolveKeySource } from './jwks.js';
import { parseHttpUrl } from './jwks-remote.js';
import {
  type CoreVerifyOptions,
  checkBinding,
  deepFreeze,
  type VerifiedJwt,
  verifyCompactJwt,
} from './verify.js';

export type { VerifiedJwt } from './verify.js';

/**
 * Options of `createJwtVerifier`: exactly one key source (`secret`, `publicKey`,
 * `jwks` or `jwksUrl`, see {@link KeySourceOptions}), the expected issuer and audience, and
 * the rules of RFC 8725.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc7519#section-7.2 | RFC 7519 §7.2}
 * @see {@link https://www.rfc-editor.org/rfc/rfc8725 | RFC 8725}
 */
export interface JwtVerifierOptions extends KeySourceOptions {
  /**
   * Find the keys from the issuer alone: its metadata (`/.well-known/openid-configuration`,
   * else RFC 8414's `/.well-known/oauth-authorization-server`) names the `jwks_uri`, fetched
   * on first use and kept as `jwksUrl` would be. On when no key source is given (then
   * `issuer` must be one URL); it cannot be combined with one.
   * @defaultValue `true` without `secret`, `publicKey`, `jwks` or `jwksUrl`
   */
  discovery?: boolean;
  /** The accepted `iss` value(s), compared exactly. Required. */
  issuer: string | readonly string[];
  /** The accepted `aud` value(s): the token's `aud` must hold one of them. Required. */
  audience: string | readonly string[];
  /**
   * The claim `audience` is compared with, for issuers whose access tokens name the client
   * instead of an `aud`: `'client_id'` for Amazon Cognito. That claim (a string, or an array
   * of strings) must hold one of `audience`; `aud` is then not read.
   * @defaultValue `'aud'`
   */
  audienceClaim?: string;
  /**
   * Claims that must hold a given value, compared exactly (`===`) after the signature is
   * verified; an array lists the accepted values, and a token without the claim is refused:
   * `{ token_use: 'access' }` (Cognito), `{ typ: 'Bearer' }` (Keycloak), `{ repository:
   * 'octo-org/octo-repo' }` (GitHub Actions).
   * @defaultValue none
   */
  claims?: Readonly<
    Record<string, string | number | boolean | readonly (string | number | boolean)[]>
  >;
  /**
   * The algorithm allowlist, always in force. `none` is refused at construction, HMAC
   * algorithms only go with a `secret` and the others only with public keys, so a token can
   * never make a public key act as an HMAC secret.
   * @defaultValue `['RS256']`; `['HS256']` with a `secret`; the key's own algorithm for an
   * EC or Ed25519 `publicKey` (an RSA-PSS-only key is refused: give it as plain RSA, which
   * verifies `PS256` once listed here)
   */
  algorithms?: readonly string[];
  /**
   * Leeway for `exp`, `nbf` and `iat` (clock skew), in milliseconds.
   * @defaultValue `5_000` (5 seconds)
   */
  clockTolerance?: Duration;
  /**
   * The required `typ` header, e.g. `'at+jwt'` for RFC 9068 access tokens, compared
   * case-insensitively with or without the `application/` prefix. An ID token (`typ: JWT`)
   * offered as an access token is then refused.
   * @defaultValue none (any `typ`)
   */
  typ?: string;
  /** Claims that must be present. `exp` is always required. @defaultValue `['exp']` */
  requiredClaims?: readonly string[];
  /**
   * How long after `iat` a token counts as expired (`iat` becomes required), in
   * milliseconds: `900_000` refuses tokens older than 15 minutes.
   * @defaultValue none
   */
  maxTokenAge?: Duration;
  /** Tokens longer than this (bytes) are refused before any parsing. @defaultValue `8192` */
  maxTokenLength?: number;
  /**
   * Keep verified tokens (by SHA-256 of the token) so that verifying one again is nearly
   * free; never past `exp`, emptied when the key set changes. `false` turns it off.
   * @defaultValue `{ max: 10_000 }`
   */
  cache?: JwtCacheOptions | false;
}

/** Per-request facts a verification may need. */
export interface JwtVerifyContext {
  /**
   * The SHA-256 thumbprint (base64url) of the client certificate the TLS connection showed
   * and the server verified, for certificate-bound tokens (RFC 8705).
   */
  certificateThumbprint?: string;
  /**
   * The RFC 7638 thumbprint of the key of a DPoP proof that came with the token and was
   * verified (`createDpopVerifier`), for DPoP-bound tokens (`cnf.jkt`, RFC 9449). A bound
   * token is refused without it.
   */
  dpopKeyThumbprint?: string;
}

/** Verifies JWTs: see `createJwtVerifier`. */
export interface JwtVerifier {
  /**
   * Resolves with the verified claims and header, or rejects with a `JwtError`
   * (`ERR_JWT_EXPIRED`, `ERR_JWT_INVALID`, or `ERR_JWT_KEYS_UNAVAILABLE` when a remote key
   * set was never reachable).
   */
  verify(token: string, context?: JwtVerifyContext): Promise<VerifiedJwt>;
}

/** A verifier that can also answer from its cache alone, without a promise. @internal */
export interface CachingJwtVerifier extends JwtVerifier {
  /**
   * The verified token if the cache holds it (its binding checked: a `JwtError` otherwise),
   * `undefined` when only `verify` can tell.
   */
  verifyCached(token: string, context?: JwtVerifyContext): VerifiedJwt | undefined;
}

/** The option names of {@link JwtVerifierOptions} (for factories that extend them). @internal */
export const JWT_VERIFIER_OPTIONS = Object.freeze([
  'secret',
  'publicKey',
  'jwks',
  'jwksUrl',
  'jwksOptions',
  'discovery',
  'issuer',
  'audience',
  'audienceClaim',
  'claims',
  'algorithms',
  'clockTolerance',
  'typ',
  'requiredClaims',
  'maxTokenAge',
  'maxTokenLength',
  'cache',
] as const satisfies readonly (keyof JwtVerifierOptions)[]);

function stringList(owner: string, name: string, value: unknown): string | string[] {
  const list = typeof value === 'string' ? [value] : Array.isArray(value) ? value : [];
  if (list.length === 0 || list.some((v) => typeof v !== 'string' || v === '')) {
    throw invalidOption(`${owner}: \`${name}\` is required (a non-empty string or array of them)`);
  }
  return typeof value === 'string' ? value : [...(list as string[])];
}

/** The configured key source, or one discovered from the issuer. */
function keySourceOf(owner: string, options: JwtVerifierOptions) {
  // `secret: process.env.JWT_SECRET` unset must not fall back to discovery
  assertGivenOptions(owner, options, ['secret', 'publicKey', 'jwks', 'jwksUrl', 'issuer']);
  const given = [options.secret, options.publicKey, options.jwks, options.jwksUrl].some(
    (k) => k !== undefined,
  );
  const discovery = options.discovery ?? !given;
  if (!discovery) return resolveKeySource(owner, options, options.algorithms);
  if (given) throw invalidOption(`${owner}: \`discovery\` cannot be combined with a key source`);
  if (typeof options.issuer !== 'string') {
    throw invalidOption(`${owner}: discovery needs \`issuer\` to be one URL`);
  }
  parseHttpUrl(owner, 'issuer', options.issuer);
  const algorithms = checkAlgorithms(owner, options.algorithms ?? ['RS256'], false);
  return {
    source: discoveredKeySource(owner, options.issuer, algorithms, options.jwksOptions),
    algorithms,
  };
}

/**
 * Builds a verifier without checking for unknown options (for factories that add their own).
 * `subject` names the token in error messages.
 * @internal
 */
export function buildJwtVerifier(
  owner: string,
  options: JwtVerifierOptions,
  subject = 'access token',
): CachingJwtVerifier {
  if (typeof options !== 'object' || options === null) {
    throw invalidOption(`${owner}: options are required`);
  }
  const { source, algorithms } = keySourceOf(owner, options);
  const clockTolerance = durationOption(owner, 'clockTolerance', options.clockTolerance, 5_000);
  const maxTokenAge =
    options.maxTokenAge === undefined
      ? undefined
      : durationOption(owner, 'maxTokenAge', options.maxTokenAge, 0);
  const maxTokenLength = countOption(owner, 'maxTokenLength', options.maxTokenLength, 8192, {
    min: 16,
  });
  if (options.typ !== undefined && (typeof options.typ !== 'string' || options.typ === '')) {
    throw invalidOption(`${owner}: \`typ\` must be a non-empty string`);
  }
  const required = options.requiredClaims ?? [];
  if (!Array.isArray(required) || required.some((c) => typeof c !== 'string' || c === '')) {
    throw invalidOption(`${owner}: \`requiredClaims\` must be an array of claim names`);
  }
  const cacheOption = options.cache ?? {};
  const max =
    cacheOption === false
      ? 0
      : countOption(owner, 'cache.max', cacheOption.max, 10_000, {
          min: 0,
        });
  const rules = claimRules(owner, options, stringList(owner, 'audience', options.audience));
  const core: CoreVerifyOptions = {
    subject,
    maxTokenLength,
    clockTolerance,
    jose: {
      algorithms,
      issuer: stringList(owner, 'issuer', options.issuer),
      audience: rules.joseAudience,
      clockTolerance: clockTolerance / 1000, // jose counts seconds
      typ: options.typ,
      requiredClaims: [...new Set(['exp', ...required])],
      maxTokenAge: maxTokenAge === undefined ? undefined : maxTokenAge / 1000,
    },
  };
  const cache = max > 0 ? new VerifiedTokenCache(max) : undefined;

  /** The token of `key` as the cache holds it, its binding checked; `undefined` when not cached. */
  const cached = (key: string | undefined, context: JwtVerifyContext | undefined) => {
    if (cache === undefined || key === undefined || !source.isFresh()) return undefined;
    const hit = cache.get(key, source.generation(), Date.now());
    if (hit !== undefined) checkBinding(hit.payload, presentedOf(context), subject);
    return hit;
  };
  const keyOf = (token: unknown) =>
    cache === undefined || typeof token !== 'string' || token.length > maxTokenLength
      ? undefined
      : VerifiedTokenCache.keyOf(token);

  return {
    async verify(token, context) {
      if (typeof token !== 'string' || token.length > maxTokenLength) throw jwtInvalid(subject);
      const generation = source.generation();
      const cacheKey = keyOf(token);
      const hit = cached(cacheKey, context);
      if (hit !== undefined) return hit;
      const verified = deepFreeze(await verifyCompactJwt(token, source.key, core));
      rules.check(verified.payload, subject);
      if (cache !== undefined && cacheKey !== undefined) {
        const deadline = cacheDeadline(verified.payload, maxTokenAge);
        cache.set(cacheKey, verified, deadline, generation, Date.now());
      }
      checkBinding(verified.payload, presentedOf(context), subject);
      return verified;
    },
    verifyCached: (token, context) => cached(keyOf(token), context),
  };
}

/** What a token's binding is checked against. */
const presentedOf = (context: JwtVerifyContext | undefined) => ({
  certificate: () => context?.certificateThumbprint,
  dpopKey: context?.dpopKeyThumbprint,
});

/**
 * Creates a JWT verifier following RFC 8725: an explicit algorithm allowlist, `exp`
 * required, `nbf` and `iat` checked with a small clock tolerance, `iss` and `aud` always
 * checked, optional `typ`, required claims and maximum age, oversized tokens refused before
 * parsing, and certificate-bound tokens (RFC 8705) accepted only with their certificate.
 * Options are validated once (a `TypeError` with code `ERR_INVALID_OPTION` otherwise).
 *
 * @example
 * ```ts
 * const verifier = createJwtVerifier({
 *   jwksUrl: 'https://id.example.com/.well-known/jwks.json',
 *   issuer: 'https://id.example.com',
 *   audience: 'https://api.example.com',
 *   typ: 'at+jwt',
 * });
 * const { payload } = await verifier.verify(token);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8725 | RFC 8725}
 * @see {@link https://www.rfc-editor.org/rfc/rfc9068 | RFC 9068}
 */
export function createJwtVerifier(options: JwtVerifierOptions): JwtVerifier {
  assertKnownOptions('createJwtVerifier()', options, JWT_VERIFIER_OPTIONS);
  return buildJwtVerifier('createJwtVerifier()', options);
}
