import type { Authenticator } from '../../auth/authenticator.js';
import { createDpopVerifier } from '../../auth/dpop/dpop.js';
import { type JwtBearerOptions, jwtBearer, principalFromClaims } from '../../auth/jwt/bearer.js';
import {
  createJwtVerifier,
  type JwtVerifier,
  type JwtVerifyContext,
  type VerifiedJwt,
} from '../../auth/jwt/jwt.js';
import { grantCredentialId, tokenCredentialId } from '../../auth/revocations.js';
import type {
  JwkSet as JSONWebKeySet,
  JwtHeader as JWTHeaderParameters,
  JwtClaims as JWTPayload,
} from '../../core/jwt-types.js';
import type { Principal } from '../../core/principal.js';
import { peekConfirmation } from '../../internal/jwt-peek.js';
import { assertKnownOptions, functionOption, invalidOption } from '../../internal/options.js';
import type { TokenContext } from './context.js';

/**
 * The claims every access token of this server carries (RFC 9068 §2.2): a token without one
 * of them is not ours, whatever signed it.
 */
const ACCESS_TOKEN_CLAIMS = ['iss', 'exp', 'aud', 'sub', 'client_id', 'iat', 'jti'] as const;

/** Options of {@link ownAccessTokens}: the verification settings that are not fixed by the server. */
export interface OwnAccessTokenOptions
  extends Pick<JwtBearerOptions, 'realm' | 'clockTolerance' | 'cache' | 'maxTokenLength' | 'dpop'> {
  /**
   * The resource whose tokens it takes (RFC 8707): a token whose `aud` does not include this
   * identifier is refused (401 `invalid_token`). `server.bearerFor(identifier)` checks that it
   * is a configured resource.
   * @defaultValue the server's default resource (`ctx.tokens.audience`)
   */
  resource?: string;
  /**
   * Maps the verified claims to the principal, once the token is known to be good and its
   * grant not revoked; returning `undefined` refuses the token (401).
   * @defaultValue `{ sub, name, role, scopes, method: 'bearer', clientId, claims }`
   */
  toPrincipal?: JwtBearerOptions['toPrincipal'];
}

const OPTIONS = [
  'resource',
  'realm',
  'clockTolerance',
  'cache',
  'maxTokenLength',
  'toPrincipal',
  'dpop',
] as const satisfies readonly (keyof OwnAccessTokenOptions)[];

/**
 * Follows the key set as it rotates: `build` runs again whenever the published keys change
 * (a key added by `rotate()`, an old one retired after `retainMs`), so a token signed by any
 * key published right now verifies, and one signed by a retired key does not. Reading
 * `jwks()` is a walk over a handful of keys: cheap enough to do on every request (and
 * `createKeySet()`'s answers the same set object until the set changes).
 */
function followKeys<T>(ctx: TokenContext, build: (jwks: JSONWebKeySet) => T): () => T {
  let signature: string | undefined;
  let current: T | undefined;
  let seen: JSONWebKeySet | undefined;
  return () => {
    const jwks = ctx.keys.jwks();
    // createKeySet() hands the same set until it changes: nothing to compare then
    if (jwks === seen && current !== undefined) return current;
    seen = jwks;
    const kids = jwks.keys.map((key) => key.kid).join(' ');
    if (current === undefined || kids !== signature) {
      current = build(jwks);
      signature = kids;
    }
    return current;
  };
}

/** The verification settings shared by the authenticator and the verifier. */
function baseOptions(
  ctx: TokenContext,
  jwks: JSONWebKeySet,
  audience: string | readonly string[] = ctx.tokens.audience,
) {
  return {
    jwks,
    issuer: ctx.tokens.issuer,
    audience,
    algorithms: [ctx.keys.signingKey().alg],
    typ: 'at+jwt',
    requiredClaims: [...ACCESS_TOKEN_CLAIMS],
  };
}

/**
 * The key under which a token without a grant (`client_credentials`) is marked revoked in
 * the store's revoked grants: its `jti`, which no grant id (a UUID) can look like.
 */
export function revokedTokenKey(jti: string): string {
  return `jti:${jti}`;
}

/**
 * The key under which a deleted client (RFC 7592 `DELETE`) is marked in the store's revoked
 * grants: every access token issued to it reads as revoked. No grant id (a UUID) nor
 * {@link revokedTokenKey} looks like it.
 *
 * @example
 * ```ts
 * await ctx.store.revokeGrant(revokedClientKey(client.clientId), revocationTtlMs(ctx));
 * ```
 */
export function revokedClientKey(clientId: string): string {
  return `client:${clientId}`;
}

/**
 * The revocation id (`client:<client_id>`) announced when a client is deleted: the streams
 * opened with any of its tokens end.
 *
 * @example
 * ```ts
 * await announceRevocation(ctx.revocations, [clientCredentialId(client.clientId)]);
 * ```
 */
