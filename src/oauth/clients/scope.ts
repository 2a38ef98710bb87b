import { isValidScope } from '../../auth/scopes.js';
import { OAuthError } from '../protocol/errors.js';
import type { OAuthClient } from './client.js';

/** The scopes a server offers when its options name none (discovery, client metadata documents). */
export const DEFAULT_SCOPES: readonly string[] = Object.freeze([
  'openid',
  'profile',
  'email',
  'offline_access',
]);

/**
 * The scopes to grant a client for a requested `scope` parameter: each one well-formed and
 * among the client's allowed scopes (least privilege); none requested → the client's
 * `defaultScopes`, else all its scopes. Anything else is `invalid_scope`.
 *
 * @example
 * ```ts
 * resolveScopes(client, params.get('scope')); // ['read:messages']
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-3.3 | RFC 6749 §3.3}
 */
export function resolveScopes(client: OAuthClient, requested: string | undefined): string[] {
  if (requested === undefined || requested.trim() === '') {
    return [...(client.defaultScopes ?? client.scopes)];
  }
  const scopes = [...new Set(requested.split(' ').filter((s) => s !== ''))];
  for (const scope of scopes) {
    if (!isValidScope(scope) || !client.scopes.includes(scope)) {
      throw new OAuthError(
        'invalid_scope',
        'A requested scope is unknown or not allowed for this client.',
      );
    }
  }
  return scopes;
}

/**
 * Narrows `granted` to `requested` (a refresh may narrow, never widen): `invalid_scope` otherwise,
 * with `wider` as its description.
 *
 * @example
 * ```ts
 * narrowScopes(['read:messages', 'write:messages'], 'read:messages'); // ['read:messages']
 * narrowScopes(['read:messages'], undefined); // ['read:messages']
 * narrowScopes(['read:messages'], 'admin:all'); // throws OAuthError invalid_scope
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-6 | RFC 6749 §6}
 */
export function narrowScopes(
  granted: readonly string[],
  requested: string | undefined,
  wider = 'The requested scope is wider than the original grant.',
): string[] {
  if (requested === undefined || requested.trim() === '') return [...granted];
  const scopes = [...new Set(requested.split(' ').filter((s) => s !== ''))];
  if (scopes.some((s) => !granted.includes(s))) throw new OAuthError('invalid_scope', wider);
  return scopes;
}
