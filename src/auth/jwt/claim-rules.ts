// The claim rules of a verifier beyond `iss` and `aud`: the claim the audience is read from,
// and claims that must hold given values (internal to portico/auth).
import type { JwtClaims as JWTPayload } from '../../core/jwt-types.js';
import { invalidOption } from '../../internal/options.js';
import { jwtInvalid } from './error.js';

/** A value a claim may be required to hold. */
type ClaimValue = string | number | boolean;

/** The rules, checked once the signature and the registered claims are. */
export interface ClaimRules {
  /** What jose compares `aud` with: `undefined` when the audience is in another claim. */
  readonly joseAudience: string | string[] | undefined;
  /** Throws an `invalid` JwtError unless `payload` follows the rules. */
  check(payload: JWTPayload, subject: string): void;
}

const isValue = (value: unknown): value is ClaimValue =>
  typeof value === 'string' || typeof value === 'boolean' || Number.isFinite(value);

/** The `claims` option, read once: each name with the values it accepts. */
function requiredValues(owner: string, claims: unknown): [string, readonly ClaimValue[]][] {
  if (claims === undefined) return [];
  if (typeof claims !== 'object' || claims === null || Array.isArray(claims)) {
    throw invalidOption(`${owner}: \`claims\` must be an object of claim names and values`);
  }
  return Object.entries(claims).map(([name, value]) => {
    const accepted: unknown[] = Array.isArray(value) ? value : [value];
    if (name === '' || accepted.length === 0 || !accepted.every(isValue)) {
      throw invalidOption(
        `${owner}: \`claims.${name}\` must be a string, number or boolean, or a non-empty array of them`,
      );
    }
    return [name, Object.freeze([...accepted])];
  });
}

/** Whether `value` (a string, or an array of strings) holds one of `accepted`. */
function holdsOneOf(value: unknown, accepted: readonly string[]): boolean {
  if (typeof value === 'string') return accepted.includes(value);
  return Array.isArray(value) && value.some((v) => typeof v === 'string' && accepted.includes(v));
}

/**
 * The rules of `audienceClaim` and `claims` (see `JwtVerifierOptions`), checked at
 * construction; `audience` is the checked `audience` option.
 */
export function claimRules(
  owner: string,
  options: { audienceClaim?: unknown; claims?: unknown },
  audience: string | string[],
): ClaimRules {
  const audienceClaim = options.audienceClaim ?? 'aud';
  if (typeof audienceClaim !== 'string' || audienceClaim === '') {
    throw invalidOption(`${owner}: \`audienceClaim\` must be a claim name`);
  }
  const values = requiredValues(owner, options.claims);
  const accepted = typeof audience === 'string' ? [audience] : audience;
  const elsewhere = audienceClaim !== 'aud';
  return {
    joseAudience: elsewhere ? undefined : audience,
    check(payload, subject) {
      if (elsewhere && !holdsOneOf(payload[audienceClaim], accepted)) throw jwtInvalid(subject);
      for (const [name, allowed] of values) {
        if (!Object.hasOwn(payload, name) || !allowed.includes(payload[name] as ClaimValue)) {
          throw jwtInvalid(subject);
        }
      }
    },
  };
}
