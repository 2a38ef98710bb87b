// `id_token_hint` (OpenID Connect Core §3.1.2.1, RP-Initiated Logout 1.0 §2): an ID token this
// server issued, naming the user the client expects. Its signature and issuer are checked; its
// expiry is not (both specifications let an expired one hint), nor is it accepted as proof of
// anything but whom the client means.
import { loadedJose, loadJose } from '../../internal/lazy.js';
import type { OAuthContext } from '../context.js';

/** What a valid hint says: the user, and the clients it was issued to. */
export interface IdTokenHint {
  sub: string;
  /** The `aud` of the token, as a list. */
  audience: readonly string[];
}

/** Longest hint read: an ID token is a few kilobytes at most. */
const MAX_HINT = 16_384;

/**
 * The user and audience of `hint` when it is an ID token signed by one of the server's keys
 * (current or retired, as published) with the server as `iss`; `undefined` otherwise.
 */
export async function readIdTokenHint(
  ctx: OAuthContext,
  hint: string,
): Promise<IdTokenHint | undefined> {
  if (hint.length > MAX_HINT) return undefined;
  const jose = loadedJose() ?? (await loadJose());
  const jwks = ctx.keys.jwks();
  const algorithms = [
    ...new Set(jwks.keys.map((key) => key.alg).filter((alg) => alg !== undefined)),
  ];
  let payload: Uint8Array;
  try {
    const verified = await jose.compactVerify(hint, jose.createLocalJWKSet(jwks), { algorithms });
    // an ID token, not one of the server's access tokens (`at+jwt`)
    if (verified.protectedHeader.typ !== 'JWT') return undefined;
    payload = verified.payload;
  } catch {
    return undefined;
  }
  let claims: unknown;
  try {
    claims = JSON.parse(new TextDecoder().decode(payload));
  } catch {
    return undefined;
  }
  if (typeof claims !== 'object' || claims === null) return undefined;
  const { iss, sub, aud } = claims as Record<string, unknown>;
  const audience = typeof aud === 'string' ? [aud] : aud;
  if (iss !== ctx.issuer || typeof sub !== 'string' || sub === '') return undefined;
  if (!Array.isArray(audience) || !audience.every((a) => typeof a === 'string')) return undefined;
  return { sub, audience };
}
