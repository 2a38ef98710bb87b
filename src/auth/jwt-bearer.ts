import type { IncomingMessage } from 'node:http';
import { type HttpError, serviceUnavailable } from '../core/errors.js';
import type {
  JwtHeader as JWTHeaderParameters,
  JwtClaims as JWTPayload,
} from '../core/jwt-types.js';
import type { Principal } from '../core/principal.js';
import { assertKnownOptions, functionOption, invalidOption } from '../internal/options.js';
import { type Authenticator, challenge } from './authenticator.js';
import { certificateThumbprint, getClientCertificate } from './certificate.js';
import {
  authenticationRequired,
  expiredCredentials,
  invalidAuthRequest,
  invalidCredentials,
} from './errors.js';
import { buildJwtVerifier, JWT_VERIFIER_OPTIONS, type JwtVerifierOptions } from './jwt.js';
import { isJwtError } from './jwt-error.js';
import { grantCredentialId, tokenCredentialId } from './revocations.js';
import { scopesFromClaim } from './scopes.js';

/**
 * Options of {@link jwtBearer}: those of {@link JwtVerifierOptions}, and these.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc6750 | RFC 6750}
 */
export interface JwtBearerOptions extends JwtVerifierOptions {
  /** The realm quoted in the `WWW-Authenticate` challenges. @defaultValue `'api'` */
  realm?: string;
  /**
   * Maps the verified claims to the principal; returning `undefined` refuses the token (401).
   * @defaultValue `sub`, `name`, `role`, scopes from `scope` (space-separated) or `scp`,
   * `clientId` from `client_id` or `azp`, `method: 'bearer'` and the claims; a token without
   * `sub` is refused
   */
  toPrincipal?: (
    payload: JWTPayload,
    protectedHeader: JWTHeaderParameters,
  ) => Principal | undefined | Promise<Principal | undefined>;
}

const OWNER = 'jwtBearer()';
const OPTIONS = [
  ...JWT_VERIFIER_OPTIONS,
  'realm',
  'toPrincipal',
] as const satisfies readonly (keyof JwtBearerOptions)[];

/** RFC 6750 §2.1 `b64token`. */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);

/**
 * The scopes of a verified payload, parsed once per payload: a token served from the
 * verified-token cache hands the same (frozen) payload to every request.
 */
const scopesByPayload = new WeakMap<JWTPayload, readonly string[]>();
function scopesOf(payload: JWTPayload): readonly string[] {
  let scopes = scopesByPayload.get(payload);
  if (scopes === undefined) {
    scopes = Object.freeze(scopesFromClaim(payload.scope ?? payload.scp));
    if (Object.isFrozen(payload)) scopesByPayload.set(payload, scopes);
  }
  return scopes;
}

/**
 * The default claims-to-principal mapping (see {@link JwtBearerOptions.toPrincipal}).
 *
 * @example
 * ```ts
 * const bearer = jwtBearer({
 *   issuer: 'https://auth.example.com',
 *   audience: 'https://api.example.com',
 *   jwksUrl: 'https://auth.example.com/.well-known/jwks.json',
 *   // keep the default mapping, add a tenant check
 *   toPrincipal: (payload) => (payload.tenant === 'acme' ? principalFromClaims(payload) : undefined),
 * });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9068#section-2.2 | RFC 9068 §2.2}
 */
export function principalFromClaims(payload: JWTPayload): Principal | undefined {
  const sub = text(payload.sub);
  if (sub === undefined) return undefined;
  const principal: Principal = {
    sub,
    scopes: scopesOf(payload),
    method: 'bearer',
    claims: payload,
  };
  const name = text(payload.name);
  const role = text(payload.role);
  const clientId = text(payload.client_id) ?? text(payload.azp);
  if (name !== undefined) principal.name = name;
  if (role !== undefined) principal.role = role;
  if (clientId !== undefined) principal.clientId = clientId;
  return principal;
}

/**
 * The token's revocation ids (`grant:<grant_id>`, `token:<jti>`) and its `exp`, added to the
 * principal unless its mapping set them: a stream opened with the token ends with it.
 */
function withTokenCredential(principal: Principal, payload: JWTPayload): Principal {
  const ids: string[] = [];
  const grantId = text(payload.grant_id);
  const jti = text(payload.jti);
  if (grantId !== undefined) ids.push(grantCredentialId(grantId));
  if (jti !== undefined) ids.push(tokenCredentialId(jti));
  const expiresAt = typeof payload.exp === 'number' ? payload.exp * 1000 : undefined;
  const withIds: Principal = { ...principal };
  if (principal.credentialIds === undefined && ids.length > 0) withIds.credentialIds = ids;
  if (principal.expiresAt === undefined && expiresAt !== undefined) withIds.expiresAt = expiresAt;
  return withIds;
}

/** Whether a header value uses the Bearer scheme (case-insensitive, RFC 9110 §11.1). */
function isBearer(value: string | undefined): value is string {
  return (
    value !== undefined &&
    value.length >= 6 &&
    value.slice(0, 6).toLowerCase() === 'bearer' &&
    (value.length === 6 || value[6] === ' ')
  );
}

function hasAccessTokenParam(url: string | undefined): boolean {
  const q = url === undefined ? -1 : url.indexOf('?');
  if (q === -1) return false;
  const query = url!.slice(q + 1);
  if (!query.includes('access') && !query.includes('%')) return false;
  return new URLSearchParams(query).has('access_token');
}

