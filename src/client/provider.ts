// An authorization server this application is a client of (an "upstream provider"): an
// OpenID Provider found by discovery, or a plain OAuth 2.0 server given by its endpoints (with
// a profile fetch standing in for the ID token). Built on openid-client's `Configuration`,
// loaded and discovered on first use, so that a provider down at start-up is a 502 per
// sign-in, not a service that cannot start.
import type { Configuration, ServerMetadata } from 'openid-client';
import type { Duration } from '../core/duration.js';
import {
  assertKnownOptions,
  durationOption,
  functionOption,
  invalidOption,
} from '../internal/options.js';
import { loadOpenidClient } from './openid-client.js';

/** What a provider says of the user: `sub` at least, as an ID token's claims. */
export type UpstreamClaims = Record<string, unknown> & { sub: string };

/** How the application authenticates to the provider's token endpoint. */
export type UpstreamClientAuth = 'client_secret_basic' | 'client_secret_post' | 'none';

interface CommonOptions {
  /**
   * The provider's name in paths (`/login/{name}`): letters, digits, `-` and `_`.
   */
  name: string;
  /** What the sign-in pages call it ("Sign in with …"). @defaultValue `name` */
  label?: string;
  /** The application's `client_id` at the provider. */
  clientId: string;
  /** The client secret, when the provider issued one. */
  clientSecret?: string;
  /**
   * How the client authenticates at the token endpoint.
   * @defaultValue `'client_secret_basic'` with a secret, else `'none'`
   */
  clientAuth?: UpstreamClientAuth;
  /** The scopes to ask for (space-separated). @defaultValue `'openid email profile'` (OIDC) */
  scope?: string;
  /** Extra authorization request parameters (`prompt`, `audience`, `hd`, …). */
  authorizationParams?: Readonly<Record<string, string>>;
  /** How long one request to the provider may take. @defaultValue `10_000` */
  timeout?: Duration;
  /**
   * Whether plain `http:` URLs are allowed: for a provider on this machine in development or
   * tests. @defaultValue `true` for an issuer on 127.0.0.1, [::1] or localhost, else `false`
   */
  allowInsecureRequests?: boolean;
}

/** An OpenID Provider, found by discovery (`{issuer}/.well-known/openid-configuration`). */
export interface OidcProviderOptions extends CommonOptions {
  /** The provider's issuer identifier, exactly as its ID tokens name it. */
  issuer: string;
}

/** A plain OAuth 2.0 server (GitHub): its endpoints, and how to read who signed in. */
export interface OAuth2ProviderOptions extends CommonOptions {
  /** An identifier of the provider for subjects and logs. @defaultValue the token endpoint's origin */
  issuer?: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  /** A revocation endpoint (RFC 7009), used at sign-out when given. */
  revocationEndpoint?: string;
  /**
   * Who signed in, from the access token (e.g. GitHub's `GET /user`): claims with a non-empty
   * string `sub`, or `undefined` to refuse. `fetch` is bounded by `timeout`.
   */
  profile(accessToken: string, fetch: typeof globalThis.fetch): Promise<UpstreamClaims | undefined>;
}

/** Options of {@link upstreamProvider}: discovery (`issuer`) or endpoints. */
export type UpstreamProviderOptions = OidcProviderOptions | OAuth2ProviderOptions;

/** A provider, as {@link upstreamProvider} made it. */
export interface UpstreamProvider {
  readonly name: string;
  readonly label: string;
  /** `oidc`: ID tokens are expected and verified; `oauth2`: `profile` says who signed in. */
  readonly kind: 'oidc' | 'oauth2';
  /** The issuer identifier (OIDC), or the one the options gave or implied (OAuth 2.0). */
  readonly issuer: string;
  readonly scope: string;
  readonly authorizationParams: Readonly<Record<string, string>>;
}

/** What portico's client modules use of a provider (openid-client's types stay inside). */
export interface ProviderInternals {
  /** openid-client's configuration of this client at the provider (discovered once). */
  configuration(): Promise<Configuration>;
  readonly profile: OAuth2ProviderOptions['profile'] | undefined;
  /** The bounded `fetch` every request to the provider goes through. */
  readonly fetch: typeof globalThis.fetch;
}

const internals = new WeakMap<UpstreamProvider, ProviderInternals>();

/** The internals of a provider {@link upstreamProvider} made, `undefined` for anything else. */
export function internalsOf(provider: unknown): ProviderInternals | undefined {
  return typeof provider === 'object' && provider !== null
    ? internals.get(provider as UpstreamProvider)
    : undefined;
}

