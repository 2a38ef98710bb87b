import { assertNotThenable, invalidOption } from '../../internal/options.js';
import type { ResolvedFeatures } from '../features.js';
import { authorizationCodeGrant } from './authorization-code.js';
import { clientCredentialsGrant } from './client-credentials.js';
import { defineGrant, type Grant } from './contract.js';
import { DEVICE_CODE_GRANT, deviceCodeGrant } from './device-code.js';
import { refreshTokenGrant } from './refresh-token.js';

/**
 * portico's grants, the `grants` of a server by default: `authorization_code` (with PKCE),
 * `refresh_token` (rotating), `client_credentials` and the device grant (RFC 8628). Spread it
 * to add one (`[...defaultGrants, tokenExchangeGrant({ … })]`), filter it to take one away.
 *
 * @example
 * ```ts
 * const auth = createAuthorizationServer({
 *   ...options,
 *   grants: [...defaultGrants, tokenExchangeGrant({ targets: ['https://api.example.com'] })],
 * });
 * // no device flow on this server
 * const withoutDevices = defaultGrants.filter((grant) => grant.type !== DEVICE_CODE_GRANT);
 * ```
 */
export const defaultGrants: readonly Grant[] = Object.freeze([
  authorizationCodeGrant,
  refreshTokenGrant,
  clientCredentialsGrant,
  deviceCodeGrant,
]);

/** The grants of a server by their `grant_type`, checked once. */
export type GrantRegistry = ReadonlyMap<string, Grant>;

/**
 * The registry of a server's `grants`: each checked as {@link defineGrant} does, no type
 * twice. Lookups by `grant_type` are own keys only (`__proto__` is not a grant). With the
 * server's `features`, the device grant is left out when the device flow is off.
 */
export function grantRegistry(
  owner: string,
  grants: readonly Grant[] = defaultGrants,
  features?: ResolvedFeatures,
): GrantRegistry {
  assertNotThenable(owner, 'grants', grants);
  if (!Array.isArray(grants)) {
    throw invalidOption(`${owner}: \`grants\` must be a list of grants ([...defaultGrants, …])`);
  }
  const registry = new Map<string, Grant>();
  grants.forEach((grant, i) => {
    assertNotThenable(owner, `grants[${i}]`, grant);
    const checked = defineGrant(grant);
    if (registry.has(checked.type)) {
      throw invalidOption(`${owner}: two grants answer \`${checked.type}\``);
    }
    registry.set(checked.type, checked);
  });
  if (features !== undefined && !features.deviceFlow) registry.delete(DEVICE_CODE_GRANT);
  return registry;
}
