// What a deployment lets dynamically registered clients be (RFC 7591 §2): the options of the
// registration endpoint, validated once, and the check of a client's metadata against them,
// which answers the accepted metadata (defaults filled in, unknown fields dropped) or the
// RFC 7591 §3.2.2 error.
import { hash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isJwkSetShape } from '../../auth/jwt/jwks-remote.js';
import type { Duration } from '../../core/duration.js';
import type { JwkSet } from '../../core/jwt-types.js';
import type { TrustProxy } from '../../http/proxy.js';
import {
  assertKnownOptions,
  countOption,
  durationOption,
  functionOption,
  invalidOption,
} from '../../internal/options.js';
import type { RateLimitStore } from '../../rate-limit/store.js';
import { OAuthError } from '../protocol/errors.js';
import { type RedirectUriShape, redirectUriRefusal } from './redirect-uri.js';

/** A way a registered client authenticates at the token endpoint (RFC 7591 §2). */
export type RegistrationAuthMethod =
  | 'none'
  | 'client_secret_basic'
  | 'client_secret_post'
  | 'private_key_jwt';

/** A grant type a registered client may ask for. */
export type RegistrationGrantType = 'authorization_code' | 'refresh_token' | 'client_credentials';

/**
 * Client metadata of RFC 7591 §2 as the registration endpoint accepts and answers it: the
 * fields portico understands, with their defaults filled in. Any other field of a request is
 * ignored (§2: "the authorization server MUST ignore any client metadata it does not
 * understand").
 *
 * @example
 * ```ts
 * const metadata: ClientMetadata = {
 *   redirect_uris: ['http://127.0.0.1/callback'],
 *   token_endpoint_auth_method: 'none',
 *   grant_types: ['authorization_code', 'refresh_token'],
 *   client_name: 'Example Agent',
 * };
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc7591#section-2 | RFC 7591 §2}
 */
export interface ClientMetadata {
  redirect_uris?: string[];
  token_endpoint_auth_method?: RegistrationAuthMethod;
  grant_types?: RegistrationGrantType[];
  response_types?: 'code'[];
  /** Space-separated scopes the client may ask for. */
  scope?: string;
  client_name?: string;
  client_uri?: string;
  logo_uri?: string;
  contacts?: string[];
  tos_uri?: string;
  policy_uri?: string;
  software_id?: string;
  software_version?: string;
  application_type?: 'web' | 'native';
  /** The client's public keys (`private_key_jwt`). */
  jwks?: JwkSet;
  /** Where the client publishes its public keys (`private_key_jwt`), an `https` URL. */
  jwks_uri?: string;
}

/**
 * Decides on an initial access token (RFC 7591 §3): `true` lets the registration through.
 * Compare a token of your own in constant time.
 */
export type InitialAccessTokenCheck = (
  token: string,
  req: IncomingMessage,
) => boolean | Promise<boolean>;

/**
 * The deployment's policy for dynamic client registration (RFC 7591), the `registration`
 * option of `createAuthorizationServer()` (with `features: { registration: true }`). Every
 * field is optional; the defaults are what the MCP authorization spec expects of a server
 * that lets agents register: open, throttled per client IP, and each kind of metadata held
 * to the safe shapes.
 *
 * @example
 * ```ts
 * const auth = createAuthorizationServer({
 *   ...options,
 *   clients: clientStores(configured, new MemoryClientStore([], { maxClients: 1_000 })),
 *   features: { registration: true },
 *   registration: {
 *     scopes: ['openid', 'read:messages'],
 *     limit: 10, windowMs: 3_600_000,
 *     review: (metadata) => (metadata.client_name?.includes('Bank') ? false : metadata),
 *   },
 * });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc7591 | RFC 7591}
 */