const OWNER = 'upstreamProvider()';
const NAME = /^[A-Za-z0-9_-]{1,64}$/;
const LOOPBACK = new Set(['127.0.0.1', '[::1]', 'localhost']);
const COMMON = [
  'name',
  'label',
  'clientId',
  'clientSecret',
  'clientAuth',
  'scope',
  'authorizationParams',
  'timeout',
  'allowInsecureRequests',
  'issuer',
];
const OAUTH2 = ['authorizationEndpoint', 'tokenEndpoint', 'revocationEndpoint', 'profile'];
/** How long after a failed discovery the next sign-in tries again, rather than failing at once. */
const RETRY_AFTER_FAILURE_MS = 5_000;

function urlOption(name: string, value: unknown): URL {
  if (typeof value !== 'string') throw invalidOption(`${OWNER}: \`${name}\` must be a URL`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalidOption(`${OWNER}: \`${name}\` must be an absolute URL, not ${value}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw invalidOption(`${OWNER}: \`${name}\` must be an https URL`);
  }
  return url;
}

function stringOption(name: string, value: unknown, fallback?: string): string {
  const given = value ?? fallback;
  if (typeof given !== 'string' || given === '') {
    throw invalidOption(`${OWNER}: \`${name}\` must be a non-empty string`);
  }
  return given;
}

function paramsOption(value: unknown): Readonly<Record<string, string>> {
  if (value === undefined) return Object.freeze({});
  const reserved = ['client_id', 'redirect_uri', 'response_type', 'state', 'nonce', 'scope'];
  const ok =
    typeof value === 'object' &&
    value !== null &&
    Object.entries(value).every(
      ([k, v]) => typeof v === 'string' && !reserved.includes(k) && !k.startsWith('code_challenge'),
    );
  if (!ok) {
    throw invalidOption(
      `${OWNER}: \`authorizationParams\` must be strings, without the parameters portico sets (${reserved.join(', ')}, code_challenge)`,
    );
  }
  return Object.freeze({ ...(value as Record<string, string>) });
}

/** A `fetch` that gives up after `timeoutMs` (or when the caller's own signal aborts). */
function boundedFetch(timeoutMs: number): typeof globalThis.fetch {
  return (input, init) => {
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    return globalThis.fetch(input, { ...init, signal });
  };
}

/** The secret and method, checked: a secret needs a method that sends it, `none` none. */
function clientAuthOf(options: CommonOptions): UpstreamClientAuth {
  const secret = options.clientSecret;
  if (secret !== undefined && (typeof secret !== 'string' || secret === '')) {
    throw invalidOption(`${OWNER}: \`clientSecret\` must be a non-empty string`);
  }
  const method = options.clientAuth ?? (secret === undefined ? 'none' : 'client_secret_basic');
  if (!['client_secret_basic', 'client_secret_post', 'none'].includes(method)) {
    throw invalidOption(
      `${OWNER}: \`clientAuth\` must be 'client_secret_basic', 'client_secret_post' or 'none'`,
    );
  }
  if ((method === 'none') !== (secret === undefined)) {
    throw invalidOption(
      `${OWNER}: \`clientAuth: '${method}'\` ${method === 'none' ? 'sends no' : 'needs a'} \`clientSecret\``,
    );
  }
  return method;
}

/**
 * An authorization server this application signs users in at, or gets tokens from: an OpenID
 * Provider found by discovery (`issuer`), or a plain OAuth 2.0 server given by its endpoints
 * and a `profile` fetch (GitHub). Nothing is fetched until the first use; a failed discovery is
 * tried again on a later use.
 *
 * @example
 * ```ts
 * import { upstreamProvider } from 'portico/client';
 *
 * const google = upstreamProvider({
 *   name: 'google',
 *   label: 'Google',
 *   issuer: 'https://accounts.google.com',
 *   clientId: process.env.GOOGLE_CLIENT_ID ?? '',
 *   clientSecret: process.env.GOOGLE_CLIENT_SECRET,
 * });
 * const github = upstreamProvider({
 *   name: 'github',
 *   label: 'GitHub',
 *   authorizationEndpoint: 'https://github.com/login/oauth/authorize',
 *   tokenEndpoint: 'https://github.com/login/oauth/access_token',
 *   clientId: process.env.GITHUB_CLIENT_ID ?? '',
 *   clientSecret: process.env.GITHUB_CLIENT_SECRET,
 *   clientAuth: 'client_secret_post',
 *   scope: 'read:user user:email',
 *   async profile(accessToken, fetch) {
 *     const reply = await fetch('https://api.github.com/user', {
 *       headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' },
 *     });
 *     const user = (await reply.json()) as { id: number; login: string; name?: string };
 *     return reply.ok ? { sub: String(user.id), name: user.name ?? user.login } : undefined;
 *   },
 * });
 * ```
 * @see {@link https://openid.net/specs/openid-connect-discovery-1_0.html | OpenID Connect Discovery 1.0}
 */
