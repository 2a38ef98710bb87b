// The generic RecordStore contract: every operation on plain JSON records of made-up kinds,
// run against MemoryRecordStore (store.test.ts) and RedisRecordStore on every Redis target,
// one node and a cluster (test/redis/contract/oauth.ts). The harness gives a fresh store and
// its clock: `elapse` moves the memory store's, and sleeps for Redis (whose keys expire on
// its own clock).
import { expect } from 'vitest';
import type { Harness } from './store-contract.js';

/** Lifetime of the records of these checks: short, as Redis lets it pass for real. */
const TTL = 400;

const thing = (n: number, extra: Record<string, unknown> = {}) => ({
  n,
  name: `thing ${n}`,
  tags: ['a', 'b'],
  nested: { deep: [1, { x: null }] },
  ...extra,
});

/** Runs `run` and resolves to what it threw or rejected with (a store may do either). */
async function failure(run: () => unknown): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error('expected a failure');
}

export const RECORD_STORE_CONTRACT: readonly { name: string; run(h: Harness): Promise<void> }[] = [
  {
    name: 'record store: saves, finds and replaces a JSON record by kind and id, each kind apart',
    async run({ store }) {
      expect(await store.find('thing', 'a')).toBeUndefined();
      await store.save('thing', 'a', thing(1), 60_000);
      expect(await store.find('thing', 'a')).toEqual({ state: 'fresh', record: thing(1) });
      // the same id in another kind is another record
      expect(await store.find('other', 'a')).toBeUndefined();
      await store.save('other', 'a', thing(2), 60_000);
      expect((await store.find('thing', 'a'))?.record).toEqual(thing(1));
      // saving again replaces, and a consumed record saved again is fresh
      await store.consume('thing', 'a');
      await store.save('thing', 'a', thing(3), 60_000);
      expect(await store.find('thing', 'a')).toEqual({ state: 'fresh', record: thing(3) });
      // what the store hands back is a copy: changing it changes nothing stored
      const read = await store.find('thing', 'a');
      (read!.record as { n: number }).n = 99;
      expect((await store.find('thing', 'a'))?.record).toEqual(thing(3));
    },
  },
  {
    name: 'record store: forgets a record when its lifetime ends; a lifetime over removes it',
    async run({ store, elapse }) {
      await store.save('thing', 'short', thing(1), TTL);
      await store.save('thing', 'long', thing(2), 60_000);
      await store.save('thing', 'gone', thing(3), 60_000);
      await store.save('thing', 'gone', thing(3), 0);
      expect(await store.find('thing', 'gone')).toBeUndefined();
      await store.save('thing', 'never', thing(4), -5);
      expect(await store.find('thing', 'never')).toBeUndefined();
      await elapse(TTL);
      expect(await store.find('thing', 'short')).toBeUndefined();
      expect(await store.consume('thing', 'short')).toBeUndefined();
      expect((await store.find('thing', 'long'))?.state).toBe('fresh');
      const error = await failure(() => store.save('thing', 'nan', thing(5), Number.NaN));
      expect(error).toMatchObject({ code: 'ERR_INVALID_OPTION' });
    },
  },
  {
    name: 'record store: consumes once, reports the first use after, and keeps the lifetime',
    async run({ store, now, elapse }) {
      expect(await store.consume('thing', 'none')).toBeUndefined();
      await store.save('thing', 'c', thing(1), TTL);
      const before = now();
      expect(await store.consume('thing', 'c')).toEqual({ state: 'fresh', record: thing(1) });
      const first = await store.consume('thing', 'c');
      expect(first).toMatchObject({ state: 'used', record: thing(1) });
      const usedAt = first?.state === 'used' ? first.usedAt : Number.NaN;
      expect(usedAt).toBeGreaterThanOrEqual(before - 1);
      await elapse(TTL / 4);
      expect(await store.consume('thing', 'c')).toEqual({
        state: 'used',
        record: thing(1),
        usedAt,
      });
      expect(await store.find('thing', 'c')).toEqual({ state: 'used', record: thing(1), usedAt });
      // consuming did not extend the record
      await elapse(TTL);
      expect(await store.find('thing', 'c')).toBeUndefined();
    },
  },
  {
    name: 'record store: of 20 simultaneous consumptions exactly one is the first use',
    async run({ store }) {
      await store.save('thing', 'race', thing(1), 60_000);
      const all = await Promise.all(
        Array.from({ length: 20 }, async () => store.consume('thing', 'race')),
      );
      expect(all.filter((one) => one?.state === 'fresh')).toHaveLength(1);
      const used = all.filter((one) => one?.state === 'used');
      expect(used).toHaveLength(19);
      expect(new Set(used.map((one) => (one?.state === 'used' ? one.usedAt : 0))).size).toBe(1);
    },
  },
  {
    name: 'record store: finds a record by its lookup key, and by none it no longer has',
    async run({ store }) {
      await store.save('thing', 'a', thing(1), 60_000, { lookup: 'KEY-1' });
      expect(await store.findByKey('thing', 'KEY-1')).toEqual({
        id: 'a',
        state: 'fresh',
        record: thing(1),
      });
      expect(await store.findByKey('thing', 'KEY-2')).toBeUndefined();
      // a lookup key belongs to its kind
      expect(await store.findByKey('other', 'KEY-1')).toBeUndefined();
      // the record's state shows through its key
      await store.consume('thing', 'a');
      expect(await store.findByKey('thing', 'KEY-1')).toMatchObject({ id: 'a', state: 'used' });
      // saved again under another key: the old one finds nothing
      await store.save('thing', 'a', thing(2), 60_000, { lookup: 'KEY-2' });
      expect(await store.findByKey('thing', 'KEY-1')).toBeUndefined();
      expect(await store.findByKey('thing', 'KEY-2')).toMatchObject({ id: 'a', record: thing(2) });
      // saved again without a key: found by none
      await store.save('thing', 'a', thing(3), 60_000);
      expect(await store.findByKey('thing', 'KEY-2')).toBeUndefined();
      // removed: its key goes with it
      await store.save('thing', 'b', thing(4), 60_000, { lookup: 'KEY-3' });
      expect(await store.destroy('thing', 'b')).toBe(true);
      expect(await store.findByKey('thing', 'KEY-3')).toBeUndefined();
    },
  },
  {
    name: 'record store: lists the live records of a group, and only those',
    async run({ store, elapse }) {
      await store.save('thing', 'a1', thing(1), 60_000, { group: 'alice' });
      await store.save('thing', 'a2', thing(2), TTL, { group: 'alice' });
      await store.save('thing', 'b1', thing(3), 60_000, { group: 'bob' });
      await store.save('other', 'a3', thing(4), 60_000, { group: 'alice' });
      const ids = async (group: string) =>
        (await store.list('thing', group)).map((found) => found.id).sort();
      expect(await ids('alice')).toEqual(['a1', 'a2']);
      expect(await ids('bob')).toEqual(['b1']);
      expect(await ids('carol')).toEqual([]);
      expect((await store.list('thing', 'alice')).find((found) => found.id === 'a1')).toEqual({
        id: 'a1',
        state: 'fresh',
        record: thing(1),
      });
      // replaced in place: listed once, with the new record
      await store.save('thing', 'a1', thing(5), 60_000, { group: 'alice' });
      expect(await store.list('thing', 'alice')).toContainEqual({
        id: 'a1',
        state: 'fresh',
        record: thing(5),
      });
      expect(await ids('alice')).toEqual(['a1', 'a2']);
      // moved to another group, removed, or past its time: no longer listed
      await store.save('thing', 'b1', thing(3), 60_000, { group: 'alice' });
      expect(await ids('bob')).toEqual([]);
      expect(await store.destroy('thing', 'a1')).toBe(true);
      await elapse(TTL);
      expect(await ids('alice')).toEqual(['b1']);
    },
  },
  {
    name: 'record store: replaces a live unused record when it meets the condition, keeping its lifetime and keys',
    async run({ store, elapse }) {
      expect(await store.replace('thing', 'none', thing(1))).toBe(false);
      expect(await store.find('thing', 'none')).toBeUndefined();
      await store.save('thing', 'r', thing(1, { status: 'pending' }), TTL, {
        lookup: 'R-KEY',
        group: 'g',
      });
      // a condition that does not hold changes nothing
      expect(await store.replace('thing', 'r', thing(2), { status: 'approved' })).toBe(false);
      expect(await store.replace('thing', 'r', thing(2), { status: 'pending', n: 2 })).toBe(false);
      expect((await store.find('thing', 'r'))?.record).toEqual(thing(1, { status: 'pending' }));
      // one that holds replaces; the record is still found by its keys
      const next = thing(2, { status: 'approved', at: 1_767_225_600_000, ok: true });
      expect(await store.replace('thing', 'r', next, { status: 'pending', n: 1 })).toBe(true);
      expect(await store.find('thing', 'r')).toEqual({ state: 'fresh', record: next });
      expect(await store.findByKey('thing', 'R-KEY')).toMatchObject({ id: 'r', record: next });
      expect(await store.list('thing', 'g')).toEqual([{ id: 'r', state: 'fresh', record: next }]);
      // conditions on numbers and booleans
      expect(await store.replace('thing', 'r', next, { at: 1_767_225_600_000, ok: true })).toBe(
        true,
      );
      expect(await store.replace('thing', 'r', next, { ok: false })).toBe(false);
      // a used record is not replaced
      await store.save('thing', 'u', thing(3), 60_000);
      await store.consume('thing', 'u');
      expect(await store.replace('thing', 'u', thing(4))).toBe(false);
      expect((await store.find('thing', 'u'))?.record).toEqual(thing(3));
      // the replaced record ends when the first one would have
      await elapse(TTL);
      expect(await store.find('thing', 'r')).toBeUndefined();
      expect(await store.findByKey('thing', 'R-KEY')).toBeUndefined();
    },
  },
  {
    name: 'record store: destroys once (one of 10 simultaneous calls), when it meets the condition',
    async run({ store }) {
      expect(await store.destroy('thing', 'none')).toBe(false);
      await store.save('thing', 'd', thing(1, { owner: 'alice' }), 60_000);
      expect(await store.destroy('thing', 'd', { owner: 'bob' })).toBe(false);
      expect((await store.find('thing', 'd'))?.record).toEqual(thing(1, { owner: 'alice' }));
      const all = await Promise.all(
        Array.from({ length: 10 }, async () => store.destroy('thing', 'd', { owner: 'alice' })),
      );
      expect(all.filter(Boolean)).toHaveLength(1);
      expect(await store.find('thing', 'd')).toBeUndefined();
      // a used record is destroyed too
      await store.save('thing', 'u', thing(2), 60_000);
      await store.consume('thing', 'u');
      expect(await store.destroy('thing', 'u')).toBe(true);
      expect(await store.find('thing', 'u')).toBeUndefined();
    },
  },
  {
    name: 'record store: revokes a grant for a while, never shortened by a later revocation',
    async run({ store, elapse }) {
      expect(await store.isGrantRevoked('g')).toBe(false);
      await store.revokeGrant('g', TTL);
      await store.revokeGrant('g', 1);
      await store.revokeGrant('g', 0);
      expect(await store.isGrantRevoked('g')).toBe(true);
      expect(await store.isGrantRevoked('h')).toBe(false);
      await store.revokeGrant('long', 60_000);
      await elapse(TTL);
      expect(await store.isGrantRevoked('g')).toBe(false);
      expect(await store.isGrantRevoked('long')).toBe(true);
    },
  },
  {
    name: 'record store: refuses kind names that are not short lower-case words',
    async run({ store }) {
      for (const kind of ['', 'Thing', 'a b', 'revoked', 'x:y', 'k'.repeat(33)]) {
        const error = await failure(() => store.find(kind, 'id'));
        expect(error, kind).toMatchObject({ code: 'ERR_INVALID_OPTION' });
      }
    },
  },
];
