import type { ScryptOptions } from 'node:crypto';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { hashPassword, needsRehash, verifyPassword } from '../../src/auth/password.js';

/** Every scrypt run and constant-time compare that password.ts makes, by way of a wrapper. */
const calls = vi.hoisted(() => ({ scrypt: [] as ScryptOptions[], timingSafeEqual: 0 }));

vi.mock('node:crypto', async (importOriginal) => {
  const crypto = await importOriginal<typeof import('node:crypto')>();
  return {
    ...crypto,
    scrypt: (...args: Parameters<typeof crypto.scrypt>) => {
      calls.scrypt.push(args[3] as ScryptOptions);
      return (crypto.scrypt as (...a: unknown[]) => void)(...args);
    },
    timingSafeEqual: (a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView) => {
      calls.timingSafeEqual++;
      return crypto.timingSafeEqual(a, b);
    },
  };
});

beforeEach(() => {
  calls.scrypt.length = 0;
  calls.timingSafeEqual = 0;
});

const FAST = { cost: 10 } as const;

/** Replaces one character of a base64 field with another base64 character. */
function tamper(encoded: string, field: 3 | 4): string {
  const parts = encoded.split('$');
  const value = parts[field]!;
  parts[field] = (value[0] === 'A' ? 'B' : 'A') + value.slice(1);
  return parts.join('$');
}

describe('hashPassword and verifyPassword', () => {
  it('round-trip with the default parameters in a self-describing string', async () => {
    const encoded = await hashPassword('correct horse battery staple');
    expect(encoded).toMatch(/^\$scrypt\$ln=15,r=8,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/);
    expect(encoded).not.toContain('correct');
    expect(await verifyPassword('correct horse battery staple', encoded)).toBe(true);
    expect(await verifyPassword('correct horse battery stapler', encoded)).toBe(false);
    expect(calls.scrypt).toHaveLength(3);
    expect(calls.scrypt[0]).toMatchObject({ N: 2 ** 15, r: 8, p: 1 });
    expect(calls.timingSafeEqual).toBe(2);
  });

  it('salts every hash', async () => {
    const a = await hashPassword('same', FAST);
    const b = await hashPassword('same', FAST);
    expect(a).not.toBe(b);
    expect(a.split('$')[3]).not.toBe(b.split('$')[3]);
    expect(await verifyPassword('same', a)).toBe(true);
    expect(await verifyPassword('same', b)).toBe(true);
  });

  it('answers false for a tampered salt, key or cost', async () => {
    const encoded = await hashPassword('pw', FAST);
    expect(await verifyPassword('pw', tamper(encoded, 3))).toBe(false);
    expect(await verifyPassword('pw', tamper(encoded, 4))).toBe(false);
    expect(await verifyPassword('pw', encoded.replace('ln=10', 'ln=11'))).toBe(false);
    expect(await verifyPassword('pw', encoded.replace('r=8', 'r=7'))).toBe(false);
  });

  it('reads the parameters from the hash string', async () => {
    const encoded = await hashPassword('pw', { cost: 11, blockSize: 4, parallelization: 2 });
    expect(encoded).toMatch(/^\$scrypt\$ln=11,r=4,p=2\$/);
    calls.scrypt.length = 0;
    expect(await verifyPassword('pw', encoded)).toBe(true);
    expect(calls.scrypt).toEqual([expect.objectContaining({ N: 2048, r: 4, p: 2 })]);
  });

  it('refuses malformed hashes and absurd parameters without running scrypt', async () => {
    const good = await hashPassword('pw', FAST);
    const [, , , salt, key] = good.split('$');
    calls.scrypt.length = 0;
    const refused = [
      '',
      'pw',
      '$2b$10$abcdefghijklmnopqrstuu',
      `$scrypt$ln=30,r=8,p=1$${salt}$${key}`, // 2^30: 128 GiB
      `$scrypt$ln=20,r=8,p=1$${salt}$${key}`, // 1 GiB
      `$scrypt$ln=17,r=8,p=16$${salt}$${key}`, // 2^25: too much work
      `$scrypt$ln=15,r=99,p=1$${salt}$${key}`,
      `$scrypt$ln=15,r=8,p=0$${salt}$${key}`,
      `$scrypt$ln=9,r=8,p=1$${salt}$${key}`,
      `$scrypt$ln=15,r=8,p=1$${salt}$`,
      `$scrypt$ln=15,r=8,p=1$${salt}==$${key}`,
      `$scrypt$ln=15,r=8,p=1$${salt}$${key}$`,
      `$scrypt$ln=15,r=8,p=1$${salt}$${key!.slice(0, -1)}B`, // non-canonical base64
      `$scrypt$ln=15,r=8,p=1$${salt}$${'A'.repeat(200)}`,
    ];
    for (const encoded of refused) {
      await expect(verifyPassword('pw', encoded), encoded).rejects.toMatchObject({
        name: 'TypeError',
        code: 'ERR_INVALID_PASSWORD_HASH',
      });
    }
    expect(calls.scrypt).toEqual([]);
  });

  it('prepares passwords as RFC 8265 OpaqueString: NFC, non-ASCII spaces as U+0020', async () => {
    const encoded = await hashPassword('Jürgen geheim', FAST);
    expect(await verifyPassword('Jürgen geheim'.normalize('NFD'), encoded)).toBe(true);
    expect(await verifyPassword('Jürgen\u00a0geheim', encoded)).toBe(true);
    expect(await verifyPassword('Jurgen geheim', encoded)).toBe(false);
  });

  it('refuses bad arguments and out-of-range options', async () => {
    await expect(hashPassword(42 as never)).rejects.toThrow(TypeError);
    await expect(hashPassword('pw', { cost: 9 })).rejects.toThrow(/out of range/);
    await expect(hashPassword('pw', { cost: 21 })).rejects.toThrow(/out of range/);
    await expect(hashPassword('pw', { cost: 12.5 })).rejects.toThrow(/out of range/);
    await expect(hashPassword('pw', { blockSize: 0 })).rejects.toThrow(/out of range/);
    await expect(hashPassword('pw', { cots: 12 } as never)).rejects.toThrow(/Did you mean `cost`/);
    expect(calls.scrypt).toEqual([]);
  });
});

