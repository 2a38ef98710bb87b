// DPoP server nonces (RFC 9449 §8, §9): a value the server hands out in `DPoP-Nonce`, which
// proofs must then carry, so that a proof cannot be made ahead of time. Stateless: a nonce is
// an HMAC of the current time window, so every process with the same secret agrees.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Duration } from '../../core/duration.js';
import {
  assertGivenOptions,
  assertKnownOptions,
  durationOption,
  invalidOption,
  secretKeyOption,
} from '../../internal/options.js';

/** Options of {@link createDpopNonces}. */
export interface DpopNonceOptions {
  /**
   * The HMAC key (32 bytes or more, or a string of 32 characters or more). Give the same one
   * to every process behind one address, so that a nonce of one is taken by all.
   * @defaultValue 32 random bytes, new at each start (one process only)
   */
  secret?: string | Uint8Array;
  /**
   * How long a nonce is handed out, in milliseconds; the one before it is still taken, so a
   * nonce lives between one and two lifetimes.
   * @defaultValue `300_000` (5 minutes)
   */
  lifetime?: Duration;
  /** The clock, epoch milliseconds (tests inject one). @defaultValue `Date.now` */
  now?: () => number;
}

/** The nonces a server hands out and checks. */
export interface DpopNonces {
  /** The nonce to send in `DPoP-Nonce` now. */
  current(): string;
  /** Whether a proof's `nonce` is the current one or the one before it. */
  accepts(nonce: unknown): boolean;
}

const OPTIONS = [
  'secret',
  'lifetime',
  'now',
] as const satisfies readonly (keyof DpopNonceOptions)[];
const OWNER = 'createDpopNonces()';

/**
 * Creates the server nonces of RFC 9449 §8 (token endpoint) and §9 (resources): give them to
 * `createDpopVerifier({ nonces })`, and every proof must carry the current nonce (or the one
 * before it); a proof without it is refused with `use_dpop_nonce` and the answer carries
 * `DPoP-Nonce` with the nonce to use, which clients such as openid-client retry with. A
 * nonce is 22 base64url characters of an HMAC of the time window: nothing is stored.
 *
 * @example
 * ```ts
 * const nonces = createDpopNonces({ secret: process.env.DPOP_NONCE_SECRET });
 * const auth = createAuthorizationServer({ ...options, dpop: { nonces } });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9449#section-8 | RFC 9449 §8}
 */
export function createDpopNonces(options: DpopNonceOptions = {}): DpopNonces {
  assertKnownOptions(OWNER, options, OPTIONS);
  assertGivenOptions(OWNER, options, ['secret']); // unset would be a random key per process
  const secret = secretKeyOption(OWNER, 'secret', options.secret);
  const lifetime = durationOption(OWNER, 'lifetime', options.lifetime, 300_000, { min: 1_000 });
  const now = options.now ?? Date.now;
  if (typeof now !== 'function') throw invalidOption(`${OWNER}: \`now\` must be a function`);
  const nonceOf = (window: number) =>
    createHmac('sha256', secret).update(`dpop-nonce:${window}`).digest('base64url').slice(0, 22);
  const same = (a: string, b: string) => timingSafeEqual(Buffer.from(a), Buffer.from(b));
  return {
    current: () => nonceOf(Math.floor(now() / lifetime)),
    accepts(nonce) {
      if (typeof nonce !== 'string' || nonce.length !== 22) return false;
      const window = Math.floor(now() / lifetime);
      return same(nonce, nonceOf(window)) || same(nonce, nonceOf(window - 1));
    },
  };
}
