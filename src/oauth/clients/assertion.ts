// private_key_jwt (RFC 7523 §2.2, OpenID Connect Core §9): a client proves who it is with a
// JWT signed by one of its keys, given inline (`jwks`) or published at its `jwksUri`.
import type { JWTVerifyGetKey } from 'jose';
import { type KeySource, remoteSource } from '../../auth/jwt/jwks-remote.js';
import { loadJose } from '../../internal/lazy.js';
import { MapEvictor } from '../../internal/map-evictor.js';
import { OAuthError } from '../protocol/errors.js';
import type { OAuthClient } from './client.js';
import { guardedKeysFetch, type KeysFetch } from './guarded-fetch.js';

/**
 * The `client_assertion_type` of a JWT client assertion (RFC 7523 §2.2).
 *
 * @example
 * ```ts
 * body.set('client_assertion_type', CLIENT_ASSERTION_TYPE);
 * ```
 */
export const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/**
 * The algorithms a client assertion may be signed with: asymmetric only (`private_key_jwt`),
 * as `token_endpoint_auth_signing_alg_values_supported` announces them.
 */
export const CLIENT_ASSERTION_ALGORITHMS: readonly string[] = Object.freeze([
  'ES256',
  'EdDSA',
  // the fully specified name of EdDSA over Ed25519 (RFC 9864), as oauth4webapi signs
  'Ed25519',
  'PS256',
  'RS256',
]);

/** Longest assertion read: a JWS of a few claims is far shorter. */
const MAX_ASSERTION_LENGTH = 8192;
/** How far ahead an assertion's `exp` may be: it is a one-time proof, not a credential. */
const MAX_LIFETIME_MS = 300_000;
const MAX_JTI_LENGTH = 256;
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
/** `typ` values of a client assertion: none, `JWT`, or the explicit type of the current drafts. */
const ASSERTION_TYPES = new Set([undefined, 'jwt', 'client-authentication+jwt']);

/** Whether the client authenticates with `private_key_jwt` (it has keys). */
export function usesClientKeys(client: OAuthClient): boolean {
  return client.jwks !== undefined || client.jwksUri !== undefined;
}

/** A malformed assertion: `invalid_client`, as any failed client authentication. */
const malformed = () => new OAuthError('invalid_client', 'Client authentication failed.');

/**
 * The client an assertion names, read before anything is verified (its `iss`, equal to its
 * `sub`): the client whose keys will verify it. A malformed one is `invalid_client`.
 */
export async function assertionClientId(assertion: string): Promise<string> {
  if (assertion.length > MAX_ASSERTION_LENGTH || !COMPACT_JWS.test(assertion)) throw malformed();
  const { decodeJwt } = await loadJose();
  let claims: ReturnType<typeof decodeJwt>;
  try {
    claims = decodeJwt(assertion);
  } catch {
    throw malformed();
  }
  const { iss, sub } = claims;
  if (typeof iss !== 'string' || iss === '' || iss !== sub) throw malformed();
  return iss;
}

/** What {@link createClientAssertionCheck} needs. */
export interface ClientAssertionCheckOptions {
  /** The issuer identifier: the `aud` every client may use. */
  issuer: string;
  /** Leeway for `exp`, `nbf` and `iat`, in milliseconds. */
  clockTolerance: number;
  /**
   * Fetches the `jwksUri` of a client that described itself (`provenance` `'registered'` or
   * `'metadata-document'`): whoever registers a client chooses that URL, so it goes through
   * the address guard. Configured clients' keys are fetched with the global `fetch`.
   * @defaultValue {@link guardedKeysFetch}`()`: no loopback or private address
   */
  selfDescribedKeys?: KeysFetch;
}

/** What an assertion is checked against: where it was sent, and under which profile. */
export interface AssertionTarget {
  /** The URL of the endpoint that received it (the issuer's origin and the request path). */
  endpoint: string;
  /**
   * The client is held to FAPI 2.0: `aud` is the issuer identifier alone, as a string
   * (its authorization server requirements), and the algorithm PS256, ES256 or EdDSA (its
   * cryptography requirements).
   */
  fapi2: boolean;
}

/** The assertion algorithms of FAPI 2.0 (cryptography): no RSASSA-PKCS1-v1_5. */
const FAPI2_ALGORITHMS = CLIENT_ASSERTION_ALGORITHMS.filter((alg) => alg !== 'RS256');

