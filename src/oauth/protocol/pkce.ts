import { hash, timingSafeEqual } from 'node:crypto';

/** `code_verifier` syntax (RFC 7636 §4.1): 43–128 unreserved characters. */
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
/** An S256 `code_challenge`: base64url of a SHA-256 digest, without padding (43 characters). */
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/**
 * Whether `value` is a well-formed PKCE `code_verifier` (RFC 7636 §4.1).
 *
 * @example
 * ```ts
 * isCodeVerifier('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'); // true
 * isCodeVerifier('too-short'); // false
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc7636#section-4.1 | RFC 7636 §4.1}
 */
export function isCodeVerifier(value: string): boolean {
  return VERIFIER.test(value);
}

/**
 * Whether `value` is a well-formed S256 `code_challenge` (RFC 7636 §4.2).
 *
 * @example
 * ```ts
 * isCodeChallenge('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'); // true
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc7636#section-4.2 | RFC 7636 §4.2}
 */
export function isCodeChallenge(value: string): boolean {
  return CHALLENGE.test(value);
}

/**
 * The S256 challenge of a verifier: `BASE64URL(SHA256(ASCII(code_verifier)))`.
 *
 * @example
 * ```ts
 * codeChallengeS256('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk');
 * // 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc7636#section-4.2 | RFC 7636 §4.2}
 */
export function codeChallengeS256(verifier: string): string {
  return hash('sha256', Buffer.from(verifier, 'ascii'), 'base64url');
}

const digest = (value: string) => hash('sha256', value, 'buffer');

/**
 * Checks a `code_verifier` against the S256 `code_challenge` of the authorization request
 * (RFC 7636 §4.6). Only S256 exists here: a verifier equal to the challenge (`plain`) fails.
 * A malformed verifier fails; the comparison takes the same time wherever the values differ.
 *
 * @example
 * ```ts
 * if (!verifyCodeVerifier(params.get('code_verifier') ?? '', record.codeChallenge)) { … }
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc7636#section-4.6 | RFC 7636 §4.6}
 */
export function verifyCodeVerifier(verifier: string, challenge: string): boolean {
  if (!isCodeVerifier(verifier)) return false;
  // Digests of both sides have equal lengths, as timingSafeEqual needs, whatever the inputs.
  return timingSafeEqual(digest(codeChallengeS256(verifier)), digest(challenge));
}
