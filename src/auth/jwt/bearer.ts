import type { IncomingMessage } from 'node:http';
import { type HttpError, serviceUnavailable } from '../../core/errors/errors.js';
import type {
  JwtHeader as JWTHeaderParameters,
  JwtClaims as JWTPayload,
} from '../../core/jwt-types.js';
import type { Principal } from '../../core/principal.js';
import { requestPath } from '../../core/problem.js';
import { fieldLines } from '../../internal/headers.js';
import { peekConfirmation } from '../../internal/jwt-peek.js';
import { assertKnownOptions, functionOption, invalidOption } from '../../internal/options.js';
import { isPromiseLike } from '../../internal/promise.js';
import { type Authenticator, challenge } from '../authenticator.js';
import { certificateThumbprint, getClientCertificate } from '../certificate.js';
import {
  createDpopVerifier,
  DpopProofError,
  type DpopVerifier,
  type DpopVerifierOptions,
} from '../dpop/dpop.js';
import {
  authenticationRequired,
  expiredCredentials,
  invalidAuthRequest,
  invalidCredentials,
} from '../errors.js';
import { isJwtError } from './error.js';
import { bearerVerifier, type JwtIssuerOptions } from './issuers.js';
import { JWT_VERIFIER_OPTIONS, type JwtVerifierOptions, type VerifiedJwt } from './jwt.js';
import { type JwtClaimMappingOptions, tokenCredentialIds } from './principal.js';

export { principalFromClaims } from './principal.js';

/**
 * Options of {@link jwtBearer} for one issuer: those of {@link JwtVerifierOptions}, where
 * the default mapping finds scopes and roles ({@link JwtClaimMappingOptions}), and these.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc6750 | RFC 6750}
 */
export interface JwtBearerOptions extends JwtVerifierOptions, JwtClaimMappingOptions {
  /**
   * Not with `issuer`: tokens of several issuers, each with its own keys, are accepted with
   * {@link JwtBearerIssuersOptions}. @defaultValue none
   */
  issuers?: never;
  /** The realm quoted in the `WWW-Authenticate` challenges. @defaultValue `'api'` */
  realm?: string;
  /**
   * Maps the verified claims to the principal; returning `undefined` refuses the token (401).
   * @defaultValue `sub`, `name`, `role`, scopes from `scope` (space-separated) or `scp`,
   * `clientId` from `client_id` or `azp`, `method: 'bearer'` and the claims; a token without
   * `sub` is refused (`principalFromClaims`; `scopesClaim` and `rolesClaim` tune it, and cannot
   * be given with this option)
   */
  toPrincipal?: (
    payload: JWTPayload,
    protectedHeader: JWTHeaderParameters,
  ) => Principal | undefined | Promise<Principal | undefined>;
  /**
   * Accept DPoP-bound tokens (RFC 9449) too: `Authorization: DPoP <token>` with one `DPoP`
   * proof header, checked by {@link createDpopVerifier} against the request's method and URL
   * (`origin` and its path) and the token's hash, the token's `cnf.jkt` equal to the proof's
   * key. A bound token sent as `Bearer` is refused, whatever this option says.
   * @defaultValue off: a `DPoP` scheme is not recognised (and bound tokens are refused)
   */
  dpop?: JwtBearerDpopOptions;
}

/**
 * The DPoP side of {@link jwtBearer}: the proof checks of {@link DpopVerifierOptions}, and
 * where this API is.
 */
export interface JwtBearerDpopOptions extends DpopVerifierOptions {
  /**
   * The public origin of the API as clients address it (`https://api.example.com`): a proof's
   * `htu` is compared with it and the request's path. Configuration, never the `Host` header.
   */
  origin: string;
  /** Refuse plain `Bearer` tokens: only DPoP-bound tokens are accepted. @defaultValue `false` */
  required?: boolean;
  /**
   * A verifier to share (an authorization server's, with its replay store) instead of one
   * made from these options.
   * @defaultValue one made from these options (`createDpopVerifier`)
   */
  verifier?: DpopVerifier;
}

/**
 * Options of {@link jwtBearer} for several issuers (a multi-tenant service, two tenants
 * during a migration): `issuers`, and the options shared by all of them. A token's `iss`,
 * read before anything is fetched, must equal one listed `issuer` exactly, whose keys,
 * audience and claim rules then verify it; a token of any other issuer is refused (401
 * `invalid_token`). Only the listed issuers are ever contacted, each on its first token.
 */
