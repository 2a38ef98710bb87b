import type { Revocations } from '../../auth/revocations.js';
import type { RecordStore } from '../store/store.js';
import type { TokenIssuer } from './issue.js';
import type { KeySet } from './key-set.js';

/**
 * What the token layer reads of the authorization server's context: its keys, its token
 * issuer, its store, where revocations are announced, and the refresh-token lifetime. An
 * `OAuthContext` is one; the token code asks for no more, so that it sits below the
 * context in the layers of `oauth/`.
 *
 * @example
 * ```ts
 * const ctx: TokenContext = createOAuthContext({ issuer, clients, keys, users, sessions });
 * ```
 */
export interface TokenContext {
  readonly keys: KeySet;
  readonly tokens: TokenIssuer;
  readonly store: RecordStore;
  readonly revocations: Revocations;
  readonly settings: { readonly refreshTokenTtl: number };
}
