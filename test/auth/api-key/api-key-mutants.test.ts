// What a caller can observe of the API key format, store and authenticator beyond
// api-key.test.ts, api-key-auth.test.ts and api-key.vectors.test.ts: the exact option and
// record errors (message, code, problem body), keys drawn from a scripted byte source,
// records replaced by id, requests without `rawHeaders`, and query strings parsed from `?` on.
import type { IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  apiKeyPattern,
  generateApiKey,
  hashApiKey,
  isWellFormedApiKey,
  randomBase62,
} from '../../../src/auth/api-key/api-key.js';
import { type ApiKeyAuthOptions, apiKeyAuth } from '../../../src/auth/api-key/authenticator.js';
import {
  type ApiKeyRecord,
  type ApiKeyStore,
  createApiKey,
  importApiKey,
  MemoryApiKeyStore,
} from '../../../src/auth/api-key/store.js';
import { createRevocations } from '../../../src/auth/revocations.js';
import { HttpError } from '../../../src/core/errors/errors.js';
import type { Principal } from '../../../src/core/principal.js';
import { thrownTypeError } from '../../helpers/errors.js';
import { fakeRequest } from '../../helpers/fake-http.js';

/**
 * `randomBytes` as api-key.ts sees it: the real one, unless a test scripts it. A scripted
 * draw of `n` bytes is always 248…255 (which must be drawn again) and then 0, 1, 2, …
 */
const source = vi.hoisted(() => ({ scripted: false, draws: [] as number[] }));

vi.mock('node:crypto', async (importOriginal) => {
  const crypto = await importOriginal<typeof import('node:crypto')>();
  return {
    ...crypto,
    randomBytes: (...args: Parameters<typeof crypto.randomBytes>) => {
      if (!source.scripted) return (crypto.randomBytes as (...a: unknown[]) => Buffer)(...args);
      const n = args[0];
      source.draws.push(n);
      return Buffer.from(Array.from({ length: n }, (_, i) => (i < 8 ? 248 + i : i - 8)));
    },
  };
});

afterEach(() => {
  source.scripted = false;
  source.draws.length = 0;
});

const CREATED = '2030-01-01T00:00:00.000Z';
const PREFIX_RULE =
  '`prefix` must be 2–10 characters, a lower-case letter then lower-case letters or digits';
const CHALLENGE = 'ApiKey realm="api", header="X-API-Key"';

/** A TypeError with portico's option code and exactly this message. */
const invalidOption = (message: string) =>
  expect.objectContaining({ name: 'TypeError', message, code: 'ERR_INVALID_OPTION' });

/** The 401 apiKeyAuth answers for a presented key it refuses, with this challenge. */
const refusedKey = (challenge = CHALLENGE) =>
  expect.objectContaining({
    status: 401,
    code: 'ERR_AUTH_INVALID',
    type: 'urn:portico:problem:invalid-credentials',
    title: 'Invalid credentials',
    detail: 'The API key is not valid.',
    headers: { 'WWW-Authenticate': challenge },
  });

/** The 400 apiKeyAuth answers for a key sent more than once. */
const sentTwice = (detail: string, challenge = CHALLENGE) =>
  expect.objectContaining({
    status: 400,
    code: 'ERR_AUTH_INVALID_REQUEST',
    type: 'urn:portico:problem:invalid-request',
    title: 'Invalid request',
    detail,
    headers: { 'WWW-Authenticate': challenge },
  });

const record = (fields: Partial<Record<keyof ApiKeyRecord, unknown>> = {}) =>
  ({
    id: 'key_1',
    hash: hashApiKey('key one'),
    owner: 'alice',
    createdAt: CREATED,
    ...fields,
  }) as ApiKeyRecord;

/** A store answering `found` to every lookup. */
const storeAnswering = (found: unknown): ApiKeyStore => ({
  findByHash: () => found as ApiKeyRecord,
  save: () => {},
  delete: () => false,
  get: () => undefined,
  list: () => [],
});

/** A request as a framework might hand it over: `headers` and `url`, no `rawHeaders`. */
const bareRequest = (headers: Record<string, string | string[]>, url = '/') =>
  ({ headers, url }) as unknown as IncomingMessage;

