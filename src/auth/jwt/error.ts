import { type HttpError, PorticoError, serviceUnavailable } from '../../core/errors/errors.js';
import { expiredCredentials, invalidCredentials } from '../errors.js';

/**
 * Why a JWT was refused: `expired` (it was good and its time is up: `exp`, `maxTokenAge`,
 * an ID token's `max_age`), `invalid` (anything else: signature, algorithm, key, format,
 * claims, binding), or `unavailable` (the keys to check it could not be fetched and none
 * were ever known, so nothing can be said about the token).
 */
export type JwtErrorKind = 'expired' | 'invalid' | 'unavailable';

/**
 * The stable codes of `JwtError`, one per {@link JwtErrorKind}.
 *
 * @example
 * ```ts
 * if (err instanceof PorticoError && err.code === JWT_ERROR_CODES.expired) await refresh();
 * ```
 */
export const JWT_ERROR_CODES = {
  expired: 'ERR_JWT_EXPIRED',
  invalid: 'ERR_JWT_INVALID',
  unavailable: 'ERR_JWT_KEYS_UNAVAILABLE',
} as const satisfies Record<JwtErrorKind, string>;

/**
 * A refused JWT (access token or ID token). The message says what failed in general terms
 * only ("The access token expired."), never the token, a key, a `kid` or a signature detail;
 * the underlying `jose` error, if any, is the non-enumerable `cause`, for debugging.
 *
 * @example
 * ```ts
 * try {
 *   await verifier.verify(token);
 * } catch (err) {
 *   if (err instanceof JwtError && err.kind === 'expired') refresh();
 * }
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc7519#section-7.2 | RFC 7519 §7.2}
 */
export class JwtError extends PorticoError {
  /** Why the token was refused. */
  readonly kind: JwtErrorKind;
  declare readonly code: (typeof JWT_ERROR_CODES)[JwtErrorKind];

  constructor(kind: JwtErrorKind, message: string, cause?: unknown) {
    super(message, JWT_ERROR_CODES[kind], cause === undefined ? undefined : { cause });
    this.kind = kind;
  }

  /**
   * The HTTP answer to this refusal: 401 `credentials-expired` or `invalid-credentials`
   * with `challenge`, or 503 when the keys are unavailable. Thrown as is, a `JwtError`
   * is answered this way (`sendError` calls it).
   */
  toHttpError(challenge: string | readonly string[] = 'Bearer'): HttpError {
    if (this.kind === 'expired') return expiredCredentials(challenge, this.message, this.code);
    if (this.kind === 'unavailable') {
      return serviceUnavailable(30, this.message, { code: this.code, cause: this });
    }
    return invalidCredentials(challenge, this.message, this.code);
  }
}

/**
 * Whether `error` is a `JwtError` of this kind.
 *
 * @example
 * ```ts
 * try {
 *   await verifier.verify(token);
 * } catch (err) {
 *   if (isJwtError(err, 'expired')) return refresh();
 *   throw err;
 * }
 * ```
 */
export function isJwtError(error: unknown, kind?: JwtErrorKind): error is JwtError {
  return error instanceof JwtError && (kind === undefined || error.kind === kind);
}

/** `The access token expired.` */
export function jwtExpired(subject: string, cause?: unknown): JwtError {
  return new JwtError('expired', `The ${subject} expired.`, cause);
}

/** `The access token is not valid.` */
export function jwtInvalid(subject: string, cause?: unknown): JwtError {
  return new JwtError('invalid', `The ${subject} is not valid.`, cause);
}

/** The keys could not be fetched and none are known. */
export function keysUnavailable(cause?: unknown): JwtError {
  return new JwtError(
    'unavailable',
    'The keys to verify the token are unavailable; try again later.',
    cause,
  );
}