export function clientCredentialId(clientId: string): string {
  return `client:${clientId}`;
}

/**
 * Whether a verified access token was revoked: the grant it belongs to, or, for a token
 * without a grant, the token itself (a malformed `grant_id` counts as revoked).
 *
 * @example
 * ```ts
 * const { payload } = await createOwnTokenVerifier(ctx).verify(token);
 * if (await isAccessTokenRevoked(ctx, payload)) return { active: false };
 * ```
 */
export async function isAccessTokenRevoked(
  ctx: TokenContext,
  payload: JWTPayload,
): Promise<boolean> {
  // a deleted client's tokens end with it, whatever their grant
  const clientId = payload.client_id;
  if (
    typeof clientId === 'string' &&
    (await ctx.store.isGrantRevoked(revokedClientKey(clientId)))
  ) {
    return true;
  }
  const grantId = payload.grant_id;
  if (grantId === undefined) {
    const jti = payload.jti;
    return typeof jti === 'string' && jti !== ''
      ? ctx.store.isGrantRevoked(revokedTokenKey(jti))
      : false;
  }
  if (typeof grantId !== 'string' || grantId === '') return true;
  if (await ctx.store.isGrantRevoked(grantId)) return true;
  // a delegated token (token exchange) also ends alone, revoked by its acting client
  const { act, jti } = payload;
  return act !== undefined && typeof jti === 'string' && jti !== ''
    ? ctx.store.isGrantRevoked(revokedTokenKey(jti))
    : false;
}

/**
 * Verifies this server's own access tokens outside of an HTTP authenticator (revocation,
 * introspection): signature by a key of `ctx.keys` as published now, `typ: at+jwt`, `iss`
 * and `aud` of the server, `exp`, and the RFC 9068 claims. Revocation of the grant is not
 * checked here; see {@link isAccessTokenRevoked}. Rejects with a `JwtError` for any token
 * that is not a live access token of this server (an ID token, for one). Without a
 * `context`, a bound token (`cnf`) is taken with its own binding: it is looked at, not used.
 *
 * @example
 * ```ts
 * const verifier = createOwnTokenVerifier(ctx);
 * const { payload } = await verifier.verify(token);
 * // a token exchange takes this server's tokens for any of the audiences it mints
 * const anyOfOurs = createOwnTokenVerifier(ctx, [ctx.tokens.audience, 'https://api.example.com']);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9068#section-4 | RFC 9068 §4}
 */
export function createOwnTokenVerifier(
  ctx: TokenContext,
  audience: string | readonly string[] = ctx.tokens.audience,
): JwtVerifier {
  const current = followKeys(ctx, (jwks) =>
    createJwtVerifier({ ...baseOptions(ctx, jwks, audience), cache: { max: 1_000 } }),
  );
  return {
    verify(token, context): Promise<VerifiedJwt> {
      return current().verify(token, context ?? ownBinding(token));
    },
  };
}

/**
 * {@link createOwnTokenVerifier} for a token of any resource this server issues to (RFC 8707:
 * each configured resource, the first the default audience), and the audiences in `more`: what
 * introspection, revocation and token exchange take as one of this server's tokens.
 *
 * @example
 * ```ts
 * const anyOfOurs = createAnyResourceVerifier(ctx);
 * const { payload } = await anyOfOurs.verify(token);
 * ```
 */
export function createAnyResourceVerifier(
  ctx: TokenContext & { readonly resources: readonly { readonly identifier: string }[] },
  more: readonly string[] = [],
): JwtVerifier {
  const audiences = new Set([...ctx.resources.map((resource) => resource.identifier), ...more]);
  return createOwnTokenVerifier(ctx, [...audiences]);
}

/** The claims every ID token of this server carries (OpenID Connect Core §2). */
const ID_TOKEN_CLAIMS = ['iss', 'sub', 'aud', 'exp', 'iat'] as const;

/**
 * Verifies this server's own ID tokens issued to one client (`aud` holds `clientId`):
 * signature by a key of `ctx.keys` as published now, `typ: JWT` (an access token, `at+jwt`, is
 * refused), `iss` of the server, `exp`. Rejects with a `JwtError` otherwise.
 *
 * @example
 * ```ts
 * const { payload } = await verifyOwnIdToken(ctx, subjectToken, client.clientId);
 * ```
 * @see {@link https://openid.net/specs/openid-connect-core-1_0.html#IDTokenValidation | OpenID Connect Core §3.1.3.7}
 */
export function verifyOwnIdToken(
  ctx: TokenContext,
  token: string,
  clientId: string,
): Promise<VerifiedJwt> {
  const verifier = createJwtVerifier({
    jwks: ctx.keys.jwks(),
    issuer: ctx.tokens.issuer,
    audience: clientId,
    algorithms: [ctx.keys.signingKey().alg],
    typ: 'JWT',
    requiredClaims: [...ID_TOKEN_CLAIMS],
    cache: false,
  });
  return verifier.verify(token);
}

