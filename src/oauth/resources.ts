// The resources an authorization server issues tokens for (RFC 8707 resource indicators): the
// configured ones, the `resource` parameters of a request checked against them, and the
// audience and scope of each token of a grant.
import { invalidOption } from '../internal/options.js';
import { OAuthError } from './protocol/errors.js';

/**
 * A resource the authorization server issues access tokens for (RFC 8707): a client names it
 * with `resource` at `/authorize`, `/par`, `/device` or `/token`, and the tokens are then for
 * it alone (`aud`).
 *
 * @example
 * ```ts
 * const resources: ResourceDefinition[] = [
 *   { identifier: 'https://api.example.com', name: 'The API' },
 *   { identifier: 'https://api.example.com/mcp', scopes: ['read:messages', 'write:messages'] },
 * ];
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8707#section-2 | RFC 8707 §2}
 */
export interface ResourceDefinition {
  /**
   * The resource's identifier: an absolute URI without a fragment, the `resource` a client
   * names and the `aud` of its tokens, exactly as written here.
   */
  identifier: string;
  /**
   * The scopes the resource understands: a token for it carries only these of the scopes
   * granted (for several resources, those any of them understands).
   * @defaultValue every scope: the granted scope, unchanged
   */
  scopes?: readonly string[];
  /** A name for people (logs, pages). @defaultValue none */
  name?: string;
}

/**
 * A configured resource, as the server resolved it (`ctx.resources`, `server.resources`).
 *
 * @example
 * ```ts
 * const mcp: ConfiguredResource | undefined = server.resources.find((r) => r.identifier.endsWith('/mcp'));
 * const scopesSupported = mcp?.scopes ?? [];
 * ```
 */
export interface ConfiguredResource {
  readonly identifier: string;
  /** The scopes it understands; `undefined`: every scope. */
  readonly scopes: readonly string[] | undefined;
  readonly name: string | undefined;
}

const RESOURCE_KEYS = ['identifier', 'scopes', 'name'] as const;

