// portico's own JOSE shapes, structurally the same as jose's `JWTPayload`, `JWK`,
// `JSONWebKeySet` and `JWTHeaderParameters`. portico's declarations name these instead of
// jose's: jose is ESM only, and a CommonJS consumer compiled under `module: node16` may not
// import its types (TS1479 inside portico's `.d.cts`). Values pass freely both ways.

/**
 * The claims of a JWT (RFC 7519, section 4): the registered ones typed, any other allowed.
 *
 * @example
 * ```ts
 * const claims: JwtClaims = { sub: 'user-1', aud: 'api', exp: 1_900_000_000, scope: 'read' };
 * ```
 */
export interface JwtClaims {
  /** Issuer. */
  iss?: string;
  /** Subject. */
  sub?: string;
  /** Audience: one or several. */
  aud?: string | string[];
  /** JWT id. */
  jti?: string;
  /** Not before (seconds since the epoch). */
  nbf?: number;
  /** Expiry (seconds since the epoch). */
  exp?: number;
  /** Issued at (seconds since the epoch). */
  iat?: number;
  /** Any other claim. */
  [claim: string]: unknown;
}

/**
 * A JSON Web Key (RFC 7517): public or private, of any key type.
 *
 * @example
 * ```ts
 * const jwk: Jwk = { kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo' };
 * ```
 */
export type Jwk = {
  kty?: string;
  alg?: string;
  key_ops?: string[];
  ext?: boolean;
  use?: 'sig' | 'enc' | (string & {});
  x5c?: string[];
  x5t?: string;
  'x5t#S256'?: string;
  x5u?: string;
  kid?: string;
  crv?: string;
  d?: string;
  dp?: string;
  dq?: string;
  e?: string;
  k?: string;
  n?: string;
  p?: string;
  q?: string;
  qi?: string;
  x?: string;
  y?: string;
  pub?: string;
  priv?: string;
  oth?: Array<{ d?: string; r?: string; t?: string }>;
};

/**
 * A JSON Web Key Set (RFC 7517, section 5).
 *
 * @example
 * ```ts
 * const jwks: JwkSet = { keys: [{ kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo' }] };
 * ```
 */
export interface JwkSet {
  /** The keys. */
  keys: Jwk[];
}

/**
 * The protected header of a signed JWT (RFC 7515, section 4): `alg` always, the rest when set.
 *
 * @example
 * ```ts
 * const header: JwtHeader = { alg: 'EdDSA', kid: 'key-1', typ: 'at+jwt' };
 * ```
 */
export interface JwtHeader {
  /** Signature algorithm. */
  alg: string;
  /** Key id. */
  kid?: string;
  /** Token type (`JWT`, `at+jwt`, …). */
  typ?: string;
  /** Content type. */
  cty?: string;
  /** Critical extensions. */
  crit?: string[];
  /** Whether the payload is base64url-encoded (RFC 7797). */
  b64?: boolean;
  /** JWK Set URL. */
  jku?: string;
  /** The public key that signed the token. */
  jwk?: Omit<Jwk, 'd' | 'dp' | 'dq' | 'k' | 'p' | 'q' | 'qi' | 'priv' | 'oth'>;
  /** X.509 URL. */
  x5u?: string;
  /** X.509 certificate chain. */
  x5c?: string[];
  /** X.509 certificate SHA-1 thumbprint. */
  x5t?: string;
  /** Any other header parameter. */
  [param: string]: unknown;
}
