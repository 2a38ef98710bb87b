import { hash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { type CredentialGuard, guardOption } from '../../auth/credential-guard.js';
import { verifyPassword } from '../../auth/password.js';
import { MemoryReplayStore, type ReplayStore } from '../../auth/replay/store.js';
import { requestPath } from '../../core/problem.js';
import { countFieldLines } from '../../internal/headers.js';
import { MapEvictor } from '../../internal/map-evictor.js';
import { assertKnownOptions, booleanOption, invalidOption } from '../../internal/options.js';
import { asOAuthError, CLIENT_CHALLENGE, OAuthError } from '../protocol/errors.js';
import type { PendingIds } from '../store/one-time-ids.js';
import {
  type AssertionTarget,
  assertionClientId,
  CLIENT_ASSERTION_TYPE,
  createClientAssertionCheck,
  type HeldAssertion,
  usesClientKeys,
} from './assertion.js';
import type { OAuthClient } from './client.js';
import { guardedKeysFetch } from './guarded-fetch.js';
import type { ClientStore } from './store.js';

/** `application/x-www-form-urlencoded` decoding of one Basic credential part (RFC 6749 §2.3.1). */
function formDecode(part: string): string {
  try {
    return decodeURIComponent(part.replace(/\+/g, ' '));
  } catch {
    throw new OAuthError('invalid_request', 'The client credentials are not properly encoded.');
  }
}

/** `client_id` and `client_secret` from `Authorization: Basic`, or undefined without it. */
function basicCredentials(req: IncomingMessage): { id: string; secret: string } | undefined {
  const header = req.headers.authorization;
  if (header === undefined) return undefined;
  // node keeps only the first Authorization line: refuse a second rather than ignore it
  if (countFieldLines(req.rawHeaders, 'authorization') > 1)
    throw new OAuthError('invalid_request', 'Send one Authorization header.');
  const match = /^Basic[ ]+([A-Za-z0-9+/]+={0,2})[ ]*$/i.exec(header);
  if (!match) {
    if (/^Basic\b/i.test(header))
      throw new OAuthError('invalid_request', 'The Basic credentials are malformed.');
    return undefined;
  }
  let decoded: string;
  try {
    decoded = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(match[1]!, 'base64'));
  } catch {
    throw new OAuthError('invalid_request', 'The Basic credentials are not UTF-8.');
  }
  const colon = decoded.indexOf(':');
  if (colon === -1) throw new OAuthError('invalid_request', 'The Basic credentials are malformed.');
  return { id: formDecode(decoded.slice(0, colon)), secret: formDecode(decoded.slice(colon + 1)) };
}

const BASIC_CHALLENGE = { 'WWW-Authenticate': CLIENT_CHALLENGE };

/** The client's credentials as presented: its id, its secret or assertion, and whether Basic was used. */
interface Presented {
  clientId: string;
  secret: string | undefined;
  /** A JWT client assertion (`private_key_jwt`). */
  assertion: string | undefined;
  basic: boolean;
}

/** The `client_assertion` of a request, if it uses one (RFC 7521 §4.2). */
function presentedAssertion(params: Map<string, string>): string | undefined {
  const type = params.get('client_assertion_type');
  const assertion = params.get('client_assertion');
  if (type === undefined && assertion === undefined) return undefined;
  if (type !== CLIENT_ASSERTION_TYPE) {
    throw new OAuthError(
      'invalid_request',
      `client_assertion_type must be ${CLIENT_ASSERTION_TYPE} with a client_assertion.`,
    );
  }
  if (assertion === undefined || assertion === '') {
    throw new OAuthError('invalid_request', 'client_assertion is required with its type.');
  }
  return assertion;
}

async function presentedCredentials(
  req: IncomingMessage,
  params: Map<string, string>,
): Promise<Presented> {
  const basic = basicCredentials(req);
  const postedSecret = params.get('client_secret');
  const postedId = params.get('client_id');
  const assertion = presentedAssertion(params);
  const methods = [basic, postedSecret, assertion].filter((m) => m !== undefined).length;
  if (methods > 1) {
    throw new OAuthError('invalid_request', 'Use one client authentication method, not two.');
  }
  if (basic !== undefined && postedId !== undefined && postedId !== basic.id) {
    throw new OAuthError('invalid_request', 'client_id does not match the Basic credentials.');
  }
  if (assertion !== undefined) {
    const clientId = await assertionClientId(assertion);
    // client_id may come along, and then names the same client (RFC 7521 §4.2)
    if (postedId !== undefined && postedId !== clientId) {
      throw new OAuthError('invalid_client', 'Client authentication failed.');
    }
    return { clientId, secret: undefined, assertion, basic: false };
  }
  const clientId = basic?.id ?? postedId;
  if (clientId === undefined || clientId === '') {
    throw new OAuthError('invalid_client', 'Client authentication is required.', {
      headers: BASIC_CHALLENGE,
    });
  }
  return {
    clientId,
    secret: basic?.secret ?? postedSecret,
    assertion: undefined,
    basic: basic !== undefined,
  };
}

