// OAuth Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document): a client
// whose `client_id` is an https URL is described by the JSON document found there. The
// document is fetched through the webhook sender's address guard (no loopback, private,
// link-local or metadata address unless allowed; DNS answers checked at connect time), with no
// redirect followed, its size and the whole fetch bounded, validated, and cached as its
// Cache-Control says (at most 24 hours, a bounded number of entries).
import type { Dispatcher } from 'undici';
import type { Duration } from '../../core/duration.js';
import { VCHARS } from '../../internal/grammar.js';
import { loadUndici } from '../../internal/lazy.js';
import {
  assertKnownOptions,
  booleanOption,
  countOption,
  durationOption,
  functionOption,
  invalidOption,
} from '../../internal/options.js';
import type { AddressGuardOptions } from '../../webhook/address-guard/guard.js';
import { WebhookAddressError } from '../../webhook/errors.js';
import { OAuthError } from '../protocol/errors.js';
import type { OAuthClient } from './client.js';
import { lazyGuardedAgent } from './guarded-fetch.js';
import { DEFAULT_SCOPES } from './scope.js';
import type { ClientStore } from './store.js';

/**
 * Options of {@link createClientMetadataDocuments} (and of `clientMetadataDocuments` of
 * `createAuthorizationServer()`).
 *
 * @example
 * ```ts
 * const options: ClientMetadataDocumentOptions = { timeout: 3_000, maxEntries: 500 };
 * ```
 */
export interface ClientMetadataDocumentOptions {
  /**
   * Fetch documents from any address, loopback and private ones included. For local
   * development and tests only: it turns the server-side request forgery guard off.
   * @defaultValue `false`
   */
  allowPrivate?: boolean;
  /**
   * How long one whole fetch may take, from the DNS lookup to the last byte of the body, in
   * milliseconds (a server that trickles its answer is cut off).
   * @defaultValue `5_000` (5 seconds)
   */
  timeout?: Duration;
  /**
   * The largest document taken, in bytes: a longer body is refused (and not read further).
   * @defaultValue `5_120` (5 KiB)
   */
  maxBytes?: number;
  /**
   * The most documents (and failures) kept in memory; the oldest is forgotten to make room.
   * @defaultValue `1_000`
   */
  maxEntries?: number;
  /**
   * The longest a document is kept, in milliseconds, whatever its `Cache-Control` says (at
   * most 24 hours). A document without `max-age` is kept 5 minutes (or `maxAge` if shorter);
   * `no-store`, `no-cache` or `max-age=0` make every lookup fetch it again.
   * @defaultValue `86_400_000` (24 hours)
   */
  maxAge?: Duration;
  /**
   * How long a failure (unreachable, invalid, too big, too slow…) is remembered, in
   * milliseconds: lookups of the same URL meanwhile fail at once, without a fetch, so that
   * requests naming it cannot make the server fetch in a loop. `0` remembers none.
   * @defaultValue `10_000` (10 seconds)
   */
  failureMaxAge?: Duration;
  /**
   * The scopes a document client may ask for: a document whose `scope` names another is
   * refused; one without `scope` gets these.
   * @defaultValue the server's `scopesSupported`, else `['openid', 'profile', 'email', 'offline_access']`
   */
  scopes?: readonly string[];
  /**
   * The certificate authorities trusted for the documents' TLS, instead of the system's.
   * @defaultValue the system roots, plus `NODE_EXTRA_CA_CERTS`
   */
  ca?: string | Buffer | readonly (string | Buffer)[];
  /**
   * Resolves a host name to all of its addresses (the address guard's `lookup`): every answer
   * is checked. Inject a stub in tests.
   * @defaultValue `dns.promises.lookup(host, { all: true, verbatim: true })`
   */
  lookup?: AddressGuardOptions['lookup'];
}

/**
 * Why a client metadata document was refused: see {@link ClientMetadataDocumentError}.
 *
 * @example
 * ```ts
 * const reason: ClientMetadataDocumentReason = 'redirect';
 * ```
 */
