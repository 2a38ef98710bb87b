import { MemoryStore as ExpressMemoryStore } from 'express-rate-limit';
import { RedisStore } from 'rate-limit-redis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { Middleware } from '../../src/core/compose.js';
import { sendJson } from '../../src/core/send.js';
import {
  type ExpressRateLimitInfo,
  type ExpressRateLimitStore,
  fromExpressRateLimitStore,
} from '../../src/rate-limit/express-store.js';
import { type RateLimitOptions, rateLimit } from '../../src/rate-limit/rate-limit.js';
import { closedResponses, serve as listenOn } from '../helpers/http.js';
import { captureLogger } from '../helpers/logger.js';
import { hasRedis, type RedisServer, startRedis } from '../helpers/redis.js';

const ok: Middleware = (req, res) =>
  req.url === '/bad' ? sendJson(res, 400, { bad: true }) : sendJson(res, 200, { ok: true });
const closers: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function serve(options: RateLimitOptions, log = captureLogger()) {
  const { url, close, server } = await listenOn([rateLimit(options), ok], {
    logger: log,
  });
  closers.push(close);
  const closed = closedResponses(server);
  let sent = 0;
  return async (path = '/') => {
    const n = ++sent;
    const res = await fetch(`${url}${path}`);
    await res.arrayBuffer();
    // the count is given back once the server is done with the response
    await closed(n);
    return res;
  };
}

/** A store written to express-rate-limit's contract, recording the calls it gets. */
class FakeStore implements ExpressRateLimitStore {
  readonly calls: string[] = [];
  readonly hits = new Map<string, ExpressRateLimitInfo>();
  windowMs = 0;
  prefix = 'fake:';
  localKeys = true;

