import { createServer, request } from 'node:http';
import compression from 'compression';
import express from 'express';
import Koa from 'koa';
import koaCompress from 'koa-compress';
import { afterEach, describe, expect, it } from 'vitest';
import { toExpress } from '../../src/adapters/express.js';
import { toKoa } from '../../src/adapters/koa.js';
import type { Middleware } from '../../src/core/compose.js';
import {
  createEventStream,
  type EventStream,
  type EventStreamCloseReason,
  type EventStreamOptions,
  lastEventId,
} from '../../src/sse/index.js';
import { countOpenEventStreams } from '../../src/sse/stream.js';
import { closeAll, type Listening, listen, serve } from '../helpers/http.js';
import { connect } from '../helpers/sse.js';

afterEach(closeAll);

/** Serves one event stream per request and hands each to `onStream`. */
function serveStreams(
  options: EventStreamOptions,
  onStream: (stream: EventStream, req: Parameters<Middleware>[0]) => void = () => {},
): Promise<Listening> {
  return serve((req, res) => onStream(createEventStream(req, res, options), req));
}

async function eventually(check: () => boolean, ms = 3000): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > ms) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('createEventStream', () => {
  it('flushes the event-stream headers at once', async () => {
    const server = await serveStreams({ heartbeat: 0, retry: false });
    const client = await connect(server);
    expect(client.status).toBe(200);
    expect(client.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(client.headers['cache-control']).toBe('no-cache, no-transform');
    expect(client.headers['x-accel-buffering']).toBe('no');
    expect(client.headers['content-length']).toBeUndefined();
    expect(client.text()).toBe('');
    client.destroy();
  });

  it('sends a retry hint within ±20 % by default, exact without jitter, none when disabled', async () => {
    const server = await serveStreams({ heartbeat: 0 });
    const hints = new Set<number>();
    for (let i = 0; i < 12; i++) {
      const client = await connect(server);
      const text = await client.until((t) => t.endsWith('\n\n'));
      const match = /^retry: (\d+)\n\n$/.exec(text);
      expect(match).not.toBeNull();
      const retry = Number(match?.[1]);
      expect(retry).toBeGreaterThanOrEqual(2400);
      expect(retry).toBeLessThanOrEqual(3600);
      hints.add(retry);
      client.destroy();
    }
    expect(hints.size).toBeGreaterThan(1);

    const exact = await serveStreams({ heartbeat: 0, retry: 1000, retryJitter: 0 }, (stream) =>
      stream.send({ data: 'x' }),
    );
    const client = await connect(exact);
    expect(await client.until((t) => t.includes('data:'))).toBe('retry: 1000\n\ndata: "x"\n\n');
    client.destroy();
  });

  it('sends events: JSON by default, raw strings split per line, with id and event', async () => {
    const server = await serveStreams({ heartbeat: 0, retry: false }, (stream) => {
      stream.send({ id: 1, event: 'message.created', data: { text: 'hi\nthere' } });
      stream.comment('note');
      expect(() => stream.send({ id: 'a\nb', data: 1 })).toThrow(TypeError);
      expect(() => stream.send({ event: 'x\r', data: 1 })).toThrow(TypeError);
      stream.close();
    });
    const client = await connect(server);
    await client.ended;
    expect(client.text()).toBe(
      'event: message.created\nid: 1\ndata: {"text":"hi\\nthere"}\n\n: note\n\n',
    );

    const raw = await serveStreams({ heartbeat: 0, retry: false, json: false }, (stream) => {
      stream.send({ data: 'one\r\ntwo\nthree' });
      stream.close();
    });
    const rawClient = await connect(raw);
    await rawClient.ended;
    expect(rawClient.text()).toBe('data: one\ndata: two\ndata: three\n\n');
  });

  it('sends comment heartbeats on the interval', async () => {
    const server = await serveStreams({ heartbeat: '50ms', retry: false });
    const client = await connect(server);
    const text = await client.until((t) => t.split(':\n\n').length > 3);
    expect(text).toMatch(/^(:\n\n)+$/);
    client.destroy();
  });

  it('closes from the server: onClose reports it and later sends are no-ops', async () => {
    let stream: EventStream | undefined;
    const reasons: EventStreamCloseReason[] = [];
    const server = await serveStreams({ heartbeat: '10ms', retry: false }, (s) => {
      stream = s;
      s.onClose((reason) => reasons.push(reason));
    });
    await eventually(() => countOpenEventStreams() === 0);
    const client = await connect(server);
    await eventually(() => stream !== undefined);
    expect(countOpenEventStreams()).toBe(1);
    stream?.close();
    stream?.close();
    await client.ended;
    expect(stream?.closed).toBe(true);
    expect(stream?.closeReason).toBe('server');
    expect(stream?.send({ data: 1 })).toBe(false);
    expect(stream?.comment('x')).toBe(false);
    stream?.onClose((reason) => reasons.push(reason));
    expect(reasons).toEqual(['server', 'server']);
    expect(countOpenEventStreams()).toBe(0);
  });

  it('releases everything when the client goes away', async () => {
    const reasons: EventStreamCloseReason[] = [];
    let stream: EventStream | undefined;
    const server = await serveStreams({ heartbeat: '10ms' }, (s) => {
      stream = s;
      s.onClose((reason) => reasons.push(reason));
    });
    const client = await connect(server);
    await client.until((t) => t.includes(':\n\n'));
    client.destroy();
    await eventually(() => reasons.length > 0);
    expect(reasons).toEqual(['client']);
    expect(stream?.send({ data: 1 })).toBe(false);
  });

  it('drops a client that does not read once the queue is full', async () => {
    let stream: EventStream | undefined;
    let reason: EventStreamCloseReason | undefined;
    const server = await serveStreams({ heartbeat: 0, retry: false, maxQueue: 8 }, (s) => {
      stream = s;
      s.onClose((r) => {
        reason = r;
      });
    });
    const client = await new Promise<{ closed: Promise<void>; resume(): void }>(
      (resolve, reject) => {
        const req = request({ host: '127.0.0.1', port: server.port, agent: false });
        req.on('error', () => {});
        req.on('response', (res) => {
          res.socket.pause(); // read nothing more
          res.on('error', () => {});
          const socket = res.socket;
          resolve({
            closed: new Promise((done) => socket.on('close', () => done())),
            resume() {
              res.resume();
              socket.resume();
            },
          });
        });
        req.on('error', reject);
        req.end();
      },
    );
    await eventually(() => stream !== undefined);
    const big = 'x'.repeat(64 * 1024);
    for (let i = 0; i < 4000 && !stream?.closed; i++) {
      stream?.send({ data: big });
      if (i % 8 === 7) await new Promise((resolve) => setImmediate(resolve));
    }
    expect(stream?.closed).toBe(true);
    expect(reason).toBe('slow-consumer');
    client.resume(); // read what was buffered, then see the end
    await client.closed;
  });

  it('bounds the queue by bytes too', async () => {
    let stream: EventStream | undefined;
    const server = await serveStreams(
      { heartbeat: 0, retry: false, maxQueueBytes: 256 * 1024 },
      (s) => {
        stream = s;
      },
    );
    const req = request({ host: '127.0.0.1', port: server.port, agent: false });
    req.on('error', () => {});
    req.on('response', (res) => res.socket.pause());
    req.end();
    await eventually(() => stream !== undefined);
    const big = 'y'.repeat(64 * 1024);
    for (let i = 0; i < 4000 && !stream?.closed; i++) {
      stream?.send({ data: big });
      if (i % 8 === 7) await new Promise((resolve) => setImmediate(resolve));
    }
    expect(stream?.closeReason).toBe('slow-consumer');
  });

  it('leaks nothing over 2,000 connect/disconnect cycles', async () => {
    let closed = 0;
    const server = await serveStreams({ heartbeat: '50ms' }, (s) => {
      s.onClose(() => closed++);
    });
    await eventually(() => countOpenEventStreams() === 0);
    const cycle = () =>
      new Promise<void>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port: server.port, agent: false });
        req.on('response', () => {
          req.destroy();
          resolve();
        });
        req.on('error', reject);
        req.end();
      });
    for (let batch = 0; batch < 40; batch++) {
      await Promise.all(Array.from({ length: 50 }, cycle));
    }
    await eventually(() => closed === 2000, 10_000);
    expect(countOpenEventStreams()).toBe(0);
    expect(server.server.listenerCount('request')).toBe(1);
  }, 30_000);

  it('refuses unknown options and sent headers', async () => {
    const server = await serve((req, res) => {
      expect(() => createEventStream(req, res, { hearbeat: 5 } as EventStreamOptions)).toThrow(
        /Did you mean `heartbeat`/,
      );
      expect(() => createEventStream(req, res, { retryJitter: 2 })).toThrow(TypeError);
      for (const bad of [
        { retry: 1.5 },
        { retry: -1 },
        { heartbeat: 2 ** 31 },
        { heartbeat: -1 },
        { maxQueue: 0.5 },
        { maxQueueBytes: -1 },
        { retryJitter: Number.NaN },
        { revocations: { watch: () => () => {} } },
      ] as EventStreamOptions[]) {
        expect(() => createEventStream(req, res, bad)).toThrow(/^createEventStream\(\): `\w+`/);
      }
      res.end('done');
      expect(() => createEventStream(req, res)).toThrow(/already sent/);
    });
    const client = await connect(server);
    await client.ended;
    expect(client.text()).toBe('done');
  });
});

