// Hostile WebSocket input: invalid handshakes, invalid frames over a raw socket after a valid
// handshake, floods and abrupt disconnects. Against createUpgradeHandler + the channel protocol
// in process, and against the reference server's /ws. Expected: an HTTP 4xx (and no 101) for a
// bad handshake, the RFC 6455 close code for a bad frame, never a crash or a hang (every wait
// is bounded), and a server that accepts and answers new connections afterwards.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { toNodeListener } from '../../src/adapters/node.js';
import type { Authenticator } from '../../src/auth/authenticator.js';
import { PROBLEM_TYPE } from '../../src/core/problem.js';
import { type ChannelProtocol, createChannelProtocol } from '../../src/ws/channel/channel.js';
import { computeAcceptKey } from '../../src/ws/handshake.js';
import { createUpgradeHandler } from '../../src/ws/upgrade.js';
import { type RunningServer, startReferenceServer } from '../examples/spawn-server.js';
import { parseReply, rawRequest } from '../helpers/http.js';
import { captureLogger } from '../helpers/logger.js';

const APP = 'https://app.example.com';
const DEMO_KEY = 'demo-key-of-the-hostile-frames-suite-0123456789';

const headerAuth: Authenticator = {
  scheme: 'User',
  challenge: 'User realm="test"',
  authenticate(req) {
    const sub = req.headers['x-user'];
    return typeof sub === 'string' ? { sub, scopes: [], method: 'test' } : undefined;
  },
};

let ref: RunningServer;
let server: Server;
let channels: ChannelProtocol;
const log = captureLogger();
const unexpected = log.errors;

interface Target {
  name: string;
  port: () => number;
  /** The credential header line of an authenticated handshake. */
  auth: string;
  /** An origin the target allows. */
  origin: string;
}

const local: Target = {
  name: 'in process',
  port: () => (server.address() as AddressInfo).port,
  auth: 'X-User: alice',
  origin: APP,
};
const reference: Target = {
  name: 'reference server',
  port: () => Number(new URL(ref.url).port),
  auth: `X-API-Key: ${DEMO_KEY}`,
  origin: 'http://localhost:5173',
};
const TARGETS = [local, reference];

beforeAll(async () => {
  const started = startReferenceServer({ DEMO_API_KEY: DEMO_KEY });
  // the default per-connection rate limit (100 messages per 10 s), as the reference server has
  channels = createChannelProtocol({ heartbeat: 0, logger: log });
  server = createServer(toNodeListener([], { logger: log }));
  server.on(
    'upgrade',
    createUpgradeHandler({
      path: '/ws',
      origins: [APP],
      authenticators: [headerAuth],
      onConnection: channels.handle,
      logger: log,
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  ref = await started;
});

afterAll(async () => {
  await channels?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await ref?.stop();
});

const KEY = () => randomBytes(16).toString('base64');

function handshakeHead(target: Target, extra: string[] = [], key = KEY()): string {
  return [
    'GET /ws HTTP/1.1',
    'Host: 127.0.0.1',
    'Upgrade: websocket',
    'Connection: Upgrade',
    `Sec-WebSocket-Key: ${key}`,
    'Sec-WebSocket-Version: 13',
    target.auth,
    ...extra,
    '',
    '',
  ].join('\r\n');
}

/** A raw connection after a 101: what it received past the handshake, and its close. */
interface Opened {
  socket: Socket;
  received: () => Buffer;
  closed: Promise<void>;
}

/** Opens a raw TCP connection and completes a valid handshake, within 3 s. */
function open(target: Target): Promise<Opened> {
  const key = KEY();
  return new Promise((resolve, reject) => {
    const socket = connect(target.port(), '127.0.0.1', () =>
      socket.write(handshakeHead(target, [], key)),
    );
    let buffer = Buffer.alloc(0);
    let upgraded = false;
    const closed = new Promise<void>((done) => socket.once('close', () => done()));
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('no 101 within 3 s'));
    }, 3_000);
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      if (upgraded) return;
      const end = buffer.indexOf('\r\n\r\n');
      if (end === -1) return;
      const head = buffer.subarray(0, end).toString('latin1');
      buffer = buffer.subarray(end + 4);
      upgraded = true;
      clearTimeout(timer);
      if (!head.startsWith('HTTP/1.1 101 ')) {
        socket.destroy();
        reject(new Error(`handshake refused: ${head.split('\r\n')[0]}`));
        return;
      }
      expect(head).toContain(`Sec-WebSocket-Accept: ${computeAcceptKey(key)}`);
      resolve({ socket, received: () => buffer, closed });
    });
    closed.then(() => {
      clearTimeout(timer);
      if (!upgraded) reject(new Error('closed before the handshake ended'));
    });
  });
}

