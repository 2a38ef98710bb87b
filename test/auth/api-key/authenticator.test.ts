import { afterEach, describe, expect, it } from 'vitest';
import { generateApiKey, hashApiKey } from '../../../src/auth/api-key/api-key.js';
import { type ApiKeyAuthOptions, apiKeyAuth } from '../../../src/auth/api-key/authenticator.js';
import {
  type ApiKeyRecord,
  type ApiKeyStore,
  createApiKey,
  importApiKey,
  MemoryApiKeyStore,
} from '../../../src/auth/api-key/store.js';
import { authenticate } from '../../../src/auth/authenticate.js';
import type { Middleware } from '../../../src/core/compose.js';
import { getPrincipal } from '../../../src/core/principal.js';
import { sendJson } from '../../../src/core/send.js';
import { closeAll, json, type Listening, request, serve } from '../../helpers/http.js';

const echo: Middleware = (req, res) => sendJson(res, 200, getPrincipal(req) ?? null);
const CHALLENGE = 'ApiKey realm="api", header="X-API-Key"';

afterEach(closeAll);

/** A store that counts lookups and answers with promises, as a network store would. */
function countingStore(inner = new MemoryApiKeyStore()) {
  const calls = { findByHash: 0 };
  const store: ApiKeyStore = {
    async findByHash(hash) {
      calls.findByHash++;
      return inner.findByHash(hash);
    },
    save: async (record) => inner.save(record),
    delete: async (id) => inner.delete(id),
    get: async (id) => inner.get(id),
    list: async (owner) => inner.list(owner),
  };
  return { store, calls, inner };
}

async function setup(options: Partial<ApiKeyAuthOptions> = {}) {
  const { store, calls, inner } = countingStore();
  const { key, record } = await createApiKey(store, {
    owner: 'alice',
    name: 'test',
    scopes: ['read:messages'],
  });
  const server = await serve([authenticate([apiKeyAuth({ store, ...options })]), echo]);
  return { server, store, calls, inner, key, record };
}

const get = (server: Listening, path: string, headers: Record<string, string | string[]> = {}) =>
  request(server, path, { headers });

