import { afterEach, describe, expect, it } from 'vitest';
import { forbidden } from '../../../src/core/errors/errors.js';
import { silentLogger } from '../../../src/diagnostics/index.js';
import { createHub, type Hub } from '../../../src/realtime/hub.js';
import { MemoryBroker } from '../../../src/realtime/memory-broker.js';
import { createChannelProtocol } from '../../../src/ws/channel/channel.js';
import type { ChannelAccess } from '../../../src/ws/channel/options.js';
import { wrapBroker } from '../../helpers/broker.js';
import { captureLogger } from '../../helpers/logger.js';
import { closeChannels, connect, silent, start } from '../../helpers/ws-channel.js';

afterEach(closeChannels);

function hubWith(historySize = 100): { hub: Hub; broker: MemoryBroker } {
  const broker = new MemoryBroker({ historySize });
  return { hub: createHub({ broker }), broker };
}

async function publishMany(hub: Hub, from: number, count: number) {
  for (let i = from; i < from + count; i++) await hub.publish('room', 'message.created', { n: i });
}

describe('channel resume', () => {
  it('tells a recoverable subscription its position, and numbers its pushes', async () => {
    const { hub, broker } = hubWith();
    await publishMany(hub, 1, 2);
    const url = await start({ hub });
    const a = await connect(url, 'alice');
    a.send({ type: 'subscribe', channel: 'room', recover: true });
    expect(await a.next()).toEqual({
      type: 'subscribed',
      channel: 'room',
      position: `${broker.epoch}:2`,
    });
    await publishMany(hub, 3, 1);
    expect(await a.next()).toEqual({
      type: 'push',
      channel: 'room',
      event: 'message.created',
      data: { n: 3 },
      position: `${broker.epoch}:3`,
    });
  });

  it('replays what a reconnecting client missed, then the live pushes, once each', async () => {
    const { hub, broker } = hubWith();
    const url = await start({ hub });
    const first = await connect(url, 'alice');
    first.send({ type: 'subscribe', channel: 'room', recover: true });
    await first.next();
    await publishMany(hub, 1, 2);
    await first.next();
    const last = (await first.next()).position as string;
    first.ws.terminate();
    await publishMany(hub, 3, 3);

    const again = await connect(url, 'alice');
    again.send({ type: 'subscribe', channel: 'room', since: last });
    expect(await again.next()).toEqual({
      type: 'subscribed',
      channel: 'room',
      position: last,
      recovered: true,
    });
    await publishMany(hub, 6, 1);
    const pushes = [await again.next(), await again.next(), await again.next(), await again.next()];
    expect(pushes.map((p) => (p.data as { n: number }).n)).toEqual([3, 4, 5, 6]);
    expect(pushes.at(-1)?.position).toBe(`${broker.epoch}:6`);
    await silent(again);
  });

  it('says "not recovered" with where the channel stands when the history lost the position', async () => {
    const { hub, broker } = hubWith(2);
    await publishMany(hub, 1, 5);
    const url = await start({ hub });
    const a = await connect(url, 'alice');
    for (const since of [`${broker.epoch}:1`, 'another-epoch:4', 'not a position']) {
      a.send({ type: 'subscribe', channel: 'room', since });
      expect(await a.next()).toEqual({
        type: 'subscribed',
        channel: 'room',
        position: `${broker.epoch}:5`,
        recovered: false,
      });
      await silent(a, 50);
      a.send({ type: 'unsubscribe', channel: 'room' });
    }
    a.send({ type: 'subscribe', channel: 'room', since: `${broker.epoch}:1` });
    await a.next();
    await publishMany(hub, 6, 1);
    expect((await a.next()).position).toBe(`${broker.epoch}:6`);
  });

  it('closes with 1008 for a `since` that is not a string', async () => {
    const { hub } = hubWith();
    const url = await start({ hub });
    const a = await connect(url, 'alice');
    a.send({ type: 'subscribe', channel: 'room', since: 5 });
    expect((await a.closed()).code).toBe(1008);
  });

  it('closes with 1011 when the broker cannot replay', async () => {
    const inner = new MemoryBroker();
    const broker = wrapBroker(inner, {
      history: () => Promise.reject(new Error('broker down')),
    });
    const log = captureLogger();
    const url = await start({ hub: createHub({ broker }), logger: log });
    const a = await connect(url, 'alice');
    a.send({ type: 'subscribe', channel: 'room', since: `${inner.epoch}:0` });
    expect((await a.closed()).code).toBe(1011);
    expect(log.errors).toContainEqual(expect.objectContaining({ message: 'broker down' }));
  });
});

