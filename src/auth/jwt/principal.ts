// From verified claims to a principal: the default mapping of jwtBearer, and where it reads
// the scopes and roles of a provider's tokens (internal to portico/auth).
import type { JwtClaims as JWTPayload } from '../../core/jwt-types.js';
import type { Principal } from '../../core/principal.js';
import { invalidOption } from '../../internal/options.js';
import { grantCredentialId, tokenCredentialId } from '../revocations.js';
import { scopesFromClaim } from '../scopes.js';

/**
 * Where a claim is in a token: a claim's name, taken whole (`'roles'`, `'cognito:groups'`,
 * `'https://example.com/roles'`: dots and all), or the names leading down to a nested claim
 * (`['realm_access', 'roles']`, `['resource_access', 'my-api', 'roles']`).
 *
 * @example
 * ```ts
 * const realmRoles: ClaimPath = ['realm_access', 'roles'];
 * ```
 */
export type ClaimPath = string | readonly string[];

/**
 * Where the default mapping of `jwtBearer` finds a token's scopes and roles, for providers
 * that put them in claims of their own.
 */
export interface JwtClaimMappingOptions {
  /**
   * The claim holding the scopes (a space-separated string or an array of them), e.g.
   * `'permissions'` for Auth0's RBAC permissions.
   * @defaultValue `scope`, else `scp`
   */
  scopesClaim?: ClaimPath;
  /**
   * The claim holding the roles (an array of strings, or one string), which become
   * `principal.roles` for `requireRole`: `'roles'` (Microsoft Entra ID), `'cognito:groups'`
   * (Amazon Cognito), `['realm_access', 'roles']` (Keycloak), `'groups'` (Okta).
   * @defaultValue none: `principal.roles` is not set (the `role` claim gives `principal.role`)
   */
  rolesClaim?: ClaimPath;
}

const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);