export interface RegistrationOptions {
  /**
   * An initial access token the registration request must carry (`Authorization: Bearer`),
   * compared in constant time, or a function deciding on the token; a wrong or missing one is
   * 401 `invalid_token` and counts as a refused credential of the server's `guard`.
   * @defaultValue none: registration is open (what MCP clients expect)
   */
  initialAccessToken?: string | InitialAccessTokenCheck;
  /**
   * The redirect URI shapes a client may register: `'https'`; `'loopback'`, `http` on
   * `127.0.0.1`, `[::1]` or `localhost` (RFC 8252 §7.3); `'private-use'`, a reverse-domain
   * scheme such as `com.example.app:/cb` (RFC 8252 §7.1). Never a fragment, nor a scheme such
   * as `javascript:` or `data:`.
   * @defaultValue `['https', 'loopback', 'private-use']`
   */
  redirectUriShapes?: readonly RedirectUriShape[];
  /**
   * The `token_endpoint_auth_method`s a client may register.
   * @defaultValue `['none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt']`
   */
  tokenEndpointAuthMethods?: readonly RegistrationAuthMethod[];
  /**
   * The grant types a client may register; `client_credentials` only ever for a
   * confidential client.
   * @defaultValue `['authorization_code', 'refresh_token', 'client_credentials']`
   */
  grantTypes?: readonly RegistrationGrantType[];
  /**
   * The scopes a registered client may have; a client that names none gets all of them.
   * @defaultValue the server's `scopesSupported`
   */
  scopes?: readonly string[];
  /**
   * Looks at the checked metadata before the client is created: answer it (amended if you
   * like: it is checked again) to register, or `false` to refuse with
   * `invalid_client_metadata`; throwing an `OAuthError` answers that error.
   * @defaultValue none: every valid registration is taken
   */
  review?: (
    metadata: ClientMetadata,
    req: IncomingMessage,
  ) => ClientMetadata | false | Promise<ClientMetadata | false>;
  /**
   * Registrations allowed per client IP and `windowMs`; past it, 429 with `Retry-After`.
   * @defaultValue `10`
   */
  limit?: number;
  /** The window of `limit`, in milliseconds. @defaultValue `3_600_000` (1 hour) */
  windowMs?: Duration;
  /**
   * Where registrations are counted: share one store (`RedisRateLimitStore`) between the
   * processes of one server (the credential guard's store, with its own prefix `register:`).
   * @defaultValue a new `MemoryRateLimitStore`
   */
  store?: RateLimitStore;
  /**
   * Which proxies to believe about the client's address, as for the credential guard.
   * @defaultValue `false`: the socket's peer is the client
   */
  trustProxy?: TrustProxy;
}

/** The policy as the endpoint reads it: every choice decided. @internal */
export interface RegistrationPolicy {
  readonly initialAccessToken: InitialAccessTokenCheck | undefined;
  readonly redirectUriShapes: readonly RedirectUriShape[];
  readonly authMethods: readonly RegistrationAuthMethod[];
  readonly grantTypes: readonly RegistrationGrantType[];
  readonly scopes: readonly string[];
  readonly review: RegistrationOptions['review'];
  readonly limit: number;
  readonly windowMs: number;
  readonly store: RateLimitStore | undefined;
  readonly trustProxy: TrustProxy;
}

const OPTIONS = [
  'initialAccessToken',
  'redirectUriShapes',
  'tokenEndpointAuthMethods',
  'grantTypes',
  'scopes',
  'review',
  'limit',
  'windowMs',
  'store',
  'trustProxy',
] as const satisfies readonly (keyof RegistrationOptions)[];

// the defaults, answered as they are by a policy that names none: frozen like a given subset
const SHAPES: readonly RedirectUriShape[] = Object.freeze(['https', 'loopback', 'private-use']);
const AUTH_METHODS: readonly RegistrationAuthMethod[] = Object.freeze([
  'none',
  'client_secret_basic',
  'client_secret_post',
  'private_key_jwt',
] as const);
const GRANT_TYPES: readonly RegistrationGrantType[] = Object.freeze([
  'authorization_code',
  'refresh_token',
  'client_credentials',
] as const);

/** A scope token (RFC 6749 §3.3). */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

function subsetOption<T extends string>(
  owner: string,
  name: string,
  value: readonly T[] | undefined,
  all: readonly T[],
): readonly T[] {
  if (value === undefined) return all;
  if (!Array.isArray(value) || value.length === 0 || value.some((v) => !all.includes(v))) {
    throw invalidOption(
      `${owner}: \`registration.${name}\` must be a non-empty list of ${all.map((v) => `'${v}'`).join(', ')}`,
    );
  }
  return Object.freeze([...new Set(value)]);
}

/** A constant-time check of a fixed initial access token (digests of equal length). */
function fixedToken(expected: string): InitialAccessTokenCheck {
  return (token) => {
    const digest = (text: string) => hash('sha256', text, 'buffer');
    return timingSafeEqual(digest(token), digest(expected));
  };
}

/**
 * Reads the `registration` option of `owner`, once: unknown names refused with a hint, each
 * list within what portico supports, durations and counts checked. `serverScopes` is the
 * default of `scopes`. @internal
 */