/**
 * Finds the bearer token of a request: `undefined` when there is none, `''` for
 * `Authorization: Bearer` without a token. A token sent twice (several `Authorization`
 * lines, or the header and the `access_token` query parameter) or in the query alone is a
 * 400 `invalid_request` (RFC 6750 §2, §3.1).
 */
function readBearerToken(req: IncomingMessage, badRequest: string): string | undefined {
  const raw = req.rawHeaders;
  let lines = 0;
  let bearerLines = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 13 && name.toLowerCase() === 'authorization') {
      lines++;
      if (isBearer(raw[i + 1]?.trim())) bearerLines++;
    }
  }
  if (lines > 1 && bearerLines > 0) {
    throw invalidAuthRequest('Send one Authorization header, not several.', badRequest);
  }
  const header = req.headers.authorization;
  const inQuery = hasAccessTokenParam(req.url);
  if (!isBearer(header)) {
    if (inQuery) {
      throw invalidAuthRequest('Send the access token in the Authorization header.', badRequest);
    }
    return undefined;
  }
  if (inQuery) {
    throw invalidAuthRequest('Send the access token in one place only.', badRequest);
  }
  return header.slice(6).trim();
}

/** The verified client certificate's thumbprint, computed only when a token asks for it. */
function thumbprintOf(req: IncomingMessage): string | undefined {
  const presented = getClientCertificate(req);
  return presented?.authorized ? certificateThumbprint(presented.certificate) : undefined;
}

/**
 * The verification context of a request: its client certificate's thumbprint, computed only
 * when a token bound to a certificate (`cnf.x5t#S256`) asks for it. A class, so that a request
 * allocates one small object (an object literal with a getter is costly to make).
 */
class PresentedCertificate {
  readonly #req: IncomingMessage;
  constructor(req: IncomingMessage) {
    this.#req = req;
  }
  get certificateThumbprint(): string | undefined {
    return thumbprintOf(this.#req);
  }
}

/**
 * An {@link Authenticator} for JWT access tokens sent as `Authorization: Bearer <token>`
 * (RFC 6750), verified as `createJwtVerifier` does. No token, or `Bearer` alone, is
 * a 401 with a bare challenge; a bad token a 401 `invalid_token` whose problem type is
 * `invalid-credentials`, an expired one a 401 `invalid_token` of type `credentials-expired`;
 * a token sent twice a 400 `invalid_request`. When the remote key set was never reachable the
 * answer is a 503, since nothing can be said about the token.
 *
 * @example
 * ```ts
 * const auth = authenticate([
 *   jwtBearer({ jwksUrl: 'https://id.example.com/jwks', issuer: 'https://id.example.com',
 *     audience: 'https://api.example.com', typ: 'at+jwt' }),
 * ]);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6750 | RFC 6750}
 * @see {@link https://www.rfc-editor.org/rfc/rfc8725 | RFC 8725}
 */
export function jwtBearer(options: JwtBearerOptions): Authenticator {
  assertKnownOptions(OWNER, options, OPTIONS);
  const verifier = buildJwtVerifier(OWNER, options);
  const realm = options.realm ?? 'api';
  if (typeof realm !== 'string' || realm === '') {
    throw invalidOption(`${OWNER}: \`realm\` must be a non-empty string`);
  }
  const toPrincipal =
    functionOption(OWNER, 'toPrincipal', options.toPrincipal) ??
    ((payload: JWTPayload) => principalFromClaims(payload));
  const maxTokenLength = options.maxTokenLength ?? 8192;
  const bare = challenge('Bearer', { realm });
  const badRequest = challenge('Bearer', { realm, error: 'invalid_request' });
  const invalidDetail = 'The access token is not valid.';
  const invalidChallenge = challenge('Bearer', {
    realm,
    error: 'invalid_token',
    error_description: invalidDetail,
  });
  const invalid = (): HttpError =>
    invalidCredentials(invalidChallenge, invalidDetail, 'ERR_JWT_INVALID');
  const expiredDetail = 'The access token expired.';
  const expired = challenge('Bearer', {
    realm,
    error: 'invalid_token',
    error_description: expiredDetail,
  });

  return {
    scheme: 'Bearer',
    challenge: bare,
    headers: ['Authorization'],
    async authenticate(req) {
      const token = readBearerToken(req, badRequest);
      if (token === undefined) return undefined;
      if (token === '') throw authenticationRequired([bare]);
      if (token.length > maxTokenLength || !B64TOKEN.test(token)) throw invalid();
      let verified: Awaited<ReturnType<typeof verifier.verify>>;
      try {
        verified = await verifier.verify(token, new PresentedCertificate(req));
      } catch (error) {
        if (isJwtError(error, 'expired')) {
          throw expiredCredentials(expired, expiredDetail, 'ERR_JWT_EXPIRED');
        }
        if (isJwtError(error, 'unavailable')) {
          throw serviceUnavailable(30, 'The access token cannot be verified now.', {
            code: error.code,
            cause: error,
          });
        }
        if (isJwtError(error)) throw invalid();
        throw error;
      }
      const principal = await toPrincipal(verified.payload, verified.protectedHeader);
      if (principal === undefined || typeof principal.sub !== 'string' || principal.sub === '') {
        throw invalid();
      }
      return withTokenCredential(principal, verified.payload);
    },
  };
}
