// DPoP proofs (RFC 9449): the check of §4.3 that a resource server and a token endpoint both
// make before they trust a proof. Each caller turns a refusal into its own answer: a 401 with
// `WWW-Authenticate: DPoP error="invalid_dpop_proof"` at a resource, a 400
// `{"error":"invalid_dpop_proof"}` at the token endpoint.
import { hash } from 'node:crypto';
import type { Duration } from '../../core/duration.js';
import { PorticoError } from '../../core/errors/http-error.js';
import { loadJose } from '../../internal/lazy.js';
import { assertKnownOptions, durationOption, invalidOption } from '../../internal/options.js';
import { MemoryReplayStore, type ReplayStore } from '../replay/store.js';
import { createProofKeys } from './key.js';
import type { DpopNonces } from './nonce.js';

/** Why a proof was refused, as RFC 9449 §7.1 and §8 name it. */
export type DpopProofErrorCode = 'invalid_dpop_proof' | 'use_dpop_nonce';

/**
 * A DPoP proof that does not hold (`error`: `invalid_dpop_proof`), or that lacks the server's
 * current nonce (`use_dpop_nonce`). Its message says what is wrong, for the
 * `error_description`; it never quotes the proof.
 *
 * @example
 * ```ts
 * try {
 *   await dpop.verify(req.headers.dpop, { method: 'GET', url: 'https://api.example.com/me' });
 * } catch (error) {
 *   if (error instanceof DpopProofError) console.log(error.error); // 'invalid_dpop_proof'
 * }
 * ```
 */
export class DpopProofError extends PorticoError {
  /** The OAuth error code to answer with. */
  readonly error: DpopProofErrorCode;

  /** With `use_dpop_nonce`: the nonce to send in `DPoP-Nonce`, for the client to retry with. */
  readonly nonce: string | undefined;

  constructor(
    error: DpopProofErrorCode,
    message: string,
    options?: { cause?: unknown; nonce?: string },
  ) {
    super(message, error === 'use_dpop_nonce' ? 'ERR_DPOP_NONCE' : 'ERR_DPOP_INVALID', options);
    this.error = error;
    this.nonce = options?.nonce;
  }
}

/** A proof that held: its key's thumbprint and what it claimed. */
export interface DpopProof {
  /** The RFC 7638 SHA-256 thumbprint of the proof's public key: a bound token's `cnf.jkt`. */
  readonly jkt: string;
  /** The proof's public key (its `jwk` header). */
  readonly jwk: Readonly<Record<string, unknown>>;
  readonly jti: string;
  /** The proof's JWS algorithm (`ES256`, …). */
  readonly alg: string;
  /** When the proof was made, in epoch milliseconds. */
  readonly issuedAt: number;
}

/** Options of {@link createDpopVerifier}. Every duration is in milliseconds. */
export interface DpopVerifierOptions {
  /**
   * The proof algorithms accepted: asymmetric JWS algorithms only (`none` and `HS*` never).
   * Announced in `WWW-Authenticate: DPoP algs="…"` and `dpop_signing_alg_values_supported`.
   * @defaultValue `['ES256', 'EdDSA', 'PS256', 'RS256']`
   */
  algorithms?: readonly string[];
  /**
   * How old a proof may be (its `iat`), in milliseconds; its `jti` is remembered as long.
   * @defaultValue `300_000` (5 minutes)
   */
  maxAge?: Duration;
  /** How far in the future a proof's `iat` may be (clock skew), in milliseconds. @defaultValue `5_000` */
  clockTolerance?: Duration;
  /**
   * Where accepted `jti` are remembered, each charged to its proof key's thumbprint (the
   * store's partition). A store of its own: one that client assertions share could be
   * filled by either for both.
   * @defaultValue a new `MemoryReplayStore`
   * @example
   * ```ts
   * const dpop = createDpopVerifier({ replay: new RedisReplayStore({ client, prefix: 'app:dpop:' }) });
   * ```
   */
  replay?: ReplayStore;
  /**
   * Server nonces (`createDpopNonces`): every proof must carry the current one (RFC 9449
   * §8, §9); a proof without it is refused with `use_dpop_nonce`, the nonce to use attached.
   * @defaultValue none: proofs need no nonce
   */
  nonces?: DpopNonces;
  /** The clock, epoch milliseconds (tests inject one). @defaultValue `Date.now` */
  now?: () => number;
}

