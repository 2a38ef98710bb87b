import { isJwkSetShape, parseHttpUrl } from '../../auth/jwt/jwks-remote.js';
import { hashPassword } from '../../auth/password.js';
import { assertScopes } from '../../auth/scopes.js';
import type { JwkSet } from '../../core/jwt-types.js';
import { VCHARS } from '../../internal/grammar.js';
import { assertGivenOptions, closestName, invalidOption } from '../../internal/options.js';

/**
 * A grant type a client may use: one of portico's grants, or the `type` of a grant the
 * server registers (`grants` of `createAuthorizationServer`), a name or an absolute URI
 * (RFC 6749 §4.5).
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-1.3 | RFC 6749 §1.3}
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-4.5 | RFC 6749 §4.5}
 */
export type GrantType =
  | 'authorization_code'
  | 'refresh_token'
  | 'client_credentials'
  | 'urn:ietf:params:oauth:grant-type:device_code'
  | 'urn:ietf:params:oauth:grant-type:token-exchange'
  | (string & {});

/** The grant types of portico's own grants: a name close to one of them is a typo. */
const GRANT_TYPES: readonly string[] = [
  'authorization_code',
  'refresh_token',
  'client_credentials',
  'urn:ietf:params:oauth:grant-type:device_code',
  'urn:ietf:params:oauth:grant-type:token-exchange',
];

/**
 * Whether `value` is written as a grant type can be (RFC 6749 Appendix A.10): a name of
 * letters, digits, `-`, `.` and `_`, or an absolute URI.
 */
export function isGrantTypeSyntax(value: unknown): value is string {
  if (typeof value !== 'string' || value === '' || value.length > 255) return false;
  if (/^[\w.-]+$/.test(value)) return true;
  return /^[a-z][a-z0-9+.-]*:[\x21-\x7e]+$/i.test(value) && URL.canParse(value);
}

/**
 * Refuses what cannot be a grant type, and a near miss of one of portico's ("did you mean"):
 * any other well-formed name is taken, for a grant the server registers; one it does not
 * register is `unsupported_grant_type` at the token endpoint.
 */
function checkGrantType(grant: unknown): void {
  if (!isGrantTypeSyntax(grant)) {
    throw invalidOption(
      `defineClient(): unknown grant \`${String(grant)}\`: a grant type is a name or an absolute URI`,
    );
  }
  const near = closestName(grant, GRANT_TYPES);
  if (near !== undefined) {
    throw invalidOption(`defineClient(): unknown grant \`${grant}\`. Did you mean \`${near}\`?`);
  }
}

/**
 * A registered client. Confidential clients have a secret hash (`client_secret_basic` or
 * `client_secret_post`) or public keys (`jwks` or `jwksUri`: `private_key_jwt`); public
 * clients neither.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-2 | RFC 6749 §2}
 */
