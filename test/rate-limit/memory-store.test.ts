import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  MemoryRateLimitStore,
  type MemoryRateLimitStoreOptions,
  MemoryStore,
} from '../../src/rate-limit/memory-store.js';

const stores: MemoryRateLimitStore[] = [];

/** A store on a clock the test moves by hand. */
function storeAt(start: number, options: Omit<MemoryRateLimitStoreOptions, 'now'> = {}) {
  const clock = { now: start };
  const store = new MemoryRateLimitStore({ ...options, now: () => clock.now });
  stores.push(store);
  return { store, clock };
}

afterEach(() => {
  for (const store of stores.splice(0)) store.close();
  vi.useRealTimers();
});

describe('MemoryRateLimitStore', () => {
  it('counts per key within a fixed window', () => {
    const { store, clock } = storeAt(1_000);
    expect(store.increment('a', 10_000)).toEqual({ count: 1, resetAt: 11_000 });
    clock.now = 5_000;
    expect(store.increment('a', 10_000)).toEqual({ count: 2, resetAt: 11_000 });
    expect(store.increment('b', 10_000)).toEqual({ count: 1, resetAt: 15_000 });
    expect(store.size).toBe(2);
  });

  it('starts a new window once the old one has ended', () => {
    const { store, clock } = storeAt(0);
    store.increment('a', 1_000);
    store.increment('a', 1_000);
    clock.now = 999;
    expect(store.increment('a', 1_000).count).toBe(3);
    clock.now = 1_000;
    expect(store.increment('a', 1_000)).toEqual({ count: 1, resetAt: 2_000 });
  });

  it('hands out copies, so a caller cannot change the count', () => {
    const { store } = storeAt(0);
    const hit = store.increment('a', 1_000);
    hit.count = 100;
    expect(store.increment('a', 1_000).count).toBe(2);
  });

  it('sweeps expired windows on the first increment after the interval', () => {
    const { store, clock } = storeAt(0, { sweepIntervalMs: 5_000 });
    for (let i = 0; i < 50; i++) store.increment(`key-${i}`, 1_000);
    expect(store.size).toBe(50);
    clock.now = 4_999; // expired, but not yet time to sweep
    store.increment('fresh', 10_000);
    expect(store.size).toBe(51);
    clock.now = 5_000;
    store.increment('fresh', 10_000);
    expect(store.size).toBe(1);
  });

  it('sweeps on demand, keeping live windows', () => {
    const { store, clock } = storeAt(0);
    store.increment('short', 1_000);
    store.increment('long', 60_000);
    clock.now = 2_000;
    store.sweep();
    expect(store.size).toBe(1);
    expect(store.increment('long', 60_000).count).toBe(2);
  });

  it('stays bounded under a stream of new keys', () => {
    const { store, clock } = storeAt(0, { sweepIntervalMs: 1_000 });
    let largest = 0;
    for (let i = 0; i < 10_000; i++) {
      clock.now = i * 10; // 100 new keys per second, windows of one second
      store.increment(`client-${i}`, 1_000);
      largest = Math.max(largest, store.size);
    }
    expect(largest).toBeLessThanOrEqual(201);
  });

  it('evicts the window that started first beyond maxKeys', () => {
    const { store, clock } = storeAt(0, { maxKeys: 3 });
    store.increment('a', 60_000);
    clock.now = 1;
    store.increment('b', 60_000);
    store.increment('b', 60_000);
    clock.now = 2;
    store.increment('c', 60_000);
    clock.now = 3;
    store.increment('d', 60_000);
    expect(store.size).toBe(3);
    expect(store.increment('b', 60_000).count).toBe(3);
    expect(store.increment('a', 60_000).count).toBe(1); // evicted, so counted afresh
    expect(store.size).toBe(3);
  });

  it('sweeps expired windows on its own while idle, every sweepIntervalMs', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const { store, clock } = storeAt(0, { sweepIntervalMs: 5_000 });
    store.increment('a', 1_000);
    store.increment('b', 60_000);
    clock.now = 2_000; // 'a' has expired; nothing touches the store from now on
    expect(store.size).toBe(2);
    vi.advanceTimersByTime(5_000);
    expect(store.size).toBe(1);
  });

  it('leaves no timer behind once closed', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const { store } = storeAt(0, { sweepIntervalMs: 5_000 });
    expect(vi.getTimerCount()).toBe(1);
    store.close();
    expect(vi.getTimerCount()).toBe(0);
    store.close(); // twice is harmless
    expect(vi.getTimerCount()).toBe(0);
  });

  it('forgets a key on reset and everything on close', () => {
    const { store } = storeAt(0);
    store.increment('a', 1_000);
    store.increment('a', 1_000);
    store.reset('a');
    expect(store.increment('a', 1_000).count).toBe(1);
    store.increment('b', 1_000);
    store.close();
    expect(store.size).toBe(0);
  });

  it('uses the real clock by default', () => {
    const store = new MemoryRateLimitStore();
    stores.push(store);
    const before = Date.now();
    const { resetAt } = store.increment('a', 60_000);
    expect(resetAt).toBeGreaterThanOrEqual(before + 60_000);
    expect(resetAt).toBeLessThanOrEqual(Date.now() + 60_000);
  });

  it('validates its options, with typo hints', () => {
    expect(() => new MemoryRateLimitStore({ maxKey: 10 } as MemoryRateLimitStoreOptions)).toThrow(
      /`maxKeys`/,
    );
    expect(() => new MemoryRateLimitStore({ maxKeys: 0 })).toThrow(TypeError);
    expect(() => new MemoryRateLimitStore({ maxKeys: 0 })).toThrow(
      'new MemoryRateLimitStore(): `maxKeys` must be an integer, at least 1',
    );
    expect(() => new MemoryRateLimitStore({ sweepIntervalMs: 1.5 })).toThrow(/sweepIntervalMs/);
    expect(() => new MemoryRateLimitStore({ now: 5 as unknown as () => number })).toThrow(/now/);
  });
});

describe('MemoryStore (deprecated name)', () => {
  it('is MemoryRateLimitStore, for one release', () => {
    expect(MemoryStore).toBe(MemoryRateLimitStore);
    const store: MemoryStore = new MemoryStore();
    expect(store).toBeInstanceOf(MemoryRateLimitStore);
    store.close();
  });
});
