import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { HubMessage } from '../../src/realtime/broker.js';
import { followChannel } from '../../src/realtime/follow.js';
import { createHub, type Hub, type Subscription } from '../../src/realtime/hub.js';
import { formatPosition } from '../../src/realtime/position.js';
import { RedisBroker } from '../../src/redis/broker.js';
import { streamChannel } from '../../src/sse/channel.js';
import { closeAll, listen } from '../helpers/http.js';
import { hasRedis, type RedisServer, startRedis } from '../helpers/redis.js';
import { connect, parseEvents } from '../helpers/sse.js';
import {
  closeChannels,
  connect as connectWs,
  silent,
  start,
  subscribed,
} from '../helpers/ws-channel.js';

describe.skipIf(!hasRedis)('RedisBroker (real redis-server)', () => {
  let redis: RedisServer;
  const hubs: Hub[] = [];
  const brokers: RedisBroker[] = [];
  let prefixes = 0;

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterEach(async () => {
    await closeChannels();
    for (const hub of hubs.splice(0)) await hub.close();
    for (const broker of brokers.splice(0)) await broker.close();
    await closeAll();
    vi.restoreAllMocks();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  /** Two hubs on one Redis, each with its own connections: two processes of one service. */
  function twoProcesses(historySize = 100) {
    const prefix = `p${++prefixes}:`;
    return [0, 1].map(() => {
      const broker = new RedisBroker({ client: redis.client(), prefix, historySize });
      brokers.push(broker);
      const hub = createHub({ broker });
      hubs.push(hub);
      return hub;
    }) as [Hub, Hub];
  }

  it('delivers a message published on one process to subscribers on both, in order', async () => {
    const [a, b] = twoProcesses();
    const onA: HubMessage[] = [];
    const onB: HubMessage[] = [];
    const subA = a.subscribe('room', (m) => void onA.push(m));
    const subB = b.subscribe('room', (m) => void onB.push(m));
    await Promise.all([subA.ready, subB.ready]);
    const sent = [];
    for (let i = 1; i <= 5; i++) sent.push(await (i % 2 ? a : b).publish('room', 'n', { i }));
    expect(sent.map((m) => m.offset)).toEqual([1, 2, 3, 4, 5]);
    expect(new Set(sent.map((m) => m.epoch)).size).toBe(1);
    await vi.waitFor(() => expect(onB).toHaveLength(5));
    await vi.waitFor(() => expect(onA).toHaveLength(5));
    expect(onB.map((m) => (m.data as { i: number }).i)).toEqual([1, 2, 3, 4, 5]);
    expect(onA[0]).toEqual(sent[0]);
    subB();
    await a.publish('room', 'n', { i: 6 });
    await vi.waitFor(() => expect(onA).toHaveLength(6));
    expect(onB).toHaveLength(5);
  });

  it('subscribes to several channels at once on a fresh subscriber connection', async () => {
    const [a, b] = twoProcesses();
    const got: string[] = [];
    const subs = ['x', 'y', 'z'].map((channel) =>
      a.subscribe(channel, (m) => void got.push(m.channel)),
    );
    await Promise.all(subs.map((s) => s.ready));
    for (const channel of ['x', 'y', 'z']) await b.publish(channel, 'n', 1);
    await vi.waitFor(() => expect(got.sort()).toEqual(['x', 'y', 'z']));
  });

  it('carries WebSocket relays between the channel protocols of two processes', async () => {
    const [a, b] = twoProcesses();
    // the relay subscription of each process is made with its first connection: watch the
    // hubs' subscriptions to the relay channel, and wait until Redis has taken both
    const relays: Subscription[] = [];
    for (const hub of [a, b]) {
      const subscribe = hub.subscribe.bind(hub);
      vi.spyOn(hub, 'subscribe').mockImplementation((channel, listener) => {
        const subscription = subscribe(channel, listener);
        if (channel === 'portico:relay') relays.push(subscription);
        return subscription;
      });
    }
    const one = await start({ hub: a });
    const two = await start({ hub: b });
    const alice = await connectWs(one, 'alice');
    const bob = await connectWs(two, 'bob');
    await subscribed(bob, 'r');
    await vi.waitFor(() => expect(relays).toHaveLength(2), { timeout: 5_000 });
    await Promise.all(relays.map((subscription) => subscription.ready));
    // bounded waits wide enough for a loaded machine (a round trip through Redis each)
    alice.send({ type: 'message', text: 'no channel' });
    expect(await bob.next(5_000)).toEqual({ type: 'message', text: 'no channel', from: 'alice' });
    alice.send({ type: 'message', text: 'in r', channel: 'r' });
    expect(await bob.next(5_000)).toEqual({
      type: 'message',
      text: 'in r',
      from: 'alice',
      channel: 'r',
    });
    bob.send({ type: 'message', text: 'back' });
    expect(await alice.next(5_000)).toEqual({ type: 'message', text: 'back', from: 'bob' });
    await silent(alice);
  });

  it('replays history from either process, and says when it is lost', async () => {
    const [a, b] = twoProcesses(3);
    const first = await a.publish('log', 'n', 1);
    for (let i = 2; i <= 5; i++) await a.publish('log', 'n', i);
    const recent = await b.replay('log', { epoch: first.epoch, offset: 3 });
    expect(recent).toMatchObject({ recovered: true });
    expect(recent.events.map((m) => m.data)).toEqual([4, 5]);
    const lost = await b.replay('log', { epoch: first.epoch, offset: 1 });
    expect(lost.recovered).toBe(false);
    expect(lost.events.map((m) => m.data)).toEqual([3, 4, 5]);
    expect(await b.position('log')).toEqual({ epoch: first.epoch, offset: 5 });
    // each channel has its own epoch (its keys share one hash slot of a cluster)
    const empty = await b.position('empty');
    expect(empty).toEqual({ epoch: expect.any(String), offset: 0 });
    expect(await a.position('empty')).toEqual(empty);
    expect((await b.replay('empty', empty)).recovered).toBe(true);
  });

  it('catches a follower up without gap or duplicate across processes', async () => {
    const [a, b] = twoProcesses();
    const start = await a.publish('c', 'n', 1);
    await a.publish('c', 'n', 2);
    const seen: number[] = [];
    const following = followChannel(b, 'c', {
      since: { epoch: start.epoch, offset: 1 },
      onEvent: (m) => void seen.push(m.data as number),
    });
    await a.publish('c', 'n', 3);
    await following.ready;
    await a.publish('c', 'n', 4);
    await vi.waitFor(() => expect(seen).toEqual([2, 3, 4]));
    following.unsubscribe();
  });

  it('lets an event stream resume on the other process with Last-Event-ID', async () => {
    const [a, b] = twoProcesses();
    const servers = await Promise.all(
      [a, b].map((hub) =>
        listen((req, res) => {
          streamChannel(req, res, { hub, channel: 'news', heartbeat: 0, retry: false });
        }),
      ),
    );
    const first = await connect(servers[0]!);
    await vi.waitFor(async () =>
      expect((await redis.client().pubsub('NUMSUB', `p${prefixes}:{ch:news}`))[1]).toBe(1),
    );
    const m1 = await b.publish('news', 'headline', { n: 1 });
    const [event] = parseEvents(await first.until((t) => parseEvents(t).length > 0));
    expect(event?.id).toBe(formatPosition(m1));
    first.destroy();
    await b.publish('news', 'headline', { n: 2 });
    await a.publish('news', 'headline', { n: 3 });
    const again = await connect(servers[1]!, '/', { 'last-event-id': event!.id! });
    const replayed = parseEvents(await again.until((t) => parseEvents(t).length >= 2));
    expect(replayed.map((e) => e.data)).toEqual(['{"n":2}', '{"n":3}']);
    again.destroy();
  });

  it('starts a new epoch when Redis lost its data: old positions are not recovered', async () => {
    const [a] = twoProcesses();
    const before = await a.publish('e', 'n', 1);
    await redis.restart();
    await vi.waitFor(async () => expect(await a.publish('e', 'n', 2)).toBeTruthy(), {
      timeout: 10_000,
      interval: 200,
    });
    const after = await a.position('e');
    expect(after.epoch).not.toBe(before.epoch);
    expect((await a.replay('e', { epoch: before.epoch, offset: 1 })).recovered).toBe(false);
  });

  it('fails publish fast while Redis is down', async () => {
    const [a] = twoProcesses();
    await a.publish('f', 'n', 1);
    await redis.kill();
    await expect(a.publish('f', 'n', 2)).rejects.toMatchObject({ code: 'ERR_REDIS_UNAVAILABLE' });
    await redis.restart();
  });
});
