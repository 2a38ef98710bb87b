// RedisOAuthStore: the OAuthStore contract (test/oauth/store-contract.ts, on the Redis clock:
// time passes for real), and what needs two processes: one consumption seen by the other,
// simultaneous redemptions.
import { expect } from 'vitest';
import { RedisOAuthStore } from '../../../src/redis/oauth-store.js';
import {
  code,
  device,
  OAUTH_STORE_CONTRACT,
  refreshRecord,
} from '../../oauth/store/store-contract.js';
import { asClient, type CheckContext, type CheckGroup, sleep } from './check.js';

const oauthStore = ({ client, prefix }: CheckContext) =>
  new RedisOAuthStore({ client: asClient(client()), prefix });

export const oauthChecks: CheckGroup = {
  store: 'RedisOAuthStore',
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
        await store.saveDeviceCode('d', device, 60_000);
        const polled = await store.getDeviceCode('d');
        await store.updateDeviceCode('d', { ...device, status: 'approved', sub: 'alice' });
        await store.updateDeviceCode('d', { ...polled!, lastPollAt: Date.now() });
        expect(await store.getDeviceCode('d')).toMatchObject({ status: 'approved', sub: 'alice' });
        // pending to pending, and one decision to another, are still written
        await store.saveDeviceCode('e', { ...device, userCode: 'BCDFGHJK' }, 60_000);
        await store.updateDeviceCode('e', { ...device, userCode: 'BCDFGHJK', interval: 10_000 });
        expect(await store.getDeviceCode('e')).toMatchObject({
          status: 'pending',
          interval: 10_000,
        });
      },
    },
    {
      name: 'sees one process’s consumption from another (two stores on two clients)',
      async run(context) {
        const [a, b] = [oauthStore(context), oauthStore(context)];
        await a.saveCode('c', code, 60_000);
        expect((await b.consumeCode('c'))?.state).toBe('fresh');
        expect((await a.consumeCode('c'))?.state).toBe('used');

        await b.saveRefreshToken('r', refreshRecord(), 60_000);
        expect((await a.rotateRefreshToken('r'))?.state).toBe('fresh');
        expect((await b.getRefreshToken('r'))?.state).toBe('used');
        expect((await b.rotateRefreshToken('r'))?.state).toBe('used');

        await a.saveDeviceCode('d', device, 60_000);
        const found = await b.findDeviceCode('ABCDEFGH');
        await b.updateDeviceCode(found!.hash, { ...found!.record, status: 'approved', sub: 'bob' });
        expect(await a.getDeviceCode('d')).toMatchObject({ status: 'approved', sub: 'bob' });
        expect(await a.consumeDeviceCode('d')).toBe(true);
        expect(await b.consumeDeviceCode('d')).toBe(false);
        expect(await b.findDeviceCode('ABCDEFGH')).toBeUndefined();

        await a.savePushedRequest('p', { clientId: 'c', params: [['scope', 'openid']] }, 60_000);
        expect(await b.getPushedRequest('p')).toEqual({
          clientId: 'c',
          params: [['scope', 'openid']],
        });
        expect(await b.consumePushedRequest('p')).toEqual({
          clientId: 'c',
          params: [['scope', 'openid']],
        });
        expect(await a.getPushedRequest('p')).toBeUndefined();
        expect(await a.consumePushedRequest('p')).toBeUndefined();

        await b.revokeGrant('g', 60_000);
        expect(await a.isGrantRevoked('g')).toBe(true);
      },
    },
    {
      name: 'lets exactly one of 20 simultaneous redemptions across two processes see a first use',
      async run(context) {
        const stores = [oauthStore(context), oauthStore(context)] as const;
        await stores[0].saveRefreshToken('r', refreshRecord(), 60_000);
        await stores[1].saveCode('c', code, 60_000);
        await stores[0].saveDeviceCode(
          'd',
          { ...device, status: 'approved', sub: 'alice' },
          60_000,
        );
        await stores[1].savePushedRequest('p', { clientId: 'c', params: [] }, 60_000);
        const all = <T>(run: (store: RedisOAuthStore) => Promise<T>) =>
          Promise.all(Array.from({ length: 20 }, (_, i) => run(stores[i % 2]!)));

        const rotated = await all((s) => s.rotateRefreshToken('r'));
        const fresh = rotated.filter((r) => r?.state === 'fresh');
        const used = rotated.filter((r) => r?.state === 'used');
        expect([fresh.length, used.length]).toEqual([1, 19]);
        // every later one reports the same first use
        expect(new Set(used.map((r) => (r?.state === 'used' ? r.usedAt : 0))).size).toBe(1);

        const codes = await all((s) => s.consumeCode('c'));
        expect(codes.filter((r) => r?.state === 'fresh')).toHaveLength(1);
        expect(codes.filter((r) => r?.state === 'used')).toHaveLength(19);

        const devices = await all((s) => s.consumeDeviceCode('d'));
        expect(devices.filter(Boolean)).toHaveLength(1);

        const pushed = await all((s) => s.consumePushedRequest('p'));
        expect(pushed.filter((p) => p !== undefined)).toHaveLength(1);
      },
    },
  ],
};