export type ClientMetadataDocumentReason =
  /** The client id is not an `https` URL with a path, in its normal form. */
  | 'invalid-id'
  /** The address guard refused the host: private, loopback, link-local…, or unresolvable. */
  | 'address'
  /** The connection or TLS failed. */
  | 'unreachable'
  /** The answer was a redirect (`3xx`): never followed. */
  | 'redirect'
  /** The answer's status was not `200`. */
  | 'status'
  /** The body is larger than `maxBytes`. */
  | 'too-large'
  /** The fetch took longer than `timeout`. */
  | 'timeout'
  /** The body is not a JSON object. */
  | 'not-json'
  /** The document is not acceptable (its `client_id`, authentication, grants, scopes…). */
  | 'invalid-document'
  /** Too many documents are being fetched at once (from this host, or at all). */
  | 'busy';

/**
 * A client id that is a URL whose metadata document cannot be used. An `OAuthError`
 * `invalid_client` (so the token endpoint answers it as such); the authorization endpoint shows
 * its message on its error page, never redirecting. The message names the URL and what is
 * wrong, never a resolved address nor the body.
 *
 * @example
 * ```ts
 * try {
 *   await documents.resolve('https://app.example.com/oauth/client.json');
 * } catch (err) {
 *   if (err instanceof ClientMetadataDocumentError) console.log(err.reason, err.message);
 * }
 * ```
 */
export class ClientMetadataDocumentError extends OAuthError {
  /** Why the document was refused. */
  readonly reason: ClientMetadataDocumentReason;

  constructor(reason: ClientMetadataDocumentReason, description: string) {
    super('invalid_client', description);
    this.reason = reason;
  }
}

/**
 * The resolver of client metadata documents: made by {@link createClientMetadataDocuments},
 * used by the authorization server for client ids that are URLs.
 *
 * @example
 * ```ts
 * const documents = createClientMetadataDocuments();
 * if (documents.handles(clientId)) client = await documents.resolve(clientId);
 * ```
 */
export interface ClientMetadataDocuments {
  /**
   * Whether documents (and so the keys, `jwks_uri`, of their clients) may be on loopback or
   * private addresses. @defaultValue `false`
   */
  readonly allowPrivate?: boolean;
  /** Whether `clientId` is a URL (`https:` or `http:`), which this resolver answers for. */
  handles(clientId: string): boolean;
  /**
   * The client the document at `clientId` describes, from the cache or fetched (concurrent
   * lookups of one URL share one fetch).
   * @throws ClientMetadataDocumentError when it cannot be fetched or is not acceptable.
   */
  resolve(clientId: string): Promise<OAuthClient>;
  /** Closes the idle connections. */
  close(): Promise<void>;
}

const OPTIONS = [
  'allowPrivate',
  'timeout',
  'maxBytes',
  'maxEntries',
  'maxAge',
  'failureMaxAge',
  'scopes',
  'ca',
  'lookup',
] as const satisfies readonly (keyof ClientMetadataDocumentOptions)[];

const OWNER = 'createClientMetadataDocuments()';
const DAY = 86_400_000;
/** How long a document without `max-age` is kept. */
const DEFAULT_MAX_AGE = 300_000;
/** The longest client id URL taken (it is kept in codes and tokens). */
const MAX_ID_LENGTH = 1_024;
/** Fetches at once, to one host and in all. */
const MAX_PER_HOST = 2;
const MAX_IN_FLIGHT = 32;
const GRANTS = ['authorization_code', 'refresh_token'];
const NAME_LENGTH = 100;

type Entry = { expires: number; value: OAuthClient | ClientMetadataDocumentError };

const fail = (reason: ClientMetadataDocumentReason, message: string) =>
  new ClientMetadataDocumentError(reason, message);

/** Whether `clientId` is written as a URL (the resolver's to answer, right or wrong). */
const isUrlId = (clientId: string) => /^https?:\/\//i.test(clientId);

/** Refuses a client id the draft does not allow: https, a path, normal form, no fragment. */
function checkId(clientId: string): URL {
  const shown = JSON.stringify(clientId.length > 200 ? `${clientId.slice(0, 200)}…` : clientId);
  if (clientId.length > MAX_ID_LENGTH || !VCHARS.test(clientId)) {
    throw fail('invalid-id', `The client id ${shown} is not a usable URL.`);
  }
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    throw fail('invalid-id', `The client id ${shown} is not a URL.`);
  }
  if (url.protocol !== 'https:') {
    throw fail('invalid-id', `The client id ${shown} must be an https: URL to be looked up.`);
  }
  if (url.username !== '' || url.password !== '' || clientId.includes('#')) {
    throw fail(
      'invalid-id',
      `The client id ${shown} must carry no user name, password or fragment.`,
    );
  }
  if (url.pathname === '/' || url.href !== clientId) {
    throw fail(
      'invalid-id',
      `The client id ${shown} must be an https: URL with a path, in its normal form (no dot segments).`,
    );
  }
  return url;
}

