// The OAuthStore contract: what every store (MemoryOAuthStore, RedisOAuthStore on every Redis
// target of test/redis/contract/) does, through its public methods only, on the harness's clock.
import { expect } from 'vitest';
import type {
  AuthorizationCodeRecord,
  DeviceCodeRecord,
  GrantRecord,
  OAuthStore,
  RefreshTokenRecord,
} from '../../../src/oauth/store/store.js';

/** A store under test, with its clock: `elapse` moves the memory store's, sleeps for Redis. */
export interface Harness {
  store: OAuthStore;
  now(): number;
  elapse(ms: number): Promise<void>;
}

/** Time to live of the records of the contract: short, as Redis lets it pass for real. */
export const TTL = 400;

export const code: AuthorizationCodeRecord = {
  clientId: 'c',
  redirectUri: 'https://a/cb',
  sub: 'alice',
  scope: ['openid'],
  authTime: 1,
  grantId: 'g1',
  dpopJkt: 'k'.repeat(43),
};

export const refreshRecord = (): RefreshTokenRecord => ({
  clientId: 'c',
  sub: 'alice',
  scope: ['openid'],
  grantId: 'g',
  familyExpiresAt: Date.now() + 1e6,
});

export const device: DeviceCodeRecord = {
  clientId: 'd',
  scope: ['openid'],
  userCode: 'ABCDEFGH',
  status: 'pending',
  interval: 5_000,
  grantId: 'g',
};

/** The checks every OAuthStore passes, each given a fresh store and its clock. */
export const OAUTH_STORE_CONTRACT: readonly { name: string; run(h: Harness): Promise<void> }[] = [
  {
    name: 'gives a pushed request once, as it was pushed, and forgets it when its time is up',
    async run({ store, elapse }) {
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
      expect(await store.getPushedRequest('p1')).toBeUndefined();
      await elapse(TTL);
      expect(await store.getPushedRequest('p2')).toBeUndefined();
      expect(await store.consumePushedRequest('p2')).toBeUndefined();
      expect(await store.consumePushedRequest('never')).toBeUndefined();
    },
  },
  {
    name: 'reads a pushed request without taking it, as many times as asked, until it is taken',
    async run({ store }) {
      const pushed = { clientId: 'c', params: [['scope', 'openid']] as [string, string][] };
      await store.savePushedRequest('p', pushed, TTL);
      expect(await store.getPushedRequest('p')).toEqual(pushed);
      const read = await store.getPushedRequest('p');
      expect(read).toEqual(pushed);
      // what a caller does with the record it read is not the store's
      read!.clientId = 'someone else';
      read!.params.push(['scope', 'admin']);
      expect(await store.consumePushedRequest('p')).toEqual(pushed);
      expect(await store.getPushedRequest('p')).toBeUndefined();
    },
  },
  {
    name: 'consumes a code once and remembers it was used until it would have expired',
    async run({ store, now, elapse }) {
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
    async run({ store }) {
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
    async run({ store, now, elapse }) {
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
    async run({ store }) {
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
    async run({ store, elapse }) {
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
    async run({ store }) {
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
    async run({ store }) {
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
    async run({ store, elapse }) {
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
    name: 'remembers a consent per user and client, replaced by the next, listed oldest first',
    async run({ store }) {
      const grant = (id: string, clientId: string, createdAt: number): GrantRecord => ({
        id,
        sub: 'alice',
        clientId,
        scope: ['openid', 'read:messages'],
        createdAt,
      });
      await store.saveGrant(grant('g2', 'web', 2_000), 60_000);
      await store.saveGrant(grant('g1', 'spa', 1_000), 60_000);
      await store.saveGrant({ ...grant('g3', 'web', 3_000), sub: 'bob' }, 60_000);
      expect(await store.getGrant('alice', 'web')).toEqual(grant('g2', 'web', 2_000));
      expect(await store.getGrant('alice', 'tv')).toBeUndefined();
      expect(await store.getGrant('carol', 'web')).toBeUndefined();
      expect(await store.listGrants('alice')).toEqual([
        grant('g1', 'spa', 1_000),
        grant('g2', 'web', 2_000),
      ]);
      // the same user and client again: one consent, the new one
      const wider = { ...grant('g2', 'web', 2_000), scope: ['openid', 'read:messages', 'email'] };
      await store.saveGrant(wider, 60_000);
      expect(await store.getGrant('alice', 'web')).toEqual(wider);
      expect(await store.listGrants('alice')).toHaveLength(2);
      expect(await store.listGrants('bob')).toEqual([{ ...grant('g3', 'web', 3_000), sub: 'bob' }]);
      expect(await store.listGrants('nobody')).toEqual([]);
    },
  },
  {
    name: 'forgets a consent by id for its own user only, and each when its time is up',
    async run({ store, elapse }) {
      const grant = (id: string, clientId: string): GrantRecord => ({
        id,
        sub: 'alice',
        clientId,
        scope: ['openid'],
        createdAt: 1,
      });
      await store.saveGrant(grant('g1', 'web'), 60_000);
      await store.saveGrant(grant('g2', 'spa'), TTL);
      expect(await store.deleteGrant('bob', 'g1')).toBeUndefined();
      expect(await store.deleteGrant('alice', 'nope')).toBeUndefined();
      expect(await store.deleteGrant('alice', 'g1')).toEqual(grant('g1', 'web'));
      expect(await store.deleteGrant('alice', 'g1')).toBeUndefined();
      expect(await store.getGrant('alice', 'web')).toBeUndefined();
      expect(await store.listGrants('alice')).toEqual([grant('g2', 'spa')]);
      await elapse(TTL);
      expect(await store.getGrant('alice', 'spa')).toBeUndefined();
      expect(await store.listGrants('alice')).toEqual([]);
      expect(await store.deleteGrant('alice', 'g2')).toBeUndefined();
      // a short consent does not shorten a longer one of the same user
      await store.saveGrant(grant('g4', 'web'), 60_000);
      await store.saveGrant(grant('g5', 'spa'), TTL);
      await elapse(TTL);
      expect(await store.listGrants('alice')).toEqual([grant('g4', 'web')]);
    },
  },
  {
    name: 'revokes grants for a while',
    async run({ store, elapse }) {
      await store.revokeGrant('g', TTL);
      expect(await store.isGrantRevoked('g')).toBe(true);
      expect(await store.isGrantRevoked('other')).toBe(false);
      await elapse(TTL);
      expect(await store.isGrantRevoked('g')).toBe(false);
    },
  },
  {
    name: 'knows nothing of values it was never given',
    async run({ store }) {
      expect(await store.consumeCode('nope')).toBeUndefined();
      expect(await store.getCode('nope')).toBeUndefined();
      expect(await store.rotateRefreshToken('nope')).toBeUndefined();
      expect(await store.getRefreshToken('nope')).toBeUndefined();
      expect(await store.getDeviceCode('nope')).toBeUndefined();
      expect(await store.findDeviceCode('NOPENOPE')).toBeUndefined();
      expect(await store.consumeDeviceCode('nope')).toBe(false);
      expect(await store.getPushedRequest('nope')).toBeUndefined();
      expect(await store.consumePushedRequest('nope')).toBeUndefined();
      expect(await store.isGrantRevoked('nope')).toBe(false);
    },
  },
];