/** The claim at `path` in `payload`, own properties only; `undefined` when it is not there. */
export function claimAt(payload: JWTPayload, path: ClaimPath): unknown {
  const keys = typeof path === 'string' ? [path] : path;
  let value: unknown = payload;
  for (const key of keys) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    if (!Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** The roles of a claim: one string, or the non-empty strings of an array (at most 256 each). */
function rolesFromClaim(value: unknown): string[] | undefined {
  const list = typeof value === 'string' ? [value] : Array.isArray(value) ? value : undefined;
  return list?.filter((r): r is string => typeof r === 'string' && r !== '' && r.length <= 256);
}

/** A claims-to-principal mapping, as `jwtBearer`'s `toPrincipal`. */
export type ClaimsMapping = (payload: JWTPayload) => Principal | undefined;

interface Parsed {
  scopes: readonly string[];
  roles: readonly string[] | undefined;
}

/** The revocation ids of a token (`grant:<grant_id>`, `token:<jti>`), a new list, if it carries any. */
export function tokenCredentialIds(payload: JWTPayload): string[] | undefined {
  const grantId = text(payload.grant_id);
  const jti = text(payload.jti);
  if (grantId === undefined && jti === undefined) return undefined;
  const ids: string[] = [];
  if (grantId !== undefined) ids.push(grantCredentialId(grantId));
  if (jti !== undefined) ids.push(tokenCredentialId(jti));
  return ids;
}

/**
 * The default mapping, reading scopes and roles where `options` says. The scopes and roles of
 * a payload are parsed once: a token served from the verified-token cache hands the same
 * (frozen) payload to every request.
 * `withCredential` (jwtBearer's own mappings) sets the token's `credentialIds` and `expiresAt`
 * too, so that jwtBearer does not copy the principal to add them; `principalFromClaims` leaves
 * them out, as it always has.
 */
export function claimsMapping(
  options: JwtClaimMappingOptions = {},
  withCredential = false,
): ClaimsMapping {
  const { scopesClaim, rolesClaim } = options;
  const parsed = new WeakMap<JWTPayload, Parsed>();
  const parse = (payload: JWTPayload): Parsed => {
    let found = parsed.get(payload);
    if (found === undefined) {
      const scopes =
        scopesClaim === undefined ? (payload.scope ?? payload.scp) : claimAt(payload, scopesClaim);
      const roles =
        rolesClaim === undefined ? undefined : rolesFromClaim(claimAt(payload, rolesClaim));
      found = {
        scopes: Object.freeze(scopesFromClaim(scopes)),
        roles: roles === undefined ? undefined : Object.freeze(roles),
      };
      if (Object.isFrozen(payload)) parsed.set(payload, found);
    }
    return found;
  };
  return (payload) => {
    const sub = text(payload.sub);
    if (sub === undefined) return undefined;
    const { scopes, roles } = parse(payload);
    const principal: Principal = { sub, scopes, method: 'bearer', claims: payload };
    const name = text(payload.name);
    const role = text(payload.role);
    const clientId = text(payload.client_id) ?? text(payload.azp);
    if (name !== undefined) principal.name = name;
    if (role !== undefined) principal.role = role;
    if (roles !== undefined) principal.roles = roles;
    if (clientId !== undefined) principal.clientId = clientId;
    if (withCredential) {
      // what jwtBearer adds to any mapping's principal, set here so that it copies none
      const credentialIds = tokenCredentialIds(payload);
      if (credentialIds !== undefined) principal.credentialIds = credentialIds;
      if (typeof payload.exp === 'number') principal.expiresAt = payload.exp * 1000;
    }
    return principal;
  };
}

function checkPath(owner: string, name: string, path: unknown): void {
  if (path === undefined) return;
  const keys = typeof path === 'string' ? [path] : Array.isArray(path) ? path : [];
  if (keys.length === 0 || keys.some((k) => typeof k !== 'string' || k === '')) {
    throw invalidOption(
      `${owner}: \`${name}\` must be a claim name, or an array of names down to a nested claim`,
    );
  }
}

/** Whether options name where scopes or roles are (so that a `toPrincipal` would ignore them). */
export function hasClaimMapping(options: JwtClaimMappingOptions): boolean {
  return options.scopesClaim !== undefined || options.rolesClaim !== undefined;
}

/** `scopesClaim` and `rolesClaim`, checked once, as a frozen copy. */
export function checkClaimMapping(owner: string, options: JwtClaimMappingOptions) {
  checkPath(owner, 'scopesClaim', options.scopesClaim);
  checkPath(owner, 'rolesClaim', options.rolesClaim);
  const copy = (path: ClaimPath | undefined) =>
    typeof path === 'object' ? Object.freeze([...path]) : path;
  return { scopesClaim: copy(options.scopesClaim), rolesClaim: copy(options.rolesClaim) };
}

const defaultMapping = claimsMapping();

/**
 * The default claims-to-principal mapping of `jwtBearer` (see its `toPrincipal` option):
 * `sub` (required: without it, `undefined`), `name`, `role`, the scopes from `scope`
 * (space-separated) or `scp`, `clientId` from `client_id` or `azp`, `method: 'bearer'` and the
 * claims; `mapping` reads the scopes and the roles (`principal.roles`) from other claims.
 *
 * @example
 * ```ts
 * const bearer = jwtBearer({
 *   issuer: 'https://auth.example.com',
 *   audience: 'https://api.example.com',
 *   jwksUrl: 'https://auth.example.com/.well-known/jwks.json',
 *   // keep the default mapping, with Keycloak's realm roles, and add a tenant check
 *   toPrincipal: (payload) =>
 *     payload.tenant === 'acme'
 *       ? principalFromClaims(payload, { rolesClaim: ['realm_access', 'roles'] })
 *       : undefined,
 * });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9068#section-2.2 | RFC 9068 §2.2}
 */
export function principalFromClaims(
  payload: JWTPayload,
  mapping?: JwtClaimMappingOptions,
): Principal | undefined {
  if (mapping === undefined) return defaultMapping(payload);
  return claimsMapping(checkClaimMapping('principalFromClaims()', mapping))(payload);
}
