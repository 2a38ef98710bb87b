// The verified-token cache: least recently used out first, deadlines, key-set generations.
import { describe, expect, it } from 'vitest';
import { VerifiedTokenCache } from '../../../src/auth/jwt/cache.js';
import type { VerifiedJwt } from '../../../src/auth/jwt/verify.js';

const verified = (sub: string) =>
  ({ payload: { sub, exp: 2_000_000_000 }, protectedHeader: { alg: 'HS256' } }) as VerifiedJwt;
const LATER = 1_000_000;

describe('VerifiedTokenCache', () => {
  it('evicts the least recently used token, a hit counting as a use', () => {
    const cache = new VerifiedTokenCache(2);
    cache.set('a', verified('a'), LATER, 0, 0);
    cache.set('b', verified('b'), LATER, 0, 0);
    expect(cache.get('a', 0, 1)?.payload.sub).toBe('a'); // a is now the newest
    cache.set('c', verified('c'), LATER, 0, 2);
    expect(cache.get('b', 0, 3)).toBeUndefined();
    expect(cache.get('a', 0, 3)?.payload.sub).toBe('a');
    expect(cache.get('c', 0, 3)?.payload.sub).toBe('c');
    expect(cache.size).toBe(2);
  });

  it('serves the same token many times without losing the order of the others', () => {
    const cache = new VerifiedTokenCache(3);
    for (const key of ['a', 'b', 'c']) cache.set(key, verified(key), LATER, 0, 0);
    for (let i = 0; i < 1000; i++) expect(cache.get('c', 0, 1)?.payload.sub).toBe('c');
    cache.get('a', 0, 1);
    cache.set('d', verified('d'), LATER, 0, 2); // b is the least recently used
    expect(cache.get('b', 0, 3)).toBeUndefined();
    expect([cache.get('a', 0, 3), cache.get('c', 0, 3), cache.get('d', 0, 3)]).not.toContain(
      undefined,
    );
  });

  it('drops a token at its deadline, and everything when the key set changes', () => {
    const cache = new VerifiedTokenCache(10);
    cache.set('a', verified('a'), 100, 0, 0);
    cache.set('b', verified('b'), LATER, 0, 0);
    expect(cache.get('a', 0, 100)).toBeUndefined();
    expect(cache.size).toBe(1);
    expect(cache.get('b', 1, 101)).toBeUndefined(); // generation 1: a new key set
    expect(cache.size).toBe(0);
    cache.set('a', verified('a'), 50, 1, 60); // a deadline already past: not kept
    expect(cache.size).toBe(0);
  });
});