/** A client frame: masked unless told, FIN set unless told, 7/16/64-bit length as needed. */
function frame(
  opcode: number,
  payload: Buffer | string,
  {
    fin = true,
    rsv = 0,
    mask = true,
    declared,
  }: {
    fin?: boolean;
    rsv?: number;
    mask?: boolean;
    declared?: bigint;
  } = {},
): Buffer {
  const data = typeof payload === 'string' ? Buffer.from(payload) : payload;
  const length = declared ?? BigInt(data.length);
  const first = (fin ? 0x80 : 0) | (rsv << 4) | opcode;
  let header: Buffer;
  if (length < 126n) {
    header = Buffer.from([first, Number(length)]);
  } else if (length < 65_536n) {
    header = Buffer.alloc(4);
    header[0] = first;
    header[1] = 126;
    header.writeUInt16BE(Number(length), 2);
  } else {
    header = Buffer.alloc(10);
    header[0] = first;
    header[1] = 127;
    header.writeBigUInt64BE(length, 2);
  }
  if (!mask) return Buffer.concat([header, data]);
  header[1]! |= 0x80;
  const key = randomBytes(4);
  const masked = Buffer.from(data);
  for (let i = 0; i < masked.length; i++) masked[i]! ^= key[i % 4]!;
  return Buffer.concat([header, key, masked]);
}

interface ServerFrame {
  opcode: number;
  payload: Buffer;
}

/** Splits what the server sent (unmasked frames) into frames. */
function framesOf(bytes: Buffer): ServerFrame[] {
  const frames: ServerFrame[] = [];
  let at = 0;
  while (at + 2 <= bytes.length) {
    const opcode = bytes[at]! & 0x0f;
    let length = bytes[at + 1]! & 0x7f;
    let offset = at + 2;
    if (length === 126) {
      length = bytes.readUInt16BE(offset);
      offset += 2;
    } else if (length === 127) {
      length = Number(bytes.readBigUInt64BE(offset));
      offset += 8;
    }
    if (offset + length > bytes.length) break;
    frames.push({ opcode, payload: bytes.subarray(offset, offset + length) });
    at = offset + length;
  }
  return frames;
}

/**
 * Writes `data`, waits (3 s at most) for the server's close frame (or the end of the TCP
 * connection), answers it as a client would, and returns its code and reason.
 */
async function closeAfter(
  target: Target,
  data: Buffer | Buffer[],
): Promise<{ code: number; reason: string; frames: ServerFrame[] }> {
  const { socket, received, closed } = await open(target);
  let ended = false;
  void closed.then(() => {
    ended = true;
  });
  for (const piece of Array.isArray(data) ? data : [data]) {
    if (socket.writable) socket.write(piece);
  }
  const closeFrame = () => framesOf(received()).find((f) => f.opcode === 0x8);
  try {
    await eventually(() => ended || closeFrame() !== undefined, 3_000, 'the server closing');
  } finally {
    socket.destroy();
  }
  const frames = framesOf(received());
  const close = closeFrame();
  if (close === undefined) {
    throw new Error(`no close frame; got opcodes ${frames.map((f) => f.opcode)}`);
  }
  return {
    code: close.payload.length >= 2 ? close.payload.readUInt16BE(0) : 1005,
    reason: close.payload.subarray(2).toString('utf8'),
    frames,
  };
}

