// The RecordStore contract: what every store (MemoryRecordStore, RedisRecordStore on every Redis
// target of test/redis/contract/) does, through its public methods only, on the harness's clock.
import { expect } from 'vitest';
import {
  type AuthorizationCodeRecord,
  codes,
  consents,
  type DeviceCodeRecord,
  deviceCodes,
  type GrantRecord,
  pushedRequests,
  type RefreshTokenRecord,
  refreshTokens,
} from '../../../src/oauth/store/records.js';
import type { RecordStore } from '../../../src/oauth/store/store.js';

/** A store under test, with its clock: `elapse` moves the memory store's, sleeps for Redis. */
export interface Harness {
  store: RecordStore;
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

/** The checks every RecordStore passes, each given a fresh store and its clock. */
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
      await pushedRequests(store).save('p1', pushed, TTL);
      await pushedRequests(store).save('p2', pushed, TTL);
      expect(await pushedRequests(store).take('p1')).toEqual(pushed);
      expect(await pushedRequests(store).take('p1')).toBeUndefined();
      expect(await pushedRequests(store).get('p1')).toBeUndefined();
      await elapse(TTL);
      expect(await pushedRequests(store).get('p2')).toBeUndefined();
      expect(await pushedRequests(store).take('p2')).toBeUndefined();
      expect(await pushedRequests(store).take('never')).toBeUndefined();
    },
  },
  {
    name: 'reads a pushed request without taking it, as many times as asked, until it is taken',
    async run({ store }) {
      const pushed = { clientId: 'c', params: [['scope', 'openid']] as [string, string][] };
      await pushedRequests(store).save('p', pushed, TTL);
      expect(await pushedRequests(store).get('p')).toEqual(pushed);
      const read = await pushedRequests(store).get('p');
      expect(read).toEqual(pushed);
      // what a caller does with the record it read is not the store's
      read!.clientId = 'someone else';
      read!.params.push(['scope', 'admin']);
      expect(await pushedRequests(store).take('p')).toEqual(pushed);
      expect(await pushedRequests(store).get('p')).toBeUndefined();
    },
  },
  {
    name: 'consumes a code once and remembers it was used until it would have expired',
    async run({ store, now, elapse }) {
      await codes(store).save('h', code, TTL);
      const before = now();
      expect(await codes(store).consume('h')).toEqual({ state: 'fresh', record: code });
      const after = now();
      await elapse(20);
      const again = await codes(store).consume('h');
      expect(again).toMatchObject({ state: 'used', record: code });
      const usedAt = again?.state === 'used' ? again.usedAt : Number.NaN;
      expect(usedAt).toBeGreaterThanOrEqual(before);
      expect(usedAt).toBeLessThanOrEqual(after);
      await elapse(TTL);
      expect(await codes(store).consume('h')).toBeUndefined();
    },
  },
  {
    name: 'reads a code without consuming it, fresh then used',
    async run({ store }) {
      await codes(store).save('read', code, TTL);
      expect(await codes(store).find('read')).toEqual({ state: 'fresh', record: code });
      expect(await codes(store).find('read')).toEqual({ state: 'fresh', record: code });
      expect((await codes(store).consume('read'))?.state).toBe('fresh');
      expect(await codes(store).find('read')).toMatchObject({ state: 'used', record: code });
      expect((await codes(store).consume('read'))?.state).toBe('used');
    },
  },
  {
    name: 'reports the first use on every later consumption, not the latest',
    async run({ store, now, elapse }) {
      await refreshTokens(store).save('r', refreshRecord(), TTL);
      const before = now();
      expect((await refreshTokens(store).consume('r'))?.state).toBe('fresh');
      const after = now();
      await elapse(30);
      const second = await refreshTokens(store).consume('r');
      await elapse(30);
      const third = await refreshTokens(store).consume('r');
      const read = await refreshTokens(store).find('r');
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
      await refreshTokens(store).save('r', record, 1e6);
      expect(await refreshTokens(store).find('r')).toEqual({ state: 'fresh', record });
      expect(await refreshTokens(store).find('r')).toEqual({ state: 'fresh', record });
      expect((await refreshTokens(store).consume('r'))?.state).toBe('fresh');
      expect((await refreshTokens(store).consume('r'))?.state).toBe('used');
      expect(await refreshTokens(store).find('r')).toMatchObject({ state: 'used', record });
      await refreshTokens(store).destroy('r');
      expect(await refreshTokens(store).find('r')).toBeUndefined();
      expect(await refreshTokens(store).consume('r')).toBeUndefined();
      await refreshTokens(store).destroy('never-saved');
    },
  },
  {
    name: 'forgets a refresh token when its time is up, used or not',
    async run({ store, elapse }) {
      await refreshTokens(store).save('fresh', refreshRecord(), TTL);
      await refreshTokens(store).save('used', refreshRecord(), TTL);
      await refreshTokens(store).consume('used');
      await elapse(TTL);
      expect(await refreshTokens(store).find('fresh')).toBeUndefined();
      expect(await refreshTokens(store).consume('used')).toBeUndefined();
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
      await codes(store).save('full', full, TTL);
      expect(await codes(store).consume('full')).toEqual({ state: 'fresh', record: full });
      const rt = { ...refreshRecord(), scope: [], authTime: 1_700_000_000 };
      await refreshTokens(store).save('full', rt, TTL);
      expect(await refreshTokens(store).find('full')).toEqual({ state: 'fresh', record: rt });
      const approved: DeviceCodeRecord = {
        ...device,
        userCode: 'BCDFGHJK',
        status: 'approved',
        sub: 'alice',
        authTime: 1_700_000_000,
        lastPollAt: 1_700_000_000_123,
        expiresAt: 1_700_000_600_000,
      };
      await deviceCodes(store).save('full', approved, TTL);
      expect(await deviceCodes(store).get('full')).toEqual(approved);
    },
  },
  {
    name: 'finds device codes by user code, updates them in place and consumes once',
    async run({ store }) {
      await deviceCodes(store).save('dh', device, 600_000);
      expect(await deviceCodes(store).findByKey('ABCDEFGH')).toEqual({
        id: 'dh',
        state: 'fresh',
        record: device,
      });
      expect(await deviceCodes(store).findByKey('ZZZZZZZZ')).toBeUndefined();
      await deviceCodes(store).replace('dh', { ...device, status: 'approved', sub: 'alice' });
      expect(await deviceCodes(store).get('dh')).toMatchObject({
        status: 'approved',
        sub: 'alice',
      });
      expect(await deviceCodes(store).findByKey('ABCDEFGH')).toMatchObject({
        id: 'dh',
        record: { status: 'approved', sub: 'alice' },
      });
      expect(await deviceCodes(store).destroy('dh')).toBe(true);
      expect(await deviceCodes(store).destroy('dh')).toBe(false);
      expect(await deviceCodes(store).findByKey('ABCDEFGH')).toBeUndefined();
      expect(await deviceCodes(store).get('dh')).toBeUndefined();
    },
  },
  {
    name: 'keeps a device code’s expiry when it is updated, and never brings one back',
    async run({ store, elapse }) {
      await deviceCodes(store).save('dh', device, TTL);
      await elapse(TTL / 2);
      await deviceCodes(store).replace('dh', {
        ...device,
        lastPollAt: Date.now(),
        interval: 10_000,
      });
      expect(await deviceCodes(store).get('dh')).toMatchObject({ interval: 10_000 });
      await elapse(TTL / 2);
      expect(await deviceCodes(store).get('dh')).toBeUndefined();
      expect(await deviceCodes(store).findByKey('ABCDEFGH')).toBeUndefined();
      await deviceCodes(store).replace('dh', { ...device, status: 'approved', sub: 'alice' });
      expect(await deviceCodes(store).get('dh')).toBeUndefined();
      expect(await deviceCodes(store).destroy('dh')).toBe(false);
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
      await consents(store).save(grant('g2', 'web', 2_000), 60_000);
      await consents(store).save(grant('g1', 'spa', 1_000), 60_000);
      await consents(store).save({ ...grant('g3', 'web', 3_000), sub: 'bob' }, 60_000);
      expect(await consents(store).get('alice', 'web')).toEqual(grant('g2', 'web', 2_000));
      expect(await consents(store).get('alice', 'tv')).toBeUndefined();
      expect(await consents(store).get('carol', 'web')).toBeUndefined();
      expect(await consents(store).list('alice')).toEqual([
        grant('g1', 'spa', 1_000),
        grant('g2', 'web', 2_000),
      ]);
      // the same user and client again: one consent, the new one
      const wider = { ...grant('g2', 'web', 2_000), scope: ['openid', 'read:messages', 'email'] };
      await consents(store).save(wider, 60_000);
      expect(await consents(store).get('alice', 'web')).toEqual(wider);
      expect(await consents(store).list('alice')).toHaveLength(2);
      expect(await consents(store).list('bob')).toEqual([
        { ...grant('g3', 'web', 3_000), sub: 'bob' },
      ]);
      expect(await consents(store).list('nobody')).toEqual([]);
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
      await consents(store).save(grant('g1', 'web'), 60_000);
      await consents(store).save(grant('g2', 'spa'), TTL);
      expect(await consents(store).delete('bob', 'g1')).toBeUndefined();
      expect(await consents(store).delete('alice', 'nope')).toBeUndefined();
      expect(await consents(store).delete('alice', 'g1')).toEqual(grant('g1', 'web'));
      expect(await consents(store).delete('alice', 'g1')).toBeUndefined();
      expect(await consents(store).get('alice', 'web')).toBeUndefined();
      expect(await consents(store).list('alice')).toEqual([grant('g2', 'spa')]);
      await elapse(TTL);
      expect(await consents(store).get('alice', 'spa')).toBeUndefined();
      expect(await consents(store).list('alice')).toEqual([]);
      expect(await consents(store).delete('alice', 'g2')).toBeUndefined();
      // a short consent does not shorten a longer one of the same user
      await consents(store).save(grant('g4', 'web'), 60_000);
      await consents(store).save(grant('g5', 'spa'), TTL);
      await elapse(TTL);
      expect(await consents(store).list('alice')).toEqual([grant('g4', 'web')]);
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
      expect(await codes(store).consume('nope')).toBeUndefined();
      expect(await codes(store).find('nope')).toBeUndefined();
      expect(await refreshTokens(store).consume('nope')).toBeUndefined();
      expect(await refreshTokens(store).find('nope')).toBeUndefined();
      expect(await deviceCodes(store).get('nope')).toBeUndefined();
      expect(await deviceCodes(store).findByKey('NOPENOPE')).toBeUndefined();
      expect(await deviceCodes(store).destroy('nope')).toBe(false);
      expect(await pushedRequests(store).get('nope')).toBeUndefined();
      expect(await pushedRequests(store).take('nope')).toBeUndefined();
      expect(await store.isGrantRevoked('nope')).toBe(false);
    },
  },
];