export function upstreamProvider(options: UpstreamProviderOptions): UpstreamProvider {
  if (typeof options !== 'object' || options === null) {
    throw invalidOption(`${OWNER}: options are required`);
  }
  const oauth2 = 'tokenEndpoint' in options || 'authorizationEndpoint' in options;
  assertKnownOptions(OWNER, options, oauth2 ? [...COMMON, ...OAUTH2] : COMMON);
  const name = stringOption('name', options.name);
  if (!NAME.test(name)) {
    throw invalidOption(
      `${OWNER}: \`name\` must be letters, digits, - and _ (it is a path segment)`,
    );
  }
  const clientId = stringOption('clientId', options.clientId);
  const method = clientAuthOf(options);
  const timeout = durationOption(OWNER, 'timeout', options.timeout, 10_000, { min: 1 });
  const fetch = boundedFetch(timeout);
  const authorizationParams = paramsOption(options.authorizationParams);
  const label = stringOption('label', options.label, name);

  let issuer: URL;
  let metadata: ServerMetadata | undefined;
  let profile: OAuth2ProviderOptions['profile'] | undefined;
  if (oauth2) {
    const o = options as OAuth2ProviderOptions;
    const authorizationEndpoint = urlOption('authorizationEndpoint', o.authorizationEndpoint);
    const tokenEndpoint = urlOption('tokenEndpoint', o.tokenEndpoint);
    issuer = urlOption('issuer', o.issuer ?? tokenEndpoint.origin);
    profile = functionOption(OWNER, 'profile', o.profile);
    if (profile === undefined) {
      throw invalidOption(`${OWNER}: a provider given by its endpoints needs \`profile\``);
    }
    metadata = {
      issuer: issuer.href,
      authorization_endpoint: authorizationEndpoint.href,
      token_endpoint: tokenEndpoint.href,
      ...(o.revocationEndpoint !== undefined && {
        revocation_endpoint: urlOption('revocationEndpoint', o.revocationEndpoint).href,
      }),
    };
  } else {
    issuer = urlOption('issuer', (options as OidcProviderOptions).issuer);
  }
  const insecure = options.allowInsecureRequests ?? LOOPBACK.has(issuer.host.replace(/:\d+$/, ''));
  if (typeof insecure !== 'boolean') {
    throw invalidOption(`${OWNER}: \`allowInsecureRequests\` must be a boolean`);
  }
  if (!insecure && issuer.protocol === 'http:') {
    throw invalidOption(
      `${OWNER}: \`issuer\` must be https (or set \`allowInsecureRequests\` for development)`,
    );
  }
  const scope = stringOption('scope', options.scope, oauth2 ? undefined : 'openid email profile');
  // the issuer exactly as given: discovery compares it with the document's `issuer`
  const issuerId = oauth2 ? issuer.href : (options as OidcProviderOptions).issuer;

  let configuring: Promise<Configuration> | undefined;
  /** When a failed discovery may be tried again (0: it has not failed). */
  let retryAt = 0;
  const configure = async (): Promise<Configuration> => {
    const client = await loadOpenidClient();
    const auth =
      method === 'none'
        ? client.None()
        : method === 'client_secret_post'
          ? client.ClientSecretPost(options.clientSecret)
          : client.ClientSecretBasic(options.clientSecret);
    const execute = [
      ...(insecure ? [client.allowInsecureRequests] : []),
      // ID tokens from the token endpoint are verified against the provider's JWKS too
      ...(oauth2 ? [] : [client.enableNonRepudiationChecks]),
    ];
    let config: Configuration;
    if (metadata !== undefined) {
      config = new client.Configuration(metadata, clientId, undefined, auth);
      for (const step of execute) step(config);
    } else {
      config = await client.discovery(new URL(issuerId), clientId, undefined, auth, {
        execute,
        [client.customFetch]: fetch,
      });
    }
    config[client.customFetch] = fetch;
    config.timeout = Math.ceil(timeout / 1000);
    return config;
  };

  const provider: UpstreamProvider = Object.freeze({
    name,
    label,
    kind: oauth2 ? 'oauth2' : 'oidc',
    issuer: issuerId,
    scope,
    authorizationParams,
  });
  internals.set(provider, {
    profile,
    fetch,
    configuration() {
      if (configuring === undefined || (retryAt !== 0 && Date.now() >= retryAt)) {
        retryAt = 0;
        const attempt = configure();
        attempt.catch(() => {
          retryAt = Date.now() + RETRY_AFTER_FAILURE_MS;
        });
        configuring = attempt;
      }
      return configuring;
    },
  });
  return provider;
}
