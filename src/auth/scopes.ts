import { badRequest } from '../core/errors/errors.js';
import { invalidOption } from '../internal/options.js';

/**
 * The scopes OpenID Connect defines, accepted beside `<action>:<object>` ones.
 *
 * @example
 * ```ts
 * OPENID_SCOPES.includes('offline_access'); // true
 * ```
 * @see {@link https://openid.net/specs/openid-connect-core-1_0.html#ScopeClaims | OpenID Connect Core §5.4}
 */
export const OPENID_SCOPES: readonly string[] = Object.freeze([
  'openid',
  'profile',
  'email',
  'address',
  'phone',
  'offline_access',
]);

const ACTION_OBJECT = /^[a-z][a-z0-9_-]{0,63}:[a-z][a-z0-9_.*-]{0,127}$/;

/**
 * Whether `scope` is well-formed for portico: `<action>:<object>` (lower-case letters,
 * digits, `_`, `-`; the object may hold `.` and `*`) or one of {@link OPENID_SCOPES}.
 *
 * @example
 * ```ts
 * isValidScope('read:messages'); // true
 * isValidScope('read messages'); // false
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-3.3 | RFC 6749 §3.3}
 */
export function isValidScope(scope: string): boolean {
  return ACTION_OBJECT.test(scope) || OPENID_SCOPES.includes(scope);
}

/**
 * Parses a space-separated scope string (RFC 6749 §3.3) strictly: every scope well-formed,
 * no duplicates, at most 64. A malformed string is a 400 problem (`invalid_request`), never
 * a crash.
 *
 * @example
 * ```ts
 * parseScopes('read:messages write:messages'); // ['read:messages', 'write:messages']
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-3.3 | RFC 6749 §3.3}
 */
export function parseScopes(value: unknown, field = 'scope'): string[] {
  const list =
    typeof value === 'string'
      ? value.split(' ').filter((s) => s !== '')
      : Array.isArray(value)
        ? value
        : undefined;
  if (list === undefined) {
    throw badRequest(`${field} must be a space-separated string of scopes.`, {
      code: 'ERR_INVALID_SCOPE',
      typeSlug: 'invalid-request',
      errors: [{ field, message: 'must be a string of scopes' }],
    });
  }
  if (list.length > 64) {
    throw badRequest(`${field} holds more than 64 scopes.`, {
      code: 'ERR_INVALID_SCOPE',
      typeSlug: 'invalid-request',
      errors: [{ field, message: 'at most 64 scopes' }],
    });
  }
  const seen = new Set<string>();
  for (const scope of list) {
    if (typeof scope !== 'string' || !isValidScope(scope)) {
      throw badRequest(`${field} holds a malformed scope; scopes look like read:messages.`, {
        code: 'ERR_INVALID_SCOPE',
        typeSlug: 'invalid-request',
        errors: [
          { field, message: 'each scope must look like <action>:<object> or be an OpenID scope' },
        ],
      });
    }
    seen.add(scope);
  }
  return [...seen];
}

/**
 * Reads the scopes of a token claim leniently: a space-separated string (or an array, as
 * some issuers send) of RFC 6749 scope tokens; anything else counts as no scope. Never throws.
 *
 * @example
 * ```ts
 * scopesFromClaim('read:messages write:messages'); // ['read:messages', 'write:messages']
 * scopesFromClaim(['read:messages']); // ['read:messages']
 * scopesFromClaim(42); // []
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9068#section-2.2.3 | RFC 9068 §2.2.3}
 */
export function scopesFromClaim(value: unknown): string[] {
  const list = typeof value === 'string' ? value.split(' ') : Array.isArray(value) ? value : [];
  const scopes: string[] = [];
  for (const scope of list) {
    if (isScopeToken(scope)) scopes.push(scope);
  }
  return scopes;
}

/** RFC 6749 §3.3 `scope-token`: %x21 / %x23-5B / %x5D-7E, here at most 256 of them. */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]{1,256}$/;

/** Whether `scope` is an RFC 6749 scope token, whatever its issuer's naming (`Messages.Read`). */
export function isScopeToken(scope: unknown): scope is string {
  return typeof scope === 'string' && SCOPE_TOKEN.test(scope);
}

/**
 * Validates scopes a check is given (a programming error → TypeError): any RFC 6749 scope
 * token, since the scopes of other issuers' tokens need not look like portico's own.
 */
export function assertScopeTokens(owner: string, scopes: readonly string[]): void {
  for (const scope of scopes) {
    if (!isScopeToken(scope)) {
      throw invalidOption(`${owner}: \`${String(scope)}\` is not a valid scope`);
    }
  }
}

/**
 * Validates scopes given in code (a programming error → TypeError).
 *
 * @example
 * ```ts
 * assertScopes('myRoute()', ['read:messages']); // ok
 * assertScopes('myRoute()', ['read messages']); // throws a TypeError
 * ```
 */
export function assertScopes(owner: string, scopes: readonly string[]): void {
  for (const scope of scopes) {
    if (typeof scope !== 'string' || !isValidScope(scope)) {
      throw invalidOption(`${owner}: \`${String(scope)}\` is not a valid scope`);
    }
  }
}
