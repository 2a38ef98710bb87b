import type { IncomingMessage } from 'node:http';
import type { Principal } from '../../core/principal.js';
import { isToken, VCHARS } from '../../internal/grammar.js';
import { fieldLines } from '../../internal/headers.js';
import { assertKnownOptions, invalidOption } from '../../internal/options.js';
import { isPromiseLike } from '../../internal/promise.js';
import { type Authenticator, challenge as buildChallenge } from '../authenticator.js';
import { invalidAuthRequest, invalidCredentials } from '../errors.js';
import { apiKeyCredentialId } from '../revocations.js';
import { DEFAULT_API_KEY_PREFIX, hashApiKey, hasValidChecksum } from './api-key.js';
import { type ApiKeyRecord, type ApiKeyStore, MAX_API_KEY_LENGTH } from './store.js';

/** Options of {@link apiKeyAuth}. */
export interface ApiKeyAuthOptions {
  /** Where the key records live (looked up on every request: no cache, so revocation is immediate). */
  store: ApiKeyStore;
  /**
   * The request header carrying the key.
   * @defaultValue `'X-API-Key'`
   */
  header?: string;
  /**
   * Also accept the key in this query parameter (`true` means `api_key`). Discouraged: URLs
   * end up in access logs, proxy logs, browser history and `Referer` headers, so a key sent
   * this way should be taken as leaked. Only for clients that cannot set a header.
   * @defaultValue `false`
   */
  queryParameter?: string | boolean;
  /**
   * The prefix of portico-generated keys: a key that starts with `<prefix>_` but fails its
   * checksum is refused without a store lookup. Keys without the prefix (imported ones) still
   * go to the store. `false` turns the pre-check off.
   * @defaultValue `'ptk'`
   */
  prefix?: string | false;
  /**
   * Maps a found record to the principal; `undefined` refuses the key with a 401 (its owner
   * was disabled, say). The place to give the principal its owner's name, role and, for keys
   * without `scopes`, the owner's rights.
   * @defaultValue `{ sub: record.owner, scopes: record.scopes ?? [], method: 'api_key', keyId: record.id }`
   */
  resolve?: (
    record: ApiKeyRecord,
    req: IncomingMessage,
  ) => Principal | undefined | Promise<Principal | undefined>;
  /**
   * The realm quoted in the `ApiKey` challenge.
   * @defaultValue `'api'`
   */
  realm?: string;
}

const KNOWN_OPTIONS = [
  'store',
  'header',
  'queryParameter',
  'prefix',
  'resolve',
  'realm',
] as const satisfies readonly (keyof ApiKeyAuthOptions)[];

function defaultResolve(record: ApiKeyRecord): Principal {
  // with its credential id already: the principal is not copied again to add it
  return {
    sub: record.owner,
    scopes: record.scopes ?? [],
    method: 'api_key',
    keyId: record.id,
    credentialIds: [apiKeyCredentialId(record.id)],
  };
}

/** The values of every header line named `lower`, as sent (node joins repeated unknown headers). */
function headerLines(req: IncomingMessage, lower: string): string[] {
  const raw = req.rawHeaders;
  if (!Array.isArray(raw)) {
    const value = req.headers[lower];
    return value === undefined ? [] : Array.isArray(value) ? value : [value];
  }
  return fieldLines(raw, lower);
}

const NONE: readonly string[] = [];

function queryValues(req: IncomingMessage, name: string): string[] {
  const url = (req as { originalUrl?: string }).originalUrl ?? req.url ?? '';
  const q = url.indexOf('?');
  if (q === -1) return [];
  const hash = url.indexOf('#', q);
  return new URLSearchParams(url.slice(q + 1, hash === -1 ? undefined : hash)).getAll(name);
}

/**
 * Authenticates requests by API key: the `X-API-Key` header (and, only when enabled, the
 * `api_key` query parameter). The presented key is hashed (SHA-256) and looked up by its
 * hash, and the record found must hold that very hash (a plain comparison: the lookup and
 * the comparison work on a SHA-256 digest, so their timing tells nothing usable about the key). No key: the
 * authenticator passes (`authenticate()` answers 401 if nothing else matches). An empty,
 * malformed or unknown key: 401 `invalid-credentials`, which never quotes the key. A key in
 * two places (two header lines, or header and query): 400.
 *
 * @example
 * ```ts
 * const store = new MemoryApiKeyStore();
 * const app = compose([
 *   authenticate([apiKeyAuth({ store, resolve: (r) => users.principalFor(r) })]),
 *   router,
 * ]);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-11.6.1 | RFC 9110 §11.6.1}
 */