export interface JwtBearerIssuersOptions
  extends Pick<
    JwtBearerOptions,
    'realm' | 'toPrincipal' | 'dpop' | 'clockTolerance' | 'maxTokenLength' | 'cache'
  > {
  /**
   * The accepted issuers, each with its `issuer`, `audience`, key source (`jwksUrl`,
   * discovery by default…), `algorithms`, `typ` and claim rules; `toPrincipal` here is the
   * mapping of those without one of their own. The verified-token cache's `max` bounds them
   * all together.
   */
  issuers: readonly JwtIssuerOptions[];
  /** Each entry of `issuers` has its own. @defaultValue none */
  issuer?: never;
  /** Each entry of `issuers` has its own. @defaultValue none */
  audience?: never;
}

const OWNER = 'jwtBearer()';
const OPTIONS = [
  ...JWT_VERIFIER_OPTIONS,
  'realm',
  'toPrincipal',
  'dpop',
  'scopesClaim',
  'rolesClaim',
  'issuers',
] as const satisfies readonly (keyof JwtBearerOptions | keyof JwtBearerIssuersOptions)[];

/** RFC 6750 §2.1 `b64token`. */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/**
 * The token's revocation ids (`grant:<grant_id>`, `token:<jti>`) and its `exp`, added to the
 * principal unless its mapping set them: a stream opened with the token ends with it.
 */
function withTokenCredential(principal: Principal, payload: JWTPayload): Principal {
  const ids = principal.credentialIds === undefined ? tokenCredentialIds(payload) : undefined;
  const addExpiry = principal.expiresAt === undefined && typeof payload.exp === 'number';
  // the mapping's principal, copied only when something is added (never changed in place)
  if (ids === undefined && !addExpiry) return principal;
  const withIds: Principal = { ...principal };
  if (ids !== undefined) withIds.credentialIds = ids;
  if (addExpiry) withIds.expiresAt = (payload.exp as number) * 1000;
  return withIds;
}

/** Whether a header value uses the Bearer scheme (case-insensitive, RFC 9110 §11.1). */
function isBearer(value: string | undefined): value is string {
  return isScheme(value, 'bearer');
}

/** How an access token came. */
type Scheme = 'Bearer' | 'DPoP';
/** jwtBearer's DPoP settings. */
type DpopSettings = NonNullable<ReturnType<typeof dpopSettings>>;
/** A DPoP proof that passed its checks, its `jti` not yet recorded. */
type CheckedProof = Awaited<ReturnType<DpopVerifier['check']>>;

/** Whether a header value uses `scheme` (lower case; case-insensitive, RFC 9110 §11.1). */
function isScheme(value: string | undefined, scheme: string): value is string {
  const n = scheme.length;
  return (
    value !== undefined &&
    value.length >= n &&
    value.slice(0, n).toLowerCase() === scheme &&
    (value.length === n || value[n] === ' ')
  );
}

/**
 * Whether a token says it is DPoP-bound (`cnf.jkt` in its payload), read without verifying
 * it: only to choose which challenge answers its refusal, never to accept it.
 */
function claimsDpopBinding(token: string): boolean {
  return peekConfirmation(token)?.jkt !== undefined;
}

/** The access token of a request and how it came: `Bearer`, or `DPoP` when `dpop` is on. */
function readAccessToken(
  req: IncomingMessage,
  badRequest: string,
  dpop: boolean,
): { scheme: Scheme; token: string } | undefined {
  const header = req.headers.authorization;
  if (dpop && isScheme(header, 'dpop')) {
    const bearer = readBearerToken(req, badRequest, true);
    return bearer === undefined ? undefined : { scheme: 'DPoP', token: bearer };
  }
  const token = readBearerToken(req, badRequest, false);
  return token === undefined ? undefined : { scheme: 'Bearer', token };
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
function readBearerToken(
  req: IncomingMessage,
  badRequest: string,
  dpop: boolean,
): string | undefined {
  const recognised = dpop ? isDpop : isBearer;
  const raw = req.rawHeaders;
  let lines = 0;
  let bearerLines = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 13 && name.toLowerCase() === 'authorization') {
      lines++;
      if (recognised(raw[i + 1]?.trim())) bearerLines++;
    }
  }
  if (lines > 1 && bearerLines > 0) {
    throw invalidAuthRequest('Send one Authorization header, not several.', badRequest);
  }
  const header = req.headers.authorization;
  const inQuery = hasAccessTokenParam(req.url);
  if (!recognised(header)) {
    if (inQuery) {
      throw invalidAuthRequest('Send the access token in the Authorization header.', badRequest);
    }
    return undefined;
  }
  if (inQuery) {
    throw invalidAuthRequest('Send the access token in one place only.', badRequest);
  }
  return header.slice(dpop ? 4 : 6).trim();
}

