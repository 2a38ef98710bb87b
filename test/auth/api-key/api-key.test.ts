import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  API_KEY_PATTERN,
  apiKeyPattern,
  generateApiKey,
  hashApiKey,
  isWellFormedApiKey,
} from '../../../src/auth/api-key/api-key.js';
import {
  type ApiKeyRecord,
  createApiKey,
  importApiKey,
  MemoryApiKeyStore,
} from '../../../src/auth/api-key/store.js';
import { createRevocations } from '../../../src/auth/revocations.js';
import { HttpError } from '../../../src/core/errors/errors.js';
import { expectReplacementsRevoked } from './store-checks.js';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** The checksum as specified: CRC32 of `<prefix>_<secret>`, 6 base62 digits, big-endian. */
function expectedChecksum(body: string): string {
  let n = crc32(body);
  let out = '';
  for (let i = 0; i < 6; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

describe('generateApiKey', () => {
  it('has the form ptk_<32 base62><6 base62 checksum of the CRC32>', () => {
    const key = generateApiKey();
    expect(key).toMatch(/^ptk_[0-9A-Za-z]{38}$/);
    expect(key.slice(-6)).toBe(expectedChecksum(key.slice(0, -6)));
    expect(isWellFormedApiKey(key)).toBe(true);
  });

  it('takes another prefix and refuses a malformed one', () => {
    const key = generateApiKey({ prefix: 'acme2' });
    expect(key).toMatch(/^acme2_[0-9A-Za-z]{38}$/);
    expect(isWellFormedApiKey(key, { prefix: 'acme2' })).toBe(true);
    expect(isWellFormedApiKey(key)).toBe(false);
    for (const prefix of ['', 'a', 'Ptk', '1ab', 'ab_c', 'abcdefghijk']) {
      expect(() => generateApiKey({ prefix })).toThrow(TypeError);
    }
    expect(() => generateApiKey({ prefx: 'abc' } as never)).toThrow(/Did you mean `prefix`/);
  });

  it('gives 1000 distinct keys whose characters cover the whole base62 alphabet', () => {
    const keys = new Set<string>();
    const seen = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const key = generateApiKey();
      keys.add(key);
      for (const c of key.slice(4, 36)) seen.add(c);
    }
    expect(keys.size).toBe(1000);
    expect(seen.size).toBe(62);
  });

  it('draws secret characters without a visible modulo bias', () => {
    // 256 % 62 = 8: a biased draw would make '0'–'7' about 25% more frequent than the rest
    const counts = new Map<string, number>();
    for (let i = 0; i < 2000; i++) {
      for (const c of generateApiKey().slice(4, 36)) counts.set(c, (counts.get(c) ?? 0) + 1);
    }
    let low = 0;
    let high = 0;
    for (const c of BASE62.slice(0, 8)) low += counts.get(c) ?? 0;
    for (const c of BASE62.slice(8)) high += counts.get(c) ?? 0;
    const ratio = low / 8 / (high / 54); // expected 1.0; with bias ≈ 1.24
    expect(ratio).toBeGreaterThan(0.95);
    expect(ratio).toBeLessThan(1.05);
  });
});

describe('isWellFormedApiKey', () => {
  it('catches every single-character change of a sample of keys', () => {
    for (let k = 0; k < 5; k++) {
      const key = generateApiKey();
      let changes = 0;
      for (let i = 4; i < key.length; i++) {
        for (const c of ['0', 'a', 'Z', 'q', '9']) {
          if (c === key[i]) continue;
          const changed = key.slice(0, i) + c + key.slice(i + 1);
          expect(isWellFormedApiKey(changed), changed).toBe(false);
          changes++;
        }
      }
      expect(changes).toBeGreaterThan(38 * 4);
    }
  });

  it('refuses other shapes without throwing', () => {
    const key = generateApiKey();
    for (const value of [
      '',
      'ptk_',
      key.slice(0, -1),
      `${key}0`,
      key.replace('ptk_', 'ptk-'),
      key.replace('ptk_', 'PTK_'),
      `${key.slice(0, 10)}-${key.slice(11)}`,
      undefined,
      42,
      null,
    ]) {
      expect(isWellFormedApiKey(value)).toBe(false);
    }
  });
});

describe('API_KEY_PATTERN and apiKeyPattern', () => {
  it('find keys in text, and only whole keys', () => {
    const a = generateApiKey();
    const b = generateApiKey();
    const text = `token=${a}\nAuthorization: ${b}; x${generateApiKey()} ${a}Z`;
    const found = [...text.matchAll(apiKeyPattern())].map((m) => m[0]);
    expect(found).toEqual([a, b]);
    expect(new RegExp(API_KEY_PATTERN).test(`"${a}"`)).toBe(true);
    expect(new RegExp(API_KEY_PATTERN).test(`${a}0`)).toBe(false);
    const staging = generateApiKey({ prefix: 'ptks' });
    expect(`x ${staging} y`.match(apiKeyPattern({ prefix: 'ptks' }))).toEqual([staging]);
    expect(`x ${staging} y`.match(apiKeyPattern())).toBeNull();
  });
});

describe('hashApiKey', () => {
  it('is the base64url SHA-256 of the key', () => {
    expect(hashApiKey('abc')).toBe('ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0');
    const key = generateApiKey();
    expect(hashApiKey(key)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(hashApiKey(key)).not.toContain(key.slice(4, 12));
  });
});

describe('MemoryApiKeyStore, createApiKey and importApiKey', () => {
  it('stores the hash and never the key', async () => {
    const store = new MemoryApiKeyStore();
    const { key, record } = await createApiKey(store, {
      owner: 'alice',
      name: 'CI',
      scopes: ['read:messages'],
    });
    expect(record).toEqual({
      id: expect.stringMatching(/^key_[0-9A-Za-z]{16}$/),
      hash: hashApiKey(key),
      owner: 'alice',
      name: 'CI',
      scopes: ['read:messages'],
      createdAt: expect.any(String),
    });
    expect(new Date(record.createdAt).toISOString()).toBe(record.createdAt);
    const everything = JSON.stringify({ list: store.list(), byId: store.get(record.id) });
    expect(everything).toContain(record.hash);
    expect(everything).not.toContain(key);
    expect(everything).not.toContain(key.slice(4, 36));
    expect(store.findByHash(hashApiKey(key))).toEqual(record);
    expect(Object.isFrozen(store.get(record.id))).toBe(true);
  });

  it('copies records on save, so changing the original changes nothing stored', async () => {
    const store = new MemoryApiKeyStore();
    const scopes = ['read:messages'];
    const record = {
      id: 'key_1',
      hash: hashApiKey('x'),
      owner: 'bob',
      scopes,
      createdAt: new Date().toISOString(),
      key: 'must not be kept',
    } as ApiKeyRecord;
    store.save(record);
    scopes.push('write:messages');
    expect(store.get('key_1')?.scopes).toEqual(['read:messages']);
    expect(JSON.stringify(store.list())).not.toContain('must not be kept');
  });

  it('lists by owner, deletes by id, and refuses a second record for the same key', async () => {
    const store = new MemoryApiKeyStore();
    const a = await createApiKey(store, { owner: 'alice' });
    const b = await createApiKey(store, { owner: 'bob' });
    expect(store.list('alice').map((r) => r.id)).toEqual([a.record.id]);
    expect(store.list().map((r) => r.id)).toEqual([a.record.id, b.record.id]);
    expect(() => store.save({ ...a.record, id: 'key_other' })).toThrow(HttpError);
    expect(store.delete(a.record.id)).toBe(true);
    expect(store.delete(a.record.id)).toBe(false);
    expect(store.findByHash(a.record.hash)).toBeUndefined();
    expect(store.get(a.record.id)).toBeUndefined();
    expect(store.size).toBe(1);
  });

  it('validates scopes and name as a 400, the owner as a TypeError', async () => {
    const store = new MemoryApiKeyStore();
    await expect(
      createApiKey(store, { owner: 'a', scopes: ['not a scope'] }),
    ).rejects.toMatchObject({ status: 400, code: 'ERR_INVALID_SCOPE' });
    await expect(createApiKey(store, { owner: 'a', name: 'x\ny' })).rejects.toMatchObject({
      status: 400,
    });
    await expect(createApiKey(store, { owner: '' })).rejects.toThrow(TypeError);
    await expect(createApiKey(store, { ownr: 'a' } as never)).rejects.toThrow(
      /Did you mean `owner`/,
    );
    expect(store.size).toBe(0);
  });

  it('imports an operator key in any format, storing only its hash', async () => {
    const store = new MemoryApiKeyStore();
    const record = await importApiKey(store, 'demo-key-0123456789', { owner: 'alice' });
    expect(record.hash).toBe(hashApiKey('demo-key-0123456789'));
    expect(JSON.stringify(store.list())).not.toContain('demo-key');
    await expect(importApiKey(store, 'has space', { owner: 'a' })).rejects.toThrow(TypeError);
    await expect(importApiKey(store, '', { owner: 'a' })).rejects.toThrow(TypeError);
    // a ptk_ key with a wrong checksum would be refused by apiKeyAuth: refuse it here too
    const bad = `ptk_${'a'.repeat(38)}`;
    const error = await importApiKey(store, bad, { owner: 'a' }).catch((e: Error) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).not.toContain(bad);
    await expect(importApiKey(store, 'demo-key-0123456789', { owner: 'bob' })).rejects.toThrow(
      /already exists/,
    );
  });
});

describe('MemoryApiKeyStore: a record replaced under its id', () => {
  it('announces its revocation when its hash, owner or scopes change, not when saved as it was', async () => {
    const revocations = createRevocations();
    await expectReplacementsRevoked(new MemoryApiKeyStore({ revocations }), revocations);
    revocations.close();
  });

  it('refuses scopes that are not an array of strings', () => {
    const store = new MemoryApiKeyStore();
    const record = { id: 'k', hash: 'h', owner: 'o', createdAt: 'now' };
    for (const scopes of ['read:messages', [1], ['read:messages', 1], null]) {
      expect(() => store.save({ ...record, scopes } as never)).toThrow(
        "ApiKeyStore: a record's `scopes` must be an array of strings",
      );
    }
  });
});
