// The stores whose every command names one key: rate-limit counters, sessions, one-time JWT
// ids.
import { expect, vi } from 'vitest';
import type { SessionRecord } from '../../../src/auth/session/store.js';
import { RedisRateLimitStore } from '../../../src/redis/rate-limit-store.js';
import { RedisReplayStore } from '../../../src/redis/replay-store.js';
import { RedisSessionStore } from '../../../src/redis/session-store.js';
import { asClient, type CheckContext, type CheckGroup } from './check.js';

const rateLimitStore = ({ client, prefix }: CheckContext) =>
  new RedisRateLimitStore({ client: asClient(client()), prefix });

/** A sliding window long enough that no check crosses a window's end (one a day, at 00:00 UTC). */
const DAY = 86_400_000;

/**
 * A time to live that the checks of expiry see end: wide enough for the few round trips that
 * must land before it on a loaded machine (each one a Redis call, an event-loop turn), short
 * enough to wait out. The end itself is polled, never slept: Redis reads a key past its
 * deadline as gone, so the poll ends at the deadline, however late the test runs.
 */
const SHORT_TTL = 1_000;

/** Polls `check` until it passes: past {@link SHORT_TTL}, with room for a loaded machine. */
const afterTheTtl = (check: () => Promise<void>) =>
  vi.waitFor(check, { timeout: SHORT_TTL + 5_000, interval: 50 });

export const rateLimitChecks: CheckGroup = {
  store: 'RedisRateLimitStore',
  checks: [
    {
      name: 'counts 1, 2, 3 in a fixed window, resetAt its end, each key on its own',
      async run(context) {
        const store = rateLimitStore(context);
        const before = Date.now();
        const hits = [
          await store.increment('alice', 60_000),
          await store.increment('alice', 60_000),
          await store.increment('alice', 60_000),
        ];
        const after = Date.now();
        expect(hits.map((hit) => hit.count)).toEqual([1, 2, 3]);
        for (const { resetAt } of hits) {
          expect(resetAt).toBeGreaterThanOrEqual(before + 59_000);
          expect(resetAt).toBeLessThanOrEqual(after + 60_000);
        }
        // one window: the three see the same end, give or take the round trips
        const ends = hits.map((hit) => hit.resetAt);
        expect(Math.max(...ends) - Math.min(...ends)).toBeLessThanOrEqual(after - before + 2);
        expect((await store.increment('bob', 60_000)).count).toBe(1);
      },
    },
    {
      name: '20 simultaneous increments from two processes get the counts 1 to 20, once each',
      async run(context) {
        const stores = [rateLimitStore(context), rateLimitStore(context)];
        const hits = await Promise.all(
          Array.from({ length: 20 }, (_, i) => stores[i % 2]!.increment('shared', 60_000)),
        );
        expect(hits.map((hit) => hit.count).sort((a, b) => a - b)).toEqual(
          Array.from({ length: 20 }, (_, i) => i + 1),
        );
        expect((await stores[0]!.peek('shared'))?.count).toBe(20);
      },
    },
    {
      name: 'counts 1, 2, 3 in a sliding window across processes, resetAt the window’s end',
      async run(context) {
        const [a, b] = [rateLimitStore(context), rateLimitStore(context)];
        const hits = [
          await a.incrementSliding('alice', DAY),
          await b.incrementSliding('alice', DAY),
          await a.incrementSliding('alice', DAY),
        ];
        expect(hits.map((hit) => hit.count)).toEqual([1, 2, 3]);
        // windows aligned on the epoch (Redis's clock: this machine's)
        const end = (Math.floor(Date.now() / DAY) + 1) * DAY;
        for (const { resetAt } of hits) expect(Math.abs(resetAt - end)).toBeLessThan(1_000);
        expect((await b.incrementSliding('bob', DAY)).count).toBe(1);
      },
    },
    {
      name: 'gives requests back, never below zero, in fixed and sliding windows',
      async run(context) {
        const store = rateLimitStore(context);
        await store.increment('fixed', 60_000);
        await store.increment('fixed', 60_000);
        await store.decrement('fixed');
        expect((await store.peek('fixed'))?.count).toBe(1);
        await store.decrement('fixed');
        await store.decrement('fixed');
        await store.decrement('fixed');
        expect(await store.peek('fixed')).toBeUndefined();
        expect((await store.increment('fixed', 60_000)).count).toBe(1);

        await store.incrementSliding('sliding', DAY);
        await store.incrementSliding('sliding', DAY);
        for (let i = 0; i < 3; i++) await store.decrement('sliding');
        expect((await store.incrementSliding('sliding', DAY)).count).toBe(1);

        // nothing counted: nothing to give back, and nothing made
        await store.decrement('never');
        expect(await store.peek('never')).toBeUndefined();
        expect((await store.increment('never', 60_000)).count).toBe(1);
      },
    },
    {
      name: 'peeks at a fixed window without counting',
      async run(context) {
        const [a, b] = [rateLimitStore(context), rateLimitStore(context)];
        expect(await a.peek('alice')).toBeUndefined();
        await a.increment('alice', 60_000);
        const before = Date.now();
        const second = await a.increment('alice', 60_000);
        const peeked = await b.peek('alice');
        expect(peeked?.count).toBe(2);
        expect(peeked?.resetAt).toBeGreaterThanOrEqual(before + 58_000);
        expect(peeked?.resetAt).toBeLessThanOrEqual(second.resetAt + 50);
        expect((await b.peek('alice'))?.count).toBe(2);
        expect((await b.increment('alice', 60_000)).count).toBe(3);
        // a sliding key is not a fixed window
        await a.incrementSliding('sliding', DAY);
        expect(await a.peek('sliding')).toBeUndefined();
      },
    },
    {
      name: 'resets a key: the next request counts 1',
      async run(context) {
        const [a, b] = [rateLimitStore(context), rateLimitStore(context)];
        for (let i = 0; i < 3; i++) await a.increment('alice', 60_000);
        await a.increment('bob', 60_000);
        await b.reset('alice');
        expect(await a.peek('alice')).toBeUndefined();
        expect((await a.increment('alice', 60_000)).count).toBe(1);
        expect((await a.peek('bob'))?.count).toBe(1);
        await b.reset('never');
      },
    },
    {
      name: 'starts a new window once one has ended',
      async run(context) {
        const store = rateLimitStore(context);
        // two requests inside one window (two round trips within SHORT_TTL)
        expect((await store.increment('short', SHORT_TTL)).count).toBe(1);
        expect((await store.increment('short', SHORT_TTL)).count).toBe(2);
        // once it has ended the key is gone, and the next request counts 1 in a new window
        await afterTheTtl(async () => expect(await store.peek('short')).toBeUndefined());
        expect((await store.increment('short', SHORT_TTL)).count).toBe(1);
      },
    },
  ],
};