describe('the key format (api-key.ts)', () => {
  it('names the function in the prefix error of each entry point', () => {
    for (const [fn, call] of [
      ['generateApiKey()', () => generateApiKey({ prefix: 'P' })],
      ['isWellFormedApiKey()', () => isWellFormedApiKey('ptk_x', { prefix: 'P' })],
      ['apiKeyPattern()', () => apiKeyPattern({ prefix: 'P' })],
    ] as const) {
      const error = thrownTypeError(call);
      expect(error.message).toBe(`${fn}: ${PREFIX_RULE}`);
      expect(error.code).toBe('ERR_INVALID_OPTION');
    }
    expect(thrownTypeError(() => isWellFormedApiKey('x', { prefx: 'ptk' } as never)).message).toBe(
      'isWellFormedApiKey(): unknown option `prefx`. Did you mean `prefix`?',
    );
    expect(thrownTypeError(() => apiKeyPattern({ prefx: 'ptk' } as never)).message).toBe(
      'apiKeyPattern(): unknown option `prefx`. Did you mean `prefix`?',
    );
  });

  it('refuses a prefix that is not a string even when its text would be a valid prefix', () => {
    for (const prefix of [['abc'], { toString: () => 'abc' }]) {
      const options = { prefix } as never;
      expect(thrownTypeError(() => generateApiKey(options)).message).toBe(
        `generateApiKey(): ${PREFIX_RULE}`,
      );
      expect(() => isWellFormedApiKey(`abc_${'0'.repeat(38)}`, options)).toThrow(TypeError);
      expect(() => apiKeyPattern(options)).toThrow(TypeError);
    }
  });

  it('refuses a key of the right length with another prefix, even with a correct checksum', () => {
    // `abc_` + 32 base62 + the CRC-32 of `abc_0123…UV` in base62: well-formed for `abc` only
    const abcKey = 'abc_0123456789ABCDEFGHIJKLMNOPQRSTUV4brabv';
    expect(isWellFormedApiKey(abcKey, { prefix: 'abc' })).toBe(true);
    expect(isWellFormedApiKey(abcKey)).toBe(false);
    expect(isWellFormedApiKey(abcKey, { prefix: 'xyz' })).toBe(false);
    const generated = generateApiKey({ prefix: 'abc' });
    expect(generated).toHaveLength(42);
    expect(isWellFormedApiKey(generated)).toBe(false);
  });

  it('refuses a secret with a non-base62 character even when the checksum matches it', () => {
    // 28DsAH is the CRC-32, in base62, of this very body (with its `-`)
    const key = 'ptk_0123456789abcdef-0123456789ABCDE28DsAH';
    expect(key).toHaveLength(42);
    expect(isWellFormedApiKey(key)).toBe(false);
    expect([...`log ${key} end`.matchAll(apiKeyPattern())]).toEqual([]);
  });

  it('builds the secret from the accepted bytes, in order, from one draw of 40 bytes', () => {
    source.scripted = true;
    // 248…255 are drawn again (62 · 4 = 248), then bytes 0…31 give the first 32 characters;
    // 4SjOqN is the CRC-32 of the body in base62
    expect(generateApiKey()).toBe('ptk_0123456789ABCDEFGHIJKLMNOPQRSTUV4SjOqN');
    expect(source.draws).toEqual([40]);
    expect(randomBase62(5)).toBe('01234');
    expect(source.draws).toEqual([40, 13]);
  });

  it('draws short runs too', () => {
    for (let length = 1; length <= 8; length++) {
      expect(randomBase62(length)).toMatch(new RegExp(`^[0-9A-Za-z]{${length}}$`));
    }
  });

  it('refuses to hash a key that is not a string', () => {
    for (const key of [42, undefined, Buffer.from('ptk_')]) {
      const error = thrownTypeError(() => hashApiKey(key as never));
      expect(error.message).toBe('hashApiKey(): the key must be a string');
      expect(error.code).toBe('ERR_INVALID_OPTION');
    }
  });
});