/** What a proof is checked against: the request it came with. */
export interface DpopRequest {
  /** The request's method, as sent (`GET`): compared with `htm` exactly. */
  method: string;
  /**
   * The request's absolute URL as the client addressed it (your public origin and the
   * request's path): compared with `htu`, both without query and fragment. Build it from
   * configuration, never from the `Host` header alone.
   */
  url: string | URL;
  /** The access token presented with the proof, if any: the proof's `ath` must be its hash. */
  accessToken?: string;
  /** The nonce the server requires now, if any (`DPoP-Nonce`): the proof's `nonce` must be it. */
  nonce?: string;
}

/**
 * A proof that holds but whose `jti` is not recorded yet: {@link DpopVerifier.check}'s answer.
 * Record it with `remember()` once everything else about the request is verified (the access
 * token and its binding, the grant), so that a request refused for anything else writes
 * nothing to the replay store.
 */
export interface CheckedDpopProof extends DpopProof {
  /**
   * Records the proof's `jti` (set-if-absent, so that of two uses racing, one wins): rejects
   * with a {@link DpopProofError} (`invalid_dpop_proof`) when it was used already, or with the
   * store's error (a full or unreachable store: 503; a key past its share: 429). Calling it
   * again returns the first call's outcome.
   */
  remember(): Promise<void>;
}

/** Verifies DPoP proofs. */
export interface DpopVerifier {
  /** The accepted algorithms, for `algs="…"` and discovery. */
  readonly algorithms: readonly string[];
  /**
   * Checks `proof` (the `DPoP` header's value: exactly one) against `request`, as RFC 9449
   * §4.3 lists, and records its `jti` at once. Rejects with a {@link DpopProofError}. Prefer
   * {@link DpopVerifier.check} when the request has more to verify.
   */
  verify(proof: unknown, request: DpopRequest): Promise<DpopProof>;
  /**
   * Checks `proof` against `request` as `verify` does, without recording its `jti`: the
   * answer's `remember()` does, once the caller has verified the rest of the request.
   * Rejects with a {@link DpopProofError}.
   *
   * @example
   * ```ts
   * const proof = await dpop.check(req.headers.dpop, { method: 'GET', url, accessToken });
   * if (proof.jkt !== claims.cnf?.jkt) throw new Error('the token is bound to another key');
   * await proof.remember(); // only now: a refused request records nothing
   * ```
   */
  check(proof: unknown, request: DpopRequest): Promise<CheckedDpopProof>;
}

const ASYMMETRIC = new Set([
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
  'PS256',
  'PS384',
  'PS512',
  'RS256',
  'RS384',
  'RS512',
]);
const DEFAULT_ALGORITHMS = ['ES256', 'EdDSA', 'PS256', 'RS256'] as const;
const OPTIONS = ['algorithms', 'maxAge', 'clockTolerance', 'replay', 'nonces', 'now'] as const;
const OWNER = 'createDpopVerifier()';
/** A compact JWS: three base64url parts, the signature not empty. */
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const MAX_PROOF_LENGTH = 8192;
const MAX_JTI_LENGTH = 256;

const invalid = (message: string, cause?: unknown) =>
  new DpopProofError('invalid_dpop_proof', message, cause === undefined ? undefined : { cause });

function algorithmsOption(value: readonly string[] | undefined): readonly string[] {
  if (value === undefined) return DEFAULT_ALGORITHMS;
  if (!Array.isArray(value) || value.length === 0 || !value.every((a) => ASYMMETRIC.has(a))) {
    throw invalidOption(
      `${OWNER}: \`algorithms\` must list asymmetric JWS algorithms (${[...ASYMMETRIC].join(', ')})`,
    );
  }
  return Object.freeze([...value]);
}

