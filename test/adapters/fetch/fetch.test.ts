// toFetchHandler() (portico/fetch) called as a Fetch host calls it: Web Requests in, Web
// Responses out, read as a client reads them. The body is pulled only when read and cancelled
// when the answer is done; the head is node's (Content-Length, HEAD, 204); errors are problems;
// the handler's Response is written through portico's middleware; streams end when the reader
// goes away or the request aborts; write() answers false until the reader takes the bytes.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { incomingOf, principalOf, toFetchHandler } from '../../../src/adapters/fetch/index.js';
import { toIncomingMessage } from '../../../src/adapters/fetch/request.js';
import { FetchServerResponse } from '../../../src/adapters/fetch/response.js';
import { apiKeyAuth } from '../../../src/auth/api-key/authenticator.js';
import { importApiKey, MemoryApiKeyStore } from '../../../src/auth/api-key/store.js';
import { authenticate } from '../../../src/auth/authenticate.js';
import type { Middleware } from '../../../src/core/compose.js';
import { getRequestId } from '../../../src/core/index.js';
import { silentLogger } from '../../../src/diagnostics/index.js';
import { readJson, requestId, securityHeaders, sendJson } from '../../../src/index.js';
import { rateLimit } from '../../../src/rate-limit/index.js';
import { createEventStream } from '../../../src/sse/index.js';

const logger = silentLogger;
const URL_BASE = 'http://app.example';

/** A body that counts what was pulled from it and says when it was cancelled; endless unless `chunks`. */
function countedBody(chunks?: string[]) {
  const seen = { pulls: 0, cancelled: false };
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      seen.pulls++;
      if (chunks === undefined) controller.enqueue(new Uint8Array(16 * 1024).fill(0x20));
      else if (chunks.length > 0) controller.enqueue(new TextEncoder().encode(chunks.shift()));
      else controller.close();
    },
    cancel() {
      seen.cancelled = true;
    },
  });
  return { body, seen };
}

const post = (path: string, body: string | ReadableStream, headers: Record<string, string> = {}) =>
  new Request(`${URL_BASE}${path}`, {
    method: 'POST',
    body,
    headers,
    duplex: 'half',
  } as RequestInit);

const echo: Middleware = async (req, res) => sendJson(res, 201, await readJson(req));