describe('MemoryApiKeyStore (api-key-store.ts)', () => {
  it('refuses a malformed record with a TypeError and keeps nothing', () => {
    const store = new MemoryApiKeyStore();
    const valid = { id: 'key_1', hash: 'h', owner: 'alice', createdAt: CREATED };
    for (const bad of [
      null,
      'key_1',
      Object.assign(() => {}, valid),
      record({ id: 42 }),
      record({ id: '' }),
      record({ hash: 42 }),
      record({ hash: '' }),
      record({ owner: 42 }),
      record({ createdAt: Date.parse(CREATED) }),
      record({ createdAt: undefined }),
    ]) {
      const error = thrownTypeError(() => store.save(bad as never));
      expect(error.message).toBe(
        'ApiKeyStore: a record needs string `id`, `hash`, `owner` and `createdAt`',
      );
      expect(error.code).toBe('ERR_INVALID_OPTION');
    }
    expect(store.size).toBe(0);
    expect(store.list()).toEqual([]);
  });

  it('keeps no `name` key on a record saved without a name', async () => {
    const store = new MemoryApiKeyStore();
    store.save(record({ name: undefined }));
    expect(Object.keys(store.get('key_1')!)).toEqual(['id', 'hash', 'owner', 'createdAt']);
    const { record: created } = await createApiKey(store, { owner: 'bob' });
    expect('name' in created).toBe(false);
    expect('name' in store.get(created.id)!).toBe(false);
  });

  it('replaces a record saved again under its id, and frees the hash it had', () => {
    const store = new MemoryApiKeyStore();
    const first = record();
    store.save(first);
    store.save({ ...first, name: 'renamed' });
    expect(store.get('key_1')).toEqual({ ...first, name: 'renamed' });
    expect(store.findByHash(first.hash)).toEqual({ ...first, name: 'renamed' });

    const rotated = hashApiKey('key two');
    store.save({ ...first, hash: rotated });
    expect(store.findByHash(first.hash)).toBeUndefined();
    expect(store.findByHash(rotated)?.id).toBe('key_1');
    expect(store.size).toBe(1);
    // the old hash is free for another record
    store.save(record({ id: 'key_2' }));
    expect(store.findByHash(first.hash)?.id).toBe('key_2');
  });

  it('refuses a second id for the same hash with a 409 ERR_API_KEY_EXISTS', () => {
    const store = new MemoryApiKeyStore();
    store.save(record());
    const second = () => store.save(record({ id: 'key_2' }));
    expect(second).toThrow(HttpError);
    expect(second).toThrow(
      expect.objectContaining({
        status: 409,
        code: 'ERR_API_KEY_EXISTS',
        type: 'about:blank',
        title: 'Conflict',
        detail: 'This API key already exists.',
      }),
    );
    expect(store.get('key_2')).toBeUndefined();
  });

  it('takes a revocations bus, announcing a deleted key on it, and names itself in typos', () => {
    const revocations = createRevocations();
    const store = new MemoryApiKeyStore({ revocations });
    const revoked: string[] = [];
    revocations.watch(['api_key:key_1'], (id) => revoked.push(id));
    store.save(record());
    expect(store.delete('key_1')).toBe(true);
    expect(revoked).toEqual(['api_key:key_1']);
    expect(
      thrownTypeError(() => new MemoryApiKeyStore({ revocation: revocations } as never)).message,
    ).toBe('new MemoryApiKeyStore(): unknown option `revocation`. Did you mean `revocations`?');
  });
});

