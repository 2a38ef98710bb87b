// RedisOAuthStore: the checks of the OAuthStore contract of test/redis/oauth-store.test.ts
// (copied from its CONTRACT, the Redis clock: time passes for real), and those of its Redis
// suite that need two processes: one consumption seen by the other, simultaneous redemptions.
import { expect } from 'vitest';
import type {
  AuthorizationCodeRecord,
  DeviceCodeRecord,
  RefreshTokenRecord,
} from '../../../src/oauth/store.js';
import { RedisOAuthStore } from '../../../src/redis/oauth-store.js';
import { asClient, type CheckContext, type CheckGroup, sleep } from './check.js';

/** Time to live of the records of the contract: short, as Redis lets it pass for real. */
const TTL = 400;

/** Lets `ms` pass, and a little more (Redis expires keys on its own clock). */
const elapse = (ms: number) => sleep(ms + 30);
const now = () => Date.now();

const oauthStore = ({ client, prefix }: CheckContext) =>
  new RedisOAuthStore({ client: asClient(client()), prefix });

const code: AuthorizationCodeRecord = {
  clientId: 'c',
  redirectUri: 'https://a/cb',
  sub: 'alice',
  scope: ['openid'],
  authTime: 1,
  grantId: 'g1',
  dpopJkt: 'k'.repeat(43),
};

const refreshRecord = (): RefreshTokenRecord => ({
  clientId: 'c',
  sub: 'alice',
  scope: ['openid'],
  grantId: 'g',
  familyExpiresAt: Date.now() + 1e6,
});

const device: DeviceCodeRecord = {
  clientId: 'd',
  scope: ['openid'],
  userCode: 'ABCDEFGH',
  status: 'pending',
  interval: 5_000,
  grantId: 'g',
};

