import type { RateLimitStore } from '../../rate-limit/store.js';
import type { OAuthContext } from '../context.js';
import { type DeviceCodeRecord, deviceCodes, isDeviceCodeExpired } from '../store/records.js';

/** A pending device code found by its user code. */
export interface PendingDeviceCode {
  /** The device code's hash, its key in the store. */
  hash: string;
  record: DeviceCodeRecord;
}

/** The outcome of a user code the user typed (see {@link UserCodeAttempts.attempt}). */
export type UserCodeAttempt =
  /** Past the limit: the code was not looked up. */
  | { kind: 'locked'; seconds: number }
  /** No pending code: `seconds` of lockout when this attempt spent the last one, else 0. */
  | { kind: 'wrong'; seconds: number }
  | { kind: 'found'; found: PendingDeviceCode };

/** The per-user budget of user-code attempts of the device verification page. */
export interface UserCodeAttempts {
  /** Counts one attempt of `sub`, then (within the limit only) looks `code` up. */
  attempt(sub: string, code: string | undefined): Promise<UserCodeAttempt>;
}

/**
 * The pending, unexpired device code of a normalised user code, if any.
 *
 * @example
 * ```ts
 * const found = await findPendingDeviceCode(ctx, normalizeUserCode(typed));
 * ```
 */
export async function findPendingDeviceCode(
  ctx: OAuthContext,
  code: string | undefined,
): Promise<PendingDeviceCode | undefined> {
  const found = code === undefined ? undefined : await deviceCodes(ctx.store).findByKey(code);
  if (found?.state !== 'fresh' || found.record.status !== 'pending') return undefined;
  return isDeviceCodeExpired(found.record) ? undefined : { hash: found.id, record: found.record };
}

/**
 * Counts user-code attempts per user in fixed windows of `store`, each one BEFORE its code is
 * looked up: the count and the decision are one atomic `increment`, so a concurrent burst
 * gets at most `limit` lookups in a window, whichever process serves it. A right code counts
 * as an attempt too (the count cannot wait for the lookup's verdict without reopening the race).
 *
 * @example
 * ```ts
 * const store = new MemoryRateLimitStore();
 * const attempts = createUserCodeAttempts(ctx, { store, limit: 5, windowMs: 900_000 });
 * const outcome = await attempts.attempt(session.sub, normalizeUserCode(typed));
 * if (outcome.kind === 'locked') return tooMany(res, outcome.seconds);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8628#section-5.1 | RFC 8628 §5.1}
 */
export function createUserCodeAttempts(
  ctx: OAuthContext,
  options: { store: RateLimitStore; limit: number; windowMs: number },
): UserCodeAttempts {
  const { store, limit, windowMs } = options;
  const secondsUntil = (resetAt: number) => Math.max(1, Math.ceil((resetAt - Date.now()) / 1000));
  return {
    async attempt(sub, code) {
      const hit = await store.increment(`device-user-code:${sub}`, windowMs);
      if (hit.count > limit) return { kind: 'locked', seconds: secondsUntil(hit.resetAt) };
      const found = await findPendingDeviceCode(ctx, code);
      if (found !== undefined) return { kind: 'found', found };
      return { kind: 'wrong', seconds: hit.count < limit ? 0 : secondsUntil(hit.resetAt) };
    },
  };
}