  async init(options: { windowMs: number }): Promise<void> {
    this.calls.push(`init ${options.windowMs}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
    this.windowMs = options.windowMs;
  }
  async increment(key: string): Promise<ExpressRateLimitInfo> {
    this.calls.push(`increment ${key}`);
    if (this.windowMs === 0) throw new Error('increment before init finished');
    const info = this.hits.get(key) ?? {
      totalHits: 0,
      resetTime: new Date(Date.now() + this.windowMs),
    };
    info.totalHits++;
    this.hits.set(key, info);
    return { ...info };
  }
  async decrement(key: string): Promise<void> {
    this.calls.push(`decrement ${key}`);
    const info = this.hits.get(key);
    if (info !== undefined) info.totalHits--;
  }
  async resetKey(key: string): Promise<void> {
    this.calls.push(`resetKey ${key}`);
    this.hits.delete(key);
  }
  async get(key: string): Promise<ExpressRateLimitInfo | undefined> {
    return this.hits.get(key);
  }
  async shutdown(): Promise<void> {
    this.calls.push('shutdown');
  }
}

describe('fromExpressRateLimitStore', () => {
  it('calls init once with the window, waits for it, and limits through the store', async () => {
    const fake = new FakeStore();
    const store = fromExpressRateLimitStore(fake, { windowMs: 30_000 });
    expect(fake.calls).toEqual(['init 30000']);
    const log = captureLogger();
    const get = await serve({ limit: 2, windowMs: 30_000, store }, log);
    const first = await get();
    expect(first.status).toBe(200);
    expect(first.headers.get('x-ratelimit-remaining')).toBe('1');
    expect(first.headers.get('x-ratelimit-reset')).toMatch(/^(29|30)$/);
    expect((await get()).status).toBe(200);
    expect((await get()).status).toBe(429);
    expect(log.errors).toEqual([]);
    expect(fake.calls).toEqual([
      'init 30000',
      'increment ip:127.0.0.1',
      'increment ip:127.0.0.1',
      'increment ip:127.0.0.1',
    ]);
    expect(await store.peek?.('ip:127.0.0.1')).toEqual({ count: 3, resetAt: expect.any(Number) });
    expect(await store.peek?.('nobody')).toBeUndefined();
    await store.reset?.('ip:127.0.0.1');
    expect((await get()).status).toBe(200);
    await store.close?.();
    expect(fake.calls.slice(-3)).toEqual([
      'resetKey ip:127.0.0.1',
      'increment ip:127.0.0.1',
      'shutdown',
    ]);
  });

  it('gives requests back through decrement with skipSuccessfulRequests', async () => {
    const fake = new FakeStore();
    const store = fromExpressRateLimitStore(fake);
    const get = await serve({ limit: 1, store, skipSuccessfulRequests: true });
    for (let i = 0; i < 3; i++) expect((await get('/')).status).toBe(200);
    expect((await get('/bad')).status).toBe(400);
    expect((await get('/')).status).toBe(429);
    expect(fake.calls.filter((call) => call.startsWith('decrement'))).toHaveLength(3);
  });

  it('refuses a rateLimit() window other than the store’s, and a store without increment', () => {
    const store = fromExpressRateLimitStore(new FakeStore(), { windowMs: 1_000 });
    expect(() => rateLimit({ store, windowMs: 60_000 })).toThrow(
      /`windowMs` \(60000\) must be the store's window \(1000\)/,
    );
    expect(() => rateLimit({ store, algorithm: 'sliding', windowMs: 1_000 })).toThrow(
      /incrementSliding/,
    );
    expect(() => fromExpressRateLimitStore({} as never)).toThrow(/increment\(key\)/);
    expect(() => fromExpressRateLimitStore(new FakeStore(), { windowMs: -1 })).toThrow(
      /`windowMs` must be milliseconds/,
    );
  });

  it('answers 503 when the store’s init fails, and lets through with failOpen', async () => {
    const broken: ExpressRateLimitStore = {
      init: () => Promise.reject(new Error('no connection')),
      increment: () => ({ totalHits: 1, resetTime: undefined }),
    };
    const log = captureLogger();
    const get = await serve({ store: fromExpressRateLimitStore(broken) }, log);
    const res = await get();
    expect(res.status).toBe(503);
    expect(log.errors).toMatchObject([{ message: 'no connection' }]);
    const open = await serve({ store: fromExpressRateLimitStore(broken), failOpen: true });
    expect((await open()).status).toBe(200);
  });

  it('answers synchronously for a synchronous store without init, resetting a window on when it tells no time', async () => {
    const hits = new Map<string, number>();
    const plain: ExpressRateLimitStore = {
      increment: (key) => {
        hits.set(key, (hits.get(key) ?? 0) + 1);
        return { totalHits: hits.get(key)!, resetTime: undefined };
      },
    };
    const store = fromExpressRateLimitStore(plain, { windowMs: 30_000 });
    const before = Date.now();
    const hit = store.increment('k', 30_000);
    const after = Date.now();
    // no promise: as synchronous as the store it adapts
    expect(hit).toEqual({ count: 1, resetAt: expect.any(Number) });
    const { resetAt } = hit as { resetAt: number };
    expect(resetAt).toBeGreaterThanOrEqual(before + 30_000);
    expect(resetAt).toBeLessThanOrEqual(after + 30_000);

    const get = await serve({ limit: 2, windowMs: 30_000, store });
    const first = await get();
    expect(first.status).toBe(200);
    expect(first.headers.get('x-ratelimit-remaining')).toBe('1');
    expect(first.headers.get('x-ratelimit-reset')).toMatch(/^(29|30)$/);
    expect((await get()).status).toBe(200);
    const refused = await get();
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^(29|30)$/);
  });

  it('adapts only the methods the store has', () => {
    const bare = fromExpressRateLimitStore({
      increment: () => ({ totalHits: 1, resetTime: undefined }),
    });
    expect(Object.keys(bare).sort()).toEqual(['increment', 'windowMs']);
    // so rateLimit() tells what it lacks when it is built, not on the first request
    expect(() => rateLimit({ store: bare, skipSuccessfulRequests: true })).toThrow(
      /need a store with `decrement\(key\)`/,
    );
    const full = fromExpressRateLimitStore(new FakeStore());
    expect(Object.keys(full).sort()).toEqual([
      'close',
      'decrement',
      'increment',
      'peek',
      'reset',
      'windowMs',
    ]);
  });

  it('peeks nothing for a key whose hits were all given back', async () => {
    const fake = new FakeStore();
    const store = fromExpressRateLimitStore(fake, { windowMs: 10_000 });
    await store.increment('k', 10_000);
    expect(await store.peek?.('k')).toEqual({ count: 1, resetAt: expect.any(Number) });
    await store.decrement?.('k');
    expect(fake.hits.get('k')?.totalHits).toBe(0);
    expect(await store.peek?.('k')).toBeUndefined();
  });

  it('refuses what is no store, and a window under 1 ms, naming the fault', () => {
    for (const store of [undefined, null]) {
      expect(() => fromExpressRateLimitStore(store as never)).toThrow(
        'fromExpressRateLimitStore(): the store must have an `increment(key)` method',
      );
    }
    expect(() => fromExpressRateLimitStore(new FakeStore(), { windowMs: 0 })).toThrow(
      'fromExpressRateLimitStore(): `windowMs` must be milliseconds, at least 1',
    );
  });

  it("works with express-rate-limit's own MemoryStore", async () => {
    const memory = new ExpressMemoryStore();
    const store = fromExpressRateLimitStore(memory, { windowMs: 10_000 });
    closers.push(async () => store.close?.());
    const get = await serve({ limit: 2, windowMs: 10_000, store, skipFailedRequests: true });
    expect((await get('/bad')).status).toBe(400);
    expect((await get()).headers.get('x-ratelimit-remaining')).toBe('1');
    const second = await get();
    expect(second.headers.get('x-ratelimit-reset')).toMatch(/^(9|10)$/);
    expect((await get()).status).toBe(429);
  });
});

describe.skipIf(!hasRedis)(
  'fromExpressRateLimitStore with rate-limit-redis (real redis-server)',
  () => {
    let redis: RedisServer | undefined;
    afterAll(async () => {
      await redis?.stop();
    });

    it('limits across two "processes" sharing one Redis', async () => {
      redis = await startRedis();
      const client = redis.client();
      const storeOf = () =>
        fromExpressRateLimitStore(
          new RedisStore({
            prefix: 'erl:',
            sendCommand: (command: string, ...args: string[]) =>
              client.call(command, ...args) as never,
          }),
          { windowMs: 60_000 },
        );
      const gets = [
        await serve({ limit: 5, store: storeOf() }),
        await serve({ limit: 5, store: storeOf() }),
      ];
      const responses = await Promise.all(Array.from({ length: 12 }, (_, i) => gets[i % 2]!()));
      expect(responses.filter((res) => res.status === 200)).toHaveLength(5);
      expect(responses.filter((res) => res.status === 429)).toHaveLength(7);
      expect(Number(responses[0]!.headers.get('x-ratelimit-reset'))).toBeGreaterThanOrEqual(59);
    });
  },
);