describe('a Web Request as node request', () => {
  it('gives the method, the path and query, the header lines and Host from the URL', async () => {
    const fetch = toFetchHandler((req: IncomingMessage, res: ServerResponse) => {
      sendJson(res, 200, {
        method: req.method,
        url: req.url,
        headers: req.headers,
        raw: req.rawHeaders,
        version: req.httpVersion,
        address: req.socket.remoteAddress ?? null,
        tls: (req.socket as { encrypted?: boolean }).encrypted,
      });
    });
    const request = new Request(`${URL_BASE}/a/b?c=1&d=%20`, {
      method: 'PUT',
      headers: [
        ['X-One', '1'],
        ['x-one', '2'],
        ['Cookie', 'a=1'],
      ],
      body: 'x',
    });
    const seen = await (await fetch(request)).json();
    expect(seen).toEqual({
      method: 'PUT',
      url: '/a/b?c=1&d=%20',
      headers: {
        host: 'app.example',
        cookie: 'a=1',
        'content-type': 'text/plain;charset=UTF-8',
        'x-one': '1, 2',
      },
      raw: [
        'host',
        'app.example',
        'content-type',
        'text/plain;charset=UTF-8',
        'cookie',
        'a=1',
        'x-one',
        '1, 2',
      ],
      version: '1.1',
      address: null,
      tls: false,
    });
    const secure = (await (await fetch(new Request('https://app.example/'))).json()) as {
      tls: boolean;
    };
    expect(secure.tls).toBe(true);
  });

  it('takes the client address from clientAddress, with the host argument beside the request', async () => {
    const hosts: unknown[] = [];
    const fetch = toFetchHandler(
      (req, res) => sendJson(res, 200, { ip: req.socket.remoteAddress }),
      {
        clientAddress: (_request, host) => {
          hosts.push(host);
          return (host as { ip: string }).ip;
        },
      },
    );
    const answer = await fetch(new Request(`${URL_BASE}/`), { ip: '203.0.113.7' });
    expect(await answer.json()).toEqual({ ip: '203.0.113.7' });
    expect(hosts).toEqual([{ ip: '203.0.113.7' }]);
  });

  it('counts rate limits by the client address, one shared budget without it', async () => {
    const fetch = toFetchHandler(
      [rateLimit({ limit: 1, windowMs: 60_000 }), (_req, res) => sendJson(res, 200, {})],
      { logger, clientAddress: (_request, host) => (host as { ip?: string } | undefined)?.ip },
    );
    const status = async (ip?: string) =>
      (await fetch(new Request(`${URL_BASE}/`), ip === undefined ? undefined : { ip })).status;
    expect(await status('198.51.100.1')).toBe(200);
    expect(await status('198.51.100.1')).toBe(429);
    expect(await status('198.51.100.2')).toBe(200);
    expect(await status()).toBe(200);
    expect(await status()).toBe(429);
  });

  it('never pulls a body nobody reads, and cancels it once the answer is written', async () => {
    const { body, seen } = countedBody();
    const fetch = toFetchHandler((_req, res) => sendJson(res, 401, { no: true }));
    const answer = await fetch(post('/', body));
    expect(answer.status).toBe(401);
    await answer.text();
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen.cancelled).toBe(true);
    expect(seen.pulls).toBeLessThanOrEqual(1); // the stream's own first pull, to fill its queue
  });

  it('reads a streamed body once, whole, as readJson does on node:http', async () => {
    const { body } = countedBody(['{"a":', '[1,', '2]}']);
    const fetch = toFetchHandler(echo, { logger });
    const answer = await fetch(post('/', body, { 'content-type': 'application/json' }));
    expect(answer.status).toBe(201);
    expect(await answer.json()).toEqual({ a: [1, 2] });
  });

  it('answers an endless body past the limit with 413 (after dropping it for 2 s, as on a socket), and stops reading it', async () => {
    const { body, seen } = countedBody();
    const fetch = toFetchHandler(echo, { logger });
    const answer = await fetch(post('/', body, { 'content-type': 'application/json' }));
    expect(answer.status).toBe(413);
    expect(answer.headers.get('content-type')).toBe('application/problem+json');
    expect(answer.headers.get('connection')).toBeNull(); // node's own field, not the Response's
    await answer.text();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(seen.cancelled).toBe(true);
    const pulled = seen.pulls;
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(seen.pulls).toBe(pulled);
  });

  it('answers a body shorter than its Content-Length with 400, and 415 for another type', async () => {
    const fetch = toFetchHandler(echo, { logger });
    const short = await fetch(
      post('/', '{"a":1}', { 'content-type': 'application/json', 'content-length': '50' }),
    );
    expect(short.status).toBe(400);
    const text = await fetch(post('/', 'hi', { 'content-type': 'text/plain' }));
    expect(text.status).toBe(415);
    expect(((await text.json()) as { status: number }).status).toBe(415);
  });

  it('fails a read when the body stream errors', async () => {
    const body = new ReadableStream({
      pull(controller) {
        controller.error(new Error('the client went away'));
      },
    });
    const fetch = toFetchHandler(echo, { logger });
    const answer = await fetch(post('/', body, { 'content-type': 'application/json' }));
    expect([400, 500]).toContain(answer.status);
    expect(answer.headers.get('content-type')).toBe('application/problem+json');
  });
});