/** Runs a step of the guard, its 429 (or 503) answered as OAuth clients expect. */
async function guarded(step: () => void | Promise<void> | undefined): Promise<void> {
  try {
    await step(); // the guard's check may throw synchronously (a synchronous store)
  } catch (error) {
    throw asOAuthError(error) ?? error;
  }
}

/** Verifies secrets with scrypt, remembering the digests of those that verified. */
function createSecretCheck(): (client: OAuthClient, secret: string) => Promise<boolean> {
  /** clientId + secret hash → SHA-256 of the secret that verified against it. */
  const verified = new Map<string, Buffer>();
  const evictor = new MapEvictor(verified);
  const MAX_VERIFIED = 10_000;

  /** scrypt checks in flight, by client, hash and presented digest: concurrent equal checks share one. */
  const pending = new Map<string, Promise<boolean>>();

  return async function secretMatches(client, secret) {
    const cacheKey = `${client.clientId}\u0000${client.secretHash}`;
    const digest = hash('sha256', secret, 'buffer');
    const known = verified.get(cacheKey);
    if (known !== undefined && timingSafeEqual(known, digest)) return true;
    const pendingKey = `${cacheKey}\u0000${digest.toString('base64url')}`;
    let check = pending.get(pendingKey);
    if (check === undefined) {
      check = verifyPassword(secret, client.secretHash).finally(() => pending.delete(pendingKey));
      pending.set(pendingKey, check);
    }
    if (!(await check)) return false;
    if (verified.size >= MAX_VERIFIED) evictor.dropOldest();
    verified.set(cacheKey, digest);
    return true;
  };
}

/** Options of {@link createClientAuthenticator}. */
export interface ClientAuthenticatorOptions {
  /**
   * Counts failed client authentication per client IP, and refuses (429) a spent address
   * before anything is verified.
   * @defaultValue none
   */
  guard?: CredentialGuard;
  /**
   * The issuer identifier: the `aud` a client assertion (`private_key_jwt`) may carry, besides
   * the URL of the endpoint it is sent to (the issuer's origin and the request's path).
   * Required for clients with keys.
   * @defaultValue none: client assertions are refused
   */
  issuer?: string;
  /**
   * Where the `jti` of accepted client assertions are remembered, so that each is accepted
   * once, each charged to its client (the store's partition); share one (`RedisReplayStore`)
   * between the processes of one server, apart from the DPoP proofs' store.
   * @defaultValue a new `MemoryReplayStore`
   * @example
   * ```ts
   * const replay = new RedisReplayStore({ client, prefix: 'app:assertion:' });
   * ```
   */
  replay?: ReplayStore;
  /**
   * Which clients are held to the FAPI 2.0 Security Profile: they authenticate with
   * `private_key_jwt` only, signed with PS256, ES256 or EdDSA, `aud` the issuer alone as a
   * string (the profile's authorization server and cryptography requirements).
   * @defaultValue none
   */
  fapi2?: (client: OAuthClient) => boolean;
  /**
   * Whether the keys (`jwks_uri`) of clients that described themselves (registered, or by a
   * metadata document) may be on loopback or private addresses: whoever registers a client
   * chooses that URL, so it is fetched through the webhooks' address guard.
   * @defaultValue `false`
   */
  allowPrivateClientKeys?: boolean;
}

const AUTHENTICATOR_OPTIONS = [
  'guard',
  'issuer',
  'replay',
  'fapi2',
  'allowPrivateClientKeys',
] as const satisfies readonly (keyof ClientAuthenticatorOptions)[];

/**
 * Authenticates the client of a token, PAR, revocation, introspection or device
 * authorization request: `client_secret_basic` (form-decoded id and secret, RFC 6749
 * §2.3.1), `client_secret_post`, `private_key_jwt` (RFC 7523 §2.2, OpenID Connect Core §9)
 * for a client with keys, or `none` for a public client. Each client has one method: a
 * secret for a client with keys, an assertion for a client with a secret, or either for a
 * public client is refused. Two methods at once, or two `Authorization` lines, is
 * `invalid_request`; an unknown client, a wrong or missing secret, an assertion that does not
 * hold or was used already is `invalid_client` (401, with a Basic challenge when HTTP
 * authentication was tried). Secrets are verified with scrypt once; a cache of SHA-256
 * digests of secrets that verified keeps repeated requests cheap.
 *
 * A client assertion is a JWT signed (ES256, EdDSA, PS256 or RS256) by one of the client's
 * keys, with `iss` = `sub` = the client id, `aud` the issuer (or the endpoint's URL), an
 * `exp` at most 5 minutes ahead and a `jti` accepted once.
 *
 * With a `guard`, every failed client authentication is counted against the client's IP, and
 * the guard is asked before anything is verified: once the address has spent its refusals,
 * every attempt from it, a right secret included, is answered 429 `temporarily_unavailable`
 * with `Retry-After` (and `Cache-Control: no-store`) until the window passes, without any
 * scrypt run. Every endpoint that authenticates clients goes through here, so none can
 * forget the guard.
 *
 * @example
 * ```ts
 * const authenticate = createClientAuthenticator(clients, {
 *   guard: createCredentialGuard(),
 *   issuer: 'https://auth.example.com',
 * });
 * const client = await authenticate(req, params);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-2.3.1 | RFC 6749 §2.3.1}
 * @see {@link https://www.rfc-editor.org/rfc/rfc7523#section-2.2 | RFC 7523 §2.2}
 */
