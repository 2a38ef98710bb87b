import { badRequest, conflict } from '../../core/errors/errors.js';
import { CTL, VCHARS } from '../../internal/grammar.js';
import { assertKnownOptions, invalidOption } from '../../internal/options.js';
import {
  announceRevocation,
  apiKeyCredentialId,
  processRevocations,
  type Revocations,
} from '../revocations.js';
import { parseScopes } from '../scopes.js';
import {
  DEFAULT_API_KEY_PREFIX,
  generateApiKey,
  hashApiKey,
  isWellFormedApiKey,
  randomBase62,
} from './api-key.js';

/**
 * What is stored about one API key. Never the key itself: only its {@link hashApiKey} hash,
 * so a leaked store (or backup, or log of it) gives no usable key.
 */
export interface ApiKeyRecord {
  /** Public identifier (`key_` then 16 base62 characters): shown in lists, used to revoke. */
  readonly id: string;
  /** `hashApiKey(key)`: the lookup key. */
  readonly hash: string;
  /** The subject the key acts for (`Principal.sub`). */
  readonly owner: string;
  /** A label chosen by the owner ("CI deploy"). */
  readonly name?: string;
  /**
   * The scopes the key is limited to. `undefined` records no limit: `apiKeyAuth()`'s
   * `resolve` decides what the key may do (the default grants no scopes; an app maps it to
   * the owner's full rights, as the reference server does).
   */
  readonly scopes?: readonly string[];
  /** When the key was created, ISO 8601. */
  readonly createdAt: string;
}

/**
 * Where API key records live. Every method may answer at once or with a promise, so a
 * network store (Redis: one hash per record, plus a `hash → id` index) fits the same
 * interface. There is no cache in front of it: deleting a record revokes the key from the
 * very next request.
 *
 * @example
 * ```ts
 * const store: ApiKeyStore = new MemoryApiKeyStore();
 * const { key } = await createApiKey(store, { owner: 'alice', scopes: ['read:messages'] });
 * ```
 */
export interface ApiKeyStore {
  /** The record whose `hash` is this one, if any. */
  findByHash(hash: string): ApiKeyRecord | undefined | Promise<ApiKeyRecord | undefined>;
  /**
   * Adds the record, or replaces the one with the same `id`. Must refuse (throw or reject) a
   * record whose `hash` belongs to another id.
   */
  save(record: ApiKeyRecord): void | Promise<void>;
  /** Removes the record with this id (revoking its key); whether there was one. */
  delete(id: string): boolean | Promise<boolean>;
  /** The record with this id, if any. */
  get(id: string): ApiKeyRecord | undefined | Promise<ApiKeyRecord | undefined>;
  /** Every record, or those of one owner, oldest first. */
  list(owner?: string): readonly ApiKeyRecord[] | Promise<readonly ApiKeyRecord[]>;
}

function freezeRecord(record: ApiKeyRecord): ApiKeyRecord {
  if (
    typeof record !== 'object' ||
    record === null ||
    typeof record.id !== 'string' ||
    record.id === '' ||
    typeof record.hash !== 'string' ||
    record.hash === '' ||
    typeof record.owner !== 'string' ||
    typeof record.createdAt !== 'string'
  ) {
    throw invalidOption('ApiKeyStore: a record needs string `id`, `hash`, `owner` and `createdAt`');
  }
  const copy: { -readonly [K in keyof ApiKeyRecord]: ApiKeyRecord[K] } = {
    id: record.id,
    hash: record.hash,
    owner: record.owner,
    createdAt: record.createdAt,
  };
  if (record.name !== undefined) copy.name = record.name;
  if (record.scopes !== undefined) {
    if (!Array.isArray(record.scopes) || !record.scopes.every((s) => typeof s === 'string')) {
      throw invalidOption("ApiKeyStore: a record's `scopes` must be an array of strings");
    }
    copy.scopes = Object.freeze([...record.scopes]);
  }
  return Object.freeze(copy);
}

/**
 * An {@link ApiKeyStore} in this process's memory: one `Map` by hash, one by id. Records are
 * copied and frozen on the way in, so callers cannot change a stored record behind its back.
 * For several processes, use a shared store.
 *
 * @example
 * ```ts
 * const store = new MemoryApiKeyStore();
 * const { key, record } = await createApiKey(store, { owner: 'alice' });
 * await store.delete(record.id); // revoked
 * ```
 */
