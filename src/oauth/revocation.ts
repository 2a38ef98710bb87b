import type { OAuthContext } from './context.js';

/**
 * How long a revoked grant must stay known: as long as any of its tokens could still be
 * presented — the rest of its refresh-token family (the whole lifetime when unknown), plus
 * one access-token lifetime for the last access token issued.
 */
export function revocationTtlMs(ctx: OAuthContext, familyExpiresAt?: number): number {
  const familyLeft =
    familyExpiresAt === undefined
      ? ctx.settings.refreshTokenTtl * 1000
      : Math.max(0, familyExpiresAt - Date.now());
  return familyLeft + ctx.tokens.accessTokenTtl * 1000;
}
