import type { Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import { createHub } from '../../../src/realtime/hub.js';
import {
  type ChannelMessageSender,
  createChannelProtocol,
} from '../../../src/ws/channel/channel.js';
import { CloseCode, WebSocketCloseError } from '../../../src/ws/close-codes.js';
import { captureLogger } from '../../helpers/logger.js';
import {
  closeChannels,
  connect,
  currentProtocol,
  serverSockets,
  silent,
  start,
  subscribed,
} from '../../helpers/ws-channel.js';

afterEach(closeChannels);

describe('createChannelProtocol', () => {
  it('answers join with welcome and ping with pong', async () => {
    const url = await start();
    const a = await connect(url, 'alice');
    a.send({ type: 'join', user: 'Alice' });
    const welcome = await a.next();
    expect(welcome).toMatchObject({ type: 'welcome', user: 'alice' });
    expect(typeof welcome.id).toBe('string');
    a.send({ type: 'ping' });
    expect(await a.next()).toEqual({ type: 'pong' });
  });

  it('relays messages to the others, never echoing them', async () => {
    const url = await start();
    const a = await connect(url, 'alice');
    const b = await connect(url, 'bob');
    const c = await connect(url, 'carol');
    a.send({ type: 'message', text: 'hello', user: 'Alice' });
    const expected = { type: 'message', text: 'hello', from: 'alice', user: 'Alice' };
    expect(await b.next()).toEqual(expected);
    expect(await c.next()).toEqual(expected);
    await silent(a);
  });

  it('relays a channel message only to its subscribers', async () => {
    const url = await start();
    const a = await connect(url, 'alice');
    const b = await connect(url, 'bob');
    const c = await connect(url, 'carol');
    b.send({ type: 'subscribe', channel: 'room:1' });
    a.send({ type: 'subscribe', channel: 'room:1' });
    b.send({ type: 'ping' });
    await b.next();
    a.send({ type: 'ping' });
    await a.next();
    a.send({ type: 'message', text: 'hi room', channel: 'room:1' });
    expect(await b.next()).toEqual({
      type: 'message',
      text: 'hi room',
      from: 'alice',
      channel: 'room:1',
    });
    await silent(c);
    await silent(a);
    b.send({ type: 'unsubscribe', channel: 'room:1' });
    b.send({ type: 'ping' });
    await b.next();
    a.send({ type: 'message', text: 'again', channel: 'room:1' });
    await silent(b);
  });

  it('forwards hub events as push to subscribers', async () => {
    const hub = createHub();
    const url = await start({ hub });
    const a = await connect(url, 'alice');
    const b = await connect(url, 'bob');
    a.send({ type: 'subscribe', channel: 'news' });
    a.send({ type: 'ping' });
    await a.next();
    await hub.publish('news', 'message.created', { id: 1 });
    expect(await a.next()).toEqual({ type: 'push', event: 'message.created', data: { id: 1 } });
    await silent(b);
  });

  it.each([
    ['not JSON', 'nope'],
    ['not an object', '[1]'],
    ['an unknown type', JSON.stringify({ type: 'dance' })],
    ['empty text', JSON.stringify({ type: 'message', text: '' })],
    ['text too long', JSON.stringify({ type: 'message', text: 'x'.repeat(1001) })],
    ['a bad channel', JSON.stringify({ type: 'subscribe', channel: 7 })],
    ['a long user', JSON.stringify({ type: 'join', user: 'u'.repeat(101) })],
  ])('closes with 1008 for %s', async (_name, frame) => {
    const url = await start();
    const a = await connect(url, 'alice');
    a.send(frame);
    const { code, reason } = await a.closed();
    expect(code).toBe(1008);
    expect(reason.length).toBeGreaterThan(0);
  });

  it('closes with 1003 for a binary frame', async () => {
    const url = await start();
    const a = await connect(url, 'alice');
    a.ws.send(Buffer.from([1, 2, 3]), { binary: true });
    expect((await a.closed()).code).toBe(1003);
  });

  it('closes with 1009 for a message over maxPayload', async () => {
    const url = await start({}, 1024);
    const a = await connect(url, 'alice');
    a.send({ type: 'message', text: 'x'.repeat(2000) });
    expect((await a.closed()).code).toBe(1009);
  });

  it('closes with 1011 when an extension throws unexpectedly', async () => {
    const log = captureLogger();
    const url = await start({
      extend: {
        boom() {
          throw new Error('kaput');
        },
        echo(message, ctx) {
          ctx.send({ type: 'echo', value: message.value });
        },
      },
      logger: log,
    });
    const a = await connect(url, 'alice');
    a.send({ type: 'echo', value: 42 });
    expect(await a.next()).toEqual({ type: 'echo', value: 42 });
    a.send({ type: 'boom' });
    expect((await a.closed()).code).toBe(1011);
    expect(log.errors).toEqual([expect.objectContaining({ message: 'kaput' })]);
  });

  it('terminates a peer that does not answer pings', async () => {
    const url = await start({ heartbeat: '50ms' });
    const quiet = await connect(url, 'quiet', false);
    const lively = await connect(url, 'lively');
    expect((await quiet.closed(1000)).code).toBe(1006);
    lively.send({ type: 'ping' });
    expect(await lively.next()).toEqual({ type: 'pong' });
    expect(lively.ws.readyState).toBe(WebSocket.OPEN);
  });

  it('close() sends 1001 to every client', async () => {
    const url = await start();
    const a = await connect(url, 'alice');
    const b = await connect(url, 'bob');
    const closing = currentProtocol().close();
    const [ca, cb] = await Promise.all([a.closed(), b.closed()]);
    expect(ca.code).toBe(1001);
    expect(cb.code).toBe(1001);
    await closing;
    expect(currentProtocol().size).toBe(0);
  });

  describe('rate limit', () => {
    it('closes with 1008 past the limit within the window', async () => {
      const url = await start({ rateLimit: { messages: 5, interval: 60_000 } });
      const a = await connect(url, 'alice');
      const b = await connect(url, 'bob');
      for (let i = 0; i < 6; i++) a.send({ type: 'ping' });
      const { code, reason } = await a.closed();
      expect(code).toBe(1008);
      expect(reason).toBe('rate limit exceeded');
      // the limit is per connection: bob is unaffected
      b.send({ type: 'ping' });
      expect(await b.next()).toEqual({ type: 'pong' });
    });

    it('lets a connection under the limit through, refilling over time', async () => {
      const url = await start({ rateLimit: { messages: 5, interval: 100 } });
      const a = await connect(url, 'alice');
      for (let round = 0; round < 3; round++) {
        for (let i = 0; i < 5; i++) a.send({ type: 'ping' });
        for (let i = 0; i < 5; i++) expect(await a.next()).toEqual({ type: 'pong' });
        await new Promise((resolve) => setTimeout(resolve, 120));
      }
      expect(a.ws.readyState).toBe(WebSocket.OPEN);
    });

    it('does not count protocol-level pings and pongs', async () => {
      const url = await start({ heartbeat: '10ms', rateLimit: { messages: 2, interval: 60_000 } });
      const a = await connect(url, 'alice');
      for (let i = 0; i < 5; i++) a.ws.ping();
      await new Promise((resolve) => setTimeout(resolve, 100));
      a.send({ type: 'ping' });
      expect(await a.next()).toEqual({ type: 'pong' });
      expect(a.ws.readyState).toBe(WebSocket.OPEN);
    });

    it('can be disabled', async () => {
      const url = await start({ rateLimit: false });
      const a = await connect(url, 'alice');
      for (let i = 0; i < 300; i++) a.send({ type: 'ping' });
      for (let i = 0; i < 300; i++) await a.next();
      expect(a.ws.readyState).toBe(WebSocket.OPEN);
    });

    it.each([
      [{ messages: 0, interval: 1000 }],
      [{ messages: 1.5, interval: 1000 }],
      [{ messages: 10, interval: 0 }],
      [{ messages: 10, interval: Number.NaN }],
      [{ messages: 10, interval: 0.5 }],
      [{ messages: 10 }],
      [{ messages: 10, intervalMs: 1000 }],
      [{ interval: 1000 }],
      [null],
      ['10/s'],
    ])('rejects rateLimit %o', (rateLimit) => {
      expect(() => createChannelProtocol({ rateLimit } as never)).toThrow(/rateLimit/);
    });
  });

  describe('backpressure', () => {
    it('drops a consumer that stops reading with 1013, keeping the others served', async () => {
      const url = await start({
        rateLimit: false,
        maxBufferedBytes: 64 * 1024,
        closeTimeout: '100ms',
      });
      const sender = await connect(url, 'sender');
      const reader = await connect(url, 'reader');
      const slow = await connect(url, 'slow');
      const slowServer = serverSockets[2]!;
      const closeSpy = vi.spyOn(slowServer, 'close');
      const serverClosed = new Promise<void>((resolve) =>
        slowServer.once('close', () => resolve()),
      );
      let dropped = false;
      void serverClosed.then(() => {
        dropped = true;
      });
      (slow.ws as unknown as { _socket: Socket })._socket.pause();

      let received = 0;
      reader.ws.on('message', () => {
        received++;
      });
      const text = 'x'.repeat(1000);
      let sent = 0;
      const deadline = Date.now() + 8000;
      while (!dropped && Date.now() < deadline) {
        for (let i = 0; i < 200; i++) sender.send({ type: 'message', text });
        sent += 200;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect(dropped).toBe(true);
      expect(closeSpy).toHaveBeenCalledWith(1013, expect.any(String));
      expect(currentProtocol().size).toBe(2);

      // the server stays healthy: the reader gets every relay, newcomers are served
      await vi.waitFor(() => expect(received).toBe(sent), { timeout: 5000, interval: 20 });
      expect(reader.ws.readyState).toBe(WebSocket.OPEN);
      const late = await connect(url, 'late');
      late.send({ type: 'ping' });
      expect(await late.next()).toEqual({ type: 'pong' });
    }, 15_000);

    it('drops a slow subscriber of hub pushes', async () => {
      const hub = createHub();
      const url = await start({ hub, maxBufferedBytes: 64 * 1024, closeTimeout: '100ms' });
      const slow = await connect(url, 'slow');
      slow.send({ type: 'subscribe', channel: 'news' });
      slow.send({ type: 'ping' });
      await slow.next();
      const slowServer = serverSockets[0]!;
      const closeSpy = vi.spyOn(slowServer, 'close');
      let dropped = false;
      slowServer.once('close', () => {
        dropped = true;
      });
      (slow.ws as unknown as { _socket: Socket })._socket.pause();
      const data = 'y'.repeat(64 * 1024);
      const deadline = Date.now() + 8000;
      while (!dropped && Date.now() < deadline) {
        for (let i = 0; i < 20; i++) await hub.publish('news', 'big', data);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect(dropped).toBe(true);
      expect(closeSpy).toHaveBeenCalledWith(1013, expect.any(String));
      expect(currentProtocol().size).toBe(0);
    }, 15_000);

    it.each([0, -1, Number.NaN])('rejects maxBufferedBytes %s', (maxBufferedBytes) => {
      expect(() => createChannelProtocol({ maxBufferedBytes })).toThrow(/maxBufferedBytes/);
    });

    it('takes Infinity as maxBufferedBytes (no bound)', async () => {
      const channels = createChannelProtocol({ maxBufferedBytes: Number.POSITIVE_INFINITY });
      await channels.close();
    });
  });
});

describe('relays across processes sharing a hub', () => {
  /** Two protocols on two servers over one hub: two processes of one service. */
  async function twoProcesses(options: { relayChannel?: string | false } = {}) {
    const hub = createHub();
    return [await start({ hub, ...options }), await start({ hub, ...options })] as const;
  }

  it('relays to the connections of the other process too, once, never echoed', async () => {
    const [one, two] = await twoProcesses();
    const a = await connect(one, 'alice');
    const b = await connect(one, 'bob');
    const c = await connect(two, 'carol');
    a.send({ type: 'message', text: 'hello', user: 'Alice' });
    const expected = { type: 'message', text: 'hello', from: 'alice', user: 'Alice' };
    expect(await b.next()).toEqual(expected);
    expect(await c.next()).toEqual(expected);
    c.send({ type: 'message', text: 'back' });
    expect(await a.next()).toEqual({ type: 'message', text: 'back', from: 'carol' });
    expect(await b.next()).toEqual({ type: 'message', text: 'back', from: 'carol' });
    await silent(a);
    await silent(b);
    await silent(c);
  });

  it('keeps a channel message to the channel’s subscribers on every process', async () => {
    const [one, two] = await twoProcesses();
    const a = await connect(one, 'alice');
    const b = await connect(two, 'bob');
    const c = await connect(two, 'carol');
    await subscribed(b, 'room:1');
    a.send({ type: 'message', text: 'hi room', channel: 'room:1' });
    expect(await b.next()).toEqual({
      type: 'message',
      text: 'hi room',
      from: 'alice',
      channel: 'room:1',
    });
    await silent(c);
    await silent(a);
  });

  it('lets no client subscribe or send on the relay channel', async () => {
    const [one] = await twoProcesses();
    const a = await connect(one, 'alice');
    a.send({ type: 'subscribe', channel: 'portico:relay' });
    expect(await a.next()).toEqual({
      type: 'error',
      code: 'forbidden',
      action: 'subscribe',
      channel: 'portico:relay',
    });
    a.send({ type: 'message', text: 'x', channel: 'portico:relay' });
    expect(await a.next()).toMatchObject({ type: 'error', action: 'publish' });
  });

  it('with relayChannel false, keeps relays in their process', async () => {
    const [one, two] = await twoProcesses({ relayChannel: false });
    const a = await connect(one, 'alice');
    const b = await connect(one, 'bob');
    const c = await connect(two, 'carol');
    a.send({ type: 'message', text: 'local' });
    expect(await b.next()).toMatchObject({ text: 'local' });
    await silent(c);
    expect(() => createChannelProtocol({ relayChannel: '' })).toThrow(TypeError);
  });
});

describe('durations, in milliseconds', () => {
  it.each([
    ['heartbeat', -1],
    ['heartbeat', 0.5],
    ['heartbeat', 2 ** 31],
    ['heartbeat', Number.POSITIVE_INFINITY],
    ['heartbeat', '30000'],
    ['closeTimeout', -1],
    ['closeTimeout', 2 ** 31],
    ['closeTimeout', Number.NaN],
  ])('rejects %s %s, naming the owner and the option', (name, value) => {
    expect(() => createChannelProtocol({ [name]: value } as never)).toThrow(
      new RegExp(`^createChannelProtocol\\(\\): \`${name}\` must be milliseconds`),
    );
  });

  it('takes the longest timer delay node has', async () => {
    const channels = createChannelProtocol({ heartbeat: 2 ** 31 - 1, closeTimeout: 2 ** 31 - 1 });
    await channels.close();
  });
});

describe('the message option', () => {
  it('relays the fields its reader returns, with type, from and channel the protocol’s', async () => {
    const senders: { id: string; user: string | undefined; sub: string | undefined }[] = [];
    const url = await start({
      message: (m, sender: ChannelMessageSender) => {
        senders.push({ id: sender.id, user: sender.user, sub: sender.principal?.sub });
        if (typeof m.body !== 'string') {
          throw new WebSocketCloseError(CloseCode.POLICY_VIOLATION, 'Invalid "body".');
        }
        return { body: m.body, type: 'forged', from: 'mallory', channel: 'elsewhere' };
      },
    });
    const a = await connect(url, 'alice');
    const b = await connect(url, 'bob');
    a.send({ type: 'join', user: 'Alice' });
    const welcome = await a.next();
    await subscribed(b, 'room');
    a.send({ type: 'message', body: 'hi', text: 'dropped' });
    expect(await b.next()).toEqual({ type: 'message', body: 'hi', from: 'alice' });
    a.send({ type: 'message', body: 'in room', channel: 'room' });
    expect(await b.next()).toEqual({
      type: 'message',
      body: 'in room',
      from: 'alice',
      channel: 'room',
    });
    expect(senders).toEqual([
      { id: welcome.id, user: 'Alice', sub: 'alice' },
      { id: welcome.id, user: 'Alice', sub: 'alice' },
    ]);
    // the chat fields are no longer the protocol's: a `text` alone is refused by this reader
    a.send({ type: 'message', text: 'hello' });
    expect(await a.closed()).toEqual({ code: 1008, reason: 'Invalid "body".' });
    await silent(b);
  });

  it('closes with 1011 and reports a reader that returns no object', async () => {
    const log = captureLogger();
    const url = await start({ message: () => 'text' as never, logger: log });
    const a = await connect(url, 'alice');
    a.send({ type: 'message', text: 'x' });
    expect((await a.closed()).code).toBe(1011);
    expect(log.errors).toEqual([
      expect.objectContaining({ message: expect.stringMatching(/message/) }),
    ]);
  });

  it('defaults to the chat fields: text 1–1000 characters, user 1–100 or the join name', async () => {
    const url = await start();
    const a = await connect(url, 'alice');
    const b = await connect(url, 'bob');
    a.send({ type: 'join', user: 'Alice' });
    await a.next();
    a.send({ type: 'message', text: 'x'.repeat(1000), extra: 1 });
    expect(await b.next()).toEqual({
      type: 'message',
      text: 'x'.repeat(1000),
      from: 'alice',
      user: 'Alice',
    });
    a.send({ type: 'message', text: 'y', user: 'A.' });
    expect(await b.next()).toEqual({ type: 'message', text: 'y', from: 'alice', user: 'A.' });
    a.send({ type: 'message', text: 'z', user: 'u'.repeat(101) });
    expect((await a.closed()).code).toBe(1008);
  });

  it('must be a function', () => {
    expect(() => createChannelProtocol({ message: { maxTextLength: 10 } as never })).toThrow(
      /`message` must be a function/,
    );
  });
});
