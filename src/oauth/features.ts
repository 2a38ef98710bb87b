import { assertKnownOptions, booleanOption, invalidOption } from '../internal/options.js';

/**
 * The optional endpoints of an authorization server, each switched on or off. An endpoint that
 * is off does not exist (its path answers `404`, as any unknown path), and discovery leaves it
 * out: the metadata document is derived from the same switches. The authorization endpoint,
 * the token endpoint, the JWKS and discovery are always on.
 *
 * @example
 * ```ts
 * // a server for machines only: no device flow, no logout page, no UserInfo
 * const features: AuthorizationServerFeatures = { deviceFlow: false, endSession: false, userinfo: false };
 * createAuthorizationServer({ ...options, features });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8414#section-2 | RFC 8414 §2}
 */
export interface AuthorizationServerFeatures {
  /**
   * The device authorization grant (RFC 8628): `/device`, the `/device/verify` page and the
   * `urn:ietf:params:oauth:grant-type:device_code` grant at the token endpoint.
   * @defaultValue `true`
   */
  deviceFlow?: boolean;
  /**
   * Pushed authorization requests (RFC 9126): `/par`, and the `request_uri` it issues at
   * `/authorize`. Required by `requirePushedAuthorizationRequests` and `fapi2`.
   * @defaultValue `true`
   */
  pushedAuthorizationRequests?: boolean;
  /** Token introspection (RFC 7662): `/introspect`. @defaultValue `true` */
  introspection?: boolean;
  /** Token revocation (RFC 7009): `/revoke`. @defaultValue `true` */
  revocation?: boolean;
  /** RP-Initiated Logout 1.0: `/session/end` (`end_session_endpoint`). @defaultValue `true` */
  endSession?: boolean;
  /** The OpenID Connect UserInfo endpoint: `/userinfo`. @defaultValue `true` */
  userinfo?: boolean;
  /**
   * Dynamic client registration (RFC 7591) and its management (RFC 7592): `/register` and
   * `/register/{client_id}` (`registration_endpoint`), with the policy of the server's
   * `registration` option. Needs a writable client store (`clientStores()`).
   * @defaultValue `false`
   */
  registration?: boolean;
}

/** The switches that are off unless switched on. */
const OFF_BY_DEFAULT: readonly string[] = ['registration'];

/** The switches as the server reads them: every one decided. */
export type ResolvedFeatures = Readonly<Required<AuthorizationServerFeatures>>;

const FEATURES = [
  'deviceFlow',
  'pushedAuthorizationRequests',
  'introspection',
  'revocation',
  'endSession',
  'userinfo',
  'registration',
] as const satisfies readonly (keyof AuthorizationServerFeatures)[];

/**
 * Reads the `features` option of `owner`: unknown names are refused (with a hint), each switch
 * must be a boolean, and an unset one is on (the server as it was before switches existed),
 * `registration` apart: it is off unless switched on.
 * `needs` names the options that cannot work with a switch off (e.g. FAPI 2.0 without PAR).
 * @internal
 */
export function resolveFeatures(
  owner: string,
  features: AuthorizationServerFeatures | undefined,
  needs: { readonly pushedAuthorizationRequests: readonly string[] },
): ResolvedFeatures {
  if (features !== undefined && (features === null || typeof features !== 'object')) {
    throw invalidOption(`${owner}: \`features\` must be an object of switches`);
  }
  assertKnownOptions(`${owner} features`, features, FEATURES);
  const resolved = Object.fromEntries(
    FEATURES.map((name) => [
      name,
      booleanOption(owner, `features.${name}`, features?.[name], !OFF_BY_DEFAULT.includes(name)),
    ]),
  ) as Required<AuthorizationServerFeatures>;
  const [needsPar] = needs.pushedAuthorizationRequests;
  if (!resolved.pushedAuthorizationRequests && needsPar !== undefined) {
    throw invalidOption(
      `${owner}: \`${needsPar}\` needs pushed authorization requests: leave \`features.pushedAuthorizationRequests\` on`,
    );
  }
  return Object.freeze(resolved);
}