const sessionStore = ({ client, prefix }: CheckContext) =>
  new RedisSessionStore({ client: asClient(client()), prefix });

function sessionRecord(): SessionRecord {
  const t = Date.now();
  return {
    sub: 'alice',
    name: 'Alice "A." ✓',
    role: 'admin',
    scopes: ['read:messages', 'write:messages'],
    createdAt: t,
    lastSeenAt: t,
    expiresAt: t + 3_600_000,
    data: { theme: 'dark', n: 1.5, list: [1, 'two', []], nested: { empty: {} } },
  };
}

export const sessionChecks: CheckGroup = {
  store: 'RedisSessionStore',
  checks: [
    {
      name: 'sets, gets, touches and deletes a session across processes',
      async run(context) {
        const [a, b] = [sessionStore(context), sessionStore(context)];
        const record = sessionRecord();
        await a.set('h1', record, 60_000);
        expect(await b.get('h1')).toEqual(record);
        await b.touch('h1', record.lastSeenAt + 5_000, 60_000);
        // lastSeenAt updated, every other field kept
        expect(await a.get('h1')).toEqual({ ...record, lastSeenAt: record.lastSeenAt + 5_000 });
        const replaced = { ...record, scopes: [], data: undefined };
        await b.set('h1', replaced, 60_000);
        expect(await a.get('h1')).toEqual(replaced);
        await a.delete('h1');
        expect(await b.get('h1')).toBeUndefined();
        // touching a deleted session never brings it back
        await b.touch('h1', Date.now(), 60_000);
        expect(await a.get('h1')).toBeUndefined();
        await a.delete('h1');
      },
    },
    {
      name: 'reads a session never set as undefined',
      async run(context) {
        const store = sessionStore(context);
        expect(await store.get('never')).toBeUndefined();
        await store.touch('never', Date.now(), 60_000);
        expect(await store.get('never')).toBeUndefined();
      },
    },
    {
      name: 'forgets a session when its time is up; touch extends it; a ttl of 0 deletes',
      async run(context) {
        const store = sessionStore(context);
        const record = sessionRecord();
        // 'touched' is set first: its first deadline comes before 'short''s, so once 'short'
        // is gone, 'touched' would be too had the touch not extended it (the touch lands
        // within SHORT_TTL of the first set: three round trips)
        await store.set('touched', record, SHORT_TTL);
        await store.set('short', record, SHORT_TTL);
        await store.touch('touched', record.lastSeenAt + 1, 60_000);
        await store.set('zero', record, 60_000);
        await store.set('zero', record, 0);
        expect(await store.get('zero')).toBeUndefined();
        await afterTheTtl(async () => expect(await store.get('short')).toBeUndefined());
        expect(await store.get('touched')).toEqual({
          ...record,
          lastSeenAt: record.lastSeenAt + 1,
        });
      },
    },
  ],
};

const replayStore = ({ client, prefix }: CheckContext) =>
  new RedisReplayStore({ client: asClient(client()), prefix });

export const replayChecks: CheckGroup = {
  store: 'RedisReplayStore',
  checks: [
    {
      name: 'remembers an id once across processes: true, then false; another id true',
      async run(context) {
        const [a, b] = [replayStore(context), replayStore(context)];
        expect(await a.remember('client-a:jti-1', 60_000)).toBe(true);
        expect(await b.remember('client-a:jti-1', 60_000)).toBe(false);
        expect(await a.remember('client-a:jti-1', 60_000)).toBe(false);
        expect(await b.remember('client-a:jti-2', 60_000)).toBe(true);
      },
    },
    {
      name: 'lets exactly one of 10 simultaneous remembers of one id from two processes be new',
      async run(context) {
        const stores = [replayStore(context), replayStore(context)];
        const answers = await Promise.all(
          Array.from({ length: 10 }, (_, i) => stores[i % 2]!.remember('jti-race', 60_000)),
        );
        expect(answers.filter(Boolean)).toHaveLength(1);
      },
    },
    {
      name: 'forgets an id when its time is up',
      async run(context) {
        const store = replayStore(context);
        // refused while its time runs (two round trips within SHORT_TTL)
        expect(await store.remember('jti-short', SHORT_TTL)).toBe(true);
        expect(await store.remember('jti-short', SHORT_TTL)).toBe(false);
        // polled: a refused remember changes nothing (SET NX), and once the id's time is up
        // it is new again
        await afterTheTtl(async () =>
          expect(await store.remember('jti-short', SHORT_TTL)).toBe(true),
        );
      },
    },
  ],
};
