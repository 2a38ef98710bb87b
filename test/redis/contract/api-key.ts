// RedisApiKeyStore: records, the hash index and the lists, across processes; a hash is held
// by one id only, even when two processes save it at once.
import { expect } from 'vitest';
import { hashApiKey } from '../../../src/auth/api-key/api-key.js';
import type { ApiKeyRecord } from '../../../src/auth/api-key/store.js';
import { createRevocations } from '../../../src/auth/revocations.js';
import { RedisApiKeyStore } from '../../../src/redis/api-key-store.js';
import { expectReplacementsRevoked } from '../../auth/api-key/store-checks.js';
import { asClient, type CheckContext, type CheckGroup } from './check.js';

const apiKeyStore = ({ client, prefix }: CheckContext) =>
  new RedisApiKeyStore({ client: asClient(client()), prefix });

function record(id: string, overrides: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  return {
    id,
    hash: hashApiKey(`secret-of-${id}`),
    owner: 'alice',
    createdAt: new Date().toISOString(),
    ...overrides,
  };
}

const ids = (records: readonly ApiKeyRecord[]) => records.map((r) => r.id);

export const apiKeyChecks: CheckGroup = {
  store: 'RedisApiKeyStore',
  checks: [
    {
      name: 'saves, finds by hash, gets, lists (all and per owner, oldest first) and deletes',
      async run(context) {
        const [a, b] = [apiKeyStore(context), apiKeyStore(context)];
        const k1 = record('key_1', { name: 'CI', scopes: ['read:messages', 'write:messages'] });
        const k2 = record('key_2', { owner: 'bob' });
        const k3 = record('key_3', { scopes: [] });
        for (const r of [k1, k2, k3]) await a.save(r);
        expect(await b.findByHash(k2.hash)).toEqual(k2);
        expect(await b.get('key_1')).toEqual(k1);
        expect(await b.get('key_3')).toEqual(k3);
        expect(await b.list()).toEqual([k1, k2, k3]);
        expect(await b.list('alice')).toEqual([k1, k3]);
        expect(await b.list('bob')).toEqual([k2]);
        expect(await b.list('nobody')).toEqual([]);
        expect(await b.get('never')).toBeUndefined();
        expect(await b.findByHash(hashApiKey('never'))).toBeUndefined();

        // replaced under its id: it keeps its place; a new hash and owner are indexed anew
        const renamed = { ...k1, name: 'CI deploy' };
        await b.save(renamed);
        expect(ids(await a.list())).toEqual(['key_1', 'key_2', 'key_3']);
        expect(await a.get('key_1')).toEqual(renamed);
        const moved = { ...k1, hash: hashApiKey('rotated'), owner: 'bob' };
        await b.save(moved);
        expect(await a.findByHash(k1.hash)).toBeUndefined();
        expect(await a.findByHash(moved.hash)).toEqual(moved);
        expect(ids(await a.list('alice'))).toEqual(['key_3']);
        expect(ids(await a.list('bob'))).toEqual(['key_1', 'key_2']);

        expect(await a.delete('key_2')).toBe(true);
        expect(await b.delete('key_2')).toBe(false);
        expect(await b.get('key_2')).toBeUndefined();
        expect(await b.findByHash(k2.hash)).toBeUndefined();
        expect(ids(await b.list())).toEqual(['key_1', 'key_3']);
        expect(ids(await b.list('bob'))).toEqual(['key_1']);
        expect(await a.delete('never')).toBe(false);
      },
    },
    {
      name: 'announces the revocation of a key replaced under its id (new hash, owner or scopes), not of one saved again as it was',
      async run(context) {
        const revocations = createRevocations();
        const store = new RedisApiKeyStore({
          client: asClient(context.client()),
          prefix: context.prefix,
          revocations,
        });
        await expectReplacementsRevoked(store, revocations);
        revocations.close();
      },
    },
    {
      name: 'refuses a second record with the same hash under another id (ERR_API_KEY_EXISTS)',
      async run(context) {
        const [a, b] = [apiKeyStore(context), apiKeyStore(context)];
        const first = record('key_first');
        await a.save(first);
        const second = record('key_second', { hash: first.hash, owner: 'mallory' });
        await expect(b.save(second)).rejects.toMatchObject({
          status: 409,
          code: 'ERR_API_KEY_EXISTS',
        });
        expect(await a.get('key_second')).toBeUndefined();
        expect(await a.findByHash(first.hash)).toEqual(first);
        expect(await a.list()).toEqual([first]);
        expect(await a.list('mallory')).toEqual([]);
        // once the first is deleted, its hash is free
        expect(await a.delete('key_first')).toBe(true);
        await b.save(second);
        expect(await a.findByHash(first.hash)).toEqual(second);
      },
    },
    {
      name: 'lets exactly one of two simultaneous saves of one hash under two ids succeed',
      async run(context) {
        const [a, b] = [apiKeyStore(context), apiKeyStore(context)];
        for (let round = 0; round < 5; round++) {
          const hash = hashApiKey(`shared-${round}`);
          const records = [record(`key_${round}_a`, { hash }), record(`key_${round}_b`, { hash })];
          const outcomes = await Promise.allSettled([a.save(records[0]!), b.save(records[1]!)]);
          const won = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [records[i]!] : []));
          expect(won).toHaveLength(1);
          const lost = outcomes.find((o) => o.status === 'rejected');
          expect(lost?.status === 'rejected' ? lost.reason : undefined).toMatchObject({
            code: 'ERR_API_KEY_EXISTS',
          });
          expect(await a.findByHash(hash)).toEqual(won[0]);
          const loser = records.find((r) => r.id !== won[0]!.id)!;
          expect(await b.get(loser.id)).toBeUndefined();
        }
        expect(await a.list()).toHaveLength(5);
      },
    },
  ],
};