function isDpop(value: string | undefined): value is string {
  return isScheme(value, 'dpop');
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
  /** The key of the request's verified DPoP proof, for a DPoP-bound token. */
  readonly dpopKeyThumbprint: string | undefined;
  constructor(req: IncomingMessage, dpopKeyThumbprint?: string) {
    this.#req = req;
    this.dpopKeyThumbprint = dpopKeyThumbprint;
  }
  get certificateThumbprint(): string | undefined {
    return thumbprintOf(this.#req);
  }
}

/** The request's `DPoP` proof: a proof is accepted only alone. */
function dpopHeader(req: IncomingMessage): string | undefined {
  const lines = fieldLines(req.rawHeaders, 'dpop');
  return lines.length === 1 ? lines[0] : undefined;
}

/** jwtBearer's DPoP settings, checked once. */
function dpopSettings(options: JwtBearerDpopOptions | undefined) {
  if (options === undefined) return undefined;
  if (typeof options !== 'object' || options === null) {
    throw invalidOption(`${OWNER}: \`dpop\` must be an object with the API's \`origin\``);
  }
  const { origin, required = false, verifier: given, ...proofs } = options;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    throw invalidOption(`${OWNER}: \`dpop.origin\` must be the API's absolute origin`);
  }
  if (url.origin !== origin.replace(/\/$/, '') || !/^https?:$/.test(url.protocol)) {
    throw invalidOption(
      `${OWNER}: \`dpop.origin\` must be an origin (scheme, host, port), no path`,
    );
  }
  if (typeof required !== 'boolean') {
    throw invalidOption(`${OWNER}: \`dpop.required\` must be a boolean`);
  }
  if (given !== undefined && typeof given?.check !== 'function') {
    throw invalidOption(`${OWNER}: \`dpop.verifier\` must be a DPoP verifier (createDpopVerifier)`);
  }
  const verifier: DpopVerifier = given ?? createDpopVerifier(proofs);
  return { verifier, origin: url.origin, required };
}

/** The refusals of one scheme, with its challenge parameters (`realm`, and `algs` for DPoP). */
function schemeAnswers(scheme: 'Bearer' | 'DPoP', realm: string, algs?: string) {
  const invalidDetail = 'The access token is not valid.';
  const expiredDetail = 'The access token expired.';
  const refusal = (detail: string) =>
    challenge(scheme, { realm, error: 'invalid_token', error_description: detail, algs });
  const invalidChallenge = refusal(invalidDetail);
  return {
    bare: challenge(scheme, { realm, algs }),
    invalidChallenge,
    invalid: (): HttpError =>
      invalidCredentials(invalidChallenge, invalidDetail, 'ERR_JWT_INVALID'),
    expired: refusal(expiredDetail),
    expiredDetail,
  };
}