describe('verifyPassword for an unknown user', () => {
  it('runs scrypt against a dummy hash with the default parameters and answers false', async () => {
    const real = await hashPassword('pw');
    calls.scrypt.length = 0;
    calls.timingSafeEqual = 0;
    expect(await verifyPassword('pw', real)).toBe(true);
    expect(await verifyPassword('pw', undefined)).toBe(false);
    expect(await verifyPassword('', undefined)).toBe(false);
    // the same work as a real check: one scrypt with the same parameters, one compare
    expect(calls.scrypt).toHaveLength(3);
    expect(calls.scrypt[1]).toEqual(calls.scrypt[0]);
    expect(calls.scrypt[2]).toEqual(calls.scrypt[0]);
    expect(calls.timingSafeEqual).toBe(3);
  });

  it('uses the parameters it is given for the dummy', async () => {
    expect(await verifyPassword('pw', undefined, { cost: 11, blockSize: 4 })).toBe(false);
    expect(calls.scrypt).toEqual([expect.objectContaining({ N: 2048, r: 4, p: 1 })]);
  });
});

describe('needsRehash', () => {
  it('tells whether a hash was made with other parameters', async () => {
    const fast = await hashPassword('pw', FAST);
    expect(needsRehash(fast, FAST)).toBe(false);
    expect(needsRehash(fast)).toBe(true);
    expect(needsRehash(fast, { cost: 10, blockSize: 16 })).toBe(true);
    expect(needsRehash(fast.replace('ln=10', 'ln=15'))).toBe(false);
    expect(needsRehash('not a hash')).toBe(true);
    expect(() => needsRehash(fast, { cost: 40 })).toThrow(TypeError);
  });
});
