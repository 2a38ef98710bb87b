// Remembered consents: the grant a user gave a client, which every token issued under it
// carries (`grant_id`), so that one revocation ends them all. One grant per user and client:
// a later approval widens it; a revoked one is forgotten and the next approval starts anew.
import { randomUUID } from 'node:crypto';
import type { OAuthContext } from './context.js';
import { consents, type GrantRecord } from './store/records.js';
import { revocationTtlMs, revokeGrant } from './tokens/revoke-grant.js';

/** How long a consent is remembered after its last use: as long as a refresh-token family. */
const grantTtl = (ctx: OAuthContext) => ctx.settings.refreshTokenTtl;

/** The consent of `sub` to `clientId`, unless its grant was revoked (it is then forgotten). */
async function liveGrant(
  ctx: OAuthContext,
  sub: string,
  clientId: string,
): Promise<GrantRecord | undefined> {
  const grant = await consents(ctx.store).get(sub, clientId);
  if (grant === undefined) return undefined;
  if (!(await ctx.store.isGrantRevoked(grant.id))) return grant;
  await consents(ctx.store).delete(sub, grant.id);
  return undefined;
}

/**
 * The grant under which `sub` approves `scope` for `clientId` now: the remembered one, widened
 * by the new scopes and remembered again from now, or a new one. `known` is that remembered
 * grant when the caller has just read it (no second look at the store).
 */
export async function approveGrant(
  ctx: OAuthContext,
  sub: string,
  clientId: string,
  scope: readonly string[],
  known?: GrantRecord,
): Promise<string> {
  const held = known ?? (await liveGrant(ctx, sub, clientId));
  const grant: GrantRecord = {
    id: held?.id ?? randomUUID(),
    sub,
    clientId,
    scope: [...new Set([...(held?.scope ?? []), ...scope])],
    createdAt: held?.createdAt ?? Date.now(),
  };
  await consents(ctx.store).save(grant, grantTtl(ctx));
  return grant.id;
}

/**
 * The remembered consent of `sub` that covers every scope of `scope` for `clientId`, if any:
 * the request may then be answered without asking (OpenID Connect Core §3.1.2.4).
 */
export async function rememberedGrant(
  ctx: OAuthContext,
  sub: string,
  clientId: string,
  scope: readonly string[],
): Promise<GrantRecord | undefined> {
  const grant = await liveGrant(ctx, sub, clientId);
  if (grant === undefined || !scope.every((name) => grant.scope.includes(name))) return undefined;
  return grant;
}

/**
 * A user's authorized applications: each client `sub` consented to, with the scopes and the
 * grant id its tokens carry.
 *
 * @example
 * ```ts
 * const grants = await server.consents.list(principal.sub);
 * // [{ id: '6f1c…', sub: 'alice', clientId: 'demo-web', scope: ['openid'], createdAt: 1767225600000 }]
 * ```
 */
export interface UserConsents {
  /** The live consents of `sub`, oldest first (a revoked grant is not listed). */
  list(sub: string): Promise<readonly GrantRecord[]>;
  /**
   * Revokes the grant `id` of `sub`: its refresh and access tokens stop working, its end is
   * announced (`grant:<id>` on the server's `revocations`, which ends the streams opened with
   * its tokens), and the consent is forgotten. False when `sub` has no grant by that id.
   */
  revoke(sub: string, id: string): Promise<boolean>;
}

/**
 * The {@link UserConsents} of an authorization server's context.
 *
 * @example
 * ```ts
 * const grants = userConsents(server.context);
 * if (!(await grants.revoke('alice', grantId))) throw notFound();
 * ```
 */
export function userConsents(ctx: OAuthContext): UserConsents {
  return {
    async list(sub) {
      const held = await consents(ctx.store).list(sub);
      const revoked = await Promise.all(held.map((grant) => ctx.store.isGrantRevoked(grant.id)));
      return held.filter((_, i) => !revoked[i]);
    },
    async revoke(sub, id) {
      const grant = (await consents(ctx.store).list(sub)).find((held) => held.id === id);
      if (grant === undefined) return false;
      // revoked first: were the consent forgotten and the revocation then lost, its tokens
      // would live on unlisted
      await revokeGrant(ctx, id, revocationTtlMs(ctx));
      await consents(ctx.store).delete(sub, id);
      return true;
    },
  };
}
