import { afterEach, describe, expect, it, vi } from 'vitest';
import type { HistoryResult, Position } from '../../src/realtime/broker.js';
import { type FollowStart, followChannel } from '../../src/realtime/follow.js';
import { createHub, type Hub } from '../../src/realtime/hub.js';
import { MemoryBroker } from '../../src/realtime/memory-broker.js';
import { wrapBroker } from '../helpers/broker.js';

const hubs: Hub[] = [];

function setup(historySize = 100) {
  const broker = new MemoryBroker({ historySize });
  const hub = createHub({ broker });
  hubs.push(hub);
  return { hub, broker };
}

/** Publishes `count` events numbered from `from` on `channel`. */
async function publishMany(hub: Hub, channel: string, from: number, count: number) {
  for (let i = from; i < from + count; i++) await hub.publish(channel, 'tick', i);
}

/** Follows `channel`, recording the start and every event's offset. */
function record(hub: Hub, channel: string, since?: Position | null, withStart = true) {
  const starts: FollowStart[] = [];
  const offsets: number[] = [];
  const following = followChannel(hub, channel, {
    since,
    ...(withStart && { onStart: (start: FollowStart) => void starts.push(start) }),
    onEvent: (m) => void offsets.push(m.offset),
  });
  return { ...following, starts, offsets };
}

afterEach(async () => {
  for (const hub of hubs.splice(0)) await hub.close();
});

