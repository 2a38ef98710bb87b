// examples/realtime/server.ts runs in-process, over real sockets; the samples of
// docs/realtime.md are cut from it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { createRealtimeApp, DEMO_API_KEY, ORIGINS } from '../../examples/realtime/server.js';
import { json, type Listening, listen, request } from '../helpers/http.js';
import { connect as connectStream, parseEvents } from '../helpers/sse.js';

const BOB_KEY = 'bob-realtime-key-0123456789abcdef01';
let app: Awaited<ReturnType<typeof createRealtimeApp>>;
let listening: Listening;

beforeAll(async () => {
  app = await createRealtimeApp({ [DEMO_API_KEY]: 'alice', [BOB_KEY]: 'bob' });
  listening = await listen(app.server);
});
afterAll(async () => {
  await app.close();
});

const post = (room: string, body: string, key = DEMO_API_KEY) =>
  request(listening, `/rooms/${room}/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key },
    body,
  });

function socket(headers: Record<string, string>) {
  const ws = new WebSocket(`ws://127.0.0.1:${listening.port}/ws`, { headers });
  const messages: Record<string, unknown>[] = [];
  ws.on('message', (data) => messages.push(JSON.parse(String(data))));
  const opened = new Promise<number>((resolve, reject) => {
    ws.once('open', () => resolve(101));
    ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.once('error', reject);
  });
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  return { ws, messages, opened, closed };
}

describe('examples/realtime/server.ts', () => {
  it('delivers a message posted over REST to SSE and WebSocket subscribers', async () => {
    const stream = await connectStream(listening, '/rooms/lobby/events', {
      'x-api-key': BOB_KEY,
    });
    const bob = socket({ 'x-api-key': BOB_KEY });
    expect(await bob.opened).toBe(101);
    bob.ws.send(JSON.stringify({ type: 'subscribe', channel: 'room:lobby', recover: true }));
    await expect.poll(() => bob.messages.length).toBe(1);

    const created = await post('lobby', '{"text":"hello"}');
    expect(created.status).toBe(201);
    const { position } = json<{ position: string }>(created);
    const text = await stream.until((t) => parseEvents(t).length > 0);
    expect(parseEvents(text)).toEqual([
      { id: position, event: 'message', data: '{"from":"alice","text":"hello"}' },
    ]);
    await expect
      .poll(() => bob.messages.at(-1))
      .toEqual({
        type: 'push',
        channel: 'room:lobby',
        event: 'message',
        data: { from: 'alice', text: 'hello' },
        position,
      });
    stream.destroy();
    bob.ws.close();
  });

  it('replays missed events to an event stream that reconnects with Last-Event-ID', async () => {
    const first = json<{ position: string }>(await post('replay', '{"text":"one"}'));
    await post('replay', '{"text":"two"}');
    await post('replay', '{"text":"three"}');
    const stream = await connectStream(listening, '/rooms/replay/events', {
      'x-api-key': BOB_KEY,
      'last-event-id': first.position,
    });
    const events = parseEvents(await stream.until((t) => parseEvents(t).length >= 2));
    expect(events.map((e) => JSON.parse(e.data!).text)).toEqual(['two', 'three']);
    stream.destroy();
  });

  it('keeps private channels private and checks the upgrade before the 101', async () => {
    const alice = socket({ 'x-api-key': DEMO_API_KEY, origin: ORIGINS[0]! });
    expect(await alice.opened).toBe(101);
    alice.ws.send(JSON.stringify({ type: 'subscribe', channel: 'user:bob' }));
    await expect
      .poll(() => alice.messages)
      .toEqual([{ type: 'error', code: 'forbidden', action: 'subscribe', channel: 'user:bob' }]);
    alice.ws.close();
    expect(await socket({}).opened).toBe(401);
    expect(await socket({ 'x-api-key': DEMO_API_KEY, origin: 'https://evil.example' }).opened).toBe(
      403,
    );
  });

  it('answers bad input with problems', async () => {
    expect((await post('lobby', '{"text":""}')).status).toBe(422);
    expect((await post('lobby', 'null')).status).toBe(422);
    expect((await post('no%20spaces', '{"text":"x"}')).status).toBe(404);
    expect((await post('lobby', '{"text":"x"}', 'wrong-key')).status).toBe(401);
  });

  it('closes WebSocket clients with 1001 on shutdown', async () => {
    const carol = socket({ 'x-api-key': BOB_KEY });
    expect(await carol.opened).toBe(101);
    await app.close();
    expect(await carol.closed).toBe(1001);
    app = { ...app, close: async () => {} };
  });
});
