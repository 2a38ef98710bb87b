import {
  announceRevocation,
  grantCredentialId,
  tokenCredentialId,
} from '../../auth/revocations.js';
import type { TokenContext } from './context.js';
import { revokedTokenKey } from './verify.js';

/**
 * How long a revoked grant must stay known: as long as any of its tokens could still be
 * presented — the rest of its refresh-token family (the whole lifetime when unknown), plus
 * one access-token lifetime for the last access token issued.
 *
 * @example
 * ```ts
 * await revokeGrant(ctx, record.grantId, revocationTtlMs(ctx, record.familyExpiresAt));
 * ```
 */
export function revocationTtlMs(ctx: TokenContext, familyExpiresAt?: number): number {
  const familyLeft =
    familyExpiresAt === undefined
      ? ctx.settings.refreshTokenTtl
      : Math.max(0, familyExpiresAt - Date.now());
  return familyLeft + ctx.tokens.accessTokenTtl;
}

/**
 * Revokes a grant — the one way every endpoint and grant does it: the store records it for
 * `ttlMs`, then its end (`grant:<id>`) is announced on `ctx.revocations`, so that the streams
 * opened with its tokens end before the caller answers. A transport that fails to carry the
 * announcement to other processes does not undo the revocation (the store has it).
 *
 * @example
 * ```ts
 * await revokeGrant(ctx, record.grantId, revocationTtlMs(ctx, record.familyExpiresAt));
 * ```
 */
export async function revokeGrant(ctx: TokenContext, grantId: string, ttlMs: number) {
  await ctx.store.revokeGrant(grantId, ttlMs);
  await announceRevocation(ctx.revocations, [grantCredentialId(grantId)]);
}

/**
 * Revokes one access token without a grant (`client_credentials`) by its `jti`, as
 * {@link revokeGrant} does a grant: recorded in the store's revoked grants, then announced
 * (`token:<jti>`).
 *
 * @example
 * ```ts
 * await revokeTokenById(ctx, payload.jti, payload.exp * 1000 - Date.now() + 60_000);
 * ```
 */
export async function revokeTokenById(ctx: TokenContext, jti: string, ttlMs: number) {
  await ctx.store.revokeGrant(revokedTokenKey(jti), ttlMs);
  await announceRevocation(ctx.revocations, [tokenCredentialId(jti)]);
}