export interface OAuthClient {
  readonly clientId: string;
  /** scrypt hash of the secret (`hashPassword`); absent for a public client. */
  readonly secretHash?: string;
  /**
   * The client's public keys: it authenticates with `private_key_jwt` (RFC 7523 §2.2, OpenID
   * Connect Core §9), a JWT signed by one of them. Public keys only.
   */
  readonly jwks?: JwkSet;
  /**
   * Where the client publishes its public keys (`private_key_jwt`), fetched as remote JWKS
   * are: cached, refetched on an unknown `kid` at most every 30 seconds, the last good keys
   * kept through an outage.
   */
  readonly jwksUri?: string;
  readonly grantTypes: readonly GrantType[];
  /** Redirect URIs, compared exactly (no prefix or pattern matching). */
  readonly redirectUris: readonly string[];
  /**
   * Where the client may have the browser sent after a sign-out it asked for (OpenID Connect
   * RP-Initiated Logout 1.0, `post_logout_redirect_uri`), compared exactly.
   * @defaultValue none: after such a sign-out the user stays on the server's page
   */
  readonly postLogoutRedirectUris?: readonly string[];
  /** Scopes the client may ask for (least privilege). */
  readonly scopes: readonly string[];
  /** Scopes granted when a request names none. @defaultValue the client's `scopes` */
  readonly defaultScopes?: readonly string[];
  /** A name to show on the consent page. */
  readonly name?: string;
  /**
   * Which access tokens the client may introspect (RFC 7662): `'own'`, only those issued to
   * itself (any other reads as `{ "active": false }`, §2.2); `'any'`, every access token of
   * the server, for a resource server that checks the tokens presented to it (confidential
   * clients only). Refresh tokens are only ever shown to their own client either way.
   * @defaultValue `'own'`
   */
  readonly introspection?: 'own' | 'any';
  /**
   * The client's access tokens are always DPoP-bound (RFC 9449 §5.2,
   * `dpop_bound_access_tokens`): a token request without a DPoP proof is refused.
   * @defaultValue `false`: bound when the request carries a proof, bearer otherwise
   */
  readonly dpopBoundAccessTokens?: boolean;
  /**
   * The client sends its authorization requests through `/par` only (RFC 9126 §6,
   * `require_pushed_authorization_requests`): one sent straight to `/authorize` is refused.
   * @defaultValue `false`
   */
  readonly requirePushedAuthorizationRequests?: boolean;
  /**
   * How the server came to know the client: `'configured'`, defined by the deployment;
   * `'registered'`, by dynamic registration (RFC 7591); `'metadata-document'`, from the
   * document its `https` client id points at. The consent page shows the name of a client of
   * the last two kinds as unverified, with the host its code will go to.
   * @defaultValue `'configured'`
   */
  readonly provenance?: ClientProvenance;
  /**
   * What dynamic registration (RFC 7591) recorded for a client it created: the metadata it
   * accepted and the hash of the registration access token (RFC 7592). Set by the
   * registration endpoint only.
   * @defaultValue none: a client not created by registration
   */
  readonly registration?: ClientRegistration;
}

/**
 * What the registration endpoint keeps of a client it registered (RFC 7591 §3.2.1, RFC 7592):
 * never the secret nor the registration access token in clear.
 *
 * @example
 * ```ts
 * client.registration?.metadata.client_name; // 'Example Agent'
 * ```
 */
export interface ClientRegistration {
  /** The client metadata as accepted (RFC 7591 §2 names), without any secret. */
  readonly metadata: Readonly<Record<string, unknown>>;
  /** SHA-256 (base64url) of the registration access token. */
  readonly accessTokenHash: string;
  /** When the client was registered (`client_id_issued_at`), in seconds since the epoch. */
  readonly issuedAt: number;
}

/** How a client came to be known: see {@link OAuthClient.provenance}. */
export type ClientProvenance = 'configured' | 'registered' | 'metadata-document';

/**
 * What {@link defineClient} takes: the client with its secret in clear, hashed at once.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-2 | RFC 6749 §2}
 */
export interface ClientDefinition extends Omit<OAuthClient, 'secretHash'> {
  /** The secret of a confidential client; omit for a public client, or one with keys. */
  secret?: string;
}

/** Private key members of a JWK (RFC 7518 §6): a client gives its public keys only. */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

/** Checks `jwks` and `jwksUri`: one or the other, public asymmetric keys, an http(s) URL. */
function checkClientKeys(client: Omit<ClientDefinition, 'secret'>, secret: string | undefined) {
  const { jwks, jwksUri } = client;
  if (jwks === undefined && jwksUri === undefined) return;
  if (jwks !== undefined && jwksUri !== undefined) {
    throw invalidOption('defineClient(): give `jwks` or `jwksUri`, not both');
  }
  if (secret !== undefined) {
    throw invalidOption(
      'defineClient(): a client authenticates with a secret or with keys, not both',
    );
  }
  if (jwksUri !== undefined) {
    parseHttpUrl('defineClient()', 'jwksUri', jwksUri);
    return;
  }
  if (!isJwkSetShape(jwks) || jwks.keys.length === 0) {
    throw invalidOption('defineClient(): `jwks` must be a JWK Set with at least one key');
  }
  for (const key of jwks.keys) {
    if (!['RSA', 'EC', 'OKP'].includes(key.kty as string)) {
      throw invalidOption('defineClient(): `jwks` keys must be RSA, EC or OKP public keys');
    }
    if (PRIVATE_MEMBERS.some((member) => member in key)) {
      throw invalidOption('defineClient(): `jwks` must hold public keys only');
    }
  }
}