/** How long an answer may be kept, from its `Cache-Control`, within `maxAge`. */
function ttlOf(cacheControl: string | string[] | undefined, maxAge: number): number {
  const value = Array.isArray(cacheControl) ? cacheControl.join(',') : (cacheControl ?? '');
  let ttl = DEFAULT_MAX_AGE;
  for (const part of value.split(',')) {
    const [name = '', arg] = part.trim().toLowerCase().split('=', 2);
    if (name === 'no-store' || name === 'no-cache') return 0;
    if (name === 'max-age') {
      const seconds = Number(arg?.replace(/^"|"$/g, ''));
      ttl = Number.isFinite(seconds) && seconds >= 0 ? Math.floor(seconds) * 1000 : 0;
    }
  }
  return Math.min(ttl, maxAge);
}

/** A list of URIs of the document, each absolute, without a fragment, of a harmless scheme. */
function uriList(url: string, doc: Record<string, unknown>, name: string, required: boolean) {
  const value = doc[name];
  if (value === undefined && !required) return undefined;
  if (!Array.isArray(value) || value.length === 0 || value.length > 20) {
    throw fail('invalid-document', `The metadata document of ${url} must list 1–20 ${name}.`);
  }
  for (const uri of value) {
    if (
      typeof uri !== 'string' ||
      !URL.canParse(uri) ||
      uri.includes('#') ||
      /^(javascript|data|vbscript|file):/i.test(uri)
    ) {
      throw fail(
        'invalid-document',
        `The metadata document of ${url} has an unusable entry in ${name}.`,
      );
    }
  }
  return Object.freeze([...(value as string[])]);
}

/** The client a fetched document describes, or why it is refused. @internal */
export function clientFromDocument(
  url: URL,
  doc: unknown,
  serverScopes: readonly string[],
): OAuthClient {
  const id = url.href;
  const invalid = (message: string) =>
    fail('invalid-document', `The metadata document of ${id} ${message}`);
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    throw fail('not-json', `The metadata document of ${id} is not a JSON object.`);
  }
  const d = doc as Record<string, unknown>;
  if (d.client_id !== id) {
    throw invalid('names another client_id: it must be its own URL, exactly.');
  }
  if ('client_secret' in d || 'client_secret_expires_at' in d) {
    throw invalid('carries a client secret: a document client has none.');
  }
  const method = d.token_endpoint_auth_method;
  if (method !== 'none' && method !== 'private_key_jwt') {
    throw invalid('must say token_endpoint_auth_method "none" or "private_key_jwt".');
  }
  let jwksUri: string | undefined;
  if (method === 'private_key_jwt') {
    const uri = d.jwks_uri;
    if (typeof uri !== 'string' || !URL.canParse(uri) || new URL(uri).protocol !== 'https:') {
      throw invalid('must give an https: jwks_uri for private_key_jwt.');
    }
    // the keys are fetched as a configured client's jwksUri is: keep them at the host the
    // guard has checked, rather than at any URL a document names
    if (new URL(uri).origin !== url.origin) {
      throw invalid('must publish its jwks_uri at its own origin.');
    }
    jwksUri = uri;
  }
  const grants = d.grant_types ?? ['authorization_code'];
  if (
    !Array.isArray(grants) ||
    grants.length === 0 ||
    grants.some((grant) => !GRANTS.includes(grant as string))
  ) {
    throw invalid('may ask for the grant types authorization_code and refresh_token only.');
  }
  const responses = d.response_types;
  if (
    responses !== undefined &&
    (!Array.isArray(responses) || responses.some((type) => type !== 'code'))
  ) {
    throw invalid('may ask for the response type code only.');
  }
  const redirectUris = uriList(id, d, 'redirect_uris', true)!;
  const postLogoutRedirectUris = uriList(id, d, 'post_logout_redirect_uris', false);
  let scopes = [...serverScopes];
  if (d.scope !== undefined) {
    if (typeof d.scope !== 'string') throw invalid('has a scope that is not a string.');
    scopes = [...new Set(d.scope.split(' ').filter((s) => s !== ''))];
    const unknown = scopes.find((scope) => !serverScopes.includes(scope));
    if (unknown !== undefined) {
      throw invalid(
        `asks for the scope ${JSON.stringify(unknown.slice(0, 64))}, which this server does not give.`,
      );
    }
  }
  const name = d.client_name;
  if (
    name !== undefined &&
    (typeof name !== 'string' || name.length > NAME_LENGTH || /[\p{Cc}\p{Cf}]/u.test(name))
  ) {
    throw invalid(`has a client_name that is not text of at most ${NAME_LENGTH} characters.`);
  }
  const bound = d.dpop_bound_access_tokens;
  if (bound !== undefined && typeof bound !== 'boolean') {
    throw invalid('has a dpop_bound_access_tokens that is not a boolean.');
  }
  return Object.freeze({
    clientId: id,
    grantTypes: Object.freeze([...(grants as string[])]),
    redirectUris,
    ...(postLogoutRedirectUris !== undefined && { postLogoutRedirectUris }),
    scopes: Object.freeze(scopes),
    ...(typeof name === 'string' && name.trim() !== '' && { name: name.trim() }),
    ...(jwksUri !== undefined && { jwksUri }),
    ...(bound === true && { dpopBoundAccessTokens: true }),
    provenance: 'metadata-document' as const,
  });
}