describe('the answer as a Web Response', () => {
  it('has node head: its Content-Length and Date, without hop-by-hop fields', async () => {
    const fetch = toFetchHandler([
      requestId(),
      securityHeaders(),
      (_req, res) => sendJson(res, 200, { a: 1 }),
    ]);
    const answer = await fetch(new Request(`${URL_BASE}/`));
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-length')).toBe('7');
    expect(answer.headers.get('date')).toMatch(/GMT$/);
    expect(answer.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
    for (const name of ['connection', 'keep-alive', 'transfer-encoding']) {
      expect(answer.headers.get(name)).toBeNull();
    }
    expect(await answer.text()).toBe('{"a":1}');
  });

  it('has no body for HEAD, 204 and 304, and keeps status and reason', async () => {
    const fetch = toFetchHandler((req, res) => {
      const status = Number(req.url!.slice(1));
      res.writeHead(status, 'Own Reason', { 'content-type': 'text/plain' });
      res.end('ignored for these');
    });
    const head = await fetch(new Request(`${URL_BASE}/200`, { method: 'HEAD' }));
    expect([head.status, head.statusText, head.body]).toEqual([200, 'Own Reason', null]);
    for (const status of [204, 304]) {
      const answer = await fetch(new Request(`${URL_BASE}/${status}`));
      expect([answer.status, answer.body]).toEqual([status, null]);
    }
  });

  it('keeps every Set-Cookie line apart', async () => {
    const fetch = toFetchHandler((_req, res) => {
      res.setHeader('Set-Cookie', ['a=1; HttpOnly', 'b=2; Secure']);
      res.end();
    });
    const answer = await fetch(new Request(`${URL_BASE}/`));
    expect(answer.headers.getSetCookie()).toEqual(['a=1; HttpOnly', 'b=2; Secure']);
  });

  it('answers a thrown error as a 500 problem that hides it, quoting the request id', async () => {
    const fetch = toFetchHandler(
      [
        requestId(),
        () => {
          throw new Error('db password is hunter2');
        },
      ],
      { logger },
    );
    const answer = await fetch(new Request(`${URL_BASE}/boom?api_key=secret`));
    expect(answer.status).toBe(500);
    const problem = (await answer.json()) as { requestId: string };
    expect(problem).toMatchObject({ status: 500, instance: '/boom' });
    expect(problem.requestId).toBe(answer.headers.get('x-request-id'));
    expect(JSON.stringify(problem)).not.toMatch(/hunter2|secret/);
  });

  it('answers what nothing serves with a 404 problem', async () => {
    const fetch = toFetchHandler([requestId()]);
    const answer = await fetch(new Request(`${URL_BASE}/nowhere`));
    expect(answer.status).toBe(404);
    expect(answer.headers.get('content-type')).toBe('application/problem+json');
  });

  it('rejects when the response is destroyed before its head', async () => {
    const fetch = toFetchHandler((_req, res) => {
      res.destroy(new Error('gone'));
    });
    await expect(fetch(new Request(`${URL_BASE}/`))).rejects.toThrow('gone');
  });

  it('makes write() answer false past 64 KiB unread, and emits drain once the reader takes them', async () => {
    const request = new Request(`${URL_BASE}/`);
    const { req } = toIncomingMessage(request, undefined);
    const res = new FetchServerResponse(req, () => {});
    res.writeHead(200);
    const answers: boolean[] = [];
    for (let i = 0; i < 5; i++) answers.push(res.write(Buffer.alloc(16 * 1024)));
    expect(answers).toEqual([true, true, true, false, false]);
    let drained = 0;
    res.on('drain', () => drained++);
    const reader = (await res.response).body!.getReader();
    let read = 0;
    while (read < 5 * 16 * 1024) read += (await reader.read()).value!.byteLength;
    expect(drained).toBe(1);
    res.end();
    expect((await reader.read()).done).toBe(true);
  });
});

describe('the handler the chain passes on to', () => {
  it('answers after the middleware, with their lines, its own fields winning, Vary merged, cookies added', async () => {
    const store = new MemoryApiKeyStore();
    await importApiKey(store, 'fetch-test-key-0123456789abcdef', { owner: 'alice' });
    const seen: unknown[] = [];
    const fetch = toFetchHandler(
      [
        requestId(),
        securityHeaders(),
        authenticate([apiKeyAuth({ store })]),
        (_req, res, next) => {
          res.setHeader('Set-Cookie', 'session=1; HttpOnly');
          res.setHeader('X-Frame-Options', 'SAMEORIGIN-IGNORED');
          return next();
        },
      ],
      {
        logger,
        handler: (request, host) => {
          seen.push(principalOf(request)?.sub, getRequestId(incomingOf(request)!), host);
          return new Response('hello', {
            status: 202,
            statusText: 'Taken',
            headers: { 'X-Frame-Options': 'DENY', Vary: 'Accept', 'Set-Cookie': 'theme=dark' },
          });
        },
      },
    );
    const answer = await fetch(
      new Request(`${URL_BASE}/`, { headers: { 'x-api-key': 'fetch-test-key-0123456789abcdef' } }),
      { from: 'host' },
    );
    expect([answer.status, answer.statusText]).toEqual([202, 'Taken']);
    expect(await answer.text()).toBe('hello');
    expect(answer.headers.get('content-length')).toBe('5');
    expect(answer.headers.get('x-frame-options')).toBe('DENY');
    expect(answer.headers.get('vary')).toBe('X-API-Key, Accept');
    expect(answer.headers.getSetCookie()).toEqual(['session=1; HttpOnly', 'theme=dark']);
    expect(seen).toEqual(['alice', answer.headers.get('x-request-id'), { from: 'host' }]);
    const refused = await fetch(new Request(`${URL_BASE}/`));
    expect(refused.status).toBe(401);
    expect(seen).toHaveLength(3);
  });

  it('streams a body that is not whole, chunk by chunk', async () => {
    let push: (text: string | null) => void = () => {};
    const fetch = toFetchHandler([], {
      handler: () =>
        new Response(
          new ReadableStream({
            start(controller) {
              push = (text) =>
                text === null
                  ? controller.close()
                  : controller.enqueue(new TextEncoder().encode(text));
            },
          }),
        ),
    });
    const answer = await fetch(new Request(`${URL_BASE}/`));
    expect(answer.headers.get('content-length')).toBeNull();
    const reader = answer.body!.getReader();
    const decoder = new TextDecoder();
    push('one');
    expect(decoder.decode((await reader.read()).value)).toBe('one');
    push('two');
    expect(decoder.decode((await reader.read()).value)).toBe('two');
    push(null);
    expect((await reader.read()).done).toBe(true);
  });

  it('answers a handler that throws or answers no Response with a problem', async () => {
    const throwing = toFetchHandler([], {
      logger,
      handler: () => {
        throw Object.assign(new Error('nope'), { status: 409, expose: true });
      },
    });
    const conflict = await throwing(new Request(`${URL_BASE}/`));
    expect(conflict.status).toBe(409);
    expect(((await conflict.json()) as { detail: string }).detail).toBe('nope');
    const wrong = toFetchHandler([], { logger, handler: () => 'text' as unknown as Response });
    expect((await wrong(new Request(`${URL_BASE}/`))).status).toBe(500);
  });

  it('refuses options that are not functions', () => {
    expect(() => toFetchHandler([], { handler: 'x' as never })).toThrow(
      'toFetchHandler(): `handler` must be a function',
    );
    expect(() => toFetchHandler([], { clientAddress: 1 as never })).toThrow(
      'toFetchHandler(): `clientAddress` must be a function',
    );
    expect(() => toFetchHandler([], null as never)).toThrow(
      'toFetchHandler(): options must be an object',
    );
  });
});

describe('an event stream', () => {
  const events = () => {
    const closed: string[] = [];
    const fetch = toFetchHandler((req, res) => {
      const stream = createEventStream(req, res, { heartbeat: 60_000 });
      stream.send({ data: 'first' });
      stream.onClose((reason) => closed.push(reason));
    });
    return { fetch, closed };
  };

  it('streams its events and closes when the reader goes away', async () => {
    const { fetch, closed } = events();
    const answer = await fetch(new Request(`${URL_BASE}/events`));
    expect(answer.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const reader = answer.body!.getReader();
    let text = '';
    while (!text.includes('data: "first"'))
      text += new TextDecoder().decode((await reader.read()).value);
    expect(closed).toEqual([]);
    await reader.cancel();
    await new Promise((resolve) => setImmediate(resolve));
    expect(closed).toHaveLength(1);
  });

  it('closes when the request aborts', async () => {
    const { fetch, closed } = events();
    const controller = new AbortController();
    const answer = await fetch(new Request(`${URL_BASE}/events`, { signal: controller.signal }));
    const reader = answer.body!.getReader();
    await reader.read();
    controller.abort();
    await new Promise((resolve) => setImmediate(resolve));
    expect(closed).toHaveLength(1);
    // ended quietly (what was queued, then the end): nobody reads it any more
    let end = await reader.read();
    while (!end.done) end = await reader.read();
    expect(end.done).toBe(true);
  });
});