/**
 * The URL a proof is compared on (RFC 9449 §4.3 step 9): scheme, host and port normalised as
 * the URL parser does (lower case, default port dropped, dot segments resolved), without
 * query and fragment. `undefined` for what is not an absolute http(s) URL.
 */
function comparableUrl(value: unknown): string | undefined {
  if (typeof value !== 'string' && !(value instanceof URL)) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
  if (url.username !== '' || url.password !== '') return undefined;
  return `${url.origin}${url.pathname}`;
}

/**
 * base64url(SHA-256(token)): the `ath` of a proof made for `token` (RFC 9449 §4.2).
 *
 * @example
 * ```ts
 * const ath = accessTokenHash(accessToken); // what a client puts in its proof
 * ```
 */
export function accessTokenHash(token: string): string {
  return hash('sha256', token, 'base64url');
}

/**
 * Creates the DPoP proof verifier of RFC 9449 §4.3: one compact JWS, `typ: dpop+jwt`, an
 * asymmetric `alg` of `algorithms`, a public `jwk` header that verifies the signature, `jti`,
 * `htm` equal to the method, `htu` equal to the request URL (without query and fragment),
 * `iat` within `maxAge` (and not past `clockTolerance` in the future), `ath` equal to the
 * hash of the access token when one comes with it, `nonce` equal to the server's when it
 * requires one, and a `jti` not seen before (remembered for `maxAge`, charged to the proof
 * key's share of the `replay` store). `verify` records the `jti` at once; `check` leaves it to
 * the answer's `remember()`, for the caller to record once the rest of the request holds.
 *
 * @example
 * ```ts
 * const dpop = createDpopVerifier();
 * const proof = await dpop.verify(req.headers.dpop, {
 *   method: req.method ?? 'GET',
 *   url: new URL(req.url ?? '/', 'https://api.example.com'),
 *   accessToken,
 * });
 * if (proof.jkt !== claims.cnf?.jkt) throw new Error('the token is bound to another key');
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9449#section-4.3 | RFC 9449 §4.3}
 */
