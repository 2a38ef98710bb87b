// The verification steps shared by access tokens and ID tokens (internal to portico/auth).
import { hash, timingSafeEqual } from 'node:crypto';
import type { JWTVerifyOptions } from 'jose';
import type {
  JwtHeader as JWTHeaderParameters,
  JwtClaims as JWTPayload,
} from '../../core/jwt-types.js';
import { loadedJose, loadJose } from '../../internal/lazy.js';
import { JwtError, jwtExpired, jwtInvalid } from './error.js';
import type { KeySource } from './jwks.js';

/** A verified JWT: its claims and its protected header. */
export interface VerifiedJwt {
  /** The verified claims. */
  payload: JWTPayload;
  /** The verified protected header (`alg`, `kid`, `typ`, …). */
  protectedHeader: JWTHeaderParameters;
}

/** What {@link verifyCompactJwt} needs beyond the token. */
export interface CoreVerifyOptions {
  /** Named in error messages: `access token`, `ID token`. */
  subject: string;
  /** Longer tokens are refused before any parsing. */
  maxTokenLength: number;
  /** Leeway for `exp`, `nbf` and `iat`, in milliseconds (`jose.clockTolerance` holds it in seconds). */
  clockTolerance: number;
  /** Passed to `jose`'s `jwtVerify` (algorithms, issuer, audience, typ, required claims…). */
  jose: JWTVerifyOptions;
}

/** Three non-empty base64url segments: the only shape a signed compact JWT can have. */
const COMPACT = /^[\w-]+\.[\w-]+\.[\w-]+$/;
/**
 * Whether every segment is the canonical base64url of its bytes: no length of the form
 * 4n + 1 and zero unused bits in the last character. Decoders ignore those bits, so without
 * this check one signature has up to 16 spellings and a token up to 16 distinct strings.
 */
function isCanonical(token: string): boolean {
  let start = 0;
  for (let dot = token.indexOf('.'); ; dot = token.indexOf('.', start)) {
    const end = dot === -1 ? token.length : dot;
    if (!isCanonicalSegment(token, start, end)) return false;
    if (dot === -1) return true;
    start = dot + 1;
  }
}

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/**
 * Whether `token.slice(start, end)` (base64url characters, as COMPACT checked) is the one
 * spelling of its bytes: no length of 4n + 1, and zero unused bits in the last character (4
 * of them after 4n + 2 characters, 2 after 4n + 3).
 */
function isCanonicalSegment(token: string, start: number, end: number): boolean {
  const rest = (end - start) % 4;
  if (rest === 0) return true;
  if (rest === 1) return false;
  const last = BASE64URL.indexOf(token[end - 1]!);
  return (last & (rest === 2 ? 0b1111 : 0b11)) === 0;
}

/** At most this many keys are tried when several in a JWKS match a token without `kid`. */
const MAX_CANDIDATES = 4;

/**
 * Compares two strings in constant time (for their content; their SHA-256 digests are
 * compared, so the length of neither leaks).
 */
export function safeEqual(a: string, b: string): boolean {
  const x = hash('sha256', a, 'buffer');
  const y = hash('sha256', b, 'buffer');
  return timingSafeEqual(x, y);
}

/** Maps whatever verification threw to a `JwtError` that reveals nothing. */
function toJwtError(error: unknown, subject: string): JwtError {
  if (error instanceof JwtError) return error;
  const jose = loadedJose(); // a jose error means jose is loaded
  if (jose !== undefined && error instanceof jose.errors.JWTExpired) {
    return jwtExpired(subject, error);
  }
  return jwtInvalid(subject, error);
}

async function runJose(token: string, key: KeySource['key'], options: JWTVerifyOptions) {
  const { errors, jwtVerify } = loadedJose() ?? (await loadJose());
  try {
    return await jwtVerify(token, key as Parameters<typeof jwtVerify>[1], options);
  } catch (error) {
    if (!(error instanceof errors.JWKSMultipleMatchingKeys)) throw error;
    // Several keys of the set fit a token without `kid`: try each (jose's documented way).
    let tried = 0;
    for await (const candidate of error) {
      if (++tried > MAX_CANDIDATES) break;
      try {
        return await jwtVerify(token, candidate, options);
      } catch (inner) {
        if (!(inner instanceof errors.JWSSignatureVerificationFailed)) throw inner;
      }
    }
    throw error;
  }
}

/**
 * Verifies a compact JWS JWT with `jose` and the rules `jose` leaves out: a length cap and a
 * shape check (canonical base64url segments) before any parsing, and `iat` not in the future.
 * Every failure becomes a `JwtError`: `expired` only for a token whose signature and
 * claims were otherwise good.
 */
export async function verifyCompactJwt(
  token: unknown,
  key: KeySource['key'],
  options: CoreVerifyOptions,
): Promise<VerifiedJwt> {
  const { subject } = options;
  if (
    typeof token !== 'string' ||
    token.length > options.maxTokenLength ||
    !COMPACT.test(token) ||
    !isCanonical(token)
  ) {
    throw jwtInvalid(subject);
  }
  try {
    const { payload, protectedHeader } = await runJose(token, key, options.jose);
    const now = Math.floor(Date.now() / 1000);
    if (typeof payload.iat === 'number' && payload.iat > now + options.clockTolerance / 1000) {
      throw jwtInvalid(subject);
    }
    return { payload, protectedHeader };
  } catch (error) {
    throw toJwtError(error, subject);
  }
}

/**
 * Enforces a token's binding (`cnf`): `x5t#S256` is accepted only with the same client
 * certificate thumbprint (RFC 8705 §3), `jkt` only with a verified DPoP proof of the same key
 * (RFC 9449 §6), both when both are there; a `cnf` of any other kind (a raw key) cannot be
 * checked here and is refused.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc8705#section-3 | RFC 8705 §3}
 * @see {@link https://www.rfc-editor.org/rfc/rfc9449#section-6 | RFC 9449 §6}
 */
export function checkBinding(
  payload: JWTPayload,
  presented: { certificate(): string | undefined; dpopKey: string | undefined },
  subject: string,
): void {
  const { cnf } = payload;
  if (cnf === undefined) return;
  if (typeof cnf !== 'object' || cnf === null) throw jwtInvalid(subject);
  const { 'x5t#S256': certificate, jkt } = cnf as Record<string, unknown>;
  if (certificate === undefined && jkt === undefined) throw jwtInvalid(subject);
  if (certificate !== undefined) {
    // read only for bound tokens: the thumbprint hashes the peer certificate
    const thumbprint = presented.certificate();
    if (typeof certificate !== 'string' || thumbprint === undefined) throw jwtInvalid(subject);
    if (!safeEqual(certificate, thumbprint)) throw jwtInvalid(subject);
  }
  if (jkt !== undefined) {
    const key = presented.dpopKey;
    if (typeof jkt !== 'string' || key === undefined || !safeEqual(jkt, key)) {
      throw jwtInvalid(subject);
    }
  }
}

/** Freezes a verified payload (it is shared through the cache), objects within included. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const member of Object.values(value)) deepFreeze(member);
  }
  return value;
}
