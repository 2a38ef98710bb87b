// RedisRecordStore: the RecordStore contract (test/oauth/store-contract.ts, on the Redis clock:
// time passes for real), and what needs two processes: one consumption seen by the other,
// simultaneous redemptions.
import { expect } from 'vitest';
import {
  codes,
  deviceCodes,
  pushedRequests,
  refreshTokens,
} from '../../../src/oauth/store/records.js';
import { connectionOf } from '../../../src/redis/commands.js';
import { RedisRecordStore } from '../../../src/redis/record-store.js';
import { RECORD_STORE_CONTRACT } from '../../oauth/store/record-store-contract.js';
import {
  code,
  device,
  OAUTH_STORE_CONTRACT,
  refreshRecord,
} from '../../oauth/store/store-contract.js';
import { asClient, type CheckContext, type CheckGroup, primariesOf, sleep } from './check.js';

const oauthStore = ({ client, prefix }: CheckContext) =>
  new RedisRecordStore({ client: asClient(client()), prefix });

export const oauthChecks: CheckGroup = {
  store: 'RedisRecordStore',
  checks: [
    ...[...RECORD_STORE_CONTRACT, ...OAUTH_STORE_CONTRACT].map(({ name, run }) => ({
      name,
      run: (context: CheckContext) =>
        // Redis expires keys on its own clock: let a little more than `ms` pass
        run({ store: oauthStore(context), now: Date.now, elapse: (ms) => sleep(ms + 30) }),
    })),
    {
      name: 'never undoes a decision with a stale "pending" write (a poll racing the approval)',
      async run(context) {
        const [poller, verifier] = [oauthStore(context), oauthStore(context)];
        const pending = { status: 'pending' } as const;
        await deviceCodes(poller).save('d', device, 60_000);
        const polled = await deviceCodes(poller).get('d');
        const approved = { ...device, status: 'approved' as const, sub: 'alice' };
        expect(await deviceCodes(verifier).replace('d', approved, pending)).toBe(true);
        // the poll read "pending" before the approval: its write is refused
        const stale = { ...polled!, lastPollAt: Date.now() };
        expect(await deviceCodes(poller).replace('d', stale, pending)).toBe(false);
        expect(await deviceCodes(poller).get('d')).toMatchObject({
          status: 'approved',
          sub: 'alice',
        });
        // a second decision is refused as well: decided once
        const denied = { ...device, status: 'denied' as const };
        expect(await deviceCodes(verifier).replace('d', denied, pending)).toBe(false);
        // pending to pending is still written
        await deviceCodes(poller).save('e', { ...device, userCode: 'BCDFGHJK' }, 60_000);
        const slower = { ...device, userCode: 'BCDFGHJK', interval: 10_000 };
        expect(await deviceCodes(poller).replace('e', slower, pending)).toBe(true);
        expect(await deviceCodes(verifier).get('e')).toMatchObject({
          status: 'pending',
          interval: 10_000,
        });
      },
    },
    {
      name: 'reads garbage under a record, lookup or group key as absent, never failing',
      async run(context) {
        const { prefix } = context;
        const store = oauthStore(context);
        const raw = connectionOf('test', context.client());
        const put = (key: string, command: (string | number)[]) =>
          raw.send(prefix + key, [command[0]!, prefix + key, ...command.slice(1)]);
        await put('thing:text', ['SET', 'not json']);
        await put('thing:array', ['SET', '[1,2]']);
        await put('thing:no-record', ['SET', '{"usedAt":1}']);
        await put('thing:record-string', ['SET', '{"record":"x"}']);
        await put('thing:bad-used', ['SET', '{"record":{},"usedAt":"soon"}']);
        await put('thing:hash', ['HSET', 'f', 'v']);
        await put('thing.key:K1', ['SET', 'text']);
        await put('thing.key:K2', ['SADD', 'x']);
        await put('thing.group:G1', ['SET', 'text']);
        await put('thing.group:G2', ['ZADD', Date.now() + 60_000, 'text']);
        for (const id of ['text', 'array', 'no-record', 'record-string', 'bad-used', 'hash']) {
          expect(await store.find('thing', id), id).toBeUndefined();
          expect(await store.consume('thing', id), id).toBeUndefined();
          expect(await store.replace('thing', id, { n: 1 }), id).toBe(false);
          expect(await store.destroy('thing', id), id).toBe(false);
        }
        expect(await store.findByKey('thing', 'K1')).toBeUndefined();
        expect(await store.findByKey('thing', 'K2')).toBeUndefined();
        expect(await store.list('thing', 'G1')).toEqual([]);
        expect(await store.list('thing', 'G2')).toEqual([]);
        // a group key of another type is taken over by the next save into the group
        await store.save('thing', 'ok', { n: 1 }, 60_000, { group: 'G1', lookup: 'K2' });
        expect(await store.list('thing', 'G1')).toEqual([
          { id: 'ok', state: 'fresh', record: { n: 1 } },
        ]);
        expect(await store.findByKey('thing', 'K2')).toMatchObject({ id: 'ok' });
        // a well-formed record of the wrong shape for its kind reads as absent through it
        await put('code:partial', ['SET', JSON.stringify({ record: { clientId: 'c' } })]);
        expect(await codes(store).find('partial')).toBeUndefined();
        expect(await codes(store).consume('partial')).toBeUndefined();
      },
    },
    {
      name: 'finds and lists records whose record, lookup and group keys lie on different primaries',
      clusterOnly: true,
      async run(context) {
        const { prefix } = context;
        const store = oauthStore(context);
        const ids = Array.from({ length: 30 }, (_, i) => `id${i}`);
        for (const id of ids) {
          await store.save('thing', id, { id }, 60_000, { lookup: `key-${id}`, group: 'one' });
        }
        const keys = ids.flatMap((id) => [`${prefix}thing:${id}`, `${prefix}thing.key:key-${id}`]);
        expect(await primariesOf(context, keys)).toBe(3);
        expect((await store.list('thing', 'one')).map((found) => found.id).sort()).toEqual(
          [...ids].sort(),
        );
        for (const id of ids) {
          expect(await store.findByKey('thing', `key-${id}`)).toMatchObject({ id, record: { id } });
        }
        expect(await store.destroy('thing', 'id0')).toBe(true);
        expect(await store.findByKey('thing', 'key-id0')).toBeUndefined();
        expect(await store.list('thing', 'one')).toHaveLength(29);
      },
    },
    {
      name: 'sees one process’s consumption from another (two stores on two clients)',
      async run(context) {
        const [a, b] = [oauthStore(context), oauthStore(context)];
        await codes(a).save('c', code, 60_000);
        expect((await codes(b).consume('c'))?.state).toBe('fresh');
        expect((await codes(a).consume('c'))?.state).toBe('used');

        await refreshTokens(b).save('r', refreshRecord(), 60_000);
        expect((await refreshTokens(a).consume('r'))?.state).toBe('fresh');
        expect((await refreshTokens(b).find('r'))?.state).toBe('used');
        expect((await refreshTokens(b).consume('r'))?.state).toBe('used');

        await deviceCodes(a).save('d', device, 60_000);
        const found = await deviceCodes(b).findByKey('ABCDEFGH');
        await deviceCodes(b).replace(found!.id, {
          ...found!.record,
          status: 'approved',
          sub: 'bob',
        });
        expect(await deviceCodes(a).get('d')).toMatchObject({ status: 'approved', sub: 'bob' });
        expect(await deviceCodes(a).destroy('d')).toBe(true);
        expect(await deviceCodes(b).destroy('d')).toBe(false);
        expect(await deviceCodes(b).findByKey('ABCDEFGH')).toBeUndefined();

        await pushedRequests(a).save('p', { clientId: 'c', params: [['scope', 'openid']] }, 60_000);
        expect(await pushedRequests(b).get('p')).toEqual({
          clientId: 'c',
          params: [['scope', 'openid']],
        });
        expect(await pushedRequests(b).take('p')).toEqual({
          clientId: 'c',
          params: [['scope', 'openid']],
        });
        expect(await pushedRequests(a).get('p')).toBeUndefined();
        expect(await pushedRequests(a).take('p')).toBeUndefined();

        await b.revokeGrant('g', 60_000);
        expect(await a.isGrantRevoked('g')).toBe(true);
      },
    },
    {
      name: 'lets exactly one of 20 simultaneous redemptions across two processes see a first use',
      async run(context) {
        const stores = [oauthStore(context), oauthStore(context)] as const;
        await refreshTokens(stores[0]).save('r', refreshRecord(), 60_000);
        await codes(stores[1]).save('c', code, 60_000);
        await deviceCodes(stores[0]).save(
          'd',
          { ...device, status: 'approved', sub: 'alice' },
          60_000,
        );
        await pushedRequests(stores[1]).save('p', { clientId: 'c', params: [] }, 60_000);
        const all = <T>(run: (store: RedisRecordStore) => Promise<T>) =>
          Promise.all(Array.from({ length: 20 }, (_, i) => run(stores[i % 2]!)));

        const rotated = await all((s) => refreshTokens(s).consume('r'));
        const fresh = rotated.filter((r) => r?.state === 'fresh');
        const used = rotated.filter((r) => r?.state === 'used');
        expect([fresh.length, used.length]).toEqual([1, 19]);
        // every later one reports the same first use
        expect(new Set(used.map((r) => (r?.state === 'used' ? r.usedAt : 0))).size).toBe(1);

        const redeemed = await all((s) => codes(s).consume('c'));
        expect(redeemed.filter((r) => r?.state === 'fresh')).toHaveLength(1);
        expect(redeemed.filter((r) => r?.state === 'used')).toHaveLength(19);

        const devices = await all((s) => deviceCodes(s).destroy('d'));
        expect(devices.filter(Boolean)).toHaveLength(1);

        const pushed = await all((s) => pushedRequests(s).take('p'));
        expect(pushed.filter((p) => p !== undefined)).toHaveLength(1);
      },
    },
  ],
};