describe('createApiKey and importApiKey (api-key-store.ts)', () => {
  it('takes owners of 1–256 characters and names the function when refusing one', async () => {
    const store = new MemoryApiKeyStore();
    const long = 'o'.repeat(256);
    expect((await createApiKey(store, { owner: long })).record.owner).toBe(long);
    expect((await importApiKey(store, 'imported-key-0123456789', { owner: long })).owner).toBe(
      long,
    );
    for (const fn of ['createApiKey()', 'importApiKey()'] as const) {
      const make = (options: unknown) =>
        fn === 'createApiKey()'
          ? createApiKey(store, options as never)
          : importApiKey(store, `other-key-${randomBase62(16)}`, options as never);
      const message = `${fn}: \`owner\` must be a string of 1–256 characters`;
      for (const options of [{ owner: 'o'.repeat(257) }, { owner: 42 }, {}, undefined]) {
        await expect(make(options)).rejects.toEqual(invalidOption(message));
      }
    }
    expect(store.size).toBe(2);
  });

  it('names the function when an option is unknown', async () => {
    const store = new MemoryApiKeyStore();
    await expect(createApiKey(store, { owner: 'a', prefx: 'x' } as never)).rejects.toEqual(
      invalidOption('createApiKey(): unknown option `prefx`. Did you mean `prefix`?'),
    );
    await expect(
      importApiKey(store, 'some-key-0123', { owner: 'a', nme: 'x' } as never),
    ).rejects.toEqual(invalidOption('importApiKey(): unknown option `nme`. Did you mean `name`?'));
  });

  it('answers a name that is not a string with the name problem', async () => {
    const store = new MemoryApiKeyStore();
    for (const name of [42, ['CI'], '', 'x'.repeat(201), 'a\u007fb']) {
      const answer = createApiKey(store, { owner: 'a', name } as never);
      await expect(answer).rejects.toBeInstanceOf(HttpError);
      await expect(answer).rejects.toMatchObject({
        status: 400,
        code: 'ERR_INVALID_KEY_NAME',
        type: 'urn:portico:problem:invalid-request',
        title: 'Bad Request',
        detail: 'name must be a string of 1–200 characters without control characters.',
        errors: [{ field: 'name', message: 'must be 1–200 characters' }],
      });
    }
    const named = await createApiKey(store, { owner: 'a', name: 'é'.repeat(200) });
    expect(named.record.name).toBe('é'.repeat(200));
    expect(store.size).toBe(1);
  });

  it('names the `scopes` field in the scope problem', async () => {
    await expect(
      importApiKey(new MemoryApiKeyStore(), 'some-key-0123', { owner: 'a', scopes: ['x y'] }),
    ).rejects.toMatchObject({
      status: 400,
      code: 'ERR_INVALID_SCOPE',
      detail: 'scopes holds a malformed scope; scopes look like read:messages.',
      errors: [
        {
          field: 'scopes',
          message: 'each scope must look like <action>:<object> or be an OpenID scope',
        },
      ],
    });
  });

  it('generates the key with the prefix asked for', async () => {
    const store = new MemoryApiKeyStore();
    const { key, record: saved } = await createApiKey(store, { owner: 'a', prefix: 'acme' });
    expect(key).toMatch(/^acme_[0-9A-Za-z]{38}$/);
    expect(isWellFormedApiKey(key, { prefix: 'acme' })).toBe(true);
    expect(saved.hash).toBe(hashApiKey(key));
    const plain = await createApiKey(store, { owner: 'a' });
    expect(isWellFormedApiKey(plain.key)).toBe(true);
  });

  it('gives the record an id and the key a secret from the byte source', async () => {
    source.scripted = true;
    const { key, record: saved } = await createApiKey(new MemoryApiKeyStore(), { owner: 'a' });
    expect(key).toBe('ptk_0123456789ABCDEFGHIJKLMNOPQRSTUV4SjOqN');
    expect(saved.id).toBe('key_0123456789ABCDEF');
    expect(source.draws).toEqual([40, 24]);
  });

  it('imports keys of up to 512 visible ASCII characters, and says so when refusing one', async () => {
    const store = new MemoryApiKeyStore();
    const longest = `k${'~'.repeat(511)}`;
    expect((await importApiKey(store, longest, { owner: 'a' })).hash).toBe(hashApiKey(longest));
    const message = 'importApiKey(): the key must be 1–512 visible ASCII characters';
    for (const key of [`k${'!'.repeat(512)}`, 42, ['some-key-0123'], '', 'tab\tkey']) {
      await expect(importApiKey(store, key as never, { owner: 'a' })).rejects.toEqual(
        invalidOption(message),
      );
    }
    expect(store.size).toBe(1);
  });

  it('checks the checksum of keys with the prefix given, against that prefix', async () => {
    const store = new MemoryApiKeyStore();
    const acme = generateApiKey({ prefix: 'acme' });
    const saved = await importApiKey(store, acme, { owner: 'a', prefix: 'acme' });
    expect(saved.hash).toBe(hashApiKey(acme));
    const mangled = `${acme.slice(0, -1)}${acme.endsWith('0') ? '1' : '0'}`;
    await expect(importApiKey(store, mangled, { owner: 'a', prefix: 'acme' })).rejects.toEqual(
      invalidOption(
        'importApiKey(): the key starts with `acme_` but its checksum is wrong, so apiKeyAuth() would refuse it',
      ),
    );
    expect(store.size).toBe(1);
  });
});

