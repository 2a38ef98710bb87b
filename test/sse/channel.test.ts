import { createServer } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createHub, type Hub } from '../../src/realtime/hub.js';
import { MemoryBroker } from '../../src/realtime/memory-broker.js';
import { type ChannelStreamOptions, streamChannel } from '../../src/sse/channel.js';
import type { EventStream } from '../../src/sse/stream.js';
import { countOpenEventStreams } from '../../src/sse/stream.js';
import { wrapBroker } from '../helpers/broker.js';
import { closeAll, listen, request } from '../helpers/http.js';
import { captureLogger } from '../helpers/logger.js';
import { connect, parseEvents } from '../helpers/sse.js';

afterEach(closeAll);

const hubs: Hub[] = [];
afterEach(async () => {
  for (const hub of hubs.splice(0)) await hub.close();
});

function setup(historySize = 100) {
  const broker = new MemoryBroker({ historySize });
  const hub = createHub({ broker });
  hubs.push(hub);
  return { hub, broker };
}

/** Serves `streamChannel` on every request, with `options` over `{ hub, channel: 'news' }`. */
async function serveChannel(hub: Hub, options: Partial<ChannelStreamOptions> = {}) {
  const streams: EventStream[] = [];
  const server = await listen((req, res) => {
    streams.push(
      streamChannel(req, res, { hub, channel: 'news', heartbeat: 0, retry: false, ...options }),
    );
  });
  return { server, streams };
}

async function publishMany(hub: Hub, from: number, count: number) {
  for (let i = from; i < from + count; i++) await hub.publish('news', 'headline', { n: i });
}

const eventCount = (n: number) => (text: string) => parseEvents(text).length >= n;

