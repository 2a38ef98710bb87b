import { describe, expect, it } from 'vitest';
import { MemoryOAuthStore } from '../../../src/oauth/store/store.js';
import { hashToken, newOpaqueToken } from '../../../src/oauth/tokens/issue.js';
import { OAUTH_STORE_CONTRACT } from './store-contract.js';

const code = {
  clientId: 'c',
  redirectUri: 'https://a/cb',
  sub: 'alice',
  scope: ['openid'],
  authTime: 1,
  grantId: 'g1',
};

describe('OAuthStore contract: MemoryOAuthStore', () => {
  for (const { name, run } of OAUTH_STORE_CONTRACT) {
    it(name, () => {
      const clock = { t: 1_000_000 };
      return run({
        store: new MemoryOAuthStore({ now: () => clock.t }),
        now: () => clock.t,
        elapse: async (ms) => {
          clock.t += ms;
        },
      });
    });
  }
});

describe('MemoryOAuthStore', () => {
  it('consumes a code once and remembers it was used until it would have expired', () => {
    const c = { t: 0 };
    const store = new MemoryOAuthStore({ now: () => c.t });
    store.saveCode('h', code, 60_000);
    expect(store.consumeCode('h')).toEqual({ state: 'fresh', record: code });
    expect(store.consumeCode('h')).toMatchObject({ state: 'used', record: code, usedAt: 0 });
    c.t = 60_000;
    expect(store.consumeCode('h')).toBeUndefined();
  });

  it('rotates a refresh token once, reads it without consuming, and deletes it', () => {
    const store = new MemoryOAuthStore();
    const record = {
      clientId: 'c',
      sub: 'alice',
      scope: ['openid'],
      grantId: 'g',
      familyExpiresAt: Date.now() + 1e6,
    };
    store.saveRefreshToken('r', record, 1e6);
    expect(store.getRefreshToken('r')?.state).toBe('fresh');
    expect(store.rotateRefreshToken('r')?.state).toBe('fresh');
    expect(store.rotateRefreshToken('r')?.state).toBe('used');
    expect(store.getRefreshToken('r')?.state).toBe('used');
    store.deleteRefreshToken('r');
    expect(store.getRefreshToken('r')).toBeUndefined();
  });

  it('finds device codes by user code, updates them in place and consumes once', () => {
    const store = new MemoryOAuthStore();
    const record = {
      clientId: 'd',
      scope: ['openid'],
      userCode: 'ABCDEFGH',
      status: 'pending' as const,
      interval: 5_000,
      grantId: 'g',
    };
    store.saveDeviceCode('dh', record, 600_000);
    expect(store.findDeviceCode('ABCDEFGH')).toEqual({ hash: 'dh', record });
    store.updateDeviceCode('dh', { ...record, status: 'approved', sub: 'alice' });
    expect(store.getDeviceCode('dh')).toMatchObject({ status: 'approved', sub: 'alice' });
    expect(store.consumeDeviceCode('dh')).toBe(true);
    expect(store.consumeDeviceCode('dh')).toBe(false);
    expect(store.findDeviceCode('ABCDEFGH')).toBeUndefined();
  });

  it('revokes grants for a while', () => {
    const c = { t: 0 };
    const store = new MemoryOAuthStore({ now: () => c.t });
    store.revokeGrant('g', 1_000);
    expect(store.isGrantRevoked('g')).toBe(true);
    expect(store.isGrantRevoked('other')).toBe(false);
    c.t = 1_000;
    expect(store.isGrantRevoked('g')).toBe(false);
  });

  it('reads a code without consuming it', () => {
    const store = new MemoryOAuthStore();
    store.saveCode('h', code, 60_000);
    expect(store.getCode('h')).toEqual({ state: 'fresh', record: code });
    expect(store.getCode('h')).toEqual({ state: 'fresh', record: code });
    expect(store.consumeCode('h')?.state).toBe('fresh');
    expect(store.getCode('h')).toMatchObject({ state: 'used', record: code });
    expect(store.getCode('nope')).toBeUndefined();
  });

  it('never shortens a revocation', () => {
    const c = { t: 0 };
    const store = new MemoryOAuthStore({ now: () => c.t });
    store.revokeGrant('g', 10_000);
    store.revokeGrant('g', 1_000);
    c.t = 5_000;
    expect(store.isGrantRevoked('g')).toBe(true);
  });

  it('fails closed at its bound: refuses new values with 503, never forgets a used one', () => {
    const store = new MemoryOAuthStore({ maxEntries: 2 });
    const refresh = {
      clientId: 'c',
      sub: 'alice',
      scope: ['openid'],
      grantId: 'g',
      familyExpiresAt: Date.now() + 1e6,
    };
    store.saveRefreshToken('r1', refresh, 1e6);
    store.rotateRefreshToken('r1');
    store.saveRefreshToken('r2', refresh, 1e6);
    const full = expect.objectContaining({ status: 503, code: 'ERR_STORE_FULL' });
    expect(() => store.saveRefreshToken('r3', refresh, 1e6)).toThrow(full);
    expect(() => store.checkCapacity()).toThrow(full);
    expect(store.rotateRefreshToken('r1')?.state).toBe('used'); // the reuse is still seen
    // device codes: the record and its user-code index, both or neither
    const device = {
      clientId: 'd',
      scope: ['openid'],
      userCode: 'ABCDEFGH',
      status: 'pending' as const,
      interval: 5_000,
      grantId: 'g',
    };
    store.saveDeviceCode('d1', device, 60_000);
    store.saveDeviceCode('d2', { ...device, userCode: 'BCDFGHJK' }, 60_000);
    expect(() => store.saveDeviceCode('d3', { ...device, userCode: 'CDFGHJKL' }, 60_000)).toThrow(
      full,
    );
    expect(store.findDeviceCode('CDFGHJKL')).toBeUndefined();
    expect(store.findDeviceCode('ABCDEFGH')?.hash).toBe('d1');
  });

  it('records every revocation past its bound, and takes no new grant while over it', () => {
    const c = { t: 0 };
    const store = new MemoryOAuthStore({ maxEntries: 2, now: () => c.t });
    const full = expect.objectContaining({ status: 503, code: 'ERR_STORE_FULL' });
    store.revokeGrant('family', 60_000);
    for (let i = 0; i < 10; i++) store.revokeGrant(`flood-${i}`, 1_000);
    expect(store.isGrantRevoked('family')).toBe(true);
    for (let i = 0; i < 10; i++) expect(store.isGrantRevoked(`flood-${i}`)).toBe(true);
    expect(() => store.checkCapacity()).toThrow(full);
    expect(() => store.saveCode('h', code, 60_000)).toThrow(full);
    c.t = 1_000;
    store.checkCapacity();
    store.saveCode('h', code, 60_000);
    expect(store.isGrantRevoked('family')).toBe(true);
  });

  it('rejects unknown options', () => {
    expect(() => new MemoryOAuthStore({ maxEntry: 5 } as never)).toThrow(/maxEntries/);
  });

  it('makes 256-bit opaque values and hashes them', () => {
    const value = newOpaqueToken();
    expect(value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(hashToken(value)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(hashToken(value)).not.toBe(value);
    expect(new Set(Array.from({ length: 100 }, newOpaqueToken)).size).toBe(100);
  });
});

describe('MemoryOAuthStore grants at the bound', () => {
  it('refuses a consent of one more user (503) rather than forget one; known users still update', () => {
    const store = new MemoryOAuthStore({ maxEntries: 2 });
    const grant = (sub: string, clientId = 'web') => ({
      id: `g-${sub}-${clientId}`,
      sub,
      clientId,
      scope: ['openid'],
      createdAt: 1,
    });
    store.saveGrant(grant('alice'), 60_000);
    store.saveGrant(grant('bob'), 60_000);
    let refused: unknown;
    try {
      store.saveGrant(grant('carol'), 60_000);
    } catch (error) {
      refused = error;
    }
    expect(refused).toMatchObject({ status: 503, code: 'ERR_STORE_FULL' });
    expect(store.listGrants('carol')).toEqual([]);
    // nothing was forgotten to make room, and alice may still consent to another client
    store.saveGrant(grant('alice', 'spa'), 60_000);
    expect(store.listGrants('alice').map((g) => g.clientId)).toEqual(['web', 'spa']);
    expect(store.getGrant('bob', 'web')).toEqual(grant('bob'));
  });
});