describe('channel authorization', () => {
  const ownRoomOnly = ({ channel, principal }: ChannelAccess) =>
    channel === 'lobby' || channel === `user:${principal?.sub}`;

  it('refuses a subscription it does not allow, keeping the connection', async () => {
    const hub = createHub();
    const seen: ChannelAccess[] = [];
    const url = await start({
      hub,
      authorize: (access) => {
        seen.push(access);
        return ownRoomOnly(access);
      },
    });
    const alice = await connect(url, 'alice');
    alice.send({ type: 'subscribe', channel: 'user:bob' });
    expect(await alice.next()).toEqual({
      type: 'error',
      code: 'forbidden',
      action: 'subscribe',
      channel: 'user:bob',
    });
    alice.send({ type: 'subscribe', channel: 'user:alice' });
    alice.send({ type: 'ping' });
    expect(await alice.next()).toEqual({ type: 'pong' });
    await hub.publish('user:bob', 'secret', 1);
    await hub.publish('user:alice', 'mine', 2);
    expect(await alice.next()).toEqual({ type: 'push', event: 'mine', data: 2 });
    expect(seen[0]).toMatchObject({
      action: 'subscribe',
      channel: 'user:bob',
      principal: { sub: 'alice' },
      id: expect.any(String),
    });
  });

  it('refuses to relay a message on a channel it does not allow', async () => {
    const url = await start({ authorize: ownRoomOnly });
    const alice = await connect(url, 'alice');
    const bob = await connect(url, 'bob');
    bob.send({ type: 'subscribe', channel: 'user:bob' });
    bob.send({ type: 'subscribe', channel: 'lobby' });
    bob.send({ type: 'ping' });
    await bob.next();
    alice.send({ type: 'message', text: 'hi', channel: 'user:bob' });
    expect(await alice.next()).toEqual({
      type: 'error',
      code: 'forbidden',
      action: 'publish',
      channel: 'user:bob',
    });
    await silent(bob);
    alice.send({ type: 'message', text: 'hello all', channel: 'lobby' });
    expect(await bob.next()).toMatchObject({ type: 'message', text: 'hello all', from: 'alice' });
  });

  it('closes with 1008 when it throws forbidden(), 1011 when it fails', async () => {
    const url = await start({
      authorize: ({ channel }) => {
        if (channel === 'banned') throw forbidden('Banned.');
        throw new Error('directory offline');
      },
      logger: silentLogger,
    });
    const a = await connect(url, 'alice');
    a.send({ type: 'subscribe', channel: 'banned' });
    expect((await a.closed()).code).toBe(1008);
    const b = await connect(url, 'bob');
    b.send({ type: 'subscribe', channel: 'other' });
    expect((await b.closed()).code).toBe(1011);
  });

  it('closes with 1008 for a channel name with control characters', async () => {
    const url = await start({ hub: createHub() });
    const a = await connect(url, 'alice');
    a.send({ type: 'subscribe', channel: 'room\u0000' });
    expect((await a.closed()).code).toBe(1008);
  });

  it('rejects unknown and invalid options', () => {
    expect(() => createChannelProtocol({ authorise: () => true } as never)).toThrow(/authorize/);
    expect(() => createChannelProtocol({ authorize: true as never })).toThrow(TypeError);
  });
});
