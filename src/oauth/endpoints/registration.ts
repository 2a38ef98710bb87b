import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { announceRevocation } from '../../auth/revocations.js';
import { HttpError, serviceUnavailable, tooManyRequests } from '../../core/errors/errors.js';
import { send } from '../../core/send.js';
import { readJson } from '../../http/body/body.js';
import { getParams, type MethodTable } from '../../http/routing/router.js';
import { invalidOption } from '../../internal/options.js';
import { defaultRateLimitKey } from '../../rate-limit/key.js';
import { MemoryRateLimitStore } from '../../rate-limit/memory-store.js';
import { type ClientDefinition, defineClient, type OAuthClient } from '../clients/client.js';
import {
  type ClientMetadata,
  checkClientMetadata,
  type RegistrationOptions,
  type RegistrationPolicy,
  resolveRegistrationPolicy,
} from '../clients/registration-policy.js';
import type { WritableClientStore } from '../clients/store.js';
import type { OAuthContext } from '../context.js';
import { NO_STORE, OAuthError } from '../protocol/errors.js';
import { oauthEndpoint } from '../shared/endpoint.js';
import { hashToken, newOpaqueToken } from '../tokens/issue.js';
import { revocationTtlMs } from '../tokens/revoke-grant.js';
import { clientCredentialId, revokedClientKey } from '../tokens/verify.js';

/**
 * Options of {@link createRegistrationEndpoints}: the policy, and where the endpoints are.
 *
 * @example
 * ```ts
 * const options: RegistrationEndpointOptions = {
 *   policy: { limit: 10 },
 *   registrationUri: 'https://auth.example.com/register',
 *   scopes: ['openid', 'read:messages'],
 * };
 * ```
 */
export interface RegistrationEndpointOptions {
  /** The deployment's policy. @defaultValue open, with the defaults of {@link RegistrationOptions} */
  policy?: RegistrationOptions;
  /** The absolute URL of the registration endpoint; each client's is it, `/`, its id. */
  registrationUri: string;
  /** The server's scopes, the default of `policy.scopes`. */
  scopes: readonly string[];
}

/** The routes of {@link createRegistrationEndpoints}. */
export interface RegistrationEndpoints {
  /** `POST` (RFC 7591 §3): mount at the registration path. */
  readonly register: MethodTable;
  /** `GET`, `PUT`, `DELETE` (RFC 7592 §2): mount at the registration path + `/:client_id`. */
  readonly manage: MethodTable;
}

const JSON_HEADERS = { ...NO_STORE, 'Content-Type': 'application/json' } as const;
const SECRET_METHODS = ['client_secret_basic', 'client_secret_post'];

/** Whether `store` can take clients while the server runs. */
function isWritable(store: unknown): store is WritableClientStore {
  const writable = store as Partial<WritableClientStore> | null;
  return (
    typeof writable?.add === 'function' &&
    typeof writable.replace === 'function' &&
    typeof writable.remove === 'function'
  );
}

/** The token of `Authorization: Bearer <token>`, or `undefined`. */
function bearerToken(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const match = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header);
  return match?.[1];
}

/** The 401 of a missing or wrong token (RFC 6750 §3.1: no `error` when none was sent). */
function tokenRefused(sent: boolean, what: string): OAuthError {
  return new OAuthError('invalid_token', `The ${what} is missing or wrong.`, {
    headers: {
      'WWW-Authenticate': sent
        ? 'Bearer realm="register", error="invalid_token"'
        : 'Bearer realm="register"',
    },
  });
}

/** The client metadata of a request body: JSON, at most 16 KiB, or `invalid_client_metadata`. */
async function readMetadata(req: IncomingMessage): Promise<unknown> {
  try {
    return await readJson(req, { limit: 16_384 });
  } catch (error) {
    if (error instanceof HttpError && error.status >= 500) throw error;
    throw new OAuthError(
      'invalid_client_metadata',
      'The body must be a JSON object of client metadata (application/json, at most 16 KiB).',
      { cause: error },
    );
  }
}