describe('lastEventId', () => {
  it('reads the header, and the query parameter only when enabled', async () => {
    const seen: unknown[] = [];
    const server = await serve((req, res) => {
      seen.push([lastEventId(req), lastEventId(req, { queryParameter: 'lastEventId' })]);
      res.end();
    });
    for (const [path, headers] of [
      ['/', { 'Last-Event-ID': '42' }],
      ['/?lastEventId=7', {}],
      ['/?lastEventId=7', { 'Last-Event-ID': '9' }],
      ['/', {}],
    ] as const) {
      const client = await connect(server, path, headers);
      await client.ended;
    }
    expect(seen).toEqual([
      ['42', '42'],
      [undefined, '7'],
      ['9', '9'],
      [undefined, undefined],
    ]);
  });
});

describe('behind the adapters', () => {
  const events: Middleware = (req, res) => {
    const stream = createEventStream(req, res, { heartbeat: 0, retry: false });
    stream.send({ id: 1, data: { via: req.url } });
    setTimeout(() => stream.send({ id: 2, data: 'later' }), 20).unref();
  };

  it('works through toExpress (Express 5)', async () => {
    const app = express();
    app.get('/events', toExpress(events));
    const server = await listen(createServer(app));
    const client = await connect(server, '/events');
    expect(client.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(await client.until((t) => t.includes('id: 2'))).toBe(
      'id: 1\ndata: {"via":"/events"}\n\nid: 2\ndata: "later"\n\n',
    );
    client.destroy();
  });

  it('is never compressed nor buffered by compression middleware', async () => {
    const app = express();
    app.use(compression({ threshold: 0 }));
    app.get('/events', toExpress(events));
    const koa = new Koa();
    koa.use(koaCompress({ threshold: 0 }));
    koa.use(toKoa(events));
    for (const listener of [app, koa.callback()]) {
      const server = await listen(createServer(listener));
      const client = await connect(server, '/events', { 'accept-encoding': 'gzip, deflate, br' });
      expect(client.headers['content-encoding']).toBeUndefined();
      // the first event arrives at once, before the response ends
      expect(await client.until((t) => t.includes('id: 1'))).toBe(
        'id: 1\ndata: {"via":"/events"}\n\n',
      );
      expect(await client.until((t) => t.includes('id: 2'))).toContain('data: "later"');
      client.destroy();
    }
  });

  it('works through toKoa (Koa 3)', async () => {
    const app = new Koa();
    app.use(toKoa(events));
    const server = await listen(createServer(app.callback()));
    const client = await connect(server, '/events');
    expect(client.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(client.headers['cache-control']).toBe('no-cache, no-transform');
    expect(await client.until((t) => t.includes('id: 2'))).toBe(
      'id: 1\ndata: {"via":"/events"}\n\nid: 2\ndata: "later"\n\n',
    );
    client.destroy();
  });
});