export class MemoryApiKeyStore implements ApiKeyStore {
  readonly #byHash = new Map<string, ApiKeyRecord>();
  readonly #byId = new Map<string, ApiKeyRecord>();
  readonly #revocations: Revocations;

  /**
   * @param options.revocations - where a deleted key's revocation is announced, so that the
   * streams opened with it end (default: `processRevocations()`, this process)
   */
  constructor(options: { revocations?: Revocations } = {}) {
    assertKnownOptions('new MemoryApiKeyStore()', options, ['revocations']);
    this.#revocations = options.revocations ?? processRevocations();
  }

  /** The number of records held. */
  get size(): number {
    return this.#byId.size;
  }

  findByHash(hash: string): ApiKeyRecord | undefined {
    return this.#byHash.get(hash);
  }

  save(record: ApiKeyRecord): void {
    const frozen = freezeRecord(record);
    const holder = this.#byHash.get(frozen.hash);
    if (holder !== undefined && holder.id !== frozen.id) {
      throw conflict('This API key already exists.', { code: 'ERR_API_KEY_EXISTS' });
    }
    const previous = this.#byId.get(frozen.id);
    if (previous !== undefined) this.#byHash.delete(previous.hash);
    this.#byId.set(frozen.id, frozen);
    this.#byHash.set(frozen.hash, frozen);
    // a record changed under its id (a new hash, owner or scopes): the streams opened with
    // the old one end, as after a deletion
    if (previous !== undefined && JSON.stringify(previous) !== JSON.stringify(frozen)) {
      void announceRevocation(this.#revocations, [apiKeyCredentialId(frozen.id)]);
    }
  }

  delete(id: string): boolean {
    const record = this.#byId.get(id);
    if (record === undefined) return false;
    this.#byId.delete(id);
    this.#byHash.delete(record.hash);
    // streams opened with the key end now, before the caller answers
    void announceRevocation(this.#revocations, [apiKeyCredentialId(id)]);
    return true;
  }

  get(id: string): ApiKeyRecord | undefined {
    return this.#byId.get(id);
  }

  list(owner?: string): ApiKeyRecord[] {
    const all = [...this.#byId.values()];
    return owner === undefined ? all : all.filter((r) => r.owner === owner);
  }
}

/** Options of {@link createApiKey}. */
export interface CreateApiKeyOptions {
  /** The subject the key acts for. */
  owner: string;
  /** A label (1–200 characters). @defaultValue none */
  name?: string;
  /**
   * Limit the key to these scopes (well-formed, at most 64).
   * @defaultValue none: the owner's full rights
   */
  scopes?: readonly string[];
  /** The key prefix (see `generateApiKey`). @defaultValue `'ptk'` */
  prefix?: string;
}

/** Options of {@link importApiKey}. */
export interface ImportApiKeyOptions {
  /** The subject the key acts for. */
  owner: string;
  /** A label (1–200 characters). @defaultValue none */
  name?: string;
  /** Limit the key to these scopes. @defaultValue none: the owner's full rights */
  scopes?: readonly string[];
  /**
   * The prefix `apiKeyAuth` checks checksums for: a key that starts with `<prefix>_` must be
   * a well-formed portico key, or `apiKeyAuth` would refuse it before any lookup.
   * @defaultValue `'ptk'`
   */
  prefix?: string;
}

const CREATE_OPTIONS = [
  'owner',
  'name',
  'scopes',
  'prefix',
] as const satisfies readonly (keyof CreateApiKeyOptions)[];
const IMPORT_OPTIONS = [
  'owner',
  'name',
  'scopes',
  'prefix',
] as const satisfies readonly (keyof ImportApiKeyOptions)[];

/**
 * The longest key {@link importApiKey} takes (and `apiKeyAuth` looks up).
 *
 * @example
 * ```ts
 * if (legacyKey.length <= MAX_API_KEY_LENGTH) await importApiKey(store, legacyKey, { owner: 'u-42' });
 * ```
 */
export const MAX_API_KEY_LENGTH = 512;

function checkOwner(owner: string, fn: string): void {
  if (typeof owner !== 'string' || owner === '' || owner.length > 256) {
    throw invalidOption(`${fn}: \`owner\` must be a string of 1–256 characters`);
  }
}

/** Fields the caller may have taken from a request body: a 400 problem when malformed. */
function checkRequestFields(
  name: unknown,
  scopes: unknown,
): { name?: string; scopes?: readonly string[] } {
  const out: { name?: string; scopes?: readonly string[] } = {};
  if (name !== undefined) {
    // 1–200 code points (an emoji is one), no CTL
    if (typeof name !== 'string' || name === '' || [...name].length > 200 || CTL.test(name)) {
      throw badRequest('name must be a string of 1–200 characters without control characters.', {
        code: 'ERR_INVALID_KEY_NAME',
        typeSlug: 'invalid-request',
        errors: [{ field: 'name', message: 'must be 1–200 characters' }],
      });
    }
    out.name = name;
  }
  if (scopes !== undefined) out.scopes = parseScopes(scopes, 'scopes');
  return out;
}

function recordId(): string {
  return `key_${randomBase62(16)}`;
}

/**
 * Generates a new API key for `owner` and saves its record (the hash, never the key). The
 * returned `key` is the only time it is visible: show it to the owner once. A malformed
 * `name` or `scopes` is a 400 problem (they usually come from a request body); a missing
 * `owner` is a programming error (`TypeError`).
 *
 * @example
 * ```ts
 * const { key, record } = await createApiKey(store, {
 *   owner: principal.sub,
 *   name: 'CI deploy',
 *   scopes: ['read:messages'],
 * });
 * sendJson(res, 201, { id: record.id, key, name: record.name, scopes: record.scopes });
 * ```
 */
export async function createApiKey(
  store: ApiKeyStore,
  options: CreateApiKeyOptions,
): Promise<{ key: string; record: ApiKeyRecord }> {
  assertKnownOptions('createApiKey()', options, CREATE_OPTIONS);
  checkOwner(options?.owner, 'createApiKey()');
  const fields = checkRequestFields(options.name, options.scopes);
  const key = generateApiKey(options.prefix === undefined ? {} : { prefix: options.prefix });
  return { key, record: await saveRecord(store, key, options.owner, fields) };
}

/** Stores a new record for `key`: only its hash, with a fresh public id. */
async function saveRecord(
  store: ApiKeyStore,
  key: string,
  owner: string,
  fields: ReturnType<typeof checkRequestFields>,
): Promise<ApiKeyRecord> {
  const record = freezeRecord({
    id: recordId(),
    hash: hashApiKey(key),
    owner,
    ...fields,
    createdAt: new Date().toISOString(),
  });
  await store.save(record);
  return record;
}

/**
 * Saves the record of a key chosen outside portico (an operator's `DEMO_API_KEY`, a key
 * migrated from another system). It need not be in portico's format, but it must be
 * 1–512 visible ASCII characters, and it should be as hard to guess as a generated one
 * (32 random characters or more): keys are stored under a fast hash, which protects
 * random keys, not guessable ones.
 *
 * @example
 * ```ts
 * if (process.env.DEMO_API_KEY) {
 *   await importApiKey(store, process.env.DEMO_API_KEY, { owner: 'alice', name: 'demo' });
 * }
 * ```
 */
export async function importApiKey(
  store: ApiKeyStore,
  key: string,
  options: ImportApiKeyOptions,
): Promise<ApiKeyRecord> {
  assertKnownOptions('importApiKey()', options, IMPORT_OPTIONS);
  if (typeof key !== 'string' || !VCHARS.test(key) || key.length > MAX_API_KEY_LENGTH) {
    throw invalidOption(
      `importApiKey(): the key must be 1–${MAX_API_KEY_LENGTH} visible ASCII characters`,
    );
  }
  const prefix = options?.prefix ?? DEFAULT_API_KEY_PREFIX;
  if (key.startsWith(`${prefix}_`) && !isWellFormedApiKey(key, { prefix })) {
    throw invalidOption(
      `importApiKey(): the key starts with \`${prefix}_\` but its checksum is wrong, so apiKeyAuth() would refuse it`,
    );
  }
  checkOwner(options?.owner, 'importApiKey()');
  return saveRecord(store, key, options.owner, checkRequestFields(options.name, options.scopes));
}