export function createDpopVerifier(options: DpopVerifierOptions = {}): DpopVerifier {
  assertKnownOptions(OWNER, options, OPTIONS);
  const algorithms = algorithmsOption(options.algorithms);
  const maxAge = durationOption(OWNER, 'maxAge', options.maxAge, 300_000, { min: 1 });
  const tolerance = durationOption(OWNER, 'clockTolerance', options.clockTolerance, 5_000);
  const replay = options.replay ?? new MemoryReplayStore();
  if (typeof replay?.remember !== 'function') {
    throw invalidOption(`${OWNER}: \`replay\` must have a remember(id, ttlMs) method`);
  }
  const now = options.now ?? Date.now;
  if (typeof now !== 'function') throw invalidOption(`${OWNER}: \`now\` must be a function`);
  const { nonces } = options;
  const proofKey = createProofKeys();
  if (nonces !== undefined && typeof nonces?.accepts !== 'function') {
    throw invalidOption(`${OWNER}: \`nonces\` must come from createDpopNonces()`);
  }

  /** The signature, key and header of a proof: its verified payload and header. */
  async function signed(proof: unknown, key: ReturnType<typeof proofKey>) {
    if (typeof proof !== 'string' || proof === '') throw invalid('A DPoP proof is required.');
    if (proof.length > MAX_PROOF_LENGTH || !COMPACT_JWS.test(proof)) {
      throw invalid('The DPoP proof is not a compact JWS.');
    }
    const jose = await loadJose();
    let verified: Awaited<ReturnType<typeof jose.jwtVerify>>;
    try {
      verified = await jose.jwtVerify(proof, key.resolve, {
        typ: 'dpop+jwt',
        algorithms: [...algorithms],
      });
    } catch (error) {
      throw invalid('The signature, key or header of the DPoP proof is not valid.', error);
    }
    // jose accepts `application/dpop+jwt` too; RFC 9449 §4.2 says `dpop+jwt`
    if (verified.protectedHeader.typ !== 'dpop+jwt')
      throw invalid('The typ of the DPoP proof must be dpop+jwt.');
    return verified;
  }

  /** The claims of a signed proof against the request (§4.3 steps 9–12): its `jti`, `iat` in ms. */
  function claimsHold(payload: Record<string, unknown>, request: DpopRequest) {
    const { jti, htm, htu, iat } = payload;
    if (typeof jti !== 'string' || jti === '' || jti.length > MAX_JTI_LENGTH) {
      throw invalid('The DPoP proof has no valid jti.');
    }
    if (typeof htm !== 'string' || htm !== request.method) {
      throw invalid('The htm of the DPoP proof is not the method of the request.');
    }
    const expected = comparableUrl(request.url);
    if (expected === undefined) throw new TypeError('dpop.verify(): `url` must be an absolute URL');
    if (comparableUrl(htu) !== expected) {
      throw invalid('The htu of the DPoP proof is not the URL of the request.');
    }
    if (typeof iat !== 'number' || !Number.isFinite(iat)) {
      throw invalid('The DPoP proof has no valid iat.');
    }
    const issuedAt = iat * 1000;
    const at = now();
    if (issuedAt > at + tolerance) throw invalid('The DPoP proof is issued in the future.');
    if (issuedAt < at - maxAge) throw invalid('The DPoP proof is too old.');
    if (request.accessToken !== undefined) {
      if (payload.ath !== accessTokenHash(request.accessToken)) {
        throw invalid('The ath of the DPoP proof is not the hash of the access token.');
      }
    }
    nonceHolds(payload.nonce, request);
    return { jti, issuedAt };
  }

  function nonceHolds(nonce: unknown, request: DpopRequest): void {
    if (request.nonce !== undefined && nonce !== request.nonce) {
      throw new DpopProofError(
        'use_dpop_nonce',
        'The DPoP proof must carry the nonce of the server.',
        { nonce: request.nonce },
      );
    }
    if (nonces !== undefined && !nonces.accepts(nonce)) {
      throw new DpopProofError(
        'use_dpop_nonce',
        'The DPoP proof must carry the current nonce of the server (DPoP-Nonce).',
        { nonce: nonces.current() },
      );
    }
  }

  /**
   * The proof is single-use: its key and jti, for as long as it could be accepted, charged to
   * its key's share (a store that cannot record throws, refused either way).
   */
  async function record(jkt: string, jti: string): Promise<void> {
    const fresh = await replay.remember(`${jkt}:${jti}`, maxAge + tolerance, jkt);
    if (!fresh) throw invalid('The DPoP proof was used already.');
  }

  async function checked(proof: unknown, request: DpopRequest): Promise<DpopProof> {
    const key = proofKey();
    const { payload, protectedHeader } = await signed(proof, key);
    const { jti, issuedAt } = claimsHold(payload as Record<string, unknown>, request);
    const jwk = protectedHeader.jwk as Record<string, unknown>;
    const jkt = key.thumbprint() as string;
    const { alg } = protectedHeader as { alg: string };
    return { jkt, jwk: Object.freeze({ ...jwk }), jti, alg, issuedAt };
  }

  async function check(proof: unknown, request: DpopRequest): Promise<CheckedDpopProof> {
    const held = await checked(proof, request);
    let recorded: Promise<void> | undefined;
    const remember = () => {
      recorded ??= record(held.jkt, held.jti);
      return recorded;
    };
    return Object.freeze({ ...held, remember });
  }

  async function verify(proof: unknown, request: DpopRequest): Promise<DpopProof> {
    const held = await checked(proof, request);
    await record(held.jkt, held.jti);
    return Object.freeze(held);
  }

  return { algorithms, verify, check };
}
