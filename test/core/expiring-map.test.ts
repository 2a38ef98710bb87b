import { describe, expect, it } from 'vitest';
import { ExpiringMap } from '../../src/core/expiring-map.js';

function clock(start = 1_000) {
  const c = { t: start, now: () => c.t };
  return c;
}

describe('ExpiringMap', () => {
  it('serves entries until their deadline and drops them after', () => {
    const c = clock();
    const map = new ExpiringMap<string>(
      'T',
      { now: c.now },
      { maxEntries: 10, maxEntriesOption: 'max' },
    );
    map.set('a', 'A', 1_500);
    expect(map.get('a')).toBe('A');
    expect(map.entry('a')).toEqual({ value: 'A', until: 1_500 });
    c.t = 1_500;
    expect(map.get('a')).toBeUndefined();
    expect(map.size).toBe(0);
  });

  it('treats a deadline in the past as a delete', () => {
    const c = clock();
    const map = new ExpiringMap<number>(
      'T',
      { now: c.now },
      { maxEntries: 10, maxEntriesOption: 'max' },
    );
    map.set('a', 1, 2_000);
    map.set('a', 2, 900);
    expect(map.get('a')).toBeUndefined();
    expect(map.size).toBe(0);
  });

  it('drops the entry written longest ago when full, a rewrite counting as new', () => {
    const c = clock();
    const map = new ExpiringMap<number>(
      'T',
      { now: c.now },
      { maxEntries: 2, maxEntriesOption: 'max' },
    );
    map.set('a', 1, 9_000);
    map.set('b', 2, 9_000);
    map.set('a', 3, 9_000); // a is now the newest
    map.set('c', 4, 9_000); // drops b
    expect(map.keys()).toEqual(['a', 'c']);
    expect(map.get('b')).toBeUndefined();
  });

  it('sweeps expired entries on the first access after the interval', () => {
    const c = clock();
    const map = new ExpiringMap<number>(
      'T',
      { now: c.now, sweepIntervalMs: '100ms' },
      { maxEntries: 10, maxEntriesOption: 'max' },
    );
    for (let i = 0; i < 5; i++) map.set(`k${i}`, i, 1_050);
    map.set('live', 9, 5_000);
    expect(map.size).toBe(6);
    c.t = 1_200;
    map.get('live');
    expect(map.size).toBe(1);
    expect(map.delete('live')).toBe(true);
    expect(map.delete('live')).toBe(false);
  });

  it('fails closed when told to: sweeps, then refuses a new key with a 503, forgetting nothing', () => {
    const c = clock();
    const map = new ExpiringMap<number>(
      'T',
      { now: c.now },
      { maxEntries: 2, maxEntriesOption: 'max', whenFull: 'refuse' },
    );
    map.set('a', 1, 2_000);
    map.set('b', 2, 9_000);
    expect(map.hasRoom()).toBe(false);
    let refusal: unknown;
    try {
      map.set('c', 3, 9_000);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toMatchObject({ status: 503, code: 'ERR_STORE_FULL' });
    // Retry-After: when the earliest entry ends (1 s from now)
    expect((refusal as { headers: Record<string, string> }).headers['Retry-After']).toBe('1');
    expect(map.keys()).toEqual(['a', 'b']);
    // a rewrite of a held key is no new entry
    map.set('a', 4, 2_000);
    expect(map.get('a')).toBe(4);
    // once an entry expired, the sweep makes room
    c.t = 2_000;
    map.set('c', 3, 9_000);
    expect(map.keys()).toEqual(['b', 'c']);
    expect(() => map.assertRoom()).toThrow(/try again later/);
  });

  it('writes past the bound with setPastBound, and has no room until it is back under', () => {
    const c = clock();
    const map = new ExpiringMap<true>(
      'T',
      { now: c.now },
      { maxEntries: 2, maxEntriesOption: 'max', whenFull: 'refuse' },
    );
    for (const [key, until] of [
      ['a', 5_000],
      ['b', 3_000],
      ['c', 9_000],
    ] as const) {
      map.setPastBound(key, true, until);
    }
    expect(map.size).toBe(3);
    expect(map.hasRoom()).toBe(false);
    c.t = 3_000; // b ends: still at the bound
    expect(map.hasRoom()).toBe(false);
    c.t = 5_000; // a ends too
    expect(map.hasRoom()).toBe(true);
    expect(map.keys()).toEqual(['c']);
  });

  it('names the owner and its own option in errors', () => {
    expect(
      () =>
        new ExpiringMap(
          'new MemoryRateLimitStore()',
          { maxEntries: 0 },
          { maxEntries: 1, maxEntriesOption: 'maxKeys' },
        ),
    ).toThrow(/new MemoryRateLimitStore\(\): `maxKeys` must be an integer, at least 1/);
    expect(
      () => new ExpiringMap('S', { now: 5 as never }, { maxEntries: 1, maxEntriesOption: 'm' }),
    ).toThrow(TypeError);
    expect(
      () =>
        new ExpiringMap(
          'S',
          {},
          { maxEntries: 1, maxEntriesOption: 'm', whenFull: 'drop' as never },
        ),
    ).toThrow(/`whenFull` must be 'evict' or 'refuse'/);
  });
});