describe('apiKeyAuth (api-key-auth.ts)', () => {
  it('grants no scopes by default to a key without scopes', async () => {
    const store = new MemoryApiKeyStore();
    const saved = await importApiKey(store, 'legacy-key-0123456789', { owner: 'bob' });
    const auth = apiKeyAuth({ store });
    const req = fakeRequest({ headers: { 'X-API-Key': 'legacy-key-0123456789' } });
    expect(auth.authenticate(req)).toEqual({
      sub: 'bob',
      scopes: [],
      method: 'api_key',
      keyId: saved.id,
      credentialIds: [`api_key:${saved.id}`],
    });
  });

  it('reads requests without rawHeaders from their headers', async () => {
    const store = new MemoryApiKeyStore();
    const { key, record: saved } = await createApiKey(store, { owner: 'alice' });
    const auth = apiKeyAuth({ store });
    expect(auth.authenticate(bareRequest({}))).toBeUndefined();
    expect(auth.authenticate(bareRequest({ 'x-api-key': key }))).toMatchObject({
      sub: 'alice',
      keyId: saved.id,
    });
    expect(() => auth.authenticate(bareRequest({ 'x-api-key': [key, key] }))).toThrow(
      sentTwice('Send the API key once, in one X-API-Key header.'),
    );
  });

  it('says where to send the key when it comes twice', async () => {
    const store = new MemoryApiKeyStore();
    const { key } = await createApiKey(store, { owner: 'alice' });
    const lines = (name: string) => [[name, key] as const, [name, key] as const];
    const twoHeaders = fakeRequest({ headers: lines('X-API-Key') });
    expect(() => apiKeyAuth({ store }).authenticate(twoHeaders)).toThrow(
      sentTwice('Send the API key once, in one X-API-Key header.'),
    );
    const headerAndQuery = fakeRequest({ url: `/?api_key=${key}`, headers: { 'X-API-Key': key } });
    expect(() => apiKeyAuth({ store, queryParameter: true }).authenticate(headerAndQuery)).toThrow(
      sentTwice(
        'Send the API key once, in one X-API-Key header or one api_key parameter.',
        'ApiKey realm="api", header="X-API-Key", query="api_key"',
      ),
    );
    const custom = apiKeyAuth({ store, header: 'X-Token', queryParameter: 'key' });
    expect(() => custom.authenticate(fakeRequest({ headers: lines('X-Token') }))).toThrow(
      sentTwice(
        'Send the API key once, in one X-Token header or one key parameter.',
        'ApiKey realm="api", header="X-Token", query="key"',
      ),
    );
  });

  it('reads the query parameter from the query string only, without the fragment', async () => {
    const store = new MemoryApiKeyStore();
    const { key } = await createApiKey(store, { owner: 'alice' });
    const auth = apiKeyAuth({ store, queryParameter: true });
    const at = (url: string) => auth.authenticate(fakeRequest({ url }));
    expect(at(`/things?api_key=${key}`)).toMatchObject({ sub: 'alice' });
    expect(at(`/things?api_key=${key}#top`)).toMatchObject({ sub: 'alice' });
    // `api_key=` in the path is not a parameter
    expect(at(`/things&api_key=${key}`)).toBeUndefined();
    expect(at(`/api_key=${key}`)).toBeUndefined();
    expect(at('/things')).toBeUndefined();
  });

  it('reads no query parameter at all when the option is off', async () => {
    const store = new MemoryApiKeyStore();
    const { key } = await createApiKey(store, { owner: 'alice' });
    const auth = apiKeyAuth({ store });
    for (const name of ['undefined', 'api_key', 'false']) {
      expect(auth.authenticate(fakeRequest({ url: `/?${name}=${key}` }))).toBeUndefined();
    }
  });

  it('validates its options with messages naming the option', () => {
    const store = new MemoryApiKeyStore();
    const cases: [unknown, string][] = [
      [{ store, realn: 'x' }, 'apiKeyAuth(): unknown option `realn`. Did you mean `realm`?'],
      [undefined, 'apiKeyAuth(): `store` must be an ApiKeyStore (e.g. new MemoryApiKeyStore())'],
      [
        { store: null },
        'apiKeyAuth(): `store` must be an ApiKeyStore (e.g. new MemoryApiKeyStore())',
      ],
      [
        { store: {} },
        'apiKeyAuth(): `store` must be an ApiKeyStore (e.g. new MemoryApiKeyStore())',
      ],
      [{ store, header: 'X API Key' }, 'apiKeyAuth(): `header` must be a header name'],
      [
        { store, queryParameter: 'api key' },
        'apiKeyAuth(): `queryParameter` must be a parameter name, true or false',
      ],
      [{ store, resolve: 'owner' }, 'apiKeyAuth(): `resolve` must be a function of (record, req)'],
      [{ store, realm: 42 }, 'apiKeyAuth(): `realm` must be a string'],
    ];
    for (const prefix of ['Pab', 'abC', 'abcdefghijk', 'a', ['ptk'], true]) {
      cases.push([
        { store, prefix },
        'apiKeyAuth(): `prefix` must be a key prefix such as `ptk`, or false',
      ]);
    }
    for (const [options, message] of cases) {
      const error = thrownTypeError(() => apiKeyAuth(options as ApiKeyAuthOptions));
      expect(error.message, JSON.stringify(options)).toBe(message);
      expect(error.code).toBe('ERR_INVALID_OPTION');
    }
  });

  it('with prefix: false, looks every key up, whatever it starts with', async () => {
    const store = new MemoryApiKeyStore();
    const auth = apiKeyAuth({ store, prefix: false });
    for (const key of ['false_legacy-key-0123', 'undefined-legacy-key-0123']) {
      const saved = await importApiKey(store, key, { owner: 'carol' });
      expect(auth.authenticate(fakeRequest({ headers: { 'X-API-Key': key } }))).toMatchObject({
        sub: 'carol',
        keyId: saved.id,
      });
    }
  });

  it('refuses the key when resolve answers null', async () => {
    const store = new MemoryApiKeyStore();
    const { key } = await createApiKey(store, { owner: 'alice' });
    const req = () => fakeRequest({ headers: { 'X-API-Key': key } });
    const sync = apiKeyAuth({ store, resolve: () => null as never });
    expect(() => sync.authenticate(req())).toThrow(refusedKey());
    const later = apiKeyAuth({ store, resolve: async () => null as never });
    await expect(later.authenticate(req())).rejects.toEqual(refusedKey());
  });

  it('keeps the credential ids resolve names', async () => {
    const store = new MemoryApiKeyStore();
    const { key, record: saved } = await createApiKey(store, { owner: 'alice' });
    const principal: Principal = {
      sub: 'alice',
      scopes: ['read:messages'],
      method: 'api_key',
      credentialIds: ['user:alice', `api_key:${saved.id}`],
    };
    const auth = apiKeyAuth({ store, resolve: () => principal });
    expect(auth.authenticate(fakeRequest({ headers: { 'X-API-Key': key } }))).toEqual(principal);
  });

  it('refuses the key when the store answers null or a record without a hash', async () => {
    const headers = { 'X-API-Key': 'legacy-key-0123456789' };
    for (const found of [null, record({ hash: undefined }), record({ hash: 42 })]) {
      const auth = apiKeyAuth({ store: storeAnswering(found) });
      expect(() => auth.authenticate(fakeRequest({ headers }))).toThrow(refusedKey());
    }
    const later = apiKeyAuth({
      store: { ...storeAnswering(null), findByHash: async () => null as never },
    });
    await expect(later.authenticate(fakeRequest({ headers }))).rejects.toEqual(refusedKey());
  });
});
