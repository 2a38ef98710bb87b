import { describe, expect, it } from 'vitest';
import { codes, consents, deviceCodes, refreshTokens } from '../../../src/oauth/store/records.js';
import { MemoryRecordStore } from '../../../src/oauth/store/store.js';
import { hashToken, newOpaqueToken } from '../../../src/oauth/tokens/issue.js';
import { RECORD_STORE_CONTRACT } from './record-store-contract.js';
import { OAUTH_STORE_CONTRACT } from './store-contract.js';

const code = {
  clientId: 'c',
  redirectUri: 'https://a/cb',
  sub: 'alice',
  scope: ['openid'],
  authTime: 1,
  grantId: 'g1',
};

describe('RecordStore contract: MemoryRecordStore', () => {
  for (const { name, run } of [...RECORD_STORE_CONTRACT, ...OAUTH_STORE_CONTRACT]) {
    it(name, () => {
      const clock = { t: 1_000_000 };
      return run({
        store: new MemoryRecordStore({ now: () => clock.t }),
        now: () => clock.t,
        elapse: async (ms) => {
          clock.t += ms;
        },
      });
    });
  }
});

describe('MemoryRecordStore', () => {
  it('fails closed at its bound for every kind: a 503, never a live record forgotten', () => {
    const clock = { t: 0 };
    const store = new MemoryRecordStore({ maxEntries: 2, now: () => clock.t });
    const full = expect.objectContaining({ status: 503, code: 'ERR_STORE_FULL' });
    store.save('thing', 'a', { n: 1 }, 1_000, { lookup: 'A', group: 'g' });
    store.save('thing', 'b', { n: 2 }, 60_000, { lookup: 'B', group: 'g' });
    store.consume('thing', 'a');
    expect(() => store.save('thing', 'c', { n: 3 }, 60_000)).toThrow(full);
    expect(() => store.checkCapacity('thing')).toThrow(full);
    // another kind has its own bound; a record saved again takes no new place
    store.save('other', 'c', { n: 3 }, 60_000);
    store.save('thing', 'b', { n: 4 }, 60_000, { lookup: 'B', group: 'g' });
    // nothing was forgotten: the used one still reads as used
    expect(store.find('thing', 'a')).toMatchObject({ state: 'used' });
    expect(store.findByKey('thing', 'B')).toMatchObject({ id: 'b', record: { n: 4 } });
    expect(store.list('thing', 'g').map((found) => found.id)).toEqual(['a', 'b']);
    // once the first one's time is up there is room again
    clock.t = 1_000;
    store.checkCapacity('thing');
    store.save('thing', 'c', { n: 3 }, 60_000);
    expect(store.list('thing', 'g').map((found) => found.id)).toEqual(['b']);
  });

  it('consumes a code once and remembers it was used until it would have expired', () => {
    const c = { t: 0 };
    const store = new MemoryRecordStore({ now: () => c.t });
    codes(store).save('h', code, 60_000);
    expect(codes(store).consume('h')).toEqual({ state: 'fresh', record: code });
    expect(codes(store).consume('h')).toMatchObject({ state: 'used', record: code, usedAt: 0 });
    c.t = 60_000;
    expect(codes(store).consume('h')).toBeUndefined();
  });

  it('rotates a refresh token once, reads it without consuming, and deletes it', () => {
    const store = new MemoryRecordStore();
    const record = {
      clientId: 'c',
      sub: 'alice',
      scope: ['openid'],
      grantId: 'g',
      familyExpiresAt: Date.now() + 1e6,
    };
    refreshTokens(store).save('r', record, 1e6);
    expect(refreshTokens(store).find('r')?.state).toBe('fresh');
    expect(refreshTokens(store).consume('r')?.state).toBe('fresh');
    expect(refreshTokens(store).consume('r')?.state).toBe('used');
    expect(refreshTokens(store).find('r')?.state).toBe('used');
    refreshTokens(store).destroy('r');
    expect(refreshTokens(store).find('r')).toBeUndefined();
  });

  it('finds device codes by user code, updates them in place and consumes once', () => {
    const store = new MemoryRecordStore();
    const record = {
      clientId: 'd',
      scope: ['openid'],
      userCode: 'ABCDEFGH',
      status: 'pending' as const,
      interval: 5_000,
      grantId: 'g',
    };
    deviceCodes(store).save('dh', record, 600_000);
    expect(deviceCodes(store).findByKey('ABCDEFGH')).toEqual({ id: 'dh', state: 'fresh', record });
    deviceCodes(store).replace('dh', { ...record, status: 'approved', sub: 'alice' });
    expect(deviceCodes(store).get('dh')).toMatchObject({ status: 'approved', sub: 'alice' });
    expect(deviceCodes(store).destroy('dh')).toBe(true);
    expect(deviceCodes(store).destroy('dh')).toBe(false);
    expect(deviceCodes(store).findByKey('ABCDEFGH')).toBeUndefined();
  });

  it('revokes grants for a while', () => {
    const c = { t: 0 };
    const store = new MemoryRecordStore({ now: () => c.t });
    store.revokeGrant('g', 1_000);
    expect(store.isGrantRevoked('g')).toBe(true);
    expect(store.isGrantRevoked('other')).toBe(false);
    c.t = 1_000;
    expect(store.isGrantRevoked('g')).toBe(false);
  });

  it('reads a code without consuming it', () => {
    const store = new MemoryRecordStore();
    codes(store).save('h', code, 60_000);
    expect(codes(store).find('h')).toEqual({ state: 'fresh', record: code });
    expect(codes(store).find('h')).toEqual({ state: 'fresh', record: code });
    expect(codes(store).consume('h')?.state).toBe('fresh');
    expect(codes(store).find('h')).toMatchObject({ state: 'used', record: code });
    expect(codes(store).find('nope')).toBeUndefined();
  });

  it('never shortens a revocation', () => {
    const c = { t: 0 };
    const store = new MemoryRecordStore({ now: () => c.t });
    store.revokeGrant('g', 10_000);
    store.revokeGrant('g', 1_000);
    c.t = 5_000;
    expect(store.isGrantRevoked('g')).toBe(true);
  });

  it('fails closed at its bound: refuses new values with 503, never forgets a used one', () => {
    const store = new MemoryRecordStore({ maxEntries: 2 });
    const refresh = {
      clientId: 'c',
      sub: 'alice',
      scope: ['openid'],
      grantId: 'g',
      familyExpiresAt: Date.now() + 1e6,
    };
    refreshTokens(store).save('r1', refresh, 1e6);
    refreshTokens(store).consume('r1');
    refreshTokens(store).save('r2', refresh, 1e6);
    const full = expect.objectContaining({ status: 503, code: 'ERR_STORE_FULL' });
    expect(() => refreshTokens(store).save('r3', refresh, 1e6)).toThrow(full);
    expect(() => store.checkCapacity('rt')).toThrow(full);
    expect(refreshTokens(store).consume('r1')?.state).toBe('used'); // the reuse is still seen
    // device codes: the record and its user-code index, both or neither
    const device = {
      clientId: 'd',
      scope: ['openid'],
      userCode: 'ABCDEFGH',
      status: 'pending' as const,
      interval: 5_000,
      grantId: 'g',
    };
    deviceCodes(store).save('d1', device, 60_000);
    deviceCodes(store).save('d2', { ...device, userCode: 'BCDFGHJK' }, 60_000);
    expect(() =>
      deviceCodes(store).save('d3', { ...device, userCode: 'CDFGHJKL' }, 60_000),
    ).toThrow(full);
    expect(deviceCodes(store).findByKey('CDFGHJKL')).toBeUndefined();
    expect(deviceCodes(store).findByKey('ABCDEFGH')?.id).toBe('d1');
  });

  it('records every revocation past its bound, and takes no new grant while over it', () => {
    const c = { t: 0 };
    const store = new MemoryRecordStore({ maxEntries: 2, now: () => c.t });
    const full = expect.objectContaining({ status: 503, code: 'ERR_STORE_FULL' });
    store.revokeGrant('family', 60_000);
    for (let i = 0; i < 10; i++) store.revokeGrant(`flood-${i}`, 1_000);
    expect(store.isGrantRevoked('family')).toBe(true);
    for (let i = 0; i < 10; i++) expect(store.isGrantRevoked(`flood-${i}`)).toBe(true);
    expect(() => store.checkCapacity('rt')).toThrow(full);
    expect(() => codes(store).save('h', code, 60_000)).toThrow(full);
    c.t = 1_000;
    store.checkCapacity('rt');
    codes(store).save('h', code, 60_000);
    expect(store.isGrantRevoked('family')).toBe(true);
  });

  it('rejects unknown options', () => {
    expect(() => new MemoryRecordStore({ maxEntry: 5 } as never)).toThrow(/maxEntries/);
  });

  it('makes 256-bit opaque values and hashes them', () => {
    const value = newOpaqueToken();
    expect(value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(hashToken(value)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(hashToken(value)).not.toBe(value);
    expect(new Set(Array.from({ length: 100 }, newOpaqueToken)).size).toBe(100);
  });
});

describe('MemoryRecordStore grants at the bound', () => {
  it('refuses one more consent (503) rather than forget one; known consents still update', () => {
    const store = new MemoryRecordStore({ maxEntries: 2 });
    const grant = (sub: string, clientId = 'web') => ({
      id: `g-${sub}-${clientId}`,
      sub,
      clientId,
      scope: ['openid'],
      createdAt: 1,
    });
    consents(store).save(grant('alice'), 60_000);
    consents(store).save(grant('bob'), 60_000);
    let refused: unknown;
    try {
      consents(store).save(grant('carol'), 60_000);
    } catch (error) {
      refused = error;
    }
    expect(refused).toMatchObject({ status: 503, code: 'ERR_STORE_FULL' });
    expect(consents(store).list('carol')).toEqual([]);
    // nothing was forgotten to make room, and alice's consent may still widen
    consents(store).save({ ...grant('alice'), scope: ['openid', 'profile'] }, 60_000);
    expect(consents(store).list('alice')).toEqual([
      { ...grant('alice'), scope: ['openid', 'profile'] },
    ]);
    expect(() => consents(store).save(grant('alice', 'spa'), 60_000)).toThrow(
      expect.objectContaining({ status: 503 }),
    );
    expect(consents(store).get('bob', 'web')).toEqual(grant('bob'));
  });
});