/**
 * Registers a client: checks its definition and hashes its secret (scrypt), so that only
 * the hash is kept.
 *
 * @example
 * ```ts
 * const service = await defineClient({
 *   clientId: 'demo-service', secret: process.env.DEMO_SERVICE_SECRET,
 *   grantTypes: ['client_credentials'], redirectUris: [], scopes: ['read:messages'],
 * });
 * // a resource server that introspects the tokens presented to it, whoever they were issued to
 * const api = await defineClient({
 *   clientId: 'messages-api', secret: process.env.MESSAGES_API_SECRET,
 *   grantTypes: [], redirectUris: [], scopes: [], introspection: 'any',
 * });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-2 | RFC 6749 §2}
 */
export async function defineClient(definition: ClientDefinition): Promise<OAuthClient> {
  // `secret: process.env.CLIENT_SECRET` unset must not define a public client
  assertGivenOptions('defineClient()', definition, ['secret', 'jwks', 'jwksUri']);
  const { secret, ...client } = definition;
  if (
    typeof client.clientId !== 'string' ||
    !VCHARS.test(client.clientId) ||
    client.clientId.length > 128
  ) {
    throw invalidOption('defineClient(): `clientId` must be 1–128 visible ASCII characters');
  }
  for (const grant of client.grantTypes ?? []) checkGrantType(grant);
  checkClientKeys(client, secret);
  const confidential =
    secret !== undefined || client.jwks !== undefined || client.jwksUri !== undefined;
  if (!confidential && client.grantTypes.includes('client_credentials')) {
    throw invalidOption(
      'defineClient(): client_credentials needs a confidential client (a secret or keys)',
    );
  }
  if (secret !== undefined && (typeof secret !== 'string' || secret.length < 8)) {
    throw invalidOption('defineClient(): a client secret must be a string of 8 characters or more');
  }
  for (const uri of [...(client.redirectUris ?? []), ...(client.postLogoutRedirectUris ?? [])]) {
    if (typeof uri !== 'string') {
      throw invalidOption('defineClient(): each redirect URI must be a string');
    }
    if (!URL.canParse(uri)) {
      throw invalidOption(`defineClient(): \`${uri}\` is not an absolute redirect URI`);
    }
    // any `#` starts a fragment, an empty one (`…/cb#`) too, where URL's `hash` reads ''
    if (uri.includes('#'))
      throw invalidOption('defineClient(): a redirect URI must not have a fragment');
  }
  if (client.introspection !== undefined && !['own', 'any'].includes(client.introspection)) {
    throw invalidOption("defineClient(): `introspection` must be 'own' or 'any'");
  }
  for (const flag of ['dpopBoundAccessTokens', 'requirePushedAuthorizationRequests'] as const) {
    if (client[flag] !== undefined && typeof client[flag] !== 'boolean') {
      throw invalidOption(`defineClient(): \`${flag}\` must be a boolean`);
    }
  }
  if (
    client.provenance !== undefined &&
    !['configured', 'registered', 'metadata-document'].includes(client.provenance)
  ) {
    throw invalidOption(
      "defineClient(): `provenance` must be 'configured', 'registered' or 'metadata-document'",
    );
  }
  if (client.introspection === 'any' && !confidential) {
    throw invalidOption(
      "defineClient(): `introspection: 'any'` needs a confidential client (a secret or keys)",
    );
  }
  assertScopes('defineClient()', client.scopes);
  if (client.defaultScopes) assertScopes('defineClient()', client.defaultScopes);
  return Object.freeze({
    ...client,
    grantTypes: Object.freeze([...client.grantTypes]),
    redirectUris: Object.freeze([...client.redirectUris]),
    ...(client.postLogoutRedirectUris !== undefined && {
      postLogoutRedirectUris: Object.freeze([...client.postLogoutRedirectUris]),
    }),
    scopes: Object.freeze([...client.scopes]),
    ...(client.jwks !== undefined && { jwks: structuredClone(client.jwks) }),
    ...(secret === undefined ? {} : { secretHash: await hashPassword(secret) }),
  });
}

/**
 * Whether a client is confidential (RFC 6749 §2.1): it authenticates with a secret or with
 * keys (`private_key_jwt`).
 *
 * @example
 * ```ts
 * if (!isConfidential(client)) throw new OAuthError('unauthorized_client', '…');
 * ```
 */
export function isConfidential(client: OAuthClient): boolean {
  return (
    client.secretHash !== undefined || client.jwks !== undefined || client.jwksUri !== undefined
  );
}