describe('followChannel', () => {
  it('delivers live events only to a fresh subscriber', async () => {
    const { hub } = setup();
    await publishMany(hub, 'c', 1, 3);
    const f = record(hub, 'c', undefined, false);
    await f.ready;
    await publishMany(hub, 'c', 4, 2);
    expect(f.offsets).toEqual([4, 5]);
    expect(f.starts).toEqual([]);
  });

  it('tells a fresh subscriber that asks where the channel stands', async () => {
    const { hub, broker } = setup();
    await publishMany(hub, 'c', 1, 3);
    const f = record(hub, 'c');
    await f.ready;
    await publishMany(hub, 'c', 4, 1);
    expect(f.starts).toEqual([{ position: { epoch: broker.epoch, offset: 3 } }]);
    expect(f.offsets).toEqual([4]);
  });

  it('replays what was missed, then goes live', async () => {
    const { hub, broker } = setup();
    await publishMany(hub, 'c', 1, 5);
    const f = record(hub, 'c', { epoch: broker.epoch, offset: 2 });
    await f.ready;
    await publishMany(hub, 'c', 6, 1);
    expect(f.starts).toEqual([{ recovered: true, position: { epoch: broker.epoch, offset: 2 } }]);
    expect(f.offsets).toEqual([3, 4, 5, 6]);
  });

  it('says "not recovered" with the newest position when the history no longer holds it', async () => {
    const { hub, broker } = setup(3);
    await publishMany(hub, 'c', 1, 10);
    const f = record(hub, 'c', { epoch: broker.epoch, offset: 2 });
    await f.ready;
    await publishMany(hub, 'c', 11, 1);
    expect(f.starts).toEqual([{ recovered: false, position: { epoch: broker.epoch, offset: 10 } }]);
    expect(f.offsets).toEqual([11]);
  });

  it('is not recovered from another epoch, or from an unreadable position', async () => {
    const { hub, broker } = setup();
    await publishMany(hub, 'c', 1, 2);
    const other = record(hub, 'c', { epoch: 'before-restart', offset: 1 });
    const unreadable = record(hub, 'c', null);
    const empty = record(hub, 'never-used', null);
    await Promise.all([other.ready, unreadable.ready, empty.ready]);
    const head = { epoch: broker.epoch, offset: 2 };
    expect(other.starts).toEqual([{ recovered: false, position: head }]);
    expect(unreadable.starts).toEqual([{ recovered: false, position: head }]);
    expect(empty.starts).toEqual([
      { recovered: false, position: { epoch: broker.epoch, offset: 0 } },
    ]);
    expect(other.offsets).toEqual([]);
  });

  it('loses nothing and repeats nothing published while the history is read', async () => {
    const inner = new MemoryBroker();
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const broker = wrapBroker(inner, {
      // The history is read at once, but answered only after more events went out.
      history: async (channel, since): Promise<HistoryResult> => {
        const result = inner.history(channel, since);
        await gate;
        return result;
      },
    });
    const hub = createHub({ broker });
    hubs.push(hub);
    await publishMany(hub, 'c', 1, 4);
    const f = record(hub, 'c', { epoch: inner.epoch, offset: 1 });
    await publishMany(hub, 'c', 5, 3);
    expect(f.offsets).toEqual([]);
    release();
    await f.ready;
    await publishMany(hub, 'c', 8, 1);
    expect(f.offsets).toEqual([2, 3, 4, 5, 6, 7, 8]);
  });

  /** A broker that drops the live delivery of the offsets in `dropped` (history keeps them). */
  function lossyHub(dropped: Set<number>, historySize = 100) {
    const inner = new MemoryBroker({ historySize });
    const broker = wrapBroker(inner, {
      subscribe: (channel, listener) =>
        inner.subscribe(channel, (m) => (dropped.has(m.offset) ? undefined : listener(m))),
    });
    const hub = createHub({ broker });
    hubs.push(hub);
    return { hub, inner };
  }

  it('fills a gap in the live events from the history, in order', async () => {
    const { hub } = lossyHub(new Set([3, 4]));
    const lost: Position[] = [];
    const offsets: number[] = [];
    const f = followChannel(hub, 'c', {
      onStart: () => {},
      onEvent: (m) => void offsets.push(m.offset),
      onLost: (p) => void lost.push(p),
    });
    await f.ready;
    await publishMany(hub, 'c', 1, 6);
    await vi.waitFor(() => expect(offsets).toEqual([1, 2, 3, 4, 5, 6]));
    expect(lost).toEqual([]);
  });

  it('says what was lost when the history no longer covers a gap', async () => {
    const { hub, inner } = lossyHub(new Set([2, 3, 4]), 1);
    const lost: Position[] = [];
    const offsets: number[] = [];
    const f = followChannel(hub, 'c', {
      onStart: () => {},
      onEvent: (m) => void offsets.push(m.offset),
      onLost: (p) => void lost.push(p),
    });
    await f.ready;
    await publishMany(hub, 'c', 1, 6);
    await vi.waitFor(() => expect(offsets).toEqual([1, 5, 6]));
    expect(lost).toEqual([{ epoch: inner.epoch, offset: 4 }]);
  });

  it('delivers nothing once unsubscribed, even mid catch-up', async () => {
    const { hub, broker } = setup();
    await publishMany(hub, 'c', 1, 3);
    const f = record(hub, 'c', { epoch: broker.epoch, offset: 1 });
    f.unsubscribe();
    f.unsubscribe();
    await f.ready;
    await publishMany(hub, 'c', 4, 1);
    expect(f.starts).toEqual([]);
    expect(f.offsets).toEqual([]);
  });

  it('rejects `ready` and ends the subscription when the broker fails', async () => {
    const inner = new MemoryBroker();
    const released = vi.fn();
    const broker = wrapBroker(inner, {
      subscribe: (channel, listener) => {
        const off = inner.subscribe(channel, listener);
        return () => {
          released();
          off();
        };
      },
      history: () => Promise.reject(new Error('history unavailable')),
      position: () => Promise.reject(new Error('position unavailable')),
    });
    const hub = createHub({ broker });
    hubs.push(hub);
    const replaying = record(hub, 'c', { epoch: inner.epoch, offset: 0 });
    await expect(replaying.ready).rejects.toThrow('history unavailable');
    const fresh = record(hub, 'c');
    await expect(fresh.ready).rejects.toThrow('position unavailable');
    expect(released).toHaveBeenCalledTimes(2);
    await hub.publish('c', 'tick', 1);
    expect([...replaying.offsets, ...fresh.offsets]).toEqual([]);
  });

  it('requires onEvent, and checks the channel name at once', () => {
    const { hub } = setup();
    expect(() => followChannel(hub, 'c', {} as never)).toThrow(TypeError);
    expect(() => followChannel(hub, '', { onEvent: () => {} })).toThrow(TypeError);
  });
});
