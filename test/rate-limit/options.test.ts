import type { ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Middleware } from '../../src/core/compose.js';
import { badRequest } from '../../src/core/errors/errors.js';
import type { ProblemDetails } from '../../src/core/problem.js';
import { sendJson } from '../../src/core/send.js';
import { silentLogger } from '../../src/diagnostics/index.js';
import { MemoryRateLimitStore } from '../../src/rate-limit/memory-store.js';
import { type RateLimitOptions, rateLimit } from '../../src/rate-limit/rate-limit.js';
import type { RateLimitStore } from '../../src/rate-limit/store.js';
import { closedResponses, serve as listenOn } from '../helpers/http.js';

// `/ok` answers 200, `/bad` a 400 problem, `/boom` a 500: what skip*Requests tell apart.
const routes: Middleware = (req, res) => {
  if (req.url === '/bad') throw badRequest('no');
  if (req.url === '/boom') throw new Error('boom');
  return sendJson(res, 200, { ok: true });
};
const closers: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function serve(options: RateLimitOptions) {
  const { url, close, server } = await listenOn([rateLimit(options), routes], {
    logger: silentLogger,
  });
  closers.push(close);
  const closed = closedResponses(server);
  let sent = 0;
  return async (path = '/ok') => {
    const n = ++sent;
    const res = await fetch(`${url}${path}`);
    await res.arrayBuffer();
    // the count is given back once the server is done with the response
    await closed(n);
    return res;
  };
}

function memoryStore(options: ConstructorParameters<typeof MemoryRateLimitStore>[0] = {}) {
  const store = new MemoryRateLimitStore(options);
  closers.push(async () => store.close());
  return store;
}

describe('rateLimit: X-RateLimit-Reset', () => {
  it('tells the seconds until the window resets, beside Limit and Remaining', async () => {
    const get = await serve({ limit: 2, windowMs: 30_000 });
    const first = await get();
    expect(first.headers.get('x-ratelimit-limit')).toBe('2');
    expect(first.headers.get('x-ratelimit-remaining')).toBe('1');
    expect(first.headers.get('x-ratelimit-reset')).toMatch(/^(29|30)$/);
    await get();
    const limited = await get();
    expect(limited.status).toBe(429);
    expect(limited.headers.get('x-ratelimit-reset')).toMatch(/^(29|30)$/);
  });

  it('is left out with `headers: false`', async () => {
    const get = await serve({ limit: 2, headers: false, standardHeaders: true });
    const res = await get();
    expect(res.headers.has('x-ratelimit-reset')).toBe(false);
    expect(res.headers.get('ratelimit')).toMatch(/^"default";r=1;t=(59|60)$/);
  });
});

describe('rateLimit: skipSuccessfulRequests', () => {
  it('gives back every request answered below 400, so only failures count', async () => {
    const get = await serve({ limit: 2, skipSuccessfulRequests: true });
    for (let i = 0; i < 5; i++) expect((await get('/ok')).status).toBe(200);
    expect((await get('/bad')).status).toBe(400);
    expect((await get('/boom')).status).toBe(500);
    const limited = await get('/ok');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
  });

  it('needs a store that can decrement', () => {
    const store: RateLimitStore = { increment: () => ({ count: 1, resetAt: Date.now() }) };
    expect(() => rateLimit({ store, skipSuccessfulRequests: true })).toThrow(/decrement/);
    expect(() => rateLimit({ store, skipFailedRequests: true })).toThrow(/decrement/);
    expect(() => rateLimit({ skipFailedRequests: 'yes' as never })).toThrow(
      /`skipFailedRequests` must be a boolean/,
    );
  });
});

describe('rateLimit: skipFailedRequests', () => {
  it('gives back every request answered 400 or above, so only successes count', async () => {
    const get = await serve({ limit: 2, skipFailedRequests: true });
    for (let i = 0; i < 4; i++) expect((await get('/bad')).status).toBe(400);
    expect((await get('/boom')).status).toBe(500);
    expect((await get('/ok')).status).toBe(200);
    const second = await get('/ok');
    expect(second.status).toBe(200);
    expect(second.headers.get('x-ratelimit-remaining')).toBe('0');
    // the refusal itself (429) is given back: the client is refused until the window ends
    expect((await get('/ok')).status).toBe(429);
    expect((await get('/ok')).status).toBe(429);
    expect((await get('/ok')).headers.get('x-ratelimit-remaining')).toBe('0');
  });
});

