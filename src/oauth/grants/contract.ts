import { assertKnownOptions, invalidOption } from '../../internal/options.js';
import { isConfidential, isGrantTypeSyntax, type OAuthClient } from '../clients/client.js';
import type { OAuthContext } from '../context.js';
import { OAuthError } from '../protocol/errors.js';
import { audienceClaim, scopeForAudience } from '../resources.js';
import { refreshTokens } from '../store/records.js';
import { hashToken, newOpaqueToken, type UserClaims } from '../tokens/issue.js';

/**
 * A successful token response (RFC 6749 §5.1, OpenID Connect Core §3.1.3.3).
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-5.1 | RFC 6749 §5.1}
 */
export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer' | 'DPoP';
  expires_in: number;
  scope: string;
  refresh_token?: string;
  id_token?: string;
  /** What was issued, for a token exchange (RFC 8693 §2.2.1): a token type URI. */
  issued_token_type?: string;
}

/**
 * What a grant does at the token endpoint: issue the tokens for the request of an
 * authenticated client (its parameters, each present at most once, only those the grant
 * lists), or throw an {@link OAuthError} (RFC 6749 §5.2).
 */
export type GrantHandler = (
  ctx: OAuthContext,
  client: OAuthClient,
  params: ReadonlyMap<string, string>,
  binding: TokenBinding,
) => Promise<TokenResponse>;

/**
 * What the tokens of a request are bound to (the key of its verified DPoP proof, if any), and
 * how the request's one-time ids are recorded.
 */
export interface TokenBinding {
  /** The RFC 7638 thumbprint of the proof's key: the access token's `cnf.jkt`. */
  jkt?: string;
  /**
   * Records the request's one-time JWT ids (its DPoP proof's and client assertion's `jti`),
   * refusing a replay (`invalid_dpop_proof`, `invalid_client`): `assertCanIssue` calls
   * it once every check of the grant has passed, before anything is spent, so that a refused
   * request records nothing and of two racing with one proof, one wins.
   * @defaultValue none: nothing to record (the token endpoint gives one)
   * @example
   * ```ts
   * const binding: TokenBinding = { jkt: proof.jkt, commit: () => proof.remember() };
   * ```
   */
  commit?: () => Promise<void>;
}

/** What a user grant (code or device) issues tokens for. */
export interface UserGrant {
  /** The user, as `ctx.users.get()` gave it. */
  user: UserClaims;
  /** The scope of the access token (and of the ID token's claims). */
  scope: readonly string[];
  grantId: string;
  /** When the user signed in, epoch seconds. */
  authTime?: number;
  /** The `nonce` of the authentication request, for the ID token of a code exchange. */
  nonce?: string;
  /**
   * The token's audience (RFC 8707): configured resource identifiers; the access token's
   * scope is cut to what they understand.
   * @defaultValue the default resource
   */
  audience?: readonly string[];
  /**
   * The refresh-token family: its scope (the original grant's), absolute end, epoch ms, and
   * the resources the grant is for (none: any configured resource, one per token).
   */
  family: { scope: readonly string[]; expiresAt: number; resources?: readonly string[] };
  /** The refresh token presented stays in use: no new one is issued (no rotation). */
  keepRefreshToken?: boolean;
}

/**
 * The user behind a grant, or `invalid_grant` if the app no longer knows them.
 *
 * @example
 * ```ts
 * const user = await grantUser(ctx, record.sub); // throws invalid_grant for a deleted user
 * ```
 */
export async function grantUser(ctx: OAuthContext, sub: string): Promise<UserClaims> {
  const user = await ctx.users.get(sub);
  if (user === undefined) throw new OAuthError('invalid_grant', 'The user of this grant is gone.');
  return user;
}

/**
 * Before a grant spends anything (a code, a refresh token, a device code) or issues a token:
 * a store that cannot keep what the grant would write (`checkCapacity`, a bounded store at its
 * bound) refuses now with its 503, rather than after the code or token is spent; then the
 * request's one-time ids are recorded (`binding.commit`), a replayed proof or assertion
 * refused before the code is spent. Reuse and replay detection run before it, so that a
 * revocation is never put off.
 *
 * @example
 * ```ts
 * checkVerifier(record, verifier);
 * await assertCanIssue(ctx, binding); // 503 temporarily_unavailable while the store is full
 * const consumed = await codes(ctx.store).consume(hash);
 * ```
 */
export async function assertCanIssue(ctx: OAuthContext, binding?: TokenBinding): Promise<void> {
  await ctx.store.checkCapacity?.(refreshTokens.kind);
  await binding?.commit?.();
}

/**
 * Issues the tokens of a user grant: an access token carrying the grant id, a refresh token
 * of the family when the client may refresh (stored only as its hash, living until the
 * family ends), and an ID token when the scope has `openid`.
 *
 * @example
 * ```ts
 * const family = { scope: ['openid'], expiresAt: Date.now() + ctx.settings.refreshTokenTtl };
 * return issueUserTokens(ctx, client, { user, scope: ['openid'], grantId, family }, binding);
 * ```
 */