/**
 * Dynamic client registration (RFC 7591) and its management (RFC 7592), for the routes of
 * `createAuthorizationServer()` with `features: { registration: true }`:
 *
 * - `POST` at the registration path: throttled per client IP (`policy.limit` per
 *   `policy.windowMs`, then 429 with `Retry-After`); the initial access token when the policy
 *   asks for one (a wrong one counts as a refused credential of `ctx.guard`); the JSON
 *   metadata checked against the policy and `review`ed; the client created with a random,
 *   unguessable `client_id`, `provenance: 'registered'`, in `ctx.clients` (which must be a
 *   {@link WritableClientStore}; full → 503 `temporarily_unavailable`). 201 with every
 *   accepted field, `client_id_issued_at`, `client_secret` with `client_secret_expires_at: 0`
 *   for a secret method, `registration_access_token` and `registration_client_uri`. Only the
 *   hashes of the secret (scrypt) and of the registration access token (SHA-256) are kept.
 * - `GET`, `PUT`, `DELETE` at `registration_client_uri`, with `Authorization: Bearer <the
 *   registration access token>` (wrong or missing: 401 with a `Bearer` challenge, counted by
 *   the guard): `GET` answers the current metadata (never the secret); `PUT` replaces it
 *   (RFC 7592 §2.2: the body names the same `client_id`); `DELETE` removes the client and
 *   ends everything it holds: its access tokens read as revoked (a per-client mark the
 *   server's own verifier checks), its refresh tokens and codes fail with the client, and the
 *   streams opened with its tokens end (`client:<id>` announced on `ctx.revocations`).
 *
 * Registered clients never expire on their own: a client is removed by its `DELETE` or by
 * the deployment (`store.remove`), never forgotten to make room, so a store filled by many
 * registrations refuses new ones (503) while every client keeps working.
 *
 * @example
 * ```ts
 * const { register, manage } = createRegistrationEndpoints(ctx, {
 *   registrationUri: 'https://auth.example.com/register',
 *   scopes: ['openid', 'read:messages'],
 * });
 * createRouter({ '/register': register, '/register/:client_id': manage });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc7591 | RFC 7591}, {@link https://www.rfc-editor.org/rfc/rfc7592 | RFC 7592}
 */
