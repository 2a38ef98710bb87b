import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Logger } from '../../src/diagnostics/index.js';
import type { Broker, HubMessage } from '../../src/realtime/broker.js';
import { createHub, type Hub } from '../../src/realtime/hub.js';
import { MemoryBroker, type MemoryBrokerOptions } from '../../src/realtime/memory-broker.js';
import { formatPosition, parsePosition } from '../../src/realtime/position.js';
import { wrapBroker } from '../helpers/broker.js';
import { captureLogger } from '../helpers/logger.js';

const hubs: Hub[] = [];

function hubWith(options: MemoryBrokerOptions = {}) {
  const broker = new MemoryBroker(options);
  const hub = createHub({ broker });
  hubs.push(hub);
  return { hub, broker };
}

afterEach(async () => {
  for (const hub of hubs.splice(0)) await hub.close();
});

describe('publish / subscribe', () => {
  it('delivers by channel, without cross-talk', async () => {
    const { hub } = hubWith();
    const a: unknown[] = [];
    const b: unknown[] = [];
    hub.subscribe('a', (m) => void a.push(m.data));
    hub.subscribe('b', (m) => void b.push(m.data));
    await hub.publish('a', 'message', 1);
    await hub.publish('b', 'message', 2);
    await hub.publish('a', 'message', 3);
    expect(a).toEqual([1, 3]);
    expect(b).toEqual([2]);
  });

  it('resolves with the recorded message', async () => {
    const { hub, broker } = hubWith({ now: () => 1234 });
    const message = await hub.publish('room', 'joined', { who: 'ada' });
    expect(message).toEqual({
      channel: 'room',
      offset: 1,
      epoch: broker.epoch,
      event: 'joined',
      data: { who: 'ada' },
      time: 1234,
    });
    expect(Object.isFrozen(message)).toBe(true);
  });

  it('stops delivering after unsubscribe, which is idempotent', async () => {
    const { hub } = hubWith();
    const seen: number[] = [];
    const other: number[] = [];
    const off = hub.subscribe('c', (m) => void seen.push(m.offset));
    hub.subscribe('c', (m) => void other.push(m.offset));
    await hub.publish('c', 'e', null);
    off();
    off();
    await hub.publish('c', 'e', null);
    expect(seen).toEqual([1]);
    expect(other).toEqual([1, 2]);
  });

  it('keeps two subscriptions of one function apart', async () => {
    const { hub } = hubWith();
    const listener = vi.fn();
    const off = hub.subscribe('c', listener);
    hub.subscribe('c', listener);
    await hub.publish('c', 'e', null);
    off();
    await hub.publish('c', 'e', null);
    expect(listener).toHaveBeenCalledTimes(3);
  });

  it('numbers offsets from 1, by one, per channel', async () => {
    const { hub } = hubWith();
    const offsets: Record<string, number[]> = { x: [], y: [] };
    for (let i = 0; i < 5; i++) {
      for (const channel of ['x', 'y', 'x']) {
        offsets[channel]!.push((await hub.publish(channel, 'e', i)).offset);
      }
    }
    expect(offsets.x).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(offsets.y).toEqual([1, 2, 3, 4, 5]);
  });

  it('gives each broker its own epoch', () => {
    expect(new MemoryBroker().epoch).not.toBe(new MemoryBroker().epoch);
  });

  it('keeps delivering when a listener throws or rejects', async () => {
    const log = captureLogger();
    const { hub } = hubWith({ logger: log });
    const seen: string[] = [];
    hub.subscribe('c', () => {
      throw new Error('boom');
    });
    hub.subscribe('c', async () => {
      throw new Error('later');
    });
    hub.subscribe('c', (m) => void seen.push(m.event));
    const message = await hub.publish('c', 'e', null);
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toEqual(['e']);
    expect(log.errors).toHaveLength(2);
    expect(log.errors).toContainEqual(expect.objectContaining({ message: 'boom' }));
    expect(log.errors).toContainEqual(expect.objectContaining({ message: 'later' }));
    for (const line of log.lines) {
      expect(line.fields).toMatchObject({
        component: 'realtime',
        event: 'listener.failed',
        channel: message.channel,
      });
    }
  });

  it('survives a logger that throws', async () => {
    const fail = () => {
      throw new Error('reporter');
    };
    const logger: Logger = {
      error: fail,
      warn: fail,
      info: fail,
      debug: fail,
      child: () => logger,
    };
    const { hub } = hubWith({ logger });
    const seen = vi.fn();
    hub.subscribe('c', () => {
      throw new Error('boom');
    });
    hub.subscribe('c', seen);
    await hub.publish('c', 'e', null);
    expect(seen).toHaveBeenCalledOnce();
  });

  it('fans 100 messages out to 1,000 subscribers exactly once each', async () => {
    const log = captureLogger();
    const { hub } = hubWith({ historySize: 10, logger: log });
    const counts = new Array<number>(1000).fill(0);
    const last = new Array<number>(1000).fill(0);
    for (let i = 0; i < 1000; i++) {
      hub.subscribe('fan', (m) => {
        if (m.offset !== last[i]! + 1) throw new Error('out of order');
        last[i] = m.offset;
        counts[i]! += 1;
      });
    }
    for (let n = 0; n < 100; n++) await hub.publish('fan', 'tick', n);
    expect(log.lines).toEqual([]);
    expect(counts.every((c) => c === 100)).toBe(true);
    const { events } = await hub.replay('fan', { epoch: 'other', offset: 0 });
    expect(events.map((m) => m.offset)).toEqual([91, 92, 93, 94, 95, 96, 97, 98, 99, 100]);
  });
});