/**
 * A token's own binding, taken as presented: revocation and introspection look at a token,
 * they do not use it, so a DPoP- or certificate-bound token is verified there (signature,
 * issuer, expiry) without its proof. The `cnf` read here is the signed one once verified.
 */
function ownBinding(token: string): JwtVerifyContext {
  const cnf = peekConfirmation(token);
  const { jkt, 'x5t#S256': certificate } = cnf ?? {};
  return {
    ...(typeof jkt === 'string' && { dpopKeyThumbprint: jkt }),
    ...(typeof certificate === 'string' && { certificateThumbprint: certificate }),
  };
}

/**
 * The bearer {@link Authenticator} for the access tokens this authorization server issues:
 * a {@link jwtBearer} that needs no configuration beyond the server's context. It takes the
 * issuer and audience of `ctx.tokens`, requires `typ: at+jwt` (an ID token is refused), takes
 * its keys from `ctx.keys` as they are published at each request (so a rotation needs no
 * restart, and tokens signed by the previous key verify while it stays published), and
 * refuses a token whose `grant_id` was revoked (`ctx.store.isGrantRevoked`), answering 401
 * `invalid_token` as for any bad token. The principal is
 * `{ sub, name, role, scopes, method: 'bearer', clientId, claims }`.
 *
 * @example
 * ```ts
 * const ctx = createOAuthContext({ issuer: 'https://auth.example.com', clients, keys, users, sessions });
 * const auth = authenticate([ownAccessTokens(ctx), apiKeyAuth(keys), sessions.authenticator]);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9068 | RFC 9068}
 * @see {@link https://www.rfc-editor.org/rfc/rfc6750 | RFC 6750}
 */
export function ownAccessTokens(
  ctx: TokenContext,
  options: OwnAccessTokenOptions = {},
): Authenticator {
  assertKnownOptions('ownAccessTokens()', options, OPTIONS);
  const { toPrincipal: given, resource, ...rest } = withOneDpopVerifier(options);
  if (resource !== undefined && (typeof resource !== 'string' || resource === '')) {
    throw invalidOption('ownAccessTokens(): `resource` must be a resource identifier');
  }
  const toPrincipal = functionOption('ownAccessTokens()', 'toPrincipal', given);
  const principalOf = async (
    payload: JWTPayload,
    header: JWTHeaderParameters,
  ): Promise<Principal | undefined> => {
    if (await isAccessTokenRevoked(ctx, payload)) return undefined;
    const principal =
      toPrincipal === undefined ? principalFromClaims(payload) : await toPrincipal(payload, header);
    return withClientCredential(principal, payload);
  };
  const current = followKeys(ctx, (jwks) =>
    jwtBearer({ ...rest, ...baseOptions(ctx, jwks, resource), toPrincipal: principalOf }),
  );
  const first = current(); // validates the options now, not at the first request
  return {
    scheme: first.scheme,
    challenge: first.challenge,
    headers: first.headers,
    authenticate(req) {
      return current().authenticate(req);
    },
  };
}

/**
 * The principal with the revocation ids of its token (`grant:`, `token:`) and of its client
 * (`client:<client_id>`), unless its mapping set them: a stream opened with the token ends
 * with its grant, with the token, and with its client's deletion (RFC 7592); and with the
 * token's `exp` as its end, unless the mapping set one.
 */
function withClientCredential(
  principal: Principal | undefined,
  payload: JWTPayload,
): Principal | undefined {
  if (principal === undefined || principal.credentialIds !== undefined) return principal;
  const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);
  const ids: string[] = [];
  const grantId = text(payload.grant_id);
  const jti = text(payload.jti);
  const clientId = text(payload.client_id);
  if (grantId !== undefined) ids.push(grantCredentialId(grantId));
  if (jti !== undefined) ids.push(tokenCredentialId(jti));
  if (clientId !== undefined) ids.push(clientCredentialId(clientId));
  if (ids.length === 0) return principal;
  // the token's end too, in this one copy: jwtBearer then has nothing to add (no second copy)
  const copy: Principal = { ...principal, credentialIds: ids };
  if (copy.expiresAt === undefined && typeof payload.exp === 'number') {
    copy.expiresAt = payload.exp * 1000;
  }
  return copy;
}

/**
 * The options with their DPoP verifier made once: the authenticator is rebuilt when the keys
 * rotate, and a verifier made at each build would start with an empty replay store, taking a
 * proof used before the rotation once more (RFC 9449 §11.1).
 */
function withOneDpopVerifier(options: OwnAccessTokenOptions): OwnAccessTokenOptions {
  const { dpop } = options;
  if (typeof dpop !== 'object' || dpop === null || dpop.verifier !== undefined) return options;
  const { origin: _origin, required: _required, verifier: _verifier, ...proofs } = dpop;
  return { ...options, dpop: { ...dpop, verifier: createDpopVerifier(proofs) } };
}
