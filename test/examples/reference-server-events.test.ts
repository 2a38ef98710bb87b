import { type ClientRequest, type IncomingMessage, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const DEMO_KEY = 'demo-key-of-the-events-suite-0123456789abcdef';
const KEY = { 'X-API-Key': DEMO_KEY };

let server: RunningServer;
const open: ClientRequest[] = [];

beforeAll(async () => {
  server = await startReferenceServer({ DEMO_API_KEY: DEMO_KEY, SSE_HEARTBEAT: '1' });
});

afterAll(async () => {
  for (const req of open) req.destroy();
  await server?.stop();
});

/** One parsed block of the stream: its fields, or `comment` for a heartbeat. */
interface Block {
  id?: string;
  event?: string;
  data?: string;
  comment?: boolean;
  raw: string;
}

/** An open `/events` response, read block by block. */
interface Stream {
  res: IncomingMessage;
  blocks: Block[];
  /** Resolves with the blocks once `predicate` holds for them, or rejects after `ms`. */
  until(predicate: (blocks: Block[]) => boolean, ms?: number): Promise<Block[]>;
  close(): void;
}

function parse(raw: string): Block {
  const block: Block = { raw };
  for (const line of raw.split('\n')) {
    if (line.startsWith(':')) block.comment = true;
    const match = /^(id|event|data): ?(.*)$/.exec(line);
    if (match) {
      const name = match[1] as 'id' | 'event' | 'data';
      block[name] =
        name === 'data' && block.data !== undefined ? `${block.data}\n${match[2]}` : match[2];
    }
  }
  return block;
}

function connect(headers: Record<string, string> = {}): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const req = request(`${server.url}/events`, {
      headers: { Accept: 'text/event-stream', ...headers },
    });
    open.push(req);
    req.on('error', reject);
    req.on('response', (res) => {
      res.setEncoding('utf8');
      const blocks: Block[] = [];
      const waiters = new Set<() => void>();
      let buffer = '';
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let end = buffer.indexOf('\n\n');
        while (end !== -1) {
          blocks.push(parse(buffer.slice(0, end)));
          buffer = buffer.slice(end + 2);
          end = buffer.indexOf('\n\n');
        }
        for (const wake of [...waiters]) wake();
      });
      res.on('error', () => {});
      resolve({
        res,
        blocks,
        until(predicate, ms = 3000) {
          return new Promise((done, fail) => {
            const check = () => {
              if (!predicate(blocks)) return;
              waiters.delete(check);
              clearTimeout(timer);
              done(blocks);
            };
            const timer = setTimeout(() => {
              waiters.delete(check);
              fail(new Error(`timed out; got ${JSON.stringify(blocks.map((b) => b.raw))}`));
            }, ms);
            waiters.add(check);
            check();
          });
        },
        close: () => req.destroy(),
      });
    });
    req.end();
  });
}

async function post(text: string, channel?: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${server.url}/api/messages`, {
    method: 'POST',
    headers: { ...KEY, 'Content-Type': 'application/json' },
    body: JSON.stringify(channel === undefined ? { text } : { text, channel }),
  });
  expect(res.status).toBe(201);
  return (await res.json()) as Record<string, unknown>;
}

const messagesOf = (blocks: Block[]) =>
  blocks.filter((b) => b.id !== undefined && b.event === undefined);

describe('GET /events', () => {
  it('refuses no credential with a 401 problem and a challenge', async () => {
    const res = await fetch(`${server.url}/events`);
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.headers.get('www-authenticate')).toBeTruthy();
    const body = (await res.json()) as { status: number };
    expect(body.status).toBe(401);
  });

  it('streams each new message with id and data, and heartbeats', async () => {
    const stream = await connect(KEY);
    expect(stream.res.statusCode).toBe(200);
    expect(stream.res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    const message = await post('hello events', 'random');
    const [block] = messagesOf(await stream.until((b) => messagesOf(b).length === 1));
    expect(block!.raw).toMatch(/^id: \d+\ndata: /);
    expect(JSON.parse(block!.data!)).toEqual({ event: 'message.created', data: message });
    expect(block!.raw.split('\n')).toEqual([`id: ${block!.id}`, `data: ${block!.data}`]);
    await stream.until((b) => b.some((x) => x.comment), 1500);
    stream.close();
  });

  it('replays what was missed after Last-Event-ID, in order, without duplicates', async () => {
    const first = await connect(KEY);
    await post('before the drop');
    const [seen] = messagesOf(await first.until((b) => messagesOf(b).length === 1));
    first.close();
    const missed = [await post('missed 1'), await post('missed 2'), await post('missed 3')];

    const again = await connect({ ...KEY, 'Last-Event-ID': seen!.id! });
    const live = await post('live after resume');
    const blocks = messagesOf(await again.until((b) => messagesOf(b).length >= 4));
    // a marker posted now comes after anything else the stream would send (a duplicate, a
    // late replay): once it is here, the stream up to it is complete
    const marker = await post('marker after the resume');
    await again.until(
      (b) => messagesOf(b).some((x) => JSON.parse(x.data!).data.id === marker.id),
      5_000,
    );
    const got = messagesOf(again.blocks);
    expect(got.map((b) => JSON.parse(b.data!).data)).toEqual([...missed, live, marker]);
    const ids = got.map((b) => Number(b.id));
    expect(ids).toEqual(ids.map((_, i) => Number(seen!.id) + 1 + i));
    expect(again.blocks.some((b) => b.event === 'reset')).toBe(false);
    expect(blocks.length).toBe(4);
    again.close();
  });

  it('says explicitly when the client is too far behind or the id is not ours', async () => {
    for (const id of ['999999999', 'garbage']) {
      const stream = await connect({ ...KEY, 'Last-Event-ID': id });
      const [reset] = await stream.until((b) => b.some((x) => x.event === 'reset'));
      const block = stream.blocks.find((x) => x.event === 'reset')!;
      expect(reset).toBeDefined();
      expect(JSON.parse(block.data!)).toEqual({ event: 'stream.reset', reason: 'too-far-behind' });
      // live events continue after the reset
      const message = await post(`after reset ${id}`);
      const [next] = messagesOf(await stream.until((b) => messagesOf(b).length === 1));
      expect(JSON.parse(next!.data!).data).toEqual(message);
      expect(Number(next!.id)).toBeGreaterThan(Number(block.id));
      stream.close();
    }
  });

  it('accepts the session cookie', async () => {
    const login = await fetch(`${server.url}/login`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ username: 'bob', password: 'bob-password' }),
    });
    expect(login.status).toBe(204);
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const stream = await connect({ Cookie: cookie });
    expect(stream.res.statusCode).toBe(200);
    const message = await post('for the browser');
    const [block] = messagesOf(await stream.until((b) => messagesOf(b).length === 1));
    expect(JSON.parse(block!.data!)).toEqual({ event: 'message.created', data: message });
    stream.close();
  });
});