export function apiKeyAuth(options: ApiKeyAuthOptions): Authenticator {
  assertKnownOptions('apiKeyAuth()', options, KNOWN_OPTIONS);
  const store = options?.store;
  if (typeof store !== 'object' || store === null || typeof store.findByHash !== 'function') {
    throw invalidOption(
      'apiKeyAuth(): `store` must be an ApiKeyStore (e.g. new MemoryApiKeyStore())',
    );
  }
  const header = options.header ?? 'X-API-Key';
  if (!isToken(header)) {
    throw invalidOption('apiKeyAuth(): `header` must be a header name');
  }
  const lowerHeader = header.toLowerCase();
  const q = options.queryParameter ?? false;
  const query = q === true ? 'api_key' : q === false ? undefined : q;
  if (query !== undefined && !isToken(query)) {
    throw invalidOption('apiKeyAuth(): `queryParameter` must be a parameter name, true or false');
  }
  const prefix = options.prefix === undefined ? DEFAULT_API_KEY_PREFIX : options.prefix;
  if (prefix !== false && (typeof prefix !== 'string' || !/^[a-z][a-z0-9]{1,9}$/.test(prefix))) {
    throw invalidOption('apiKeyAuth(): `prefix` must be a key prefix such as `ptk`, or false');
  }
  // keys that start `<prefix>_` must carry a valid checksum (refused without a lookup)
  const marker = prefix === false ? undefined : `${prefix}_`;
  const resolve = options.resolve ?? defaultResolve;
  if (typeof resolve !== 'function') {
    throw invalidOption('apiKeyAuth(): `resolve` must be a function of (record, req)');
  }
  const realm = options.realm ?? 'api';
  if (typeof realm !== 'string') throw invalidOption('apiKeyAuth(): `realm` must be a string');
  const challenge = buildChallenge('ApiKey', { realm, header, query });
  const where =
    query === undefined ? `one ${header} header` : `one ${header} header or one ${query} parameter`;
  const invalid = () => invalidCredentials(challenge, 'The API key is not valid.');

  /** The principal, with the key's credential id unless `resolve` named its own. */
  const withCredential = (
    principal: Principal | undefined | null,
    record: ApiKeyRecord,
  ): Principal => {
    if (principal === undefined || principal === null) throw invalid();
    // a stream opened with the key ends when the key is deleted
    return principal.credentialIds === undefined
      ? { ...principal, credentialIds: [apiKeyCredentialId(record.id)] }
      : principal;
  };
  /** The principal of a record found by `hash`, or the refusal. */
  const principalOf = (
    record: ApiKeyRecord | undefined | null,
    hash: string,
    req: IncomingMessage,
  ): Principal | Promise<Principal> => {
    if (record === undefined || record === null || typeof record.hash !== 'string') {
      throw invalid();
    }
    // the record was found by this very hash: a store that returned another is refused (a
    // plain comparison: timing tells nothing of a key from its SHA-256)
    if (record.hash !== hash) throw invalid();
    const resolved = resolve(record, req);
    return isPromiseLike(resolved)
      ? resolved.then((principal) => withCredential(principal, record))
      : withCredential(resolved, record);
  };
  return {
    scheme: 'ApiKey',
    challenge,
    headers: [header],
    // synchronous while the store and `resolve` are (a promise only when one of them is)
    authenticate(req) {
      const fromHeader = headerLines(req, lowerHeader);
      const fromQuery = query === undefined ? NONE : queryValues(req, query);
      if (fromHeader.length + fromQuery.length === 0) return undefined;
      if (fromHeader.length + fromQuery.length > 1) {
        throw invalidAuthRequest(`Send the API key once, in ${where}.`, challenge);
      }
      const key = fromHeader[0] ?? fromQuery[0]!;
      if (key.length > MAX_API_KEY_LENGTH || !VCHARS.test(key)) throw invalid();
      if (marker !== undefined && key.startsWith(marker) && !hasValidChecksum(key, marker)) {
        throw invalid();
      }
      const hash = hashApiKey(key);
      const found = store.findByHash(hash);
      return isPromiseLike(found)
        ? found.then((record) => principalOf(record, hash, req))
        : principalOf(found, hash, req);
    },
  };
}