describe('apiKeyAuth', () => {
  it('authenticates the X-API-Key header as the key owner', async () => {
    const { server, key, record } = await setup();
    const reply = await get(server, '/', { 'X-API-Key': key });
    expect(reply.status).toBe(200);
    expect(json(reply)).toEqual({
      sub: 'alice',
      scopes: ['read:messages'],
      method: 'api_key',
      keyId: record.id,
      // a stream opened with the key watches this id: deleting the key ends it
      credentialIds: [`api_key:${record.id}`],
    });
    // the header name is case-insensitive
    expect((await get(server, '/', { 'x-api-key': key })).status).toBe(200);
  });

  it('passes when no key is sent, so authenticate() answers 401 with the ApiKey challenge', async () => {
    const { server, calls } = await setup();
    const auth = apiKeyAuth({ store: new MemoryApiKeyStore() });
    expect(auth.scheme).toBe('ApiKey');
    expect(auth.challenge).toBe(CHALLENGE);
    const fake = { headers: {}, rawHeaders: [], url: '/' } as never;
    expect(await auth.authenticate(fake)).toBeUndefined();

    const reply = await get(server, '/');
    expect(reply.status).toBe(401);
    expect(reply.headers['www-authenticate']).toBe(CHALLENGE);
    expect(reply.headers['content-type']).toBe('application/problem+json');
    expect(json(reply).type).toBe('urn:portico:problem:authentication-required');
    expect(calls.findByHash).toBe(0);
  });

  it('answers 401 invalid-credentials for an unknown, empty or mangled key, never quoting it', async () => {
    const { server, calls, key } = await setup();
    const unknown = generateApiKey();
    const badChecksum = `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`;
    const cases: [string, number][] = [
      [unknown, 1],
      ['imported-looking-but-unknown-key', 1],
      [badChecksum, 0],
      [`ptk_${'x'.repeat(10)}`, 0],
      ['', 0],
      ['a'.repeat(600), 0],
    ];
    for (const [value, lookups] of cases) {
      const before = calls.findByHash;
      const reply = await get(server, '/', { 'X-API-Key': value });
      expect(reply.status, value).toBe(401);
      expect(reply.headers['www-authenticate']).toBe(CHALLENGE);
      const problem = json(reply);
      expect(problem.type).toBe('urn:portico:problem:invalid-credentials');
      expect(problem.detail).toBe('The API key is not valid.');
      if (value !== '') expect(reply.body).not.toContain(value.slice(0, 20));
      expect(calls.findByHash - before, value).toBe(lookups);
    }
  });

  it('ignores the api_key query parameter unless enabled', async () => {
    const { server, key, calls } = await setup();
    const reply = await get(server, `/?api_key=${key}`);
    expect(reply.status).toBe(401);
    expect(json(reply).type).toBe('urn:portico:problem:authentication-required');
    expect(reply.body).not.toContain(key);
    expect(calls.findByHash).toBe(0);
  });

  it('accepts the query parameter when enabled, and refuses a key sent twice with 400', async () => {
    const { server, key } = await setup({ queryParameter: true });
    const ok = await get(server, `/things?x=1&api_key=${key}`);
    expect(ok.status).toBe(200);
    expect(json(ok).sub).toBe('alice');

    const twice: [string, Record<string, string | string[]>][] = [
      [`/?api_key=${key}`, { 'X-API-Key': key }],
      [`/?api_key=${key}&api_key=${key}`, {}],
      ['/', { 'X-API-Key': [key, key] }],
    ];
    for (const [path, headers] of twice) {
      const reply = await get(server, path, headers);
      expect(reply.status).toBe(400);
      expect(json(reply).type).toBe('urn:portico:problem:invalid-request');
      expect(reply.body).not.toContain(key);
    }
    const bad = await get(server, '/?api_key=nope');
    expect(bad.status).toBe(401);
    expect(json(bad).instance).toBe('/');
  });

  it('refuses two X-API-Key header lines with 400 even without the query parameter', async () => {
    const { server, key } = await setup();
    const reply = await get(server, '/', { 'X-API-Key': [key, generateApiKey()] });
    expect(reply.status).toBe(400);
    expect(reply.body).not.toContain(key);
  });

  it('takes another header and query parameter name, quoted in the challenge', async () => {
    const { server, key } = await setup({ header: 'X-Token', queryParameter: 'key' });
    expect((await get(server, '/', { 'X-Token': key })).status).toBe(200);
    expect((await get(server, `/?key=${key}`)).status).toBe(200);
    const none = await get(server, '/', { 'X-API-Key': key });
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe(
      'ApiKey realm="api", header="X-Token", query="key"',
    );
  });

  it('revokes a key from the very next request once its record is deleted', async () => {
    const { server, store, key, record } = await setup();
    expect((await get(server, '/', { 'X-API-Key': key })).status).toBe(200);
    expect(await store.delete(record.id)).toBe(true);
    const reply = await get(server, '/', { 'X-API-Key': key });
    expect(reply.status).toBe(401);
    expect(json(reply).type).toBe('urn:portico:problem:invalid-credentials');
  });

  it('maps records with resolve, and refuses the key when resolve answers undefined', async () => {
    const disabled = new Set<string>();
    const { server, inner, key } = await setup({
      async resolve(record, req) {
        if (disabled.has(record.owner)) return undefined;
        return {
          sub: record.owner,
          role: 'admin',
          scopes: record.scopes ?? ['read:messages', 'write:messages'],
          method: 'api_key',
          keyId: record.id,
          name: String(req.headers['x-name']),
        };
      },
    });
    const bob = await importApiKey(inner, 'bob-operator-key-4f7a9c2e1b', { owner: 'bob' });
    const first = await get(server, '/', { 'X-API-Key': key, 'X-Name': 'Alice' });
    expect(json(first)).toMatchObject({ sub: 'alice', role: 'admin', name: 'Alice' });
    const imported = await get(server, '/', { 'X-API-Key': 'bob-operator-key-4f7a9c2e1b' });
    expect(json(imported)).toMatchObject({
      sub: 'bob',
      keyId: bob.id,
      scopes: ['read:messages', 'write:messages'],
    });
    disabled.add('alice');
    expect((await get(server, '/', { 'X-API-Key': key })).status).toBe(401);
  });

  it('confirms the stored hash, so a store answering another record is refused', async () => {
    const record: ApiKeyRecord = {
      id: 'key_x',
      hash: hashApiKey('something else'),
      owner: 'mallory',
      createdAt: new Date().toISOString(),
    };
    const store: ApiKeyStore = {
      findByHash: () => record,
      save: () => {},
      delete: () => false,
      get: () => undefined,
      list: () => [],
    };
    const server = await serve([authenticate([apiKeyAuth({ store, prefix: false })]), echo]);
    const reply = await get(server, '/', { 'X-API-Key': 'any-key-at-all' });
    expect(reply.status).toBe(401);
  });

  it('validates its options once, with typo hints', () => {
    const store = new MemoryApiKeyStore();
    expect(() => apiKeyAuth({ store, queryParamter: true } as never)).toThrow(
      /Did you mean `queryParameter`/,
    );
    expect(() => apiKeyAuth({} as never)).toThrow(/store/);
    expect(() => apiKeyAuth({ store, header: 'X API Key' })).toThrow(TypeError);
    expect(() => apiKeyAuth({ store, queryParameter: '' })).toThrow(TypeError);
    expect(() => apiKeyAuth({ store, prefix: 'P' })).toThrow(TypeError);
    expect(() => apiKeyAuth({ store, realm: 'a\nb' })).toThrow(TypeError);
  });
});
