// Which issuer verifies a token: jwtBearer's one issuer, or the one of its `issuers` that the
// token's `iss` names (internal to portico/auth).
import type {
  JwtHeader as JWTHeaderParameters,
  JwtClaims as JWTPayload,
} from '../../core/jwt-types.js';
import type { Principal } from '../../core/principal.js';
import { peekPayload } from '../../internal/jwt-peek.js';
import {
  assertKnownOptions,
  countOption,
  functionOption,
  invalidOption,
} from '../../internal/options.js';
import { jwtInvalid } from './error.js';
import {
  buildJwtVerifier,
  type CachingJwtVerifier,
  JWT_VERIFIER_OPTIONS,
  type JwtVerifier,
  type JwtVerifierOptions,
} from './jwt.js';
import {
  checkClaimMapping,
  claimsMapping,
  hasClaimMapping,
  type JwtClaimMappingOptions,
} from './principal.js';

/** A claims-to-principal mapping (`toPrincipal`). */
type Mapping = (
  payload: JWTPayload,
  protectedHeader: JWTHeaderParameters,
) => Principal | undefined | Promise<Principal | undefined>;

/** The options shared by every issuer of `issuers`, given beside it. */
const SHARED = ['clockTolerance', 'maxTokenLength', 'cache'] as const;

/**
 * One issuer of `jwtBearer({ issuers })`: its `issuer`, `audience`, key source and claim rules,
 * as for a single issuer. A token is verified by the issuer its `iss` names, exactly.
 */
export interface JwtIssuerOptions
  extends Omit<JwtVerifierOptions, 'issuer' | (typeof SHARED)[number]>,
    JwtClaimMappingOptions {
  /**
   * The issuer, compared exactly with the token's `iss` (discovery starts from it): one
   * string, since it chooses the issuer's keys.
   */
  issuer: string;
  /**
   * Maps this issuer's verified claims to the principal; returning `undefined` refuses the
   * token.
   * @defaultValue the mapping of `scopesClaim` and `rolesClaim` when either is given, else the
   * shared `toPrincipal`, else the default mapping (`principalFromClaims`)
   */
  toPrincipal?: (
    payload: JWTPayload,
    protectedHeader: JWTHeaderParameters,
  ) => Principal | undefined | Promise<Principal | undefined>;
}

/** What `jwtBearer` reads to verify tokens: one issuer, or `issuers`. */
export type BearerVerifierOptions =
  | (JwtVerifierOptions & JwtClaimMappingOptions & { issuers?: undefined })
  | ({ issuers: readonly JwtIssuerOptions[] } & Partial<
      Pick<JwtVerifierOptions, (typeof SHARED)[number]>
    >);

/** Verifies a token with the keys and rules of its issuer, and maps it as that issuer says. */
export interface BearerVerifier {
  verify: JwtVerifier['verify'];
  verifyCached: CachingJwtVerifier['verifyCached'];
  /** The mapping of the issuer of a payload `verify` gave. */
  toPrincipal: Mapping;
}

const ISSUER_OPTIONS = [
  ...JWT_VERIFIER_OPTIONS.filter((name) => !(SHARED as readonly string[]).includes(name)),
  'scopesClaim',
  'rolesClaim',
  'toPrincipal',
];

/** One issuer's mapping: its own `toPrincipal`, or its claim mapping, or the shared one. */
function mappingOf(
  owner: string,
  options: JwtClaimMappingOptions & { toPrincipal?: Mapping },
  shared: Mapping | undefined,
): Mapping {
  const own = functionOption(owner, 'toPrincipal', options.toPrincipal);
  if (hasClaimMapping(options)) {
    if (own !== undefined) {
      throw invalidOption(
        `${owner}: give \`toPrincipal\` or \`scopesClaim\`/\`rolesClaim\`, not both (call principalFromClaims(payload, { rolesClaim }) in it)`,
      );
    }
    return claimsMapping(checkClaimMapping(owner, options), true);
  }
  return own ?? shared ?? claimsMapping({}, true);
}

/** A verifier of the one issuer of the options. */
function oneIssuer(
  owner: string,
  options: JwtVerifierOptions & JwtClaimMappingOptions,
  shared: Mapping | undefined,
): BearerVerifier {
  const { scopesClaim, rolesClaim } = options;
  const toPrincipal = mappingOf(owner, { scopesClaim, rolesClaim, toPrincipal: shared }, undefined);
  const { verify, verifyCached } = buildJwtVerifier(owner, options);
  return { verify, verifyCached, toPrincipal };
}