/** Opens a `ws` client to the target, within 3 s. */
function client(target: Target, autoPong = true): Promise<WebSocket> {
  const headers = target === local ? { 'X-User': 'bob' } : { 'X-API-Key': DEMO_KEY };
  const ws = new WebSocket(`ws://127.0.0.1:${target.port()}/ws`, {
    headers,
    autoPong,
    handshakeTimeout: 3_000,
  });
  ws.on('error', () => {});
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`refused ${res.statusCode}`)));
    ws.once('close', () => reject(new Error('closed before open')));
  });
}

/** The next JSON message, within `ms`. */
function nextMessage(ws: WebSocket, ms = 2_000): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no message within ${ms} ms`)), ms);
    ws.once('message', (data) => {
      clearTimeout(timer);
      resolve(JSON.parse(String(data)) as Record<string, unknown>);
    });
  });
}

/** The next `pong` message, skipping any other, within `ms`. */
function nextPong(ws: WebSocket, ms = 5_000): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      ws.off('message', onMessage);
      reject(new Error(`no pong within ${ms} ms`));
    }, ms);
    function onMessage(data: unknown) {
      const message = JSON.parse(String(data)) as Record<string, unknown>;
      if (message.type !== 'pong') return;
      clearTimeout(timer);
      ws.off('message', onMessage);
      resolve(message);
    }
    ws.on('message', onMessage);
  });
}

function closedWith(ws: WebSocket, ms = 3_000): Promise<{ code: number; reason: string }> {
  return new Promise((resolve, reject) => {
    if (ws.readyState === WebSocket.CLOSED) return reject(new Error('already closed'));
    const timer = setTimeout(() => reject(new Error(`not closed within ${ms} ms`)), ms);
    ws.once('close', (code, reason) => {
      clearTimeout(timer);
      resolve({ code, reason: String(reason) });
    });
  });
}

/** The target still upgrades a new connection and answers the channel protocol. */
async function responsive(target: Target): Promise<void> {
  if (target === reference) expect(ref.child.exitCode).toBeNull();
  const ws = await client(target);
  const reply = nextMessage(ws);
  ws.send('{"type":"ping"}');
  expect(await reply).toEqual({ type: 'pong' });
  ws.terminate();
}

/** Polls `check` until it holds, failing after `ms`. */
async function eventually(check: () => boolean | Promise<boolean>, ms: number, what: string) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const connectionCount = () =>
  new Promise<number>((resolve, reject) =>
    server.getConnections((err, count) => (err ? reject(err) : resolve(count))),
  );

/** A plain GET: no route at the local server's /ws; the reference server's /ws answers 426. */
const PLAIN_GET = -1;

/** Invalid handshakes: [name, expected status, request head for a target]. */
const HANDSHAKES: [string, number, (t: Target) => string][] = [
  ['a key that is not base64 of 16 bytes', 400, (t) => handshakeHead(t, [], 'abc')],
  ['a key without its padding', 400, (t) => handshakeHead(t, [], 'dGhlIHNhbXBsZSBub25jZQ')],
  ['a key of 17 bytes', 400, (t) => handshakeHead(t, [], randomBytes(17).toString('base64'))],
  ['a key in non-canonical base64', 400, (t) => handshakeHead(t, [], 'dGhlIHNhbXBsZSBub25jZR==')],
  ['no key', 400, (t) => handshakeHead(t).replace(/Sec-WebSocket-Key: [^\r]*\r\n/, '')],
  ['two keys', 400, (t) => handshakeHead(t, [`Sec-WebSocket-Key: ${KEY()}`])],
  [
    'version 8',
    426,
    (t) => handshakeHead(t).replace('Sec-WebSocket-Version: 13', 'Sec-WebSocket-Version: 8'),
  ],
  ['no version', 426, (t) => handshakeHead(t).replace('Sec-WebSocket-Version: 13\r\n', '')],
  [
    'a version list',
    426,
    (t) => handshakeHead(t).replace('Sec-WebSocket-Version: 13', 'Sec-WebSocket-Version: 13, 8'),
  ],
  ['a POST upgrade', 405, (t) => handshakeHead(t).replace('GET /ws', 'POST /ws')],
  ['HTTP/1.0', 400, (t) => handshakeHead(t).replace('HTTP/1.1', 'HTTP/1.0')],
  [
    'Upgrade: h2c (served as the plain GET it also is)',
    PLAIN_GET,
    (t) => handshakeHead(t, ['Connection: close']).replace('Upgrade: websocket', 'Upgrade: h2c'),
  ],
  [
    'no Upgrade header (a plain GET)',
    PLAIN_GET,
    (t) => handshakeHead(t, ['Connection: close']).replace('Upgrade: websocket\r\n', ''),
  ],
  [
    'no Connection: upgrade (a plain GET)',
    PLAIN_GET,
    (t) => handshakeHead(t).replace('Connection: Upgrade', 'Connection: close'),
  ],
  ['an Origin outside the list', 403, (t) => handshakeHead(t, ['Origin: https://evil.example'])],
  ['a look-alike Origin', 403, (t) => handshakeHead(t, [`Origin: ${t.origin}.evil.net`])],
  ['the null Origin', 403, (t) => handshakeHead(t, ['Origin: null'])],
  ['an upper-case Origin', 403, (t) => handshakeHead(t, [`Origin: ${t.origin.toUpperCase()}`])],
  ['no credential', 401, (t) => handshakeHead(t).replace(`${t.auth}\r\n`, '')],
  [
    'a bad credential',
    401,
    (t) =>
      handshakeHead(t).replace(
        t.auth,
        t === local ? 'X-Other: alice' : 'X-API-Key: not-a-key-0123456789',
      ),
  ],
  [
    'an empty subprotocol in the list',
    400,
    (t) => handshakeHead(t, ['Sec-WebSocket-Protocol: chat,,x']),
  ],
  [
    'a duplicated subprotocol',
    400,
    (t) => handshakeHead(t, ['Sec-WebSocket-Protocol: chat, chat']),
  ],
  ['another path', 404, (t) => handshakeHead(t).replace('GET /ws', 'GET /wsx')],
];

describe.each(TARGETS)('invalid handshakes ($name)', (target) => {
  it.each(HANDSHAKES)('refuses %s with a 4xx problem and no 101', async (_n, expected, build) => {
    const status = expected !== PLAIN_GET ? expected : target === local ? 404 : 426;
    const text = await rawRequest(target.port(), build(target), {
      timeoutMs: 3_000,
      tolerateReset: true,
    });
    expect(text).not.toContain(' 101 ');
    const answer = parseReply(text);
    expect(answer.status, answer.statusLine).toBe(status);
    expect(answer.headers['content-type']).toBe(PROBLEM_TYPE);
    expect(JSON.parse(answer.body)).toMatchObject({ status });
    expect(answer.headers['sec-websocket-accept']).toBeUndefined();
    if (expected === PLAIN_GET && status === 426) {
      expect(answer.headers.upgrade).toBe('websocket'); // RFC 9110 §15.5.22
      expect(answer.headers.connection?.toLowerCase()).toContain('upgrade');
    } else if (status === 426) expect(answer.headers['sec-websocket-version']).toBe('13');
    if (status === 405) expect(answer.headers.allow).toBe('GET');
  });

  it('still upgrades a good handshake afterwards', async () => {
    await responsive(target);
  });
});

const text = (s: string) => Buffer.from(s);
const big = (n: number) => Buffer.alloc(n, 0x61);

/** Invalid frames after a valid handshake: [name, close code, bytes]. */
const FRAMES: [string, number, Buffer | Buffer[]][] = [
  ['an unmasked client frame', 1002, frame(0x1, '{"type":"ping"}', { mask: false })],
  ['reserved data opcode 0x3', 1002, frame(0x3, 'x')],
  ['reserved control opcode 0xB', 1002, frame(0xb, 'x')],
  ['RSV1 without an extension', 1002, frame(0x1, '{"type":"ping"}', { rsv: 0b100 })],
  ['RSV2', 1002, frame(0x1, '{"type":"ping"}', { rsv: 0b010 })],
  ['RSV3', 1002, frame(0x1, '{"type":"ping"}', { rsv: 0b001 })],
  ['a ping of 126 bytes', 1002, frame(0x9, big(126))],
  [
    'a close frame of 126 bytes',
    1002,
    frame(0x8, Buffer.concat([Buffer.from([0x03, 0xe8]), big(124)])),
  ],
  ['a fragmented ping', 1002, frame(0x9, 'x', { fin: false })],
  ['a continuation with nothing to continue', 1002, frame(0x0, 'x')],
  [
    'a new text frame inside a fragmented message',
    1002,
    [frame(0x1, '{"type":', { fin: false }), frame(0x1, '"ping"}')],
  ],
  ['a close frame with a 1-byte payload', 1002, frame(0x8, Buffer.from([0x03]))],
  ['a close frame with code 1005', 1002, frame(0x8, Buffer.from([0x03, 0xed]))],
  ['a close frame with code 999', 1002, frame(0x8, Buffer.from([0x03, 0xe7]))],
  ['a close reason that is not UTF-8', 1007, frame(0x8, Buffer.from([0x03, 0xe8, 0xff, 0xfe]))],
  ['invalid UTF-8 in a text frame', 1007, frame(0x1, Buffer.from([0x7b, 0xff, 0xfe, 0x7d]))],
  [
    'an encoded surrogate in a text frame',
    1007,
    frame(0x1, Buffer.from([0x22, 0xed, 0xa0, 0x80, 0x22])),
  ],
  [
    'invalid UTF-8 split across fragments',
    1007,
    [frame(0x1, Buffer.from([0x22, 0xe2]), { fin: false }), frame(0x0, Buffer.from([0x28, 0x22]))],
  ],
  ['a message over 64 KiB', 1009, frame(0x1, big(64 * 1024 + 1))],
  ['a 1 GiB length with no payload', 1009, frame(0x1, Buffer.alloc(0), { declared: 1n << 30n })],
  ['a 64-bit length past 2^53', 1009, frame(0x1, Buffer.alloc(0), { declared: (1n << 63n) + 5n })],
  [
    'fragments adding up to over 64 KiB',
    1009,
    [
      frame(0x1, big(40 * 1024), { fin: false }),
      frame(0x0, big(20 * 1024), { fin: false }),
      frame(0x0, big(5 * 1024)),
    ],
  ],
  ['a binary frame', 1003, frame(0x2, Buffer.from([1, 2, 3]))],
  ['a binary message in fragments', 1003, [frame(0x2, 'ab', { fin: false }), frame(0x0, 'c')]],
  ['text that is not JSON', 1008, frame(0x1, text('not json'))],
  ['a JSON array', 1008, frame(0x1, text('[1,2]'))],
  ['JSON null', 1008, frame(0x1, text('null'))],
  ['an unknown type', 1008, frame(0x1, text('{"type":"dance"}'))],
  ['a type named __proto__', 1008, frame(0x1, text('{"type":"__proto__"}'))],
  ['a type named constructor', 1008, frame(0x1, text('{"type":"constructor"}'))],
  [
    'a message text over 1000 characters',
    1008,
    frame(0x1, text(JSON.stringify({ type: 'message', text: 'x'.repeat(1001) }))),
  ],
  [
    'a channel with control characters',
    1008,
    frame(0x1, text('{"type":"subscribe","channel":"a\\u0000b"}')),
  ],
  [
    'JSON nested 30k levels deep',
    1008,
    frame(0x1, text(`${'['.repeat(30_000)}${']'.repeat(30_000)}`)),
  ],
];

describe.each(TARGETS)('invalid frames after a valid handshake ($name)', (target) => {
  it.each(FRAMES)('closes on %s with %i', async (_n, code, bytes) => {
    const closed = await closeAfter(target, bytes);
    expect(closed.code).toBe(code);
    // only the close frame answers: no pong, no relay, no message before it
    expect(closed.frames.filter((f) => f.opcode === 0x1)).toEqual([]);
  });

  it('still accepts and answers new connections', async () => {
    await responsive(target);
  });
});

describe('a well-formed message split into fragments and control frames in between', () => {
  it.each(TARGETS)('is answered ($name)', async (target) => {
    const { socket, received } = await open(target);
    socket.write(
      Buffer.concat([
        frame(0x1, '{"type":', { fin: false }),
        frame(0x9, 'ping in the middle'),
        frame(0x0, '"ping"}'),
      ]),
    );
    await eventually(
      () => framesOf(received()).some((f) => f.opcode === 0x1),
      2_000,
      'the pong message',
    );
    const frames = framesOf(received());
    expect(frames.find((f) => f.opcode === 0xa)?.payload.toString()).toBe('ping in the middle');
    expect(JSON.parse(String(frames.find((f) => f.opcode === 0x1)?.payload))).toEqual({
      type: 'pong',
    });
    socket.destroy();
  });
});

describe.each(TARGETS)('floods ($name)', (target) => {
  it('answers 1,000 protocol-level pings sent in bursts of 50 and stays open', async () => {
    const ws = await client(target);
    let pongs = 0;
    ws.on('pong', () => {
      pongs++;
    });
    for (let burst = 1; burst <= 20; burst++) {
      for (let i = 0; i < 50; i++) ws.ping();
      await eventually(() => pongs === burst * 50, 2_000, `${burst * 50} pongs`);
    }
    // pings are control frames: they do not count against the message rate limit
    const reply = nextMessage(ws);
    ws.send('{"type":"ping"}');
    expect(await reply).toEqual({ type: 'pong' });
    expect(ws.readyState).toBe(WebSocket.OPEN);
    ws.terminate();
  });

  it('drops a peer that floods 1,000 pings at once, and stays responsive', async () => {
    // ws (8.23) terminates a peer with more than 60 pongs still to send (maxPendingAutoPongs)
    const ws = await client(target);
    let pongs = 0;
    ws.on('pong', () => {
      pongs++;
    });
    const closed = closedWith(ws, 5_000);
    for (let i = 0; i < 1_000; i++) ws.ping();
    expect((await closed).code).toBe(1006);
    expect(pongs).toBeLessThan(1_000);
    await responsive(target);
  });

  it('cuts 1,000 messages sent at once with 1008 after the per-connection limit (100)', async () => {
    const ws = await client(target);
    let answered = 0;
    ws.on('message', () => {
      answered++;
    });
    const closed = closedWith(ws, 5_000);
    for (let i = 0; i < 1_000; i++) ws.send('{"type":"ping"}');
    expect(await closed).toEqual({ code: 1008, reason: 'rate limit exceeded' });
    // the bucket holds 100; a few ms of refill at 10 per second adds at most one
    expect(answered).toBeGreaterThanOrEqual(100);
    expect(answered).toBeLessThanOrEqual(101);
    await responsive(target);
  });

  it('relays at most the limit when 1,000 messages flood a subscribed connection', async () => {
    const sender = await client(target);
    const receiver = await client(target);
    let relayed = 0;
    receiver.on('message', (data) => {
      if (JSON.parse(String(data)).type === 'message') relayed++;
    });
    // a connection's messages are served in order: the pong answers a ping sent after the
    // subscribe once the subscription is recorded
    receiver.send('{"type":"subscribe","channel":"flood"}');
    const subscribed = nextPong(receiver);
    receiver.send('{"type":"ping"}');
    expect(await subscribed).toEqual({ type: 'pong' });
    const closed = closedWith(sender, 5_000);
    for (let i = 0; i < 1_000; i++) {
      sender.send(JSON.stringify({ type: 'message', text: `flood ${i}`, channel: 'flood' }));
    }
    expect(await closed).toEqual({ code: 1008, reason: 'rate limit exceeded' });
    // every relay was written to the receiver before the server sent the 1008, so before it
    // served this ping: once the pong is here, every relay the flood got is counted (and the
    // receiver is unaffected by the sender's flood)
    const settled = nextPong(receiver);
    receiver.send('{"type":"ping"}');
    expect(await settled).toEqual({ type: 'pong' });
    expect(relayed).toBeGreaterThanOrEqual(100);
    expect(relayed).toBeLessThanOrEqual(101);
    receiver.terminate();
  });

  it('serves 20 connections sending 50 messages each, all answered', async () => {
    const sockets = await Promise.all(Array.from({ length: 20 }, () => client(target)));
    const counts = sockets.map(() => 0);
    sockets.forEach((ws, i) => {
      ws.on('message', () => {
        counts[i]!++;
      });
      for (let n = 0; n < 50; n++) ws.send('{"type":"ping"}');
    });
    await eventually(
      () => counts.every((c) => c === 50),
      5_000,
      `every connection answered (${counts.join(',')})`,
    );
    for (const ws of sockets) expect(ws.readyState).toBe(WebSocket.OPEN);
    for (const ws of sockets) ws.terminate();
  });
});

describe.each(TARGETS)('abrupt disconnects ($name)', (target) => {
  /** Writes `data` on a new connection, waits `ms`, then destroys it. */
  async function dropAfter(data: (t: Target) => Buffer | string, ms = 20): Promise<void> {
    const socket = connect(target.port(), '127.0.0.1');
    socket.on('error', () => {});
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    socket.write(data(target));
    await new Promise((resolve) => setTimeout(resolve, ms));
    socket.destroy();
  }

  it.each([
    ['in the request line', () => 'GET /w'],
    ['in the headers', (t: Target) => handshakeHead(t).slice(0, 60)],
    ['right after the handshake, before the 101', (t: Target) => handshakeHead(t)],
  ])('survives 20 drops %s', async (_n, data) => {
    await Promise.all(Array.from({ length: 20 }, () => dropAfter(data, 0)));
    await Promise.all(Array.from({ length: 20 }, () => dropAfter(data, 30)));
    await responsive(target);
  });

  it.each([
    ['in a frame header', [Buffer.from([0x81])]],
    ['in the middle of a payload', [frame(0x1, big(1000)).subarray(0, 100)]],
    ['in a fragmented message', [frame(0x1, '{"type":', { fin: false })]],
    ['in a close frame', [frame(0x8, Buffer.from([0x03, 0xe8])).subarray(0, 3)]],
    ['with a message on its way out', [frame(0x1, '{"type":"join"}')]],
  ])('survives 20 drops %s after the 101', async (_n, bytes) => {
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        const { socket } = await open(target);
        for (const piece of bytes) socket.write(piece);
        await new Promise((resolve) => setTimeout(resolve, 10));
        socket.destroy();
      }),
    );
    await responsive(target);
  });

  if (target === local) {
    it('keeps nothing of the dropped connections', async () => {
      await eventually(() => channels.size === 0, 3_000, `protocol connections (${channels.size})`);
      await eventually(async () => (await connectionCount()) === 0, 3_000, 'open sockets');
      expect(unexpected).toEqual([]);
    });
  }
});