describe('replay', () => {
  it('recovers the events after a position still in the buffer', async () => {
    const { hub, broker } = hubWith({ historySize: 5 });
    for (let i = 1; i <= 4; i++) await hub.publish('r', 'e', i);
    const all = await hub.replay('r', { epoch: broker.epoch, offset: 0 });
    expect(all.recovered).toBe(true);
    expect(all.events.map((m) => m.data)).toEqual([1, 2, 3, 4]);
    const some = await hub.replay('r', { epoch: broker.epoch, offset: 2 });
    expect(some).toEqual({ recovered: true, events: [all.events[2], all.events[3]] });
    expect(await hub.replay('r', { epoch: broker.epoch, offset: 4 })).toEqual({
      recovered: true,
      events: [],
    });
  });

  it('recovers nothing missed on a channel never published to', async () => {
    const { hub, broker } = hubWith();
    expect(await hub.replay('quiet', { epoch: broker.epoch, offset: 0 })).toEqual({
      recovered: true,
      events: [],
    });
    expect((await hub.replay('quiet', { epoch: broker.epoch, offset: 3 })).recovered).toBe(false);
    expect((await hub.replay('quiet', { epoch: 'old', offset: 0 })).recovered).toBe(false);
  });

  it('is not recovered once the position was evicted from the bounded buffer', async () => {
    const { hub, broker } = hubWith({ historySize: 3 });
    for (let i = 1; i <= 10; i++) await hub.publish('r', 'e', i);
    const edge = await hub.replay('r', { epoch: broker.epoch, offset: 7 });
    expect(edge.recovered).toBe(true);
    expect(edge.events.map((m) => m.offset)).toEqual([8, 9, 10]);
    const behind = await hub.replay('r', { epoch: broker.epoch, offset: 6 });
    expect(behind.recovered).toBe(false);
    expect(behind.events.map((m) => m.offset)).toEqual([8, 9, 10]);
  });

  it('is not recovered from another epoch or a position from the future', async () => {
    const { hub, broker } = hubWith();
    await hub.publish('r', 'e', 1);
    const other = await hub.replay('r', { epoch: 'someone-else', offset: 1 });
    expect(other.recovered).toBe(false);
    expect(other.events).toHaveLength(1);
    expect((await hub.replay('r', { epoch: broker.epoch, offset: 2 })).recovered).toBe(false);
    expect((await hub.replay('r', { epoch: broker.epoch, offset: 0.5 })).recovered).toBe(false);
  });

  it('drops events older than historyTtl', async () => {
    const clock = { now: 1000 };
    const { hub, broker } = hubWith({ historyTtl: '100ms', now: () => clock.now });
    await hub.publish('r', 'e', 1);
    clock.now += 50;
    await hub.publish('r', 'e', 2);
    clock.now += 60;
    const after = await hub.replay('r', { epoch: broker.epoch, offset: 0 });
    expect(after.recovered).toBe(false);
    expect(after.events.map((m) => m.data)).toEqual([2]);
    expect((await hub.replay('r', { epoch: broker.epoch, offset: 1 })).recovered).toBe(true);
    clock.now += 1000;
    expect(await hub.replay('r', { epoch: broker.epoch, offset: 2 })).toEqual({
      recovered: true,
      events: [],
    });
  });

  it('keeps no history with historySize 0, yet counts offsets', async () => {
    const { hub, broker } = hubWith({ historySize: 0 });
    await hub.publish('r', 'e', 1);
    expect((await hub.publish('r', 'e', 2)).offset).toBe(2);
    expect(await hub.replay('r', { epoch: broker.epoch, offset: 1 })).toEqual({
      recovered: false,
      events: [],
    });
  });
});