/** Whether `value` has the syntax of a resource indicator: an absolute URI, no fragment. */
function isResourceIndicator(value: string): boolean {
  return !/[\s#]/.test(value) && URL.canParse(value);
}

/** The same resource, spelled alike once normalised (`https://A.example` and `https://a.example/`). */
function sameResource(a: string, b: string): boolean {
  return a === b || new URL(a).href === new URL(b).href;
}

/**
 * The `resources` option, checked: absolute URIs without fragment, unique, with their scopes;
 * none given, the issuer alone. The first is the default resource.
 * @internal
 */
export function resolveResources(
  owner: string,
  value: readonly ResourceDefinition[] | undefined,
  issuer: string,
): readonly ConfiguredResource[] {
  if (value === undefined) {
    return Object.freeze([
      Object.freeze({ identifier: issuer, scopes: undefined, name: undefined }),
    ]);
  }
  if (!Array.isArray(value) || value.length === 0) {
    throw invalidOption(
      `${owner}: \`resources\` must be a non-empty list of { identifier, scopes?, name? }`,
    );
  }
  const resolved: ConfiguredResource[] = [];
  for (const given of value as readonly ResourceDefinition[]) {
    if (typeof given !== 'object' || given === null) {
      throw invalidOption(`${owner}: each of \`resources\` is { identifier, scopes?, name? }`);
    }
    const unknown = Object.keys(given).find(
      (key) => !(RESOURCE_KEYS as readonly string[]).includes(key),
    );
    if (unknown !== undefined) {
      throw invalidOption(
        `${owner}: unknown option \`resources[].${unknown}\` (identifier, scopes, name)`,
      );
    }
    const { identifier, scopes, name } = given;
    if (typeof identifier !== 'string' || !isResourceIndicator(identifier)) {
      throw invalidOption(
        `${owner}: \`resources[].identifier\` must be an absolute URI without a fragment (RFC 8707 §2)`,
      );
    }
    if (resolved.some((held) => sameResource(held.identifier, identifier))) {
      throw invalidOption(`${owner}: the resource ${identifier} is configured twice`);
    }
    if (
      scopes !== undefined &&
      (!Array.isArray(scopes) ||
        scopes.some((s) => typeof s !== 'string' || !/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(s)))
    ) {
      throw invalidOption(
        `${owner}: \`scopes\` of the resource ${identifier} must be a list of scope names`,
      );
    }
    if (name !== undefined && (typeof name !== 'string' || name === '')) {
      throw invalidOption(
        `${owner}: \`name\` of the resource ${identifier} must be a non-empty string`,
      );
    }
    resolved.push(
      Object.freeze({
        identifier,
        scopes: scopes === undefined ? undefined : Object.freeze([...new Set(scopes)]),
        name,
      }),
    );
  }
  return Object.freeze(resolved);
}

/**
 * The `resource` values of a request's form, taken out of it (they may repeat, unlike every
 * other parameter) and checked for syntax: each an absolute URI without a fragment, else
 * `invalid_target`. Empty values count as absent; duplicates once.
 * @internal
 */
export function takeResources(form: URLSearchParams): string[] {
  const values = form.getAll('resource').filter((value) => value !== '');
  form.delete('resource');
  for (const value of values) {
    if (!isResourceIndicator(value)) {
      throw new OAuthError(
        'invalid_target',
        'resource must be an absolute URI without a fragment (RFC 8707 §2).',
      );
    }
  }
  return [...new Set(values)];
}

/**
 * The resources of a request, as the token endpoint hands them to a grant: its `resource`
 * parameter holds them separated by spaces (which no resource indicator contains).
 * @internal
 */
export function resourcesOf(params: ReadonlyMap<string, string>): string[] {
  return (params.get('resource') ?? '').split(' ').filter((value) => value !== '');
}

/**
 * The configured resources `requested` names, by their configured identifier: an unknown one
 * is `invalid_target`.
 * @internal
 */
export function configuredResources(
  resources: readonly ConfiguredResource[],
  requested: readonly string[],
): string[] {
  const found = requested.map((value) => {
    if (!isResourceIndicator(value)) {
      throw new OAuthError(
        'invalid_target',
        'resource must be an absolute URI without a fragment (RFC 8707 §2).',
      );
    }
    const resource = resources.find((held) => sameResource(held.identifier, value));
    if (resource === undefined) {
      throw new OAuthError('invalid_target', 'Tokens are not issued for this resource.');
    }
    return resource.identifier;
  });
  return [...new Set(found)];
}

/**
 * The audience of a token of a grant: the resources the token request names (each one the
 * grant holds, else `invalid_target`), or every one the grant holds; a grant that named none
 * may have a token for any configured resource, the default (the first) when the request
 * names none either.
 * @internal
 */
export function tokenAudience(
  resources: readonly ConfiguredResource[],
  granted: readonly string[] | undefined,
  requested: readonly string[],
): string[] {
  const named = configuredResources(resources, requested);
  if (granted === undefined || granted.length === 0) {
    return named.length > 0 ? named : [resources[0]!.identifier];
  }
  if (named.some((identifier) => !granted.includes(identifier))) {
    throw new OAuthError('invalid_target', 'The grant does not cover this resource.');
  }
  return named.length > 0 ? named : [...granted];
}

/**
 * The scope of a token for `audience`: the granted scopes its resources understand (every
 * one, when one of them declares no `scopes`).
 * @internal
 */
export function scopeForAudience(
  resources: readonly ConfiguredResource[],
  audience: readonly string[],
  scope: readonly string[],
): string[] {
  const understood = new Set<string>();
  for (const identifier of audience) {
    const scopes = resources.find((held) => held.identifier === identifier)?.scopes;
    if (scopes === undefined) return [...scope];
    for (const name of scopes) understood.add(name);
  }
  return scope.filter((name) => understood.has(name));
}

/**
 * `aud` of a token: the one identifier, or the list.
 * @internal
 */
export function audienceClaim(audience: readonly string[]): string | readonly string[] {
  return audience.length === 1 ? audience[0]! : audience;
}
