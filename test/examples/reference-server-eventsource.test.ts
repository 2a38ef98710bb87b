import { EventSource, type FetchLike } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const DEMO_KEY = 'demo-key-of-the-eventsource-suite-0123456789';

let server: RunningServer;

beforeAll(async () => {
  server = await startReferenceServer({ DEMO_API_KEY: DEMO_KEY, SSE_HEARTBEAT: '1' });
});

afterAll(async () => {
  await server?.stop();
});

/** What the `eventsource` client did: its requests and the raw text it read. */
interface Client {
  source: EventSource;
  requests: Record<string, string>[];
  raw: () => string;
  messages: { data: string; lastEventId: string }[];
  errors: { code?: number | undefined; message?: string | undefined }[];
  /** Resolves once `predicate` holds, or rejects after `ms`. */
  until(predicate: () => boolean, what: string, ms?: number): Promise<void>;
}

/** Opens the real `eventsource` client on `/events`, adding `headers` to every request. */
function open(headers: Record<string, string>): Client {
  const requests: Record<string, string>[] = [];
  let raw = '';
  const messages: Client['messages'] = [];
  const errors: Client['errors'] = [];
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const check of [...waiters]) check();
  };
  const fetchWithKey: FetchLike = async (url, init) => {
    const sent = { ...init.headers, ...headers };
    requests.push(sent);
    const res = await fetch(url, { ...init, headers: sent });
    const decoder = new TextDecoder();
    const tap = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        raw += decoder.decode(chunk, { stream: true });
        wake();
        controller.enqueue(chunk);
      },
    });
    return {
      body: res.body ? res.body.pipeThrough(tap) : null,
      url: res.url,
      status: res.status,
      redirected: res.redirected,
      headers: res.headers,
    };
  };
  const source = new EventSource(`${server.url}/events`, { fetch: fetchWithKey });
  source.addEventListener('message', (event) => {
    messages.push({ data: String(event.data), lastEventId: event.lastEventId });
    wake();
  });
  source.addEventListener('error', (event) => {
    errors.push({ code: event.code, message: event.message });
    wake();
  });
  source.addEventListener('open', wake);
  return {
    source,
    requests,
    raw: () => raw,
    messages,
    errors,
    until(predicate, what, ms = 5000) {
      return new Promise((done, fail) => {
        const check = () => {
          if (!predicate()) return;
          waiters.delete(check);
          clearTimeout(timer);
          done();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          fail(
            new Error(
              `timed out waiting for ${what}; got ${JSON.stringify(messages.map((m) => m.data))}, errors ${JSON.stringify(errors)}, raw ${JSON.stringify(raw)}`,
            ),
          );
        }, ms);
        waiters.add(check);
        check();
      });
    },
  };
}

async function post(text: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${server.url}/api/messages`, {
    method: 'POST',
    headers: { 'X-API-Key': DEMO_KEY, 'Content-Type': 'application/json' },
    body: JSON.stringify({ text }),
  });
  expect(res.status).toBe(201);
  return (await res.json()) as Record<string, unknown>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('GET /events with the eventsource npm client', () => {
  it('receives each new message with its id, and stays open on heartbeats', async () => {
    const client = open({ 'X-API-Key': DEMO_KEY });
    try {
      await client.until(() => client.source.readyState === client.source.OPEN, 'open');
      const message = await post('hello eventsource');
      await client.until(() => client.messages.length === 1, 'one message');
      const [event] = client.messages;
      expect(event!.lastEventId).toMatch(/^\d+$/);
      expect(JSON.parse(event!.data)).toEqual({ event: 'message.created', data: message });

      // idle for more than one heartbeat: a comment arrives, the connection is kept
      const before = client.raw().length;
      await client.until(() => /(^|\n):/.test(client.raw().slice(before)), 'a heartbeat', 3000);
      expect(client.source.readyState).toBe(client.source.OPEN);
      expect(client.errors).toEqual([]);
      expect(client.requests).toHaveLength(1);
      expect(client.messages).toHaveLength(1);
    } finally {
      client.source.close();
    }
  });

  it('resumes after Last-Event-ID with the missed messages in order', async () => {
    const first = open({ 'X-API-Key': DEMO_KEY });
    let lastId: string;
    try {
      await first.until(() => first.source.readyState === first.source.OPEN, 'open');
      await post('before the drop');
      await first.until(() => first.messages.length === 1, 'one message');
      lastId = first.messages[0]!.lastEventId;
    } finally {
      first.source.close();
    }
    const missed = [await post('missed 1'), await post('missed 2'), await post('missed 3')];

    const again = open({ 'X-API-Key': DEMO_KEY, 'Last-Event-ID': lastId });
    try {
      await again.until(() => again.messages.length === 3, 'the three missed messages');
      const live = await post('live after resume');
      await again.until(() => again.messages.length === 4, 'the live message');
      // a marker posted now comes after anything else the stream would send (a duplicate, a
      // late replay): once it is here, the stream up to it is complete
      const marker = await post('marker after the resume');
      await again.until(
        () => again.messages.some((m) => JSON.parse(m.data).data.id === marker.id),
        'the marker',
      );
      expect(again.messages.map((m) => JSON.parse(m.data))).toEqual(
        [...missed, live, marker].map((data) => ({ event: 'message.created', data })),
      );
      const ids = again.messages.map((m) => Number(m.lastEventId));
      expect(ids).toEqual(ids.map((_, i) => Number(lastId) + 1 + i));
      expect(again.raw()).not.toMatch(/event: reset/);
      expect(again.requests[0]!['Last-Event-ID']).toBe(lastId);
    } finally {
      again.source.close();
    }
  });

  it('fails without a credential with a 401 and does not reconnect', async () => {
    const client = open({});
    try {
      await client.until(() => client.errors.length > 0, 'an error');
      expect(client.errors[0]!.code).toBe(401);
      expect(client.source.readyState).toBe(client.source.CLOSED);
      await sleep(1000);
      expect(client.requests).toHaveLength(1);
      expect(client.errors).toHaveLength(1);
      expect(client.messages).toEqual([]);
    } finally {
      client.source.close();
    }
  });
});