describe('validation', () => {
  it.each([
    '',
    'x'.repeat(201),
    'a\nb',
    'tab\there',
    'nul\u0000',
    'del\u007f',
    'c1\u0085',
    42,
    undefined,
  ])('rejects the channel name %j', async (name) => {
    const { hub } = hubWith();
    expect(() => hub.subscribe(name as string, () => {})).toThrow(TypeError);
    await expect(hub.publish(name as string, 'e', null)).rejects.toThrow(TypeError);
    await expect(hub.replay(name as string, { epoch: 'x', offset: 0 })).rejects.toThrow(TypeError);
  });

  it('takes names of 1 to 200 characters, any script', async () => {
    const { hub } = hubWith();
    await expect(hub.publish('x'.repeat(200), 'e', null)).resolves.toMatchObject({ offset: 1 });
    await expect(hub.publish('é', 'e', null)).resolves.toMatchObject({ channel: 'é' });
  });

  it('rejects an invalid event name', async () => {
    const { hub } = hubWith();
    await expect(hub.publish('c', 'a\r\nb', null)).rejects.toThrow(TypeError);
    await expect(hub.publish('c', '', null)).rejects.toThrow(TypeError);
  });

  it('rejects unknown and invalid options', () => {
    expect(() => createHub({ brokr: {} } as never)).toThrow(/Did you mean `broker`/);
    expect(() => createHub({ broker: {} as Broker })).toThrow(TypeError);
    expect(() => new MemoryBroker({ historySize: -1 })).toThrow(TypeError);
    expect(() => new MemoryBroker({ historyTtl: 0 })).toThrow(TypeError);
    expect(() => new MemoryBroker({ historySzie: 3 } as never)).toThrow(/historySize/);
  });

  it('takes historyTtl in whole milliseconds (the old historyTtlMs is refused with a hint)', () => {
    expect(() => new MemoryBroker({ historyTtlMs: 60_000 } as never)).toThrow(
      /unknown option `historyTtlMs`\. Did you mean `historyTtl`\?/,
    );
    expect(() => new MemoryBroker({ historyTtl: 0.5 })).toThrow(
      /^new MemoryBroker\(\): `historyTtl` must be milliseconds, at least 1$/,
    );
    expect(() => new MemoryBroker({ historySize: 1.5 })).toThrow(/`historySize`/);
    expect(() => new MemoryBroker({ now: 5 as never })).toThrow(/`now` must be a function/);
    expect(new MemoryBroker({ historySize: 0, historyTtl: '1ms' }).epoch).toEqual(
      expect.any(String),
    );
  });
});

describe('close', () => {
  it('ends subscriptions and refuses further use', async () => {
    const hub = createHub();
    const listener = vi.fn();
    hub.subscribe('c', listener);
    await hub.close();
    await hub.close();
    await expect(hub.publish('c', 'e', null)).rejects.toMatchObject({ code: 'ERR_HUB_CLOSED' });
    expect(() => hub.subscribe('c', listener)).toThrow(
      expect.objectContaining({ code: 'ERR_HUB_CLOSED' }),
    );
    expect(listener).not.toHaveBeenCalled();
  });

  it('leaves a given broker open, its own subscriptions ended', async () => {
    const broker = new MemoryBroker();
    const hub = createHub({ broker });
    const listener = vi.fn();
    hub.subscribe('c', listener);
    await hub.close();
    expect(broker.publish('c', { event: 'e', data: null }).offset).toBe(1);
    expect(listener).not.toHaveBeenCalled();
    broker.close();
  });

  it('releases an asynchronous subscription ended before it settled', async () => {
    const inner = new MemoryBroker();
    const released = vi.fn();
    const broker = wrapBroker(inner, {
      publish: async (channel, draft) => inner.publish(channel, draft),
      subscribe: async (channel, listener) => {
        const off = inner.subscribe(channel, listener);
        return () => {
          released();
          off();
        };
      },
    });
    const hub = createHub({ broker });
    hubs.push(hub);
    const early = vi.fn();
    const late = vi.fn();
    hub.subscribe('c', early)();
    const off = hub.subscribe('c', late);
    await new Promise((resolve) => setImmediate(resolve));
    expect(released).toHaveBeenCalledOnce();
    const message: HubMessage = await hub.publish('c', 'e', 1);
    expect(early).not.toHaveBeenCalled();
    expect(late).toHaveBeenCalledWith(message);
    off();
    expect(released).toHaveBeenCalledTimes(2);
  });

  it('reports a failed asynchronous subscription', async () => {
    const log = captureLogger();
    const broker: Broker = {
      publish: () => Promise.reject(new Error('down')),
      subscribe: () => Promise.reject(new Error('down')),
      history: () => ({ events: [], recovered: false }),
      position: () => Promise.reject(new Error('down')),
      close: () => {},
    };
    const hub = createHub({ broker, logger: log });
    hubs.push(hub);
    hub.subscribe('c', () => {});
    await new Promise((resolve) => setImmediate(resolve));
    expect(log.errors).toEqual([expect.objectContaining({ message: 'down' })]);
    expect(log.lines[0]!.fields).toMatchObject({
      component: 'realtime',
      event: 'subscribe.failed',
      channel: 'c',
    });
    await expect(hub.publish('c', 'e', null)).rejects.toThrow('down');
  });
});

