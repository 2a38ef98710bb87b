// RedisBroker: two brokers on two clients with one prefix are two processes of one hub.
// What one publishes reaches the other's subscribers, in order; history, positions and
// redactions are the same from either; channels spread over slots on a cluster.
import { expect, vi } from 'vitest';
import type { HubMessage } from '../../../src/realtime/broker.js';
import { RedisBroker } from '../../../src/redis/broker.js';
import { connectionOf } from '../../../src/redis/commands.js';
import { asClient, type CheckContext, type CheckGroup, primariesOf } from './check.js';

/** Two brokers, each on a client of its own, sharing `prefix`: two processes. */
export async function withBrokers(
  { client, prefix }: Pick<CheckContext, 'client' | 'prefix'>,
  run: (a: RedisBroker, b: RedisBroker) => Promise<void>,
  historySize = 100,
): Promise<void> {
  const a = new RedisBroker({ client: asClient(client()), prefix, historySize });
  const b = new RedisBroker({ client: asClient(client()), prefix, historySize });
  try {
    await run(a, b);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
}

const waitFor = (check: () => void) => vi.waitFor(check, { timeout: 5_000, interval: 10 });

export const brokerChecks: CheckGroup = {
  store: 'RedisBroker',
  checks: [
    {
      name: 'delivers what one process publishes to a subscriber of the other: offsets 1, 2, 3 in order',
      async run(context) {
        await withBrokers(context, async (a, b) => {
          const onB: HubMessage[] = [];
          const onA: HubMessage[] = [];
          await b.subscribe('room', (m) => void onB.push(m));
          await a.subscribe('room', (m) => void onA.push(m));
          const before = Date.now();
          const sent: HubMessage[] = [];
          for (let i = 1; i <= 3; i++)
            sent.push(await a.publish('room', { event: 'n', data: { i } }));
          expect(sent.map((m) => m.offset)).toEqual([1, 2, 3]);
          expect(new Set(sent.map((m) => m.epoch)).size).toBe(1);
          expect(sent[0]).toEqual({
            channel: 'room',
            offset: 1,
            epoch: expect.any(String),
            event: 'n',
            data: { i: 1 },
            time: expect.any(Number),
          });
          expect(sent[0]!.time).toBeGreaterThanOrEqual(before);
          await waitFor(() => expect(onB).toHaveLength(3));
          expect(onB).toEqual(sent);
          await waitFor(() => expect(onA).toHaveLength(3));
          expect(onA).toEqual(sent);
          // and the other way round, on the same stream
          const fourth = await b.publish('room', { event: 'n', data: { i: 4 } });
          expect(fourth).toMatchObject({ offset: 4, epoch: sent[0]!.epoch });
          await waitFor(() => expect(onA).toHaveLength(4));
          expect(onA[3]).toEqual(fourth);
        });
      },
    },
    {
      name: 'delivers a message that arrives twice once (same epoch and offset), a later one again',
      async run(context) {
        await withBrokers(context, async (a, b) => {
          const got: HubMessage[] = [];
          await b.subscribe('twice', (m) => void got.push(m));
          const first = await a.publish('twice', { event: 'n', data: 1 });
          await waitFor(() => expect(got).toHaveLength(1));
          // What a second, overlapping subscription would hand over: the same text again.
          const raw = connectionOf('test', asClient(context.client()));
          const topic = `${context.prefix}{ch:twice}`;
          const text = JSON.stringify(first);
          await raw.send(topic, [context.cluster ? 'SPUBLISH' : 'PUBLISH', topic, text]);
          const second = await a.publish('twice', { event: 'n', data: 2 });
          await waitFor(() => expect(got).toHaveLength(2));
          expect(got).toEqual([first, second]);
        });
      },
    },
    {
      name: 'replays history from either process',
      async run(context) {
        await withBrokers(context, async (a, b) => {
          const sent = [
            await a.publish('log', { event: 'n', data: 1 }),
            await b.publish('log', { event: 'n', data: 2 }),
            await a.publish('log', { event: 'n', data: 3 }),
          ];
          const { epoch } = sent[0]!;
          for (const broker of [a, b]) {
            expect(await broker.history('log', { epoch, offset: 0 })).toEqual({
              events: sent,
              recovered: true,
            });
            expect(await broker.history('log', { epoch, offset: 1 })).toEqual({
              events: sent.slice(1),
              recovered: true,
            });
            expect(await broker.history('log', { epoch, offset: 3 })).toEqual({
              events: [],
              recovered: true,
            });
            // another epoch (say, from before Redis lost its data): all it has, not recovered
            expect(await broker.history('log', { epoch: 'another', offset: 1 })).toEqual({
              events: sent,
              recovered: false,
            });
          }
        });
      },
    },
    {
      name: 'keeps a bounded history and says when events were lost',
      async run(context) {
        await withBrokers(
          context,
          async (a, b) => {
            const sent = [];
            for (let i = 1; i <= 5; i++) sent.push(await a.publish('log', { event: 'n', data: i }));
            const { epoch } = sent[0]!;
            expect(await b.history('log', { epoch, offset: 3 })).toEqual({
              events: sent.slice(3),
              recovered: true,
            });
            expect(await b.history('log', { epoch, offset: 2 })).toEqual({
              events: sent.slice(2),
              recovered: true,
            });
            expect(await b.history('log', { epoch, offset: 1 })).toEqual({
              events: sent.slice(2),
              recovered: false,
            });
          },
          3,
        );
      },
    },
    {
      name: 'tells the position of a channel from either process',
      async run(context) {
        await withBrokers(context, async (a, b) => {
          const empty = await b.position('pos');
          expect(empty).toEqual({ epoch: expect.any(String), offset: 0 });
          expect(await a.position('pos')).toEqual(empty);
          expect(await a.history('pos', empty)).toEqual({ events: [], recovered: true });
          await a.publish('pos', { event: 'n', data: 1 });
          const second = await b.publish('pos', { event: 'n', data: 2 });
          expect(second.epoch).toBe(empty.epoch);
          for (const broker of [a, b]) {
            expect(await broker.position('pos')).toEqual({ epoch: empty.epoch, offset: 2 });
          }
          // each channel has a stream of its own
          expect((await a.position('other')).offset).toBe(0);
        });
      },
    },
    {
      name: 'redacts held events in place, seen from either process',
      async run(context) {
        await withBrokers(context, async (a, b) => {
          const sent = [];
          for (let i = 1; i <= 3; i++) {
            sent.push(await a.publish('red', { event: 'message.created', data: { id: i } }));
          }
          const redacted = await b.redact('red', (m) =>
            (m.data as { id: number }).id === 2
              ? { event: 'message.deleted', data: { id: 2 } }
              : undefined,
          );
          expect(redacted).toBe(1);
          const expected = [
            sent[0],
            { ...sent[1]!, event: 'message.deleted', data: { id: 2 } },
            sent[2],
          ];
          const since = { epoch: sent[0]!.epoch, offset: 0 };
          for (const broker of [a, b]) {
            expect(await broker.history('red', since)).toEqual({
              events: expected,
              recovered: true,
            });
          }
          expect(await a.redact('red', () => undefined)).toBe(0);
          expect(await a.redact('nothing-here', () => ({ event: 'x', data: null }))).toBe(0);
          expect(await b.position('red')).toEqual({ epoch: sent[0]!.epoch, offset: 3 });
        });
      },
    },
    {
      name: 'stops delivering to an unsubscribed listener; a closed broker refuses, the other goes on',
      async run(context) {
        await withBrokers(context, async (a, b) => {
          const kept: HubMessage[] = [];
          const dropped: HubMessage[] = [];
          await b.subscribe('c', (m) => void kept.push(m));
          const off = await b.subscribe('c', (m) => void dropped.push(m));
          await a.publish('c', { event: 'n', data: 1 });
          await waitFor(() => expect(dropped).toHaveLength(1));
          off();
          off();
          await a.publish('c', { event: 'n', data: 2 });
          await waitFor(() => expect(kept).toHaveLength(2));
          expect(dropped.map((m) => m.data)).toEqual([1]);

          await b.close();
          await b.close();
          const closed = { code: 'ERR_HUB_CLOSED' };
          await expect(
            Promise.resolve().then(() => b.publish('c', { event: 'n', data: 3 })),
          ).rejects.toMatchObject(closed);
          await expect(
            Promise.resolve().then(() => b.subscribe('c', () => {})),
          ).rejects.toMatchObject(closed);
          await expect(
            Promise.resolve().then(() => b.history('c', { epoch: 'e', offset: 0 })),
          ).rejects.toMatchObject(closed);
          await expect(Promise.resolve().then(() => b.position('c'))).rejects.toMatchObject(closed);

          const onA: HubMessage[] = [];
          await a.subscribe('c', (m) => void onA.push(m));
          const third = await a.publish('c', { event: 'n', data: 3 });
          expect(third.offset).toBe(3);
          await waitFor(() => expect(onA).toEqual([third]));
          expect(kept).toHaveLength(2);
        });
      },
    },
    {
      name: 'publishes on channels whose keys land on different slots',
      async run(context) {
        await withBrokers(context, async (a, b) => {
          const channels = Array.from({ length: 12 }, (_, i) => `room-${i}`);
          const got: HubMessage[] = [];
          await Promise.all(
            channels.map((channel) => b.subscribe(channel, (m) => void got.push(m))),
          );
          const sent = await Promise.all(
            channels.map((channel) => a.publish(channel, { event: 'n', data: channel })),
          );
          expect(sent.map((m) => [m.channel, m.offset])).toEqual(channels.map((c) => [c, 1]));
          await waitFor(() => expect(got).toHaveLength(12));
          expect([...got].sort((x, y) => x.channel.localeCompare(y.channel))).toEqual(
            [...sent].sort((x, y) => x.channel.localeCompare(y.channel)),
          );
          for (const [i, channel] of channels.entries()) {
            expect(await b.position(channel)).toEqual({ epoch: sent[i]!.epoch, offset: 1 });
          }
          if (context.cluster) {
            const keys = channels.map((channel) => `${context.prefix}{ch:${channel}}:seq`);
            expect(await primariesOf(context, keys)).toBeGreaterThan(1);
          }
        });
      },
    },
  ],
};