export function createClientAuthenticator(
  clients: ClientStore,
  options: ClientAuthenticatorOptions = {},
) {
  const owner = 'createClientAuthenticator()';
  assertKnownOptions(owner, options, AUTHENTICATOR_OPTIONS);
  const { guard, issuer } = options;
  const fapi2 = options.fapi2 ?? (() => false);
  guardOption(owner, guard);
  const replay = options.replay ?? new MemoryReplayStore();
  if (typeof replay?.remember !== 'function') {
    throw invalidOption(`${owner}: \`replay\` must have a remember(id, ttlMs) method`);
  }
  const issuerOrigin = issuer === undefined ? undefined : new URL(issuer).origin;
  const assertionHolds =
    issuer === undefined
      ? undefined
      : createClientAssertionCheck({
          issuer,
          clockTolerance: 5_000,
          selfDescribedKeys: guardedKeysFetch({
            allowPrivate: booleanOption(
              owner,
              'allowPrivateClientKeys',
              options.allowPrivateClientKeys,
              false,
            ),
          }),
        });
  const secretMatches = createSecretCheck();

  /** Records an assertion's `jti`, charged to its client: `false` for a replay. */
  const fresh = async (client: OAuthClient, held: HeldAssertion) =>
    replay.remember(held.id, held.ttlMs, client.clientId);

  /**
   * Whether the client's assertion holds; its `jti` recorded now, or, with `pending` and a
   * store that can tell a known id (`seen`), refused if known and else added to `pending`
   * (whose commit refuses one replayed meanwhile with `invalid_client`) to record later.
   */
  async function keyAuthenticates(
    req: IncomingMessage,
    client: OAuthClient,
    assertion: string | undefined,
    pending: PendingIds | undefined,
  ): Promise<boolean> {
    if (assertion === undefined || assertionHolds === undefined) return false;
    const target: AssertionTarget = {
      endpoint: `${issuerOrigin}${requestPath(req)}`,
      fapi2: fapi2(client),
    };
    const held = await assertionHolds(client, assertion, target);
    if (held === undefined) return false;
    if (pending === undefined || replay.seen === undefined) return fresh(client, held);
    if (await replay.seen(held.id)) return false;
    pending.add(async () => {
      if (!(await fresh(client, held))) throw refusedClient(false);
    });
    return true;
  }

  /** The client, or `undefined` when the credentials are refused. */
  async function verify(
    req: IncomingMessage,
    { clientId, secret, assertion }: Presented,
    pending: PendingIds | undefined,
  ): Promise<OAuthClient | undefined> {
    const client = await clients.get(clientId);
    if (client === undefined) {
      if (secret !== undefined) await verifyPassword(secret, undefined); // same time as a real client
      return undefined;
    }
    if (usesClientKeys(client)) {
      return (await keyAuthenticates(req, client, assertion, pending)) ? client : undefined;
    }
    // a client held to FAPI 2.0 authenticates with its keys, never a secret nor nothing
    if (assertion !== undefined || fapi2(client)) return undefined;
    // a public client: no secret may be presented
    if (client.secretHash === undefined) return secret === undefined ? client : undefined;
    if (secret === undefined || !(await secretMatches(client, secret))) return undefined;
    return client;
  }

  /**
   * The authenticated client, or `invalid_client`. With `pending`, a client assertion's `jti`
   * is not recorded here but added to it, for the caller to commit once the request holds.
   */
  return async function authenticateClient(
    req: IncomingMessage,
    params: Map<string, string>,
    pending?: PendingIds,
  ): Promise<OAuthClient> {
    const presented = await presentedCredentials(req, params);
    await guarded(() => guard?.check(req));
    const client = await verify(req, presented, pending);
    if (client !== undefined) return client;
    await guarded(() => guard?.refused(req));
    throw refusedClient(presented.basic);
  };
}

/** A failed client authentication (RFC 6749 §5.2), with a Basic challenge when Basic was tried. */
function refusedClient(basic: boolean): OAuthError {
  return new OAuthError('invalid_client', 'Client authentication failed.', {
    headers: basic ? BASIC_CHALLENGE : {},
  });
}

/** The function `createClientAuthenticator` returns. */
export type ClientAuthenticator = ReturnType<typeof createClientAuthenticator>;
