import { describe, expect, it } from 'vitest';
import { MemoryOAuthStore } from '../../src/oauth/store.js';
import { hashToken, newOpaqueToken } from '../../src/oauth/tokens.js';

const code = {
  clientId: 'c',
  redirectUri: 'https://a/cb',
  sub: 'alice',
  scope: ['openid'],
  authTime: 1,
  grantId: 'g1',
};

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
      interval: 5,
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

  it('makes 256-bit opaque values and hashes them', () => {
    const value = newOpaqueToken();
    expect(value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(hashToken(value)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(hashToken(value)).not.toBe(value);
    expect(new Set(Array.from({ length: 100 }, newOpaqueToken)).size).toBe(100);
  });
});