describe('streamChannel', () => {
  it('streams the live events of its channel with their positions as ids', async () => {
    const { hub, broker } = setup();
    await publishMany(hub, 1, 2);
    const { server } = await serveChannel(hub);
    const client = await connect(server);
    expect(client.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    await vi.waitFor(() => expect(countOpenEventStreams()).toBeGreaterThan(0));
    await publishMany(hub, 3, 2);
    await hub.publish('other', 'headline', { n: 99 });
    const text = await client.until(eventCount(2));
    expect(parseEvents(text)).toEqual([
      { id: `${broker.epoch}:3`, event: 'headline', data: '{"n":3}' },
      { id: `${broker.epoch}:4`, event: 'headline', data: '{"n":4}' },
    ]);
    client.destroy();
  });

  it('replays what a client missed after its Last-Event-ID, then goes live, once each', async () => {
    const { hub, broker } = setup();
    await publishMany(hub, 1, 5);
    const { server } = await serveChannel(hub);
    const client = await connect(server, '/', { 'last-event-id': `${broker.epoch}:2` });
    await client.until(eventCount(3));
    await publishMany(hub, 6, 1);
    const events = parseEvents(await client.until(eventCount(4)));
    expect(events.map((e) => e.data)).toEqual(['{"n":3}', '{"n":4}', '{"n":5}', '{"n":6}']);
    expect(events.at(-1)?.id).toBe(`${broker.epoch}:6`);
    client.destroy();
  });

  it('reads the id from a query parameter only when told to', async () => {
    const { hub, broker } = setup();
    await publishMany(hub, 1, 3);
    const plain = await serveChannel(hub);
    const withQuery = await serveChannel(hub, { lastEventIdQuery: 'lastEventId' });
    const path = `/?lastEventId=${encodeURIComponent(`${broker.epoch}:1`)}`;
    const resumed = await connect(withQuery.server, path);
    const events = parseEvents(await resumed.until(eventCount(2)));
    expect(events.map((e) => e.data)).toEqual(['{"n":2}', '{"n":3}']);
    const ignored = await connect(plain.server, path);
    await publishMany(hub, 4, 1);
    expect(parseEvents(await ignored.until(eventCount(1)))).toEqual([
      { id: `${broker.epoch}:4`, event: 'headline', data: '{"n":4}' },
    ]);
    resumed.destroy();
    ignored.destroy();
  });

  it('sends a reset with the newest id to a client too far behind, never a silent gap', async () => {
    const { hub, broker } = setup(3);
    await publishMany(hub, 1, 10);
    const { server } = await serveChannel(hub);
    for (const id of [`${broker.epoch}:2`, 'before-restart:4', 'not an id', `${broker.epoch}:99`]) {
      const client = await connect(server, '/', { 'last-event-id': id });
      const events = parseEvents(await client.until(eventCount(1)));
      expect(events).toEqual([
        { id: `${broker.epoch}:10`, event: 'reset', data: '{"reason":"too-far-behind"}' },
      ]);
      client.destroy();
    }
  });

  it('takes the reference server’s ids and events through toEvent, parseId and toReset', async () => {
    const { hub, broker } = setup(2);
    await publishMany(hub, 1, 4);
    const { server } = await serveChannel(hub, {
      toEvent: (m) => ({ id: String(m.offset), data: { event: m.event, data: m.data } }),
      parseId: (id) => (/^\d+$/.test(id) ? { epoch: broker.epoch, offset: Number(id) } : undefined),
      toReset: (p) => ({ event: 'reset', id: String(p.offset), data: { reason: 'gone' } }),
    });
    const caughtUp = await connect(server, '/', { 'last-event-id': '3' });
    expect(parseEvents(await caughtUp.until(eventCount(1)))).toEqual([
      { id: '4', data: '{"event":"headline","data":{"n":4}}' },
    ]);
    const behind = await connect(server, '/', { 'last-event-id': '1' });
    expect(parseEvents(await behind.until(eventCount(1)))).toEqual([
      { id: '4', event: 'reset', data: '{"reason":"gone"}' },
    ]);
    caughtUp.destroy();
    behind.destroy();
  });

  it('unsubscribes when the client goes away', async () => {
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
    });
    const hub = createHub({ broker });
    hubs.push(hub);
    const { streams, server } = await serveChannel(hub);
    const client = await connect(server);
    await vi.waitFor(() => expect(streams).toHaveLength(1));
    client.destroy();
    await vi.waitFor(() => expect(released).toHaveBeenCalledOnce());
    expect(streams[0]?.closeReason).toBe('client');
    await hub.publish('news', 'headline', {});
  });

  it('leaves no subscription and no stream behind over 500 connect/disconnect cycles', async () => {
    const inner = new MemoryBroker();
    let live = 0;
    const broker = wrapBroker(inner, {
      subscribe: (channel, listener) => {
        live++;
        const off = inner.subscribe(channel, listener);
        return () => {
          live--;
          off();
        };
      },
    });
    const hub = createHub({ broker });
    hubs.push(hub);
    await hub.publish('news', 'headline', {});
    const { server } = await serveChannel(hub, { heartbeat: '5ms' });
    const before = countOpenEventStreams();
    for (let batch = 0; batch < 10; batch++) {
      const clients = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          connect(server, '/', i % 2 === 0 ? { 'last-event-id': `${inner.epoch}:0` } : {}),
        ),
      );
      for (const client of clients) client.destroy();
    }
    await vi.waitFor(() => expect(live).toBe(0), { timeout: 5000 });
    await vi.waitFor(() => expect(countOpenEventStreams()).toBe(before));
  });

  it('closes the stream and reports when the broker cannot replay', async () => {
    const inner = new MemoryBroker();
    const broker = wrapBroker(inner, {
      history: () => Promise.reject(new Error('broker down')),
    });
    const hub = createHub({ broker });
    hubs.push(hub);
    const log = captureLogger();
    const { server, streams } = await serveChannel(hub, { logger: log });
    const client = await connect(server, '/', { 'last-event-id': `${inner.epoch}:0` });
    await client.ended;
    expect(log.errors).toContainEqual(expect.objectContaining({ message: 'broker down' }));
    expect(streams[0]?.closeReason).toBe('server');
  });

  it('throws before writing any header for a bad channel, a closed hub or a bad option', async () => {
    const { hub } = setup();
    const closed = createHub();
    await closed.close();
    const attempts: ChannelStreamOptions[] = [
      { hub, channel: '' },
      { hub: closed, channel: 'news' },
      { hub, channel: 'news', toEvent: 'id' as never },
      { hub, channel: 'news', colour: 'red' } as never,
      { hub: {} as Hub, channel: 'news' },
    ];
    const outcomes: string[] = [];
    const server = createServer((req, res) => {
      const options = attempts[Number(req.url?.slice(1))] as ChannelStreamOptions;
      try {
        streamChannel(req, res, options);
        outcomes.push('opened');
      } catch (error) {
        outcomes.push(`${(error as Error).name}:${res.headersSent}`);
        res.statusCode = 500;
        res.end();
      }
    });
    const listening = await listen(server);
    for (let i = 0; i < attempts.length; i++) {
      const reply = await request(listening, `/${i}`);
      expect(reply.status).toBe(500);
    }
    expect(outcomes).toEqual([
      'TypeError:false',
      'PorticoError:false',
      'TypeError:false',
      'TypeError:false',
      'TypeError:false',
    ]);
  });
});
