// An authorization server this application is a client of (an "upstream provider"): an
// OpenID Provider found by discovery, or a plain OAuth 2.0 server given by its endpoints (with
// a profile fetch standing in for the ID token). Built on openid-client's `Configuration`,
// loaded and discovered on first use, so that a provider down at start-up is a 502 per
// sign-in, not a service that cannot start.
import type { webcrypto } from 'node:crypto';
import type { Configuration, ServerMetadata } from 'openid-client';
import type { Duration } from '../core/duration.js';
import type { Jwk } from '../core/jwt-types.js';
import { loadJose, loadUndici as loadUndiciModule } from '../internal/lazy.js';
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
export type UpstreamClientAuth =
  | 'client_secret_basic'
  | 'client_secret_post'
  | 'private_key_jwt'
  | 'tls_client_auth'
  | 'none';

/** The client's certificate and key for mutual TLS (`tls_client_auth`, RFC 8705), PEM. */
export interface UpstreamClientTls {
  cert: string | Buffer;
  key: string | Buffer;
  /** The CAs the provider's certificate is checked against. @defaultValue Node's */
  ca?: string | Buffer | readonly (string | Buffer)[];
}

interface CommonOptions {
  /**
   * The provider's name in paths (`/login/{name}`): letters, digits, `-` and `_`.
   */
  name: string;
  /** What the sign-in pages call it ("Sign in with …"). @defaultValue `name` */
  label?: string;
  /** The application's `client_id` at the provider. */
  clientId: string;
  /** The client secret, when the provider issued one. @defaultValue none */
  clientSecret?: string;
  /**
   * How the client authenticates at the token endpoint.
   * @defaultValue `'client_secret_basic'` with a secret, `'private_key_jwt'` with a
   * `privateKey`, `'tls_client_auth'` with `tls`, else `'none'`
   */
  clientAuth?: UpstreamClientAuth;
  /**
   * The key that signs the client's assertions (`private_key_jwt`, RFC 7523): a private JWK
   * with its `alg` (and `kid`), or a `CryptoKey`.
   * @defaultValue none
   */
  privateKey?: webcrypto.CryptoKey | (Jwk & { alg: string; kid?: string });
  /** The client certificate of `tls_client_auth` (RFC 8705). @defaultValue none */
  tls?: UpstreamClientTls;
  /** The scopes to ask for (space-separated). @defaultValue `'openid email profile'` (OIDC) */
  scope?: string;
  /** Extra authorization request parameters (`prompt`, `audience`, `hd`, …). @defaultValue none */
  authorizationParams?: Readonly<Record<string, string>>;
  /** How long one request to the provider may take, in milliseconds. @defaultValue `10_000` */
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
  /** Where the browser is sent to sign in (`https://github.com/login/oauth/authorize`). */
  authorizationEndpoint: string;
  /** Where codes and client credentials are exchanged for tokens. */
  tokenEndpoint: string;
  /** A revocation endpoint (RFC 7009), used at sign-out when given. @defaultValue none */
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
  'privateKey',
  'tls',
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
function boundedFetch(
  timeoutMs: number,
  tls: UpstreamClientTls | undefined,
): typeof globalThis.fetch {
  let base: Promise<typeof globalThis.fetch> | undefined;
  return async (input, init) => {
    base ??= tls === undefined ? Promise.resolve(globalThis.fetch) : mutualTlsFetch(tls);
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    return (await base)(input, { ...init, signal });
  };
}

const METHODS: readonly UpstreamClientAuth[] = [
  'client_secret_basic',
  'client_secret_post',
  'private_key_jwt',
  'tls_client_auth',
  'none',
];

/** The method, checked against the credential it needs (and no other given). */
function clientAuthOf(options: CommonOptions): UpstreamClientAuth {
  const { clientSecret: secret, privateKey, tls } = options;
  if (secret !== undefined && (typeof secret !== 'string' || secret === '')) {
    throw invalidOption(`${OWNER}: \`clientSecret\` must be a non-empty string`);
  }
  const method =
    options.clientAuth ??
    (secret !== undefined
      ? 'client_secret_basic'
      : privateKey !== undefined
        ? 'private_key_jwt'
        : tls !== undefined
          ? 'tls_client_auth'
          : 'none');
  if (!METHODS.includes(method)) {
    throw invalidOption(`${OWNER}: \`clientAuth\` must be one of ${METHODS.join(', ')}`);
  }
  const needs =
    method === 'private_key_jwt'
      ? 'privateKey'
      : method === 'tls_client_auth'
        ? 'tls'
        : method === 'none'
          ? undefined
          : 'clientSecret';
  for (const [name, given] of [
    ['clientSecret', secret],
    ['privateKey', privateKey],
    ['tls', tls],
  ] as const) {
    if ((name === needs) !== (given !== undefined)) {
      throw invalidOption(
        `${OWNER}: \`clientAuth: '${method}'\` ${name === needs ? 'needs' : 'takes no'} \`${name}\``,
      );
    }
  }
  if (tls !== undefined && (typeof tls !== 'object' || !tls.cert || !tls.key)) {
    throw invalidOption(`${OWNER}: \`tls\` needs \`cert\` and \`key\` (PEM)`);
  }
  return method;
}

/** openid-client's client authentication for `method`. */
async function clientAuthentication(
  client: Awaited<ReturnType<typeof loadOpenidClient>>,
  method: UpstreamClientAuth,
  options: CommonOptions,
) {
  switch (method) {
    case 'client_secret_post':
      return client.ClientSecretPost(options.clientSecret);
    case 'client_secret_basic':
      return client.ClientSecretBasic(options.clientSecret);
    case 'private_key_jwt': {
      const given = options.privateKey;
      if (given !== undefined && 'kty' in given) {
        const { importJWK } = await loadJose();
        const key = (await importJWK(given as never, given.alg)) as webcrypto.CryptoKey;
        return client.PrivateKeyJwt(given.kid === undefined ? key : { key, kid: given.kid });
      }
      return client.PrivateKeyJwt(given as webcrypto.CryptoKey);
    }
    case 'tls_client_auth':
      return client.TlsClientAuth();
    default:
      return client.None();
  }
}

/** `fetch` through an agent presenting the client certificate (mutual TLS). */
async function mutualTlsFetch(tls: UpstreamClientTls): Promise<typeof globalThis.fetch> {
  const undici = await loadUndiciModule();
  const dispatcher = new undici.Agent({
    connect: {
      cert: tls.cert,
      key: tls.key,
      ...(tls.ca !== undefined && { ca: tls.ca as string[] }),
    },
  });
  return ((input: string | URL, init?: RequestInit) =>
    undici.fetch(input as string, { ...(init as object), dispatcher } as never)) as never;
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
  const fetch = boundedFetch(timeout, options.tls);
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
    const auth = await clientAuthentication(client, method, options);
    // mutual TLS: the provider's mTLS endpoint aliases, where it has them (RFC 8705 §5)
    const clientMetadata =
      method === 'tls_client_auth' ? { use_mtls_endpoint_aliases: true } : undefined;
    const execute = [
      ...(insecure ? [client.allowInsecureRequests] : []),
      // ID tokens from the token endpoint are verified against the provider's JWKS too
      ...(oauth2 ? [] : [client.enableNonRepudiationChecks]),
    ];
    let config: Configuration;
    if (metadata !== undefined) {
      config = new client.Configuration(metadata, clientId, clientMetadata, auth);
      for (const step of execute) step(config);
    } else {
      config = await client.discovery(new URL(issuerId), clientId, clientMetadata, auth, {
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
