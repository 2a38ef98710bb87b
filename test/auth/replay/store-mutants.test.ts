// Beyond store.test.ts: MemoryReplayStore's option message, a share's exact Retry-After and
// detail, recounts at their exact bounds, and the sweep of partitions (a clock that goes back).
import { describe, expect, it } from 'vitest';
import { MemoryReplayStore } from '../../../src/auth/replay/store.js';
import { HttpError } from '../../../src/core/errors/http-error.js';

const attempt = (fn: () => unknown): unknown => {
  try {
    return fn();
  } catch (error) {
    return error;
  }
};

/** A store with a settable clock. */
function store(options: { share: number; sweepIntervalMs?: number; maxEntries?: number }) {
  const clock = { now: 0 };
  const replay = new MemoryReplayStore({
    maxEntries: options.maxEntries ?? 100,
    maxEntriesPerPartition: options.share,
    sweepIntervalMs: options.sweepIntervalMs ?? 60_000,
    now: () => clock.now,
  });
  return { clock, replay };
}

const retryAfter = (error: unknown) => {
  expect(error).toBeInstanceOf(HttpError);
  expect((error as HttpError).status).toBe(429);
  return (error as HttpError).headers['Retry-After'];
};

describe('MemoryReplayStore options', () => {
  it('refuses options that are not an object', () => {
    for (const bad of [null, 'abc', 5]) {
      expect(() => new MemoryReplayStore(bad as never)).toThrow(
        'MemoryReplayStore: the options must be an object',
      );
    }
  });
});

describe('MemoryReplayStore shares exactly', () => {
  it('answers a spent share with its detail and the wait for its earliest id', () => {
    const { clock, replay } = store({ share: 2 });
    expect(replay.remember('a1', 3000, 'a')).toBe(true);
    expect(replay.remember('a2', 5000, 'a')).toBe(true);
    const spent = attempt(() => replay.remember('a3', 1000, 'a'));
    expect(retryAfter(spent)).toBe('3');
    expect(spent).toMatchObject({
      code: 'ERR_REPLAY_SHARE_SPENT',
      detail: 'Too many one-time tokens of this caller are pending; try again later.',
    });
    clock.now = 2999;
    expect(retryAfter(attempt(() => replay.remember('a3', 1000, 'a')))).toBe('1');
    clock.now = 3000;
    expect(replay.remember('a3', 1000, 'a')).toBe(true);
  });

  it('recounts at the exact earliest deadline of ids written out of order', () => {
    const { clock, replay } = store({ share: 2 });
    expect(replay.remember('a1', 2000, 'a')).toBe(true);
    expect(replay.remember('a2', 1000, 'a')).toBe(true);
    expect(retryAfter(attempt(() => replay.remember('a3', 1000, 'a')))).toBe('1');
    clock.now = 999;
    expect(retryAfter(attempt(() => replay.remember('a3', 1000, 'a')))).toBe('1');
    clock.now = 1000;
    expect(replay.remember('a3', 1000, 'a')).toBe(true);
  });

  it('a clock gone back: room left in a partition is room, and no recount before the wait', () => {
    const { clock, replay } = store({ share: 2 });
    expect(replay.remember('a1', 100, 'a')).toBe(true);
    expect(replay.remember('a2', 200, 'a')).toBe(true);
    expect(retryAfter(attempt(() => replay.remember('a3', 1000, 'a')))).toBe('1');
    clock.now = 300;
    expect(replay.remember('a3', 50, 'a')).toBe(true); // a1 and a2 expired: [350]
    clock.now = 50;
    expect(replay.remember('a4', 10, 'a')).toBe(true); // one of two: room, [350, 60]
    clock.now = 70;
    // full again before the refused wait (100) ends: not recounted, so a4 still counts
    expect(retryAfter(attempt(() => replay.remember('a5', 10, 'a')))).toBe('1');
    clock.now = 100;
    expect(replay.remember('a5', 10, 'a')).toBe(true);
  });

  it('an id found expired, exactly at its deadline, stays forgotten if the clock goes back', () => {
    const { clock, replay } = store({ share: 2 });
    expect(replay.remember('a1', 100, 'a')).toBe(true);
    clock.now = 100;
    expect(replay.remember('a2', 100, 'a')).toBe(true); // a1 (until 100) dropped: [200]
    clock.now = 50;
    expect(replay.remember('a3', 10, 'a')).toBe(true); // one of two
    expect(retryAfter(attempt(() => replay.remember('a4', 10, 'a')))).toBe('1');
  });

  it('ids without a partition: a past deadline records nothing, even in a full store', () => {
    const { replay } = store({ share: 1, maxEntries: 1 });
    expect(replay.remember('x', 1000)).toBe(true);
    expect(replay.remember('y', 0)).toBe(true);
    expect(replay.seen('y')).toBe(false);
    expect(attempt(() => replay.remember('z', 1000))).toMatchObject({ status: 503 });
  });
});

describe('MemoryReplayStore sweeps partitions every interval', () => {
  it('forgets a partition swept expired, even if the clock then goes back', () => {
    const { clock, replay } = store({ share: 1, sweepIntervalMs: 1000 });
    expect(replay.remember('a1', 1000, 'a')).toBe(true); // swept at 0: next sweep at 1000
    clock.now = 1000;
    expect(replay.remember('b1', 10, 'b')).toBe(true); // sweeps: a1 (until 1000) dropped
    clock.now = 50;
    expect(replay.remember('a2', 10, 'a')).toBe(true);
  });

  it('does not sweep before the interval ends', () => {
    const { clock, replay } = store({ share: 1, sweepIntervalMs: 1000 });
    expect(replay.remember('a1', 400, 'a')).toBe(true);
    clock.now = 999;
    expect(replay.remember('b1', 10, 'b')).toBe(true); // no sweep: a1 kept
    clock.now = 100;
    expect(retryAfter(attempt(() => replay.remember('a2', 10, 'a')))).toBe('1');
  });

  it('keeps the partitions that still hold live ids', () => {
    const { clock, replay } = store({ share: 1, sweepIntervalMs: 1000 });
    expect(replay.remember('a1', 5000, 'a')).toBe(true);
    clock.now = 1000;
    expect(replay.remember('b1', 10, 'b')).toBe(true); // sweeps: a1 still live
    expect(retryAfter(attempt(() => replay.remember('a2', 10, 'a')))).toBe('4');
  });

  it('a partition swept empty starts anew: its old wait is forgotten', () => {
    const { clock, replay } = store({ share: 1, sweepIntervalMs: 1000 });
    expect(replay.remember('a1', 10_000, 'a')).toBe(true);
    expect(retryAfter(attempt(() => replay.remember('a2', 10, 'a')))).toBe('10');
    clock.now = 20_000;
    expect(replay.remember('b1', 10, 'b')).toBe(true); // sweeps: partition a dropped
    clock.now = 5000;
    expect(replay.remember('a3', 60_000, 'a')).toBe(true);
    expect(retryAfter(attempt(() => replay.remember('a4', 10, 'a')))).toBe('60');
  });
});