export function createRegistrationEndpoints(
  ctx: OAuthContext,
  options: RegistrationEndpointOptions,
): RegistrationEndpoints {
  const owner = 'createAuthorizationServer()';
  const { clients } = ctx;
  if (!isWritable(clients)) {
    throw invalidOption(
      `${owner}: \`features.registration\` needs a writable client store in \`clients\`: clientStores(configured, new MemoryClientStore()) or a RedisClientStore`,
    );
  }
  const policy = resolveRegistrationPolicy(owner, options.policy, options.scopes);
  const base = options.registrationUri.replace(/\/$/, '');
  const counted = createCounter(policy);
  const clientUri = (clientId: string) => `${base}/${encodeURIComponent(clientId)}`;

  async function checkInitialAccessToken(req: IncomingMessage): Promise<void> {
    const check = policy.initialAccessToken;
    if (check === undefined) return;
    await ctx.guard?.check(req);
    const token = bearerToken(req);
    if (token !== undefined && (await check(token, req)) === true) return;
    await ctx.guard?.refused(req);
    throw tokenRefused(token !== undefined, 'initial access token');
  }

  /** The metadata the policy and its review accept. */
  async function accepted(req: IncomingMessage, body: unknown): Promise<ClientMetadata> {
    const checked = checkClientMetadata(policy, body);
    if (policy.review === undefined) return checked;
    const reviewed = await policy.review(structuredClone(checked), req);
    if (reviewed === false) {
      throw new OAuthError('invalid_client_metadata', 'The server refuses this registration.');
    }
    return checkClientMetadata(policy, reviewed);
  }

  /** The client of `metadata`: its secret (or `secretHash` kept) and its registration. */
  async function clientOf(
    clientId: string,
    metadata: ClientMetadata,
    registration: OAuthClient['registration'] & object,
    secret: { clear?: string; hash?: string },
  ): Promise<OAuthClient> {
    const definition: ClientDefinition = {
      clientId,
      grantTypes: metadata.grant_types ?? [],
      redirectUris: metadata.redirect_uris ?? [],
      scopes: (metadata.scope ?? '').split(' ').filter((s) => s !== ''),
      provenance: 'registered',
      registration,
      ...(metadata.client_name !== undefined && { name: metadata.client_name }),
      ...(metadata.jwks !== undefined && { jwks: metadata.jwks }),
      ...(metadata.jwks_uri !== undefined && { jwksUri: metadata.jwks_uri }),
      ...(secret.clear !== undefined && { secret: secret.clear }),
    };
    const client = await defineClient(definition);
    return secret.hash === undefined
      ? client
      : Object.freeze({ ...client, secretHash: secret.hash });
  }

  /** What a registration answers: the metadata, the client's id and where to manage it. */
  function answer(client: OAuthClient, extra: Record<string, unknown> = {}) {
    const registration = client.registration!;
    return {
      client_id: client.clientId,
      client_id_issued_at: registration.issuedAt,
      ...registration.metadata,
      ...extra,
      registration_client_uri: clientUri(client.clientId),
    };
  }

  const register = oauthEndpoint(async (req, res) => {
    await counted(req);
    await checkInitialAccessToken(req);
    const metadata = await accepted(req, await readMetadata(req));
    const clientId = randomBytes(18).toString('base64url');
    const accessToken = newOpaqueToken();
    const secret = SECRET_METHODS.includes(metadata.token_endpoint_auth_method ?? '')
      ? newOpaqueToken()
      : undefined;
    const registration = Object.freeze({
      metadata: Object.freeze(structuredClone(metadata) as Record<string, unknown>),
      accessTokenHash: hashToken(accessToken),
      issuedAt: Math.floor(Date.now() / 1000),
    });
    const client = await clientOf(clientId, metadata, registration, { clear: secret });
    await clients.add(client);
    const body = answer(client, {
      ...(secret !== undefined && { client_secret: secret, client_secret_expires_at: 0 }),
      registration_access_token: accessToken,
    });
    send(res, 201, JSON.stringify(body), { ...JSON_HEADERS, Location: clientUri(clientId) });
  });

  /** The registered client the request's registration access token is for, or a 401. */
  async function authorized(req: IncomingMessage): Promise<OAuthClient> {
    await ctx.guard?.check(req);
    const token = bearerToken(req);
    const { client_id: clientId } = getParams(req);
    const client = clientId === undefined ? undefined : await clients.get(clientId);
    const expected = client?.registration?.accessTokenHash;
    const given = hashToken(token ?? '');
    const matches =
      token !== undefined &&
      expected !== undefined &&
      expected.length === given.length &&
      timingSafeEqual(Buffer.from(expected), Buffer.from(given));
    if (matches) return client!;
    await ctx.guard?.refused(req);
    throw tokenRefused(token !== undefined, 'registration access token');
  }

  const read = oauthEndpoint(async (req, res) => {
    const client = await authorized(req);
    send(res, 200, JSON.stringify(answer(client)), JSON_HEADERS);
  });

  const replace = oauthEndpoint(async (req, res) => {
    const client = await authorized(req);
    const body = await readMetadata(req);
    if ((body as { client_id?: unknown } | null)?.client_id !== client.clientId) {
      throw new OAuthError(
        'invalid_client_metadata',
        'The body must name the client_id of the client it replaces (RFC 7592 §2.2).',
      );
    }
    const metadata = await accepted(req, body);
    const secretMethod = SECRET_METHODS.includes(metadata.token_endpoint_auth_method ?? '');
    // a secret method keeps the secret it had; a client that had none gets one now
    const secret = secretMethod && client.secretHash === undefined ? newOpaqueToken() : undefined;
    const before = client.registration!;
    const registration = Object.freeze({
      ...before,
      metadata: Object.freeze(structuredClone(metadata) as Record<string, unknown>),
    });
    const next = await clientOf(client.clientId, metadata, registration, {
      clear: secret,
      hash: secretMethod && secret === undefined ? client.secretHash : undefined,
    });
    if (!(await clients.replace(next))) throw tokenRefused(true, 'registration access token');
    send(
      res,
      200,
      JSON.stringify(
        answer(
          next,
          secret === undefined ? {} : { client_secret: secret, client_secret_expires_at: 0 },
        ),
      ),
      JSON_HEADERS,
    );
  });

  const remove = oauthEndpoint(async (req, res) => {
    const client = await authorized(req);
    // the mark first: from now on the client's access tokens read as revoked everywhere
    await ctx.store.revokeGrant(revokedClientKey(client.clientId), revocationTtlMs(ctx));
    await clients.remove(client.clientId);
    await announceRevocation(ctx.revocations, [clientCredentialId(client.clientId)]);
    send(res, 204, undefined, NO_STORE);
  });

  return Object.freeze({
    register: { POST: register },
    manage: { GET: read, PUT: replace, DELETE: remove },
  });
}

/** Counts each registration request per client IP: past the limit, a 429 with `Retry-After`. */
function createCounter(policy: RegistrationPolicy): (req: IncomingMessage) => Promise<void> {
  const store = policy.store ?? new MemoryRateLimitStore();
  const keyOf = defaultRateLimitKey(policy.trustProxy);
  return async (req) => {
    let hit: Awaited<ReturnType<typeof store.increment>>;
    try {
      hit = await store.increment(`register:${keyOf(req)}`, policy.windowMs);
    } catch (cause) {
      throw serviceUnavailable(5, 'Registrations cannot be counted for now.', { cause });
    }
    if (hit.count > policy.limit) {
      throw tooManyRequests(
        Math.max(1, Math.ceil((hit.resetAt - Date.now()) / 1000)),
        'Too many registrations from this address: try again later.',
        { code: 'ERR_REGISTRATIONS_THROTTLED' },
      );
    }
  };
}