export const oauthChecks: CheckGroup = {
  store: 'RedisOAuthStore',
  checks: [
    {
      name: 'gives a pushed request once, as it was pushed, and forgets it when its time is up',
      async run(context) {
        const store = oauthStore(context);
        const pushed = {
          clientId: 'c',
          params: [
            ['response_type', 'code'],
            ['scope', 'openid profile'],
            ['dpop_jkt', 'x'.repeat(43)],
          ] as [string, string][],
        };
        await store.savePushedRequest('p1', pushed, TTL);
        await store.savePushedRequest('p2', pushed, TTL);
        expect(await store.consumePushedRequest('p1')).toEqual(pushed);
        expect(await store.consumePushedRequest('p1')).toBeUndefined();
        await elapse(TTL);
        expect(await store.consumePushedRequest('p2')).toBeUndefined();
        expect(await store.consumePushedRequest('never')).toBeUndefined();
      },
    },
    {
      name: 'consumes a code once and remembers it was used until it would have expired',
      async run(context) {
        const store = oauthStore(context);
        await store.saveCode('h', code, TTL);
        const before = now();
        expect(await store.consumeCode('h')).toEqual({ state: 'fresh', record: code });
        const after = now();
        await elapse(20);
        const again = await store.consumeCode('h');
        expect(again).toMatchObject({ state: 'used', record: code });
        const usedAt = again?.state === 'used' ? again.usedAt : Number.NaN;
        expect(usedAt).toBeGreaterThanOrEqual(before);
        expect(usedAt).toBeLessThanOrEqual(after);
        await elapse(TTL);
        expect(await store.consumeCode('h')).toBeUndefined();
      },
    },
    {
      name: 'reads a code without consuming it, fresh then used',
      async run(context) {
        const store = oauthStore(context);
        await store.saveCode('read', code, TTL);
        expect(await store.getCode('read')).toEqual({ state: 'fresh', record: code });
        expect(await store.getCode('read')).toEqual({ state: 'fresh', record: code });
        expect((await store.consumeCode('read'))?.state).toBe('fresh');
        expect(await store.getCode('read')).toMatchObject({ state: 'used', record: code });
        expect((await store.consumeCode('read'))?.state).toBe('used');
      },
    },
    {
      name: 'reports the first use on every later consumption, not the latest',
      async run(context) {
        const store = oauthStore(context);
        await store.saveRefreshToken('r', refreshRecord(), TTL);
        const before = now();
        expect((await store.rotateRefreshToken('r'))?.state).toBe('fresh');
        const after = now();
        await elapse(30);
        const second = await store.rotateRefreshToken('r');
        await elapse(30);
        const third = await store.rotateRefreshToken('r');
        const read = await store.getRefreshToken('r');
        for (const seen of [second, third, read]) {
          expect(seen?.state).toBe('used');
          const usedAt = seen?.state === 'used' ? seen.usedAt : Number.NaN;
          expect(usedAt).toBeGreaterThanOrEqual(before);
          expect(usedAt).toBeLessThanOrEqual(after);
        }
        expect(second).toEqual(third);
      },
    },
    {
      name: 'rotates a refresh token once, reads it without consuming, and deletes it',
      async run(context) {
        const store = oauthStore(context);
        const record = refreshRecord();
        await store.saveRefreshToken('r', record, 1e6);
        expect(await store.getRefreshToken('r')).toEqual({ state: 'fresh', record });
        expect(await store.getRefreshToken('r')).toEqual({ state: 'fresh', record });
        expect((await store.rotateRefreshToken('r'))?.state).toBe('fresh');
        expect((await store.rotateRefreshToken('r'))?.state).toBe('used');
        expect(await store.getRefreshToken('r')).toMatchObject({ state: 'used', record });
        await store.deleteRefreshToken('r');
        expect(await store.getRefreshToken('r')).toBeUndefined();
        expect(await store.rotateRefreshToken('r')).toBeUndefined();
        await store.deleteRefreshToken('never-saved');
      },
    },
    {
      name: 'forgets a refresh token when its time is up, used or not',
      async run(context) {
        const store = oauthStore(context);
        await store.saveRefreshToken('fresh', refreshRecord(), TTL);
        await store.saveRefreshToken('used', refreshRecord(), TTL);
        await store.rotateRefreshToken('used');
        await elapse(TTL);
        expect(await store.getRefreshToken('fresh')).toBeUndefined();
        expect(await store.rotateRefreshToken('used')).toBeUndefined();
      },
    },
    {
      name: 'keeps every field of the records as given',
      async run(context) {
        const store = oauthStore(context);
        const full: AuthorizationCodeRecord = {
          ...code,
          redirectUriOmitted: true,
          codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
          nonce: 'n-0S6_WzA2Mj "quoted" ✓',
          scope: ['openid', 'profile', 'read:messages'],
        };
        await store.saveCode('full', full, TTL);
        expect(await store.consumeCode('full')).toEqual({ state: 'fresh', record: full });
        const rt = { ...refreshRecord(), scope: [], authTime: 1_700_000_000 };
        await store.saveRefreshToken('full', rt, TTL);
        expect(await store.getRefreshToken('full')).toEqual({ state: 'fresh', record: rt });
        const approved: DeviceCodeRecord = {
          ...device,
          userCode: 'BCDFGHJK',
          status: 'approved',
          sub: 'alice',
          authTime: 1_700_000_000,
          lastPollAt: 1_700_000_000_123,
          expiresAt: 1_700_000_600_000,
        };
        await store.saveDeviceCode('full', approved, TTL);
        expect(await store.getDeviceCode('full')).toEqual(approved);
      },
    },
    {
      name: 'finds device codes by user code, updates them in place and consumes once',
      async run(context) {
        const store = oauthStore(context);
        await store.saveDeviceCode('dh', device, 600_000);
        expect(await store.findDeviceCode('ABCDEFGH')).toEqual({ hash: 'dh', record: device });
        expect(await store.findDeviceCode('ZZZZZZZZ')).toBeUndefined();
        await store.updateDeviceCode('dh', { ...device, status: 'approved', sub: 'alice' });
        expect(await store.getDeviceCode('dh')).toMatchObject({ status: 'approved', sub: 'alice' });
        expect(await store.findDeviceCode('ABCDEFGH')).toMatchObject({
          hash: 'dh',
          record: { status: 'approved', sub: 'alice' },
        });
        expect(await store.consumeDeviceCode('dh')).toBe(true);
        expect(await store.consumeDeviceCode('dh')).toBe(false);
        expect(await store.findDeviceCode('ABCDEFGH')).toBeUndefined();
        expect(await store.getDeviceCode('dh')).toBeUndefined();
      },
    },
    {
      name: 'keeps a device code’s expiry when it is updated, and never brings one back',
      async run(context) {
        const store = oauthStore(context);
        await store.saveDeviceCode('dh', device, TTL);
        await elapse(TTL / 2);
        await store.updateDeviceCode('dh', { ...device, lastPollAt: Date.now(), interval: 10_000 });
        expect(await store.getDeviceCode('dh')).toMatchObject({ interval: 10_000 });
        await elapse(TTL / 2);
        expect(await store.getDeviceCode('dh')).toBeUndefined();
        expect(await store.findDeviceCode('ABCDEFGH')).toBeUndefined();
        await store.updateDeviceCode('dh', { ...device, status: 'approved', sub: 'alice' });
        expect(await store.getDeviceCode('dh')).toBeUndefined();
        expect(await store.consumeDeviceCode('dh')).toBe(false);
      },
    },
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
      name: 'revokes grants for a while',
      async run(context) {
        const store = oauthStore(context);
        await store.revokeGrant('g', TTL);
        expect(await store.isGrantRevoked('g')).toBe(true);
        expect(await store.isGrantRevoked('other')).toBe(false);
        await elapse(TTL);
        expect(await store.isGrantRevoked('g')).toBe(false);
      },
    },
    {
      name: 'knows nothing of values it was never given',
      async run(context) {
        const store = oauthStore(context);
        expect(await store.consumeCode('nope')).toBeUndefined();
        expect(await store.getCode('nope')).toBeUndefined();
        expect(await store.rotateRefreshToken('nope')).toBeUndefined();
        expect(await store.getRefreshToken('nope')).toBeUndefined();
        expect(await store.getDeviceCode('nope')).toBeUndefined();
        expect(await store.findDeviceCode('NOPENOPE')).toBeUndefined();
        expect(await store.consumeDeviceCode('nope')).toBe(false);
        expect(await store.consumePushedRequest('nope')).toBeUndefined();
        expect(await store.isGrantRevoked('nope')).toBe(false);
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
        expect(await b.consumePushedRequest('p')).toEqual({
          clientId: 'c',
          params: [['scope', 'openid']],
        });
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