interface Issuer {
  verifier: CachingJwtVerifier;
  toPrincipal: Mapping;
}

/** The issuers of `issuers`, by their exact `issuer`, each verifier made now (nothing fetched). */
function issuersOf(
  owner: string,
  options: Extract<BearerVerifierOptions, { issuers: readonly JwtIssuerOptions[] }>,
  shared: Mapping | undefined,
): Map<string, Issuer> {
  const list: unknown = options.issuers;
  if (!Array.isArray(list) || list.length === 0) {
    throw invalidOption(`${owner}: \`issuers\` must be a non-empty array of issuers`);
  }
  for (const name of ISSUER_OPTIONS) {
    if (name !== 'toPrincipal' && (options as Record<string, unknown>)[name] !== undefined) {
      throw invalidOption(`${owner}: \`${name}\` belongs in each entry of \`issuers\``);
    }
  }
  const { clockTolerance, maxTokenLength, cache } = options;
  // the cache's bound holds for all the issuers together
  const max = cache === false ? 0 : countOption(owner, 'cache.max', cache?.max, 10_000, { min: 0 });
  const share = max === 0 ? false : { max: Math.ceil(max / list.length) };
  const issuers = new Map<string, Issuer>();
  list.forEach((entry: JwtIssuerOptions, i) => {
    const where = `${owner}: issuers[${i}]`;
    if (typeof entry !== 'object' || entry === null) {
      throw invalidOption(`${where} must be an object with \`issuer\` and \`audience\``);
    }
    for (const name of SHARED) {
      if (name in entry)
        throw invalidOption(`${where}: \`${name}\` is shared: give it beside \`issuers\``);
    }
    assertKnownOptions(where, entry, ISSUER_OPTIONS);
    if (typeof entry.issuer !== 'string' || entry.issuer === '') {
      throw invalidOption(`${where}: \`issuer\` must be one non-empty string`);
    }
    if (issuers.has(entry.issuer)) {
      throw invalidOption(`${where}: \`${entry.issuer}\` is listed twice`);
    }
    const { toPrincipal, scopesClaim, rolesClaim, ...rules } = entry;
    const verifier = buildJwtVerifier(where, {
      ...rules,
      clockTolerance,
      maxTokenLength,
      cache: share,
    });
    const mapping = mappingOf(where, { toPrincipal, scopesClaim, rolesClaim }, shared);
    issuers.set(entry.issuer, { verifier, toPrincipal: mapping });
  });
  return issuers;
}

/** A verifier choosing among `issuers` by the token's `iss`, read before anything is fetched. */
function severalIssuers(
  owner: string,
  options: Extract<BearerVerifierOptions, { issuers: readonly JwtIssuerOptions[] }>,
  shared: Mapping | undefined,
): BearerVerifier {
  const issuers = issuersOf(owner, options, shared);
  // the map's keys are strings: any other `iss` finds nothing
  const issuerOf = (iss: unknown) => issuers.get(iss as string);
  return {
    async verify(token, context) {
      // unverified, only to choose the keys: the chosen issuer verifies `iss` again
      const issuer = issuerOf(peekPayload(token)?.iss);
      if (issuer === undefined) throw jwtInvalid('access token');
      return issuer.verifier.verify(token, context);
    },
    verifyCached(token, context) {
      return issuerOf(peekPayload(token)?.iss)?.verifier.verifyCached(token, context);
    },
    toPrincipal(payload, protectedHeader) {
      const issuer = issuerOf(payload.iss);
      return issuer === undefined ? undefined : issuer.toPrincipal(payload, protectedHeader);
    },
  };
}

/**
 * The verifier of `jwtBearer`: one issuer, or the listed `issuers`, each with its own keys,
 * audience and rules. A token of an issuer not listed is refused before any key is fetched,
 * so no other issuer is ever contacted. `shared` is the checked `toPrincipal` option.
 */
export function bearerVerifier(
  owner: string,
  options: BearerVerifierOptions,
  shared: Mapping | undefined,
): BearerVerifier {
  if (options.issuers === undefined) return oneIssuer(owner, options, shared);
  if ((options as { issuer?: unknown }).issuer !== undefined) {
    throw invalidOption(`${owner}: give \`issuer\` or \`issuers\`, not both`);
  }
  return severalIssuers(owner, options, shared);
}