describe('positions', () => {
  it('round-trips through formatPosition and parsePosition', () => {
    const broker = new MemoryBroker();
    const message = broker.publish('c', { event: 'e', data: null });
    const id = formatPosition(message);
    expect(id).toBe(`${broker.epoch}:1`);
    expect(parsePosition(id)).toEqual({ epoch: broker.epoch, offset: 1 });
    expect(parsePosition(formatPosition({ epoch: 'a-b_c.d', offset: 0 }))).toEqual({
      epoch: 'a-b_c.d',
      offset: 0,
    });
    expect(parsePosition(`e:${Number.MAX_SAFE_INTEGER}`)).toEqual({
      epoch: 'e',
      offset: Number.MAX_SAFE_INTEGER,
    });
  });

  it.each([
    undefined,
    null,
    42,
    ['a:1'],
    '',
    ':',
    'abc',
    ':5',
    'abc:',
    'abc:-1',
    'abc:01',
    'abc:1.5',
    'abc:1e3',
    'abc: 1',
    'a:b:1',
    'a b:1',
    'a\n:1',
    'é:1',
    'e:99999999999999999',
    `${'x'.repeat(300)}:1`,
  ])('gives undefined for %j', (input) => {
    expect(parsePosition(input)).toBeUndefined();
  });

  it('refuses to format an epoch or offset no client could send back', () => {
    expect(() => formatPosition({ epoch: 'a:b', offset: 1 })).toThrow(TypeError);
    expect(() => formatPosition({ epoch: 'a\nb', offset: 1 })).toThrow(TypeError);
    expect(() => formatPosition({ epoch: '', offset: 1 })).toThrow(TypeError);
    expect(() => formatPosition({ epoch: 'a', offset: -1 })).toThrow(TypeError);
    expect(() => formatPosition({ epoch: 'a', offset: 1.5 })).toThrow(TypeError);
  });
});

describe('redact', () => {
  const deleteId = (id: number) => (m: HubMessage) =>
    (m.data as { id: number }).id === id ? { event: 'message.deleted', data: { id } } : undefined;

  it('rewrites held messages in place, keeping offset, epoch and time', async () => {
    let clock = 1000;
    const { hub, broker } = hubWith({ now: () => clock++ });
    const secret = await hub.publish('room', 'message.created', { id: 1, text: 'secret' });
    const kept = await hub.publish('room', 'message.created', { id: 2, text: 'public' });
    expect(await hub.redact('room', deleteId(1))).toBe(1);
    expect(await hub.redact('elsewhere', deleteId(1))).toBe(0);
    const { events, recovered } = await hub.replay('room', { epoch: broker.epoch, offset: 0 });
    expect(recovered).toBe(true);
    expect(events).toEqual([{ ...secret, event: 'message.deleted', data: { id: 1 } }, kept]);
    expect(Object.isFrozen(events[0])).toBe(true);
    expect(JSON.stringify(events)).not.toContain('secret');
    // resume positions stay valid
    const after = await hub.replay('room', { epoch: broker.epoch, offset: 1 });
    expect(after.events).toEqual([kept]);
    expect(await hub.position('room')).toEqual({ epoch: broker.epoch, offset: 2 });
  });

  it('rewrites what the ring still holds once it has wrapped around', async () => {
    const { hub, broker } = hubWith({ historySize: 3 });
    for (let id = 1; id <= 5; id++) await hub.publish('room', 'message.created', { id });
    expect(await hub.redact('room', deleteId(4))).toBe(1);
    expect(await hub.redact('room', deleteId(1))).toBe(0); // evicted already
    const { events } = await hub.replay('room', { epoch: broker.epoch, offset: 2 });
    expect(events.map((m) => [m.offset, m.event])).toEqual([
      [3, 'message.created'],
      [4, 'message.deleted'],
      [5, 'message.created'],
    ]);
  });

  it('checks the replacement like a publish, and refuses a broker that cannot rewrite', async () => {
    const { hub } = hubWith();
    await hub.publish('room', 'message.created', { id: 1 });
    await expect(hub.redact('room', () => ({ event: 'bad\nname', data: 1 }))).rejects.toThrow(
      TypeError,
    );
    await expect(hub.redact('room', 'no' as never)).rejects.toThrow(/replace/);
    const plain = createHub({ broker: wrapBroker(new MemoryBroker(), {}) });
    hubs.push(plain);
    await expect(plain.redact('room', deleteId(1))).rejects.toMatchObject({
      code: 'ERR_HUB_REDACT_UNSUPPORTED',
    });
  });
});