export async function issueUserTokens(
  ctx: OAuthContext,
  client: OAuthClient,
  grant: UserGrant,
  binding: TokenBinding,
): Promise<TokenResponse> {
  const { user, scope, grantId } = grant;
  const { jkt } = binding;
  const audience = grant.audience ?? [ctx.resources[0]!.identifier];
  // the access token carries the scopes its resources understand; the ID token, the grant's
  const accessScope = scopeForAudience(ctx.resources, audience, scope);
  const access = await ctx.tokens.accessToken({
    sub: user.sub,
    clientId: client.clientId,
    scope: accessScope,
    audience: audienceClaim(audience),
    grantId,
    user: { name: user.name, role: user.role },
    ...(jkt !== undefined && { jkt }),
  });
  const response: TokenResponse = {
    access_token: access.token,
    token_type: jkt === undefined ? 'Bearer' : 'DPoP',
    expires_in: access.expiresIn,
    scope: accessScope.join(' '),
  };
  const ttl = grant.family.expiresAt - Date.now();
  if (client.grantTypes.includes('refresh_token') && ttl > 0 && grant.keepRefreshToken !== true) {
    const refreshToken = newOpaqueToken();
    await refreshTokens(ctx.store).save(
      hashToken(refreshToken),
      {
        clientId: client.clientId,
        sub: user.sub,
        scope: [...grant.family.scope],
        grantId,
        ...(grant.authTime === undefined ? {} : { authTime: grant.authTime }),
        familyExpiresAt: grant.family.expiresAt,
        ...(grant.family.resources !== undefined &&
          grant.family.resources.length > 0 && { resources: [...grant.family.resources] }),
        // a public client's refresh token is bound to its DPoP key (RFC 9449 §5)
        ...(jkt !== undefined && !isConfidential(client) && { jkt }),
      },
      ttl,
    );
    response.refresh_token = refreshToken;
  }
  if (scope.includes('openid')) {
    response.id_token = await ctx.tokens.idToken({
      clientId: client.clientId,
      user,
      scope,
      nonce: grant.nonce,
      authTime: grant.authTime,
    });
  }
  return response;
}

/**
 * A required parameter, or `invalid_request`.
 *
 * @example
 * ```ts
 * const code = requiredParameter(params, 'code'); // throws invalid_request when absent or empty
 * ```
 */
export function requiredParameter(params: ReadonlyMap<string, string>, name: string): string {
  const value = params.get(name);
  if (value === undefined || value === '') {
    throw new OAuthError('invalid_request', `The parameter ${name} is required.`);
  }
  return value;
}

/**
 * One grant of the token endpoint: the `grant_type` it answers, the parameters it reads, and
 * what it does. portico's own are {@link defaultGrants}; a server takes the list it is given
 * (`grants` of `createAuthorizationServer`), so that a grant is added by one value, not by
 * editing the endpoint. Make one with {@link defineGrant}.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-4.5 | RFC 6749 §4.5}
 */
export interface Grant {
  /** The `grant_type` it answers: a name or an absolute URI (RFC 6749 §4.5). */
  readonly type: string;
  /**
   * The form parameters it reads besides `grant_type` (and client authentication): only
   * these are passed to `handle`, each present at most once (RFC 6749 §3.2).
   */
  readonly parameters: readonly string[];
  /** Issues the tokens of a request, or throws an {@link OAuthError}. */
  readonly handle: GrantHandler;
}

/** Parameters the endpoint reads itself: a grant never lists them. */
const ENDPOINT_PARAMETERS = [
  'grant_type',
  'client_id',
  'client_secret',
  'client_assertion',
  'client_assertion_type',
];

const GRANT_KEYS = ['type', 'parameters', 'handle'] as const satisfies readonly (keyof Grant)[];

/**
 * Checks a grant and freezes it: a `type` that is a name or an absolute URI, `parameters`
 * that are parameter names (not `grant_type` nor client authentication's, which the endpoint
 * reads), and a `handle` function. The grant is then registered by putting it in the server's
 * `grants`; a client may use it once its `grantTypes` names its type.
 *
 * @example
 * ```ts
 * const magicLink = defineGrant({
 *   type: 'urn:example:grant-type:magic-link',
 *   parameters: ['link'],
 *   async handle(ctx, client, params, binding) {
 *     const sub = await redeemLink(requiredParameter(params, 'link')); // your own one-time links
 *     await assertCanIssue(ctx, binding);
 *     const access = await ctx.tokens.accessToken({ sub, clientId: client.clientId, scope: [] });
 *     return { access_token: access.token, token_type: 'Bearer', expires_in: access.expiresIn, scope: '' };
 *   },
 * });
 * const auth = createAuthorizationServer({ ...options, grants: [...defaultGrants, magicLink] });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-4.5 | RFC 6749 §4.5}
 */
export function defineGrant(grant: Grant): Grant {
  const owner = 'defineGrant()';
  if (typeof grant !== 'object' || grant === null) {
    throw invalidOption(`${owner}: a grant is { type, parameters, handle }`);
  }
  assertKnownOptions(owner, grant, GRANT_KEYS);
  if (!isGrantTypeSyntax(grant.type)) {
    throw invalidOption(`${owner}: \`type\` must be a grant type: a name or an absolute URI`);
  }
  const { parameters } = grant;
  if (!Array.isArray(parameters) || parameters.some((p) => !/^[\w.-]+$/.test(String(p)))) {
    throw invalidOption(`${owner}: \`parameters\` of ${grant.type} must be parameter names`);
  }
  const taken = parameters.find((p) => ENDPOINT_PARAMETERS.includes(p));
  if (taken !== undefined) {
    throw invalidOption(
      `${owner}: ${grant.type} lists \`${taken}\`, which the token endpoint reads itself`,
    );
  }
  if (typeof grant.handle !== 'function') {
    throw invalidOption(`${owner}: \`handle\` of ${grant.type} must be a function`);
  }
  return Object.freeze({
    type: grant.type,
    parameters: Object.freeze([...new Set(parameters)]),
    handle: grant.handle,
  });
}