/**
 * Stops reading a body and closes its connection. undici reports that as an abort on the
 * body, an `error` event: expected here, so it is heard (unheard, it would crash the process).
 */
function abandon(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => {});
  body.destroy();
}

/** Reads a body of at most `maxBytes` bytes, or refuses it (and stops reading). */
async function boundedBody(url: string, body: Dispatcher.ResponseData['body'], maxBytes: number) {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) {
      abandon(body);
      throw fail('too-large', `The metadata document of ${url} is larger than ${maxBytes} bytes.`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Resolves OAuth Client ID Metadata Documents: a client id that is an `https` URL with a path
 * (e.g. `https://app.example.com/oauth/client.json`) is fetched (GET,
 * `Accept: application/json`, no redirect followed: a `3xx` is a failure) through the webhook
 * sender's address guard: loopback, private, link-local, unique-local and cloud metadata
 * addresses are refused, every DNS answer is checked and the connection made to the checked
 * address (DNS rebinding), unless `allowPrivate`. The whole fetch lasts at most `timeout` and
 * the body at most `maxBytes`; TLS is verified against the system roots (and
 * `NODE_EXTRA_CA_CERTS`), or `ca`.
 *
 * The document must name its own URL as `client_id` exactly, list `redirect_uris`, say
 * `token_endpoint_auth_method` `none` (a public client) or `private_key_jwt` with a
 * `jwks_uri` at its own origin, carry no `client_secret`, ask for the grants
 * `authorization_code` and `refresh_token` only and for scopes among `scopes`. Its
 * `client_name` is shown on the consent page as unverified (`provenance: 'metadata-document'`).
 *
 * Documents are cached as their `Cache-Control` says, at most `maxAge` (24 hours) and
 * `maxEntries` of them (the oldest forgotten first); concurrent lookups of one URL share one
 * fetch; a failure is remembered `failureMaxAge` (10 seconds), and at most 2 fetches run at
 * once per host (32 in all): beyond, lookups fail at once rather than queue.
 *
 * @example
 * ```ts
 * const auth = createAuthorizationServer({
 *   ...options,
 *   clientMetadataDocuments: createClientMetadataDocuments({ timeout: 3_000 }),
 * });
 * ```
 * @example In tests, documents served on loopback with a test CA:
 * ```ts
 * const documents = createClientMetadataDocuments({ allowPrivate: true, ca: readFileSync('ca.pem') });
 * const client = await documents.resolve('https://localhost:8443/client.json');
 * ```
 * @see {@link https://datatracker.ietf.org/doc/draft-ietf-oauth-client-id-metadata-document/ | draft-ietf-oauth-client-id-metadata-document}
 */
export function createClientMetadataDocuments(
  options: ClientMetadataDocumentOptions = {},
): ClientMetadataDocuments {
  if (options === null || typeof options !== 'object') {
    throw invalidOption(`${OWNER}: the options must be an object`);
  }
  assertKnownOptions(OWNER, options, OPTIONS);
  const allowPrivate = booleanOption(OWNER, 'allowPrivate', options.allowPrivate, false);
  const timeout = durationOption(OWNER, 'timeout', options.timeout, 5_000, { min: 1, max: 60_000 });
  const maxBytes = countOption(OWNER, 'maxBytes', options.maxBytes, 5_120, { max: 1_048_576 });
  const maxEntries = countOption(OWNER, 'maxEntries', options.maxEntries, 1_000);
  const maxAge = durationOption(OWNER, 'maxAge', options.maxAge, DAY, { max: DAY });
  const failureMaxAge = durationOption(OWNER, 'failureMaxAge', options.failureMaxAge, 10_000, {
    max: DAY,
  });
  const lookup = functionOption(OWNER, 'lookup', options.lookup);
  const scopes = options.scopes ?? DEFAULT_SCOPES;
  if (
    !Array.isArray(scopes) ||
    scopes.some((s) => typeof s !== 'string' || s === '' || s.includes(' '))
  ) {
    throw invalidOption(`${OWNER}: \`scopes\` must be a list of scopes`);
  }
  const serverScopes = Object.freeze([...scopes]);
  const { ca } = options;
  if (ca !== undefined && !(typeof ca === 'string' || Buffer.isBuffer(ca) || Array.isArray(ca))) {
    throw invalidOption(`${OWNER}: \`ca\` must be PEM text, a Buffer or a list of them`);
  }

  const cache = new Map<string, Entry>();
  const pending = new Map<string, Promise<OAuthClient>>();
  const perHost = new Map<string, number>();
  const agent = lazyGuardedAgent(
    { allowPrivate, ...(lookup && { lookup }), ...(ca !== undefined && { ca }) },
    { connectTimeoutMs: timeout, connections: MAX_PER_HOST },
  );

  const remember = (url: string, value: Entry['value'], ttl: number) => {
    cache.delete(url);
    if (ttl <= 0) return;
    while (cache.size >= maxEntries) {
      const oldest = cache.keys().next().value;
      if (oldest === undefined) break;
      cache.delete(oldest);
    }
    cache.set(url, { expires: Date.now() + ttl, value });
  };

  async function fetchDocument(url: URL): Promise<{ client: OAuthClient; ttl: number }> {
    const id = url.href;
    const undici = await loadUndici();
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeout);
    try {
      const res = await undici.request(id, {
        method: 'GET',
        headers: { accept: 'application/json', 'user-agent': 'portico-client-metadata/1' },
        dispatcher: await agent.get(),
        signal: controller.signal,
        headersTimeout: timeout,
        bodyTimeout: timeout,
      });
      if (res.statusCode >= 300 && res.statusCode < 400) {
        await res.body.dump();
        throw fail(
          'redirect',
          `The metadata document of ${id} answers with a redirect, which is not followed.`,
        );
      }
      if (res.statusCode !== 200) {
        await res.body.dump();
        throw fail(
          'status',
          `The metadata document of ${id} could not be fetched (HTTP ${res.statusCode}).`,
        );
      }
      const length = Number(res.headers['content-length']);
      if (Number.isFinite(length) && length > maxBytes) {
        abandon(res.body);
        throw fail('too-large', `The metadata document of ${id} is larger than ${maxBytes} bytes.`);
      }
      const text = await boundedBody(id, res.body, maxBytes);
      let doc: unknown;
      try {
        doc = JSON.parse(text);
      } catch {
        throw fail('not-json', `The metadata document of ${id} is not JSON.`);
      }
      return {
        client: clientFromDocument(url, doc, serverScopes),
        ttl: ttlOf(res.headers['cache-control'], maxAge),
      };
    } catch (error) {
      if (error instanceof ClientMetadataDocumentError) throw error;
      if (controller.signal.aborted) {
        throw fail(
          'timeout',
          `The metadata document of ${id} took longer than ${timeout} ms to fetch.`,
        );
      }
      const refused = [error, (error as { cause?: unknown })?.cause].find(
        (e) => e instanceof WebhookAddressError,
      ) as WebhookAddressError | undefined;
      if (refused !== undefined) {
        throw fail(
          'address',
          refused.reason === 'private'
            ? `The metadata document of ${id} is at an address this server does not fetch from (loopback, private or link-local).`
            : `The host of the metadata document ${id} does not resolve.`,
        );
      }
      throw fail(
        'unreachable',
        `The metadata document of ${id} could not be fetched (connection or TLS failure).`,
      );
    } finally {
      clearTimeout(timer);
    }
  }

  async function load(url: URL): Promise<OAuthClient> {
    const id = url.href;
    const host = url.host;
    const running = perHost.get(host) ?? 0;
    if (running >= MAX_PER_HOST || pending.size >= MAX_IN_FLIGHT) {
      throw fail(
        'busy',
        `Too many client metadata documents are being fetched; try again shortly (${id}).`,
      );
    }
    perHost.set(host, running + 1);
    try {
      const { client, ttl } = await fetchDocument(url);
      remember(id, client, ttl);
      return client;
    } catch (error) {
      if (error instanceof ClientMetadataDocumentError) remember(id, error, failureMaxAge);
      throw error;
    } finally {
      const left = (perHost.get(host) ?? 1) - 1;
      if (left <= 0) perHost.delete(host);
      else perHost.set(host, left);
    }
  }

  return Object.freeze({
    allowPrivate,
    handles: (clientId: string) => typeof clientId === 'string' && isUrlId(clientId),
    async resolve(clientId: string): Promise<OAuthClient> {
      const url = checkId(clientId);
      const cached = cache.get(url.href);
      if (cached !== undefined) {
        if (cached.expires > Date.now()) {
          if (cached.value instanceof ClientMetadataDocumentError) throw cached.value;
          return cached.value;
        }
        cache.delete(url.href);
      }
      let loading = pending.get(url.href);
      if (loading === undefined) {
        if (pending.size >= MAX_IN_FLIGHT) {
          throw fail(
            'busy',
            `Too many client metadata documents are being fetched; try again shortly (${url.href}).`,
          );
        }
        loading = load(url).finally(() => pending.delete(url.href));
        pending.set(url.href, loading);
      }
      return loading;
    },
    close: () => agent.close(),
  });
}

/**
 * `clientMetadataDocuments` of the server's options, as a resolver: `true` for the defaults,
 * options, or a resolver; `undefined` when off. `scopes` fills in the resolver's default.
 * @internal
 */
export function clientMetadataDocumentsOption(
  owner: string,
  value: boolean | ClientMetadataDocumentOptions | ClientMetadataDocuments | undefined,
  scopes?: readonly string[],
): ClientMetadataDocuments | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return createClientMetadataDocuments(scopes ? { scopes } : {});
  if (value === null || typeof value !== 'object') {
    throw invalidOption(
      `${owner}: \`clientMetadataDocuments\` must be true, options or createClientMetadataDocuments()`,
    );
  }
  if (typeof (value as ClientMetadataDocuments).resolve === 'function') {
    return value as ClientMetadataDocuments;
  }
  const options = value as ClientMetadataDocumentOptions;
  return createClientMetadataDocuments(
    options.scopes === undefined && scopes !== undefined ? { ...options, scopes } : options,
  );
}

/**
 * `store`, then the documents for a client id that is a URL: the configured and stored clients
 * always win. The other methods of a writable store stay as they are.
 * @internal
 */
export function withClientMetadataDocuments(
  store: ClientStore,
  documents: ClientMetadataDocuments | undefined,
): ClientStore {
  if (documents === undefined) return store;
  const writable = store as Partial<Record<'add' | 'replace' | 'remove', (arg: never) => unknown>>;
  const methods = Object.fromEntries(
    (['add', 'replace', 'remove'] as const)
      .filter((name) => typeof writable[name] === 'function')
      .map((name) => [name, writable[name]!.bind(store)]),
  );
  return Object.freeze({
    ...methods,
    async get(clientId: string) {
      const found = await store.get(clientId);
      if (found !== undefined) return found;
      return typeof clientId === 'string' && documents.handles(clientId)
        ? documents.resolve(clientId)
        : undefined;
    },
  });
}