export function resolveRegistrationPolicy(
  owner: string,
  options: RegistrationOptions | undefined,
  serverScopes: readonly string[],
): RegistrationPolicy {
  if (options !== undefined && (options === null || typeof options !== 'object')) {
    throw invalidOption(`${owner}: \`registration\` must be an object`);
  }
  const given = options ?? {};
  assertKnownOptions(`${owner} registration`, given, OPTIONS);
  const { initialAccessToken } = given;
  let check: InitialAccessTokenCheck | undefined;
  if (typeof initialAccessToken === 'string') {
    if (initialAccessToken.length < 16) {
      throw invalidOption(
        `${owner}: \`registration.initialAccessToken\` must be 16 characters or more`,
      );
    }
    check = fixedToken(initialAccessToken);
  } else {
    check = functionOption(owner, 'registration.initialAccessToken', initialAccessToken);
  }
  const scopes = given.scopes ?? serverScopes;
  if (!Array.isArray(scopes) || scopes.some((s) => typeof s !== 'string' || !SCOPE_TOKEN.test(s))) {
    throw invalidOption(`${owner}: \`registration.scopes\` must be a list of scope tokens`);
  }
  const store = given.store;
  if (store !== undefined && typeof store?.increment !== 'function') {
    throw invalidOption(`${owner}: \`registration.store\` must be a RateLimitStore`);
  }
  return Object.freeze({
    initialAccessToken: check,
    redirectUriShapes: subsetOption(owner, 'redirectUriShapes', given.redirectUriShapes, SHAPES),
    authMethods: subsetOption(
      owner,
      'tokenEndpointAuthMethods',
      given.tokenEndpointAuthMethods,
      AUTH_METHODS,
    ),
    grantTypes: subsetOption(owner, 'grantTypes', given.grantTypes, GRANT_TYPES),
    scopes: Object.freeze([...new Set(scopes)]),
    review: functionOption(owner, 'registration.review', given.review),
    limit: countOption(owner, 'registration.limit', given.limit, 10),
    windowMs: durationOption(owner, 'registration.windowMs', given.windowMs, 3_600_000, {
      min: 1_000,
    }),
    store,
    trustProxy: given.trustProxy ?? false,
  });
}

const badMetadata = (description: string) => new OAuthError('invalid_client_metadata', description);

/** Text without controls, of at most `max` characters. */
function textField(body: Record<string, unknown>, name: string, max: number): string | undefined {
  const value = body[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '' || value.length > max) {
    throw badMetadata(`${name} must be a string of 1 to ${max} characters.`);
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
  if (/[\x00-\x1f\x7f\u202a-\u202e\u2066-\u2069]/.test(value)) {
    throw badMetadata(`${name} must not hold control or bidirectional formatting characters.`);
  }
  return value;
}

/** An `https` URL of a web page (client_uri, logo_uri, tos_uri, policy_uri, jwks_uri). */
function httpsField(body: Record<string, unknown>, name: string): string | undefined {
  const value = textField(body, name, 2000);
  if (value === undefined) return undefined;
  if (!URL.canParse(value)) throw badMetadata(`${name} must be an absolute https URL.`);
  const url = new URL(value);
  if (url.protocol !== 'https:' || url.username !== '' || url.password !== '') {
    throw badMetadata(`${name} must be an https URL without credentials.`);
  }
  return value;
}

function listField(body: Record<string, unknown>, name: string, max: number): string[] | undefined {
  const value = body[name];
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.length > max || value.some((v) => typeof v !== 'string')) {
    throw badMetadata(`${name} must be an array of at most ${max} strings.`);
  }
  return [...new Set(value as string[])];
}

/** Private key members of a JWK (RFC 7518 §6): a client gives its public keys only. */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

function jwksField(body: Record<string, unknown>): JwkSet | undefined {
  const { jwks } = body;
  if (jwks === undefined) return undefined;
  if (!isJwkSetShape(jwks) || jwks.keys.length === 0 || jwks.keys.length > 10) {
    throw badMetadata('jwks must be a JWK Set of 1 to 10 keys.');
  }
  for (const key of jwks.keys) {
    if (!['RSA', 'EC', 'OKP'].includes(key.kty as string)) {
      throw badMetadata('jwks keys must be RSA, EC or OKP public keys.');
    }
    if (PRIVATE_MEMBERS.some((member) => member in key)) {
      throw badMetadata('jwks must hold public keys only.');
    }
  }
  const copy = JSON.parse(JSON.stringify(jwks)) as JwkSet;
  if (JSON.stringify(copy).length > 16_384) throw badMetadata('jwks is too large.');
  return copy;
}

/**
 * Checks a registration request's metadata against `policy`: the accepted metadata, with the
 * defaults of RFC 7591 §2 filled in (`token_endpoint_auth_method: client_secret_basic`,
 * `grant_types: ['authorization_code']`, `response_types: ['code']`) and every field portico
 * does not understand dropped, or an {@link OAuthError} `invalid_redirect_uri` /
 * `invalid_client_metadata` saying what is wrong (RFC 7591 §3.2.2).
 * @internal
 */
