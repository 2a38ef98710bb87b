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
import { RedisRecordStore } from '../../../src/redis/record-store.js';
import {
  code,
  device,
  OAUTH_STORE_CONTRACT,
  refreshRecord,
} from '../../oauth/store/store-contract.js';
import { asClient, type CheckContext, type CheckGroup, sleep } from './check.js';

const oauthStore = ({ client, prefix }: CheckContext) =>
  new RedisRecordStore({ client: asClient(client()), prefix });

export const oauthChecks: CheckGroup = {
  store: 'RedisRecordStore',
  checks: [
    ...OAUTH_STORE_CONTRACT.map(({ name, run }) => ({
      name,
      run: (context: CheckContext) =>
        // Redis expires keys on its own clock: let a little more than `ms` pass
        run({ store: oauthStore(context), now: Date.now, elapse: (ms) => sleep(ms + 30) }),
    })),
    {
      name: 'never undoes a decision with a stale "pending" write (a poll racing the approval)',
      async run(context) {
        const store = oauthStore(context);
        await deviceCodes(store).save('d', device, 60_000);
        const polled = await deviceCodes(store).get('d');
        await deviceCodes(store).replace('d', { ...device, status: 'approved', sub: 'alice' });
        await deviceCodes(store).replace('d', { ...polled!, lastPollAt: Date.now() });
        expect(await deviceCodes(store).get('d')).toMatchObject({
          status: 'approved',
          sub: 'alice',
        });
        // pending to pending, and one decision to another, are still written
        await deviceCodes(store).save('e', { ...device, userCode: 'BCDFGHJK' }, 60_000);
        await deviceCodes(store).replace('e', {
          ...device,
          userCode: 'BCDFGHJK',
          interval: 10_000,
        });
        expect(await deviceCodes(store).get('e')).toMatchObject({
          status: 'pending',
          interval: 10_000,
        });
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