/** Whether a verified token is bound to a DPoP key (`cnf.jkt`). */
function isDpopBound(payload: JWTPayload): boolean {
  const cnf = payload.cnf as Record<string, unknown> | undefined;
  return typeof cnf === 'object' && cnf !== null && typeof cnf.jkt === 'string';
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
export function jwtBearer(options: JwtBearerOptions | JwtBearerIssuersOptions): Authenticator {
  assertKnownOptions(OWNER, options, OPTIONS);
  const toPrincipal = functionOption(OWNER, 'toPrincipal', options.toPrincipal);
  const verifier = bearerVerifier(OWNER, options, toPrincipal);
  const realm = options.realm ?? 'api';
  if (typeof realm !== 'string' || realm === '') {
    throw invalidOption(`${OWNER}: \`realm\` must be a non-empty string`);
  }
  const maxTokenLength = options.maxTokenLength ?? 8192;
  const dpop = dpopSettings(options.dpop);
  const algs = dpop?.verifier.algorithms.join(' ');
  const answers = {
    Bearer: schemeAnswers('Bearer', realm),
    DPoP: schemeAnswers('DPoP', realm, algs),
  };
  // no credential: the schemes this resource takes, each with its parameters
  const offered =
    dpop === undefined
      ? answers.Bearer.bare
      : dpop.required
        ? answers.DPoP.bare
        : `${answers.Bearer.bare}, ${answers.DPoP.bare}`;
  const badRequest = challenge('Bearer', { realm, error: 'invalid_request' });
  /** A refused proof: 401 `invalid_dpop_proof` (or `use_dpop_nonce`), RFC 9449 §7.1. */
  const refusedProof = (error: DpopProofError): HttpError =>
    invalidCredentials(
      challenge('DPoP', { realm, error: error.error, error_description: error.message, algs }),
      error.message,
      error.code,
      // use_dpop_nonce: the nonce to retry with (RFC 9449 §9)
      error.nonce === undefined ? undefined : { 'DPoP-Nonce': error.nonce },
    );

  /** Runs a step of the proof's check, its refusal answered as RFC 9449 §7.1 says. */
  const refusingProof = async <T>(step: () => Promise<T>): Promise<T> => {
    try {
      return await step();
    } catch (error) {
      if (error instanceof DpopProofError) throw refusedProof(error);
      throw error;
    }
  };
  /** What the proof of `req` is checked against: its method, this API's URL, the token. */
  const proofRequest = (req: IncomingMessage, accessToken: string) => ({
    method: req.method ?? 'GET',
    url: `${dpop?.origin}${requestPath(req)}`,
    accessToken,
  });

  /** Runs a verification step, its refusal answered as the token's scheme says. */
  const refusingToken = <T>(scheme: Scheme, token: string, step: () => T): T => {
    try {
      return step();
    } catch (error) {
      throw tokenRefusal(scheme, token, error);
    }
  };
  /** The answer to a token `verify` refused. */
  const tokenRefusal = (scheme: Scheme, token: string, error: unknown): unknown => {
    const answer = answers[scheme];
    if (isJwtError(error, 'expired')) {
      return expiredCredentials(answer.expired, answer.expiredDetail, 'ERR_JWT_EXPIRED');
    }
    if (isJwtError(error, 'unavailable')) {
      return serviceUnavailable(30, 'The access token cannot be verified now.', {
        code: error.code,
        cause: error,
      });
    }
    // a DPoP-bound token sent as Bearer: the answer offers the scheme it needs (§7.1)
    if (isJwtError(error)) {
      return dpop !== undefined && scheme === 'Bearer' && claimsDpopBinding(token)
        ? answers.DPoP.invalid()
        : answer.invalid();
    }
    return error;
  };
  /** The principal of a verified token, with the token's credential (or a refusal). */
  const boundPrincipal = (scheme: Scheme, token: VerifiedJwt, principal: Principal | undefined) => {
    if (principal === undefined || typeof principal.sub !== 'string' || principal.sub === '') {
      throw answers[scheme].invalid();
    }
    return withTokenCredential(principal, token.payload);
  };
  /** Verifies the token (with the keys, if the cache has not it) and maps it. */
  const verified = async (
    scheme: Scheme,
    token: string,
    context: PresentedCertificate,
    proof: CheckedProof | undefined,
  ) => {
    let checked: VerifiedJwt;
    try {
      checked = await verifier.verify(token, context);
    } catch (error) {
      throw tokenRefusal(scheme, token, error);
    }
    // the DPoP scheme is for bound tokens: an unbound one is a bearer token (RFC 9449 §7.1)
    if (scheme === 'DPoP' && !isDpopBound(checked.payload)) throw answers[scheme].invalid();
    const principal = await verifier.toPrincipal(checked.payload, checked.protectedHeader);
    const bound = boundPrincipal(scheme, checked, principal);
    if (proof === undefined) return bound;
    await refusingProof(() => proof.remember());
    // a DPoP-bound token with its proof: the principal says so (unless mapped otherwise); a
    // principal the mapping handed over as it is gets a copy, so that its own stays unchanged
    if (bound.method !== 'bearer') return bound;
    return { ...bound, method: 'dpop' };
  };
  /** A DPoP-scheme token: the proof is checked first, its jti recorded last (a refused token records nothing). */
  const withProof = async (req: IncomingMessage, token: string, settings: DpopSettings) => {
    const proof = await refusingProof(() =>
      settings.verifier.check(dpopHeader(req), proofRequest(req, token)),
    );
    return verified('DPoP', token, new PresentedCertificate(req, proof.jkt), proof);
  };

  return {
    scheme: 'Bearer',
    challenge: offered,
    headers: dpop === undefined ? ['Authorization'] : ['Authorization', 'DPoP'],
    authenticate(req) {
      const presented = readAccessToken(req, badRequest, dpop !== undefined);
      if (presented === undefined) return undefined;
      const { scheme, token } = presented;
      const answer = answers[scheme];
      if (token === '') throw authenticationRequired([offered]);
      if (token.length > maxTokenLength || !B64TOKEN.test(token)) throw answer.invalid();
      if (scheme === 'Bearer' && dpop?.required) {
        throw invalidCredentials(answers.DPoP.invalidChallenge, 'Send a DPoP-bound token.');
      }
      if (scheme === 'DPoP' && dpop !== undefined) return withProof(req, token, dpop);
      // a token the cache holds is answered without a promise (when the mapping has none)
      const context = new PresentedCertificate(req, undefined);
      const hit = refusingToken(scheme, token, () => verifier.verifyCached(token, context));
      if (hit === undefined) return verified(scheme, token, context, undefined);
      const principal = verifier.toPrincipal(hit.payload, hit.protectedHeader);
      return isPromiseLike(principal)
        ? principal.then((mapped) => boundPrincipal(scheme, hit, mapped))
        : boundPrincipal(scheme, hit, principal);
    },
  };
}