/** Whether `aud` names this server: the issuer, or the endpoint the assertion was sent to. */
function audienceHolds(aud: unknown, issuer: string, target: AssertionTarget): boolean {
  if (target.fapi2) return aud === issuer;
  const accepted = (value: unknown) => value === issuer || value === target.endpoint;
  if (typeof aud === 'string') return accepted(aud);
  return Array.isArray(aud) && aud.length > 0 && aud.some(accepted);
}

/** An assertion that holds, its `jti` not recorded yet: the id to record, and for how long. */
export interface HeldAssertion {
  /** The id its replay store records (the client id and the `jti`). */
  readonly id: string;
  /** How long it must be remembered: until the assertion could no longer be accepted, ms. */
  readonly ttlMs: number;
}

/**
 * Checks client assertions (RFC 7523 §3): signed with an asymmetric algorithm by a key of the
 * client (inline `jwks`, or its `jwksUri` fetched and kept as remote JWKS are), `iss` = `sub` =
 * the client id, `aud` the issuer or the endpoint's URL, `exp` present and at most 5 minutes
 * ahead, a `jti` present. Resolves `undefined` for any assertion that does not hold, else the
 * {@link HeldAssertion} whose id the caller records (`remember`, charged to the client) once
 * the rest of the request holds: the check itself writes nothing.
 */
export function createClientAssertionCheck(options: ClientAssertionCheckOptions) {
  const { issuer, clockTolerance } = options;
  const selfDescribedKeys = options.selfDescribedKeys ?? guardedKeysFetch();
  const inline = new WeakMap<OAuthClient, JWTVerifyGetKey>();
  const remote = new Map<string, KeySource>();
  const evictor = new MapEvictor(remote);

  async function keysOf(client: OAuthClient): Promise<KeySource['key']> {
    if (client.jwksUri !== undefined) {
      // whoever registered a client chose its URL: never fetched without the address guard
      const selfDescribed = (client.provenance ?? 'configured') !== 'configured';
      const key = `${selfDescribed ? 'guarded' : 'configured'} ${client.jwksUri}`;
      let source = remote.get(key);
      if (source === undefined) {
        if (remote.size >= 1_000) evictor.dropOldest();
        source = selfDescribed
          ? remoteSource('client jwksUri', client.jwksUri, {}, selfDescribedKeys)
          : remoteSource('client jwksUri', client.jwksUri);
        remote.set(key, source);
      }
      return source.key;
    }
    let local = inline.get(client);
    if (local === undefined) {
      const { createLocalJWKSet } = await loadJose();
      local = createLocalJWKSet(client.jwks as Parameters<typeof createLocalJWKSet>[0]);
      inline.set(client, local);
    }
    return local;
  }

  /** The verified payload of `assertion`, or `undefined` when its signature or header fails. */
  async function signedBy(
    client: OAuthClient,
    assertion: string,
    target: AssertionTarget,
  ): Promise<Record<string, unknown> | undefined> {
    const jose = await loadJose();
    try {
      const verified = await jose.jwtVerify(assertion, (await keysOf(client)) as JWTVerifyGetKey, {
        algorithms: target.fapi2 ? FAPI2_ALGORITHMS : [...CLIENT_ASSERTION_ALGORITHMS],
        issuer: client.clientId,
        subject: client.clientId,
        requiredClaims: ['exp', 'jti'],
        clockTolerance: clockTolerance / 1000,
      });
      const typ = verified.protectedHeader.typ?.toLowerCase();
      return ASSERTION_TYPES.has(typ) ? verified.payload : undefined;
    } catch {
      return undefined;
    }
  }

  return async function assertionHolds(
    client: OAuthClient,
    assertion: string,
    target: AssertionTarget,
  ): Promise<HeldAssertion | undefined> {
    const payload = await signedBy(client, assertion, target);
    if (payload === undefined) return undefined;
    const { aud, exp, jti } = payload;
    if (!audienceHolds(aud, issuer, target)) return undefined;
    const now = Date.now();
    const expiresAt = (exp as number) * 1000;
    if (expiresAt > now + MAX_LIFETIME_MS + clockTolerance) return undefined;
    if (typeof jti !== 'string' || jti === '' || jti.length > MAX_JTI_LENGTH) return undefined;
    // single-use: remembered for as long as the assertion could be accepted
    return {
      id: `client-assertion:${client.clientId}:${jti}`,
      ttlMs: expiresAt - now + clockTolerance,
    };
  };
}

/** The function {@link createClientAssertionCheck} returns. */
export type ClientAssertionCheck = ReturnType<typeof createClientAssertionCheck>;