describe('rateLimit: giving back', () => {
  it('gives back a request whose client left while an asynchronous store was counting it', async () => {
    const inner = memoryStore();
    let count!: () => void;
    const counting = new Promise<void>((resolve) => {
      count = resolve;
    });
    const givenBack: string[] = [];
    const store: RateLimitStore = {
      increment: async (key, windowMs) => {
        await counting;
        return inner.increment(key, windowMs);
      },
      decrement: (key) => {
        givenBack.push(key);
        inner.decrement(key);
      },
    };
    const { port, close, server } = await listenOn(
      [rateLimit({ limit: 5, store, skipFailedRequests: true }), routes],
      { logger: silentLogger },
    );
    closers.push(close);
    const responseClosed = new Promise<void>((resolve) =>
      server.once('request', (_req, res: ServerResponse) => res.once('close', resolve)),
    );
    const arrived = new Promise<void>((resolve) => server.once('request', () => resolve()));
    const socket = connect(port, '127.0.0.1', () =>
      socket.write('GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'),
    );
    socket.on('error', () => {});
    await arrived;
    socket.destroy(); // the client goes before the store has answered
    await responseClosed;
    count();
    // the response never finished: a failure, given back with skipFailedRequests
    await vi.waitFor(() => expect(givenBack).toEqual(['ip:127.0.0.1']), { timeout: 5_000 });
    expect(inner.peek('ip:127.0.0.1')?.count).toBe(0);
  });

  it('keeps the request counted when the store fails to give it back, leaving no rejection unhandled', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const inner = memoryStore();
      const store: RateLimitStore = {
        increment: (key, windowMs) => inner.increment(key, windowMs),
        decrement: () => Promise.reject(new Error('decrement failed')),
      };
      const get = await serve({ limit: 1, store, skipSuccessfulRequests: true });
      expect((await get('/ok')).status).toBe(200);
      // past the turn of the event loop where an unhandled rejection is reported
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(unhandled).toEqual([]);
      expect((await get('/ok')).status).toBe(429);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

describe('rateLimit: handler', () => {
  it('answers past the limit in place of the 429 problem, with the headers set', async () => {
    const seen: unknown[] = [];
    const get = await serve({
      limit: 1,
      windowMs: 20_000,
      handler: (req, res, info) => {
        seen.push({ url: req.url, ...info });
        return sendJson(res, 503, { slowDown: info.resetSeconds });
      },
    });
    expect((await get()).status).toBe(200);
    const refused = await get('/ok?again');
    expect(refused.status).toBe(503);
    expect(refused.headers.get('content-type')).toMatch(/^application\/json/);
    expect(refused.headers.get('retry-after')).toMatch(/^(19|20)$/);
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(seen).toEqual([
      {
        url: '/ok?again',
        key: expect.stringMatching(/^ip:127\.0\.0\.1$/),
        limit: 1,
        count: 2,
        remaining: 0,
        resetAt: expect.any(Number),
        resetSeconds: expect.any(Number),
      },
    ]);
  });

  it('keeps the default 429 problem without one, and refuses a handler that is not a function', async () => {
    const { url, close } = await listenOn([rateLimit({ limit: 1 }), routes]);
    closers.push(close);
    expect((await fetch(url)).status).toBe(200);
    const res = await fetch(url);
    expect(res.status).toBe(429);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(((await res.json()) as ProblemDetails).title).toBe('Too Many Requests');
    expect(() => rateLimit({ handler: 'no' as never })).toThrow(/`handler` must be a function/);
  });
});

describe('rateLimit: algorithm', () => {
  it("'sliding' weighs the previous window in, where 'fixed' lets a burst through at the window's end", async () => {
    // a 10 s window, aligned on the epoch; the clock starts a quarter into a window
    const base = Math.ceil(Date.now() / 10_000) * 10_000 + 2_500;
    const clock = { now: base };
    const sliding = memoryStore({ now: () => clock.now });
    const fixed = memoryStore({ now: () => clock.now });
    const getSliding = await serve({
      limit: 4,
      windowMs: 10_000,
      algorithm: 'sliding',
      store: sliding,
    });
    const getFixed = await serve({ limit: 4, windowMs: 10_000, store: fixed });
    for (let i = 0; i < 4; i++) {
      expect((await getSliding()).status).toBe(200);
      expect((await getFixed()).status).toBe(200);
    }
    // a quarter into the next window: 3/4 of the 4 requests before still weigh
    clock.now = base + 10_000;
    expect((await getSliding()).status).toBe(200); // floor(4 × 0.75) + 1 = 4
    const refused = await getSliding();
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    // the fixed window, which began with its first request, has ended: 4 more at once
    clock.now = base + 10_001;
    for (let i = 0; i < 4; i++) expect((await getFixed()).status).toBe(200);
    // late in the window, the previous one hardly weighs
    clock.now = base + 17_000; // 95 % through: floor(4 × 0.05) = 0
    expect((await getSliding()).status).toBe(200);
  });

  it('needs a store with incrementSliding, and refuses other algorithms', () => {
    const store: RateLimitStore = { increment: () => ({ count: 1, resetAt: Date.now() }) };
    expect(() => rateLimit({ store, algorithm: 'sliding' })).toThrow(/incrementSliding/);
    expect(() => rateLimit({ algorithm: 'token-bucket' as never })).toThrow(
      /`algorithm` must be 'fixed' or 'sliding'/,
    );
  });
});