export function checkClientMetadata(policy: RegistrationPolicy, value: unknown): ClientMetadata {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw badMetadata('The client metadata must be a JSON object.');
  }
  const body = value as Record<string, unknown>;
  const method = (body.token_endpoint_auth_method ?? 'client_secret_basic') as string;
  if (!policy.authMethods.includes(method as RegistrationAuthMethod)) {
    throw badMetadata(
      `token_endpoint_auth_method must be one of ${policy.authMethods.join(', ')}.`,
    );
  }
  const grants = listField(body, 'grant_types', 3) ?? ['authorization_code'];
  if (grants.length === 0) throw badMetadata('grant_types must name at least one grant type.');
  for (const grant of grants) {
    if (!policy.grantTypes.includes(grant as RegistrationGrantType)) {
      throw badMetadata(`grant_types may hold only ${policy.grantTypes.join(', ')}.`);
    }
  }
  if (method === 'none' && grants.includes('client_credentials')) {
    throw badMetadata('client_credentials needs a confidential client (not `none`).');
  }
  const code = grants.includes('authorization_code');
  if (grants.includes('refresh_token') && !code) {
    throw badMetadata('refresh_token needs the authorization_code grant.');
  }
  const responses = listField(body, 'response_types', 1) ?? (code ? ['code'] : []);
  if (responses.some((r) => r !== 'code')) {
    throw badMetadata('response_types may hold only code.');
  }
  if (responses.includes('code') !== code) {
    throw badMetadata(
      'response_types code and grant type authorization_code go together (RFC 7591 §2.1).',
    );
  }
  const redirectUris = listField(body, 'redirect_uris', 10);
  if (code && (redirectUris === undefined || redirectUris.length === 0)) {
    throw new OAuthError(
      'invalid_redirect_uri',
      'redirect_uris is required for the authorization_code grant.',
    );
  }
  for (const uri of redirectUris ?? []) {
    const refusal = redirectUriRefusal(uri, policy.redirectUriShapes);
    if (refusal !== undefined) throw new OAuthError('invalid_redirect_uri', `${refusal}.`);
  }
  const jwks = jwksField(body);
  const jwksUri = httpsField(body, 'jwks_uri');
  if (method === 'private_key_jwt') {
    if ((jwks === undefined) === (jwksUri === undefined)) {
      throw badMetadata('private_key_jwt needs jwks or jwks_uri (one of them).');
    }
  } else if (jwks !== undefined || jwksUri !== undefined) {
    throw badMetadata('jwks and jwks_uri go with token_endpoint_auth_method private_key_jwt.');
  }
  let scope: string;
  if (body.scope === undefined) {
    scope = policy.scopes.join(' ');
  } else {
    if (typeof body.scope !== 'string' || body.scope.length > 2000) {
      throw badMetadata('scope must be a string of space-separated scopes.');
    }
    const asked = [...new Set(body.scope.split(' ').filter((s) => s !== ''))];
    const outside = asked.find((s) => !policy.scopes.includes(s));
    if (outside !== undefined) {
      throw badMetadata(`The scope ${JSON.stringify(outside)} is not one this server grants.`);
    }
    scope = asked.join(' ');
  }
  const contacts = listField(body, 'contacts', 10);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
  if (contacts?.some((c) => c === '' || c.length > 320 || /[\x00-\x1f\x7f]/.test(c))) {
    throw badMetadata('contacts must be e-mail addresses of at most 320 characters.');
  }
  const applicationType = body.application_type ?? 'web';
  if (applicationType !== 'web' && applicationType !== 'native') {
    throw badMetadata('application_type must be web or native.');
  }
  const metadata: ClientMetadata = {
    ...(redirectUris !== undefined && { redirect_uris: redirectUris }),
    token_endpoint_auth_method: method as RegistrationAuthMethod,
    grant_types: grants as RegistrationGrantType[],
    response_types: responses as 'code'[],
    scope,
    application_type: applicationType,
  };
  const strings = {
    client_name: textField(body, 'client_name', 200),
    client_uri: httpsField(body, 'client_uri'),
    logo_uri: httpsField(body, 'logo_uri'),
    tos_uri: httpsField(body, 'tos_uri'),
    policy_uri: httpsField(body, 'policy_uri'),
    software_id: textField(body, 'software_id', 200),
    software_version: textField(body, 'software_version', 200),
  };
  for (const [name, text] of Object.entries(strings)) {
    if (text !== undefined) (metadata as Record<string, unknown>)[name] = text;
  }
  if (contacts !== undefined) metadata.contacts = contacts;
  if (jwks !== undefined) metadata.jwks = jwks;
  if (jwksUri !== undefined) metadata.jwks_uri = jwksUri;
  return metadata;
}
