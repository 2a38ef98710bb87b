import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Middleware } from '../../src/core/compose.js';
import { setPrincipal } from '../../src/core/principal.js';
import type { ProblemDetails } from '../../src/core/problem.js';
import { sendJson } from '../../src/core/send.js';
import { channels, type RateLimitedMessage } from '../../src/diagnostics/channels.js';
import { MemoryRateLimitStore } from '../../src/rate-limit/memory-store.js';
import { type RateLimitOptions, rateLimit } from '../../src/rate-limit/rate-limit.js';
import type { RateLimitHit, RateLimitStore } from '../../src/rate-limit/store.js';
import { serve as listenOn } from '../helpers/http.js';
import { captureLogger } from '../helpers/logger.js';

const ok: Middleware = (_req, res) => sendJson(res, 200, { ok: true });
const closers: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** Serves `rateLimit(options)` then `ok` on 127.0.0.1; answers a `get` function. */
async function serve(options: RateLimitOptions, log = captureLogger()) {
  const { url, close } = await listenOn([rateLimit(options), ok], {
    logger: log,
  });
  closers.push(close);
  return (path = '/', headers: Record<string, string> = {}) => fetch(`${url}${path}`, { headers });
}

/** A memory store that records the keys it counts. */
function recordingStore() {
  const inner = new MemoryRateLimitStore();
  const keys: string[] = [];
  const store: RateLimitStore = {
    increment(key, windowMs) {
      keys.push(key);
      return inner.increment(key, windowMs);
    },
  };
  closers.push(async () => inner.close());
  return { store, keys };
}

describe('rateLimit', () => {
  it('counts down X-RateLimit-Remaining and then answers a 429 problem', async () => {
    const get = await serve({ limit: 3 });
    const remaining: (string | null)[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await get();
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBe('3');
      remaining.push(res.headers.get('x-ratelimit-remaining'));
      await res.body?.cancel();
    }
    expect(remaining).toEqual(['2', '1', '0']);

    const limited = await get('/things?api_key=secret');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('content-type')).toBe('application/problem+json');
    expect(limited.headers.get('x-ratelimit-limit')).toBe('3');
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(59);
    expect(retryAfter).toBeLessThanOrEqual(60);
    const problem = (await limited.json()) as ProblemDetails;
    expect(problem).toMatchObject({
      type: 'about:blank',
      title: 'Too Many Requests',
      status: 429,
      instance: '/things',
    });
    expect(problem.detail).toBe('Rate limit exceeded: at most 3 requests per 60 seconds.');

    const again = await get();
    expect(again.status).toBe(429);
    expect(again.headers.get('x-ratelimit-remaining')).toBe('0');
    await again.body?.cancel();
  });

  it('lets exactly 5 of 20 concurrent requests through a limit of 5', async () => {
    const get = await serve({ limit: 5 });
    const responses = await Promise.all(Array.from({ length: 20 }, () => get()));
    const statuses = responses.map((res) => res.status);
    await Promise.all(responses.map((res) => res.body?.cancel()));
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(15);
  });

  it('is exact with an asynchronous store too', async () => {
    const inner = new MemoryRateLimitStore();
    closers.push(async () => inner.close());
    const store: RateLimitStore = {
      increment: (key, windowMs) =>
        new Promise<RateLimitHit>((resolve) =>
          setImmediate(() => resolve(inner.increment(key, windowMs))),
        ),
    };
    const get = await serve({ limit: 5, store });
    const responses = await Promise.all(Array.from({ length: 20 }, () => get()));
    await Promise.all(responses.map((res) => res.body?.cancel()));
    expect(responses.filter((res) => res.status === 200)).toHaveLength(5);
    expect(responses.filter((res) => res.status === 429)).toHaveLength(15);
    const remaining = responses.map((res) => res.headers.get('x-ratelimit-remaining')).sort();
    expect(remaining).toEqual([...Array(16).fill('0'), '1', '2', '3', '4']);
  });

  it('starts counting again when the window ends', async () => {
    const clock = { offset: 0 };
    const store = new MemoryRateLimitStore({ now: () => Date.now() + clock.offset });
    closers.push(async () => store.close());
    const get = await serve({ limit: 2, windowMs: 10_000, store });
    expect((await get()).status).toBe(200);
    expect((await get()).status).toBe(200);
    const limited = await get();
    expect(limited.status).toBe(429);
    // present, whole seconds, within the window (a missing header is no number ≤ 10)
    const retryAfter = limited.headers.get('retry-after');
    expect(retryAfter).toMatch(/^\d+$/);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(retryAfter)).toBeLessThanOrEqual(10);
    clock.offset = 10_001;
    const fresh = await get();
    expect(fresh.status).toBe(200);
    expect(fresh.headers.get('x-ratelimit-remaining')).toBe('1');
  });

  it('starts again with a short real window', async () => {
    // the default store on the real clock: a window wide enough for the second request to
    // land in it on a loaded machine, then polled (not slept) until the window has ended
    const windowMs = 1_000;
    const get = await serve({ limit: 1, windowMs });
    const started = Date.now();
    expect((await get()).status).toBe(200);
    expect((await get()).status).toBe(429);
    await vi.waitFor(
      async () => {
        const res = await get();
        await res.body?.cancel();
        expect(res.status).toBe(200);
      },
      { timeout: 10_000, interval: 50 },
    );
    // and not before the window could have ended (it opened after `started`)
    expect(Date.now() - started).toBeGreaterThanOrEqual(windowMs);
  });

  it('writes the IETF RateLimit-Policy and RateLimit fields when asked', async () => {
    const get = await serve({ limit: 2, windowMs: 60_000, standardHeaders: true, headers: false });
    const first = await get();
    expect(first.headers.get('ratelimit-policy')).toBe('"default";q=2;w=60');
    expect(first.headers.get('ratelimit')).toMatch(/^"default";r=1;t=(59|60)$/);
    expect(first.headers.has('x-ratelimit-limit')).toBe(false);
    expect(first.headers.has('x-ratelimit-remaining')).toBe(false);
    await get();
    const limited = await get();
    expect(limited.status).toBe(429);
    expect(limited.headers.get('ratelimit')).toMatch(/^"default";r=0;t=(59|60)$/);
    expect(limited.headers.get('ratelimit-policy')).toBe('"default";q=2;w=60');
  });

  it('rounds a window under a second up in RateLimit-Policy', async () => {
    const get = await serve({ limit: 1, windowMs: 1_500, standardHeaders: true });
    const res = await get();
    expect(res.headers.get('ratelimit-policy')).toBe('"default";q=1;w=2');
    const limited = await get();
    expect(limited.status).toBe(429);
    expect(((await limited.json()) as ProblemDetails).detail).toBe(
      'Rate limit exceeded: at most 1 request per 1500 ms.',
    );
  });

  it('neither counts nor limits what `skip` leaves out', async () => {
    const get = await serve({ limit: 1, skip: (req) => req.url === '/health' });
    for (let i = 0; i < 3; i++) {
      const health = await get('/health');
      expect(health.status).toBe(200);
      expect(health.headers.has('x-ratelimit-limit')).toBe(false);
    }
    expect((await get('/')).status).toBe(200);
    expect((await get('/')).status).toBe(429);
    expect((await get('/health')).status).toBe(200);
  });

  it('reports the standing of what `report` picks, without counting or refusing it', async () => {
    const report = (req: { url?: string }) => req.url === '/peek';
    const get = await serve({ limit: 2, report, standardHeaders: true });
    // nothing counted yet: the whole limit remains
    const first = await get('/peek');
    expect(first.status).toBe(200);
    expect(first.headers.get('x-ratelimit-limit')).toBe('2');
    expect(first.headers.get('x-ratelimit-remaining')).toBe('2');
    expect(first.headers.get('ratelimit-policy')).toBe('"default";q=2;w=60');
    expect((await get('/')).headers.get('x-ratelimit-remaining')).toBe('1');
    expect((await get('/peek')).headers.get('x-ratelimit-remaining')).toBe('1');
    expect((await get('/')).status).toBe(200);
    expect((await get('/')).status).toBe(429);
    // over the limit: still told, never refused
    const over = await get('/peek');
    expect(over.status).toBe(200);
    expect(over.headers.get('x-ratelimit-remaining')).toBe('0');
  });

  it('reports the limit alone with a store that cannot peek, and nothing when it fails', async () => {
    const { store } = recordingStore(); // increment only
    const get = await serve({ limit: 5, store, report: () => true });
    const answer = await get('/');
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-ratelimit-limit')).toBe('5');
    expect(answer.headers.has('x-ratelimit-remaining')).toBe(false);
    const failing: RateLimitStore = {
      increment: () => Promise.reject(new Error('down')),
      peek: () => Promise.reject(new Error('down')),
    };
    const getFailing = await serve({ limit: 5, store: failing, report: () => true });
    const quiet = await getFailing('/');
    expect(quiet.status).toBe(200);
    expect(quiet.headers.has('x-ratelimit-limit')).toBe(false);
  });

  it('counts by the key function, falling back to the client IP', async () => {
    const { store, keys } = recordingStore();
    const get = await serve({
      limit: 1,
      store,
      key: (req) => req.headers['x-api-key'] as string | undefined,
    });
    expect((await get('/', { 'X-API-Key': 'alpha' })).status).toBe(200);
    expect((await get('/', { 'X-API-Key': 'beta' })).status).toBe(200);
    expect((await get('/', { 'X-API-Key': 'alpha' })).status).toBe(429);
    expect((await get('/')).status).toBe(200);
    expect((await get('/', { 'X-API-Key': '' })).status).toBe(429);
    expect(keys).toEqual(['alpha', 'beta', 'alpha', 'ip:127.0.0.1', 'ip:127.0.0.1']);
  });

  it('takes an asynchronous key function', async () => {
    const { store, keys } = recordingStore();
    const get = await serve({ limit: 1, store, key: async (req) => `user:${req.url}` });
    expect((await get('/a')).status).toBe(200);
    expect((await get('/a')).status).toBe(429);
    expect((await get('/b')).status).toBe(200);
    expect(keys).toEqual(['user:/a', 'user:/a', 'user:/b']);
  });

  it('ignores X-Forwarded-For unless proxies are trusted', async () => {
    const { store, keys } = recordingStore();
    const get = await serve({ limit: 1, store });
    expect((await get('/', { 'X-Forwarded-For': '203.0.113.1' })).status).toBe(200);
    expect((await get('/', { 'X-Forwarded-For': '203.0.113.2' })).status).toBe(429);
    expect(keys).toEqual(['ip:127.0.0.1', 'ip:127.0.0.1']);
  });

  it('trusts proxies by hop count, reading X-Forwarded-For from the right', async () => {
    const { store, keys } = recordingStore();
    const get = await serve({ limit: 1, store, trustProxy: 1 });
    const xff = (value: string) => ({ 'X-Forwarded-For': value });
    expect((await get('/', xff('6.6.6.6, 198.51.100.1'))).status).toBe(200);
    // A new spoofed leftmost entry does not make a new client.
    expect((await get('/', xff('7.7.7.7, 198.51.100.1'))).status).toBe(429);
    expect((await get('/', xff('198.51.100.1, 198.51.100.2'))).status).toBe(200);
    expect(keys).toEqual(['ip:198.51.100.1', 'ip:198.51.100.1', 'ip:198.51.100.2']);
  });

  it('trusts proxies by CIDR list, skipping trusted hops from the right', async () => {
    const { store, keys } = recordingStore();
    const get = await serve({ limit: 1, store, trustProxy: ['loopback', '10.0.0.0/8'] });
    const xff = (value: string) => ({ 'X-Forwarded-For': value });
    expect((await get('/', xff('6.6.6.6, 203.0.113.9, 10.1.2.3'))).status).toBe(200);
    expect((await get('/', xff('10.9.9.9, 203.0.113.9, 10.0.0.1'))).status).toBe(429);
    expect((await get('/', xff('2001:db8:1:2::1'))).status).toBe(200);
    // Another address of the same /64 is the same client.
    expect((await get('/', xff('6.6.6.6, 2001:db8:1:2:ffff::9'))).status).toBe(429);
    expect(keys).toEqual([
      'ip:203.0.113.9',
      'ip:203.0.113.9',
      'ip:2001:db8:1:2::/64',
      'ip:2001:db8:1:2::/64',
    ]);
  });

  it('counts an authenticated request by its API key, else its user, by default', async () => {
    const { store, keys } = recordingStore();
    // a stand-in for authenticate(): X-Key names an API key, X-User a signed-in user
    const authenticate: Middleware = (req, _res, next) => {
      const keyId = req.headers['x-key'] as string | undefined;
      const user = req.headers['x-user'] as string | undefined;
      if (keyId !== undefined)
        setPrincipal(req, { sub: 'svc', scopes: [], method: 'api_key', keyId });
      else if (user !== undefined) setPrincipal(req, { sub: user, scopes: [], method: 'session' });
      return next();
    };
    const { url, close } = await listenOn([authenticate, rateLimit({ limit: 1, store }), ok], {
      logger: captureLogger(),
    });
    closers.push(close);
    const get = (headers: Record<string, string> = {}) => fetch(url, { headers });
    expect((await get({ 'X-Key': 'k1' })).status).toBe(200);
    expect((await get({ 'X-Key': 'k1' })).status).toBe(429);
    // another key of the same service has its own budget, and so do users and the IP
    expect((await get({ 'X-Key': 'k2' })).status).toBe(200);
    expect((await get({ 'X-User': 'alice' })).status).toBe(200);
    expect((await get({ 'X-User': 'alice' })).status).toBe(429);
    expect((await get()).status).toBe(200);
    expect(keys).toEqual([
      'key:k1',
      'key:k1',
      'key:k2',
      'user:alice',
      'user:alice',
      'ip:127.0.0.1',
    ]);
  });

  it('publishes each refusal on the rate-limit channel', async () => {
    const messages: RateLimitedMessage[] = [];
    const listener = (message: unknown) => messages.push(message as RateLimitedMessage);
    subscribe(channels.rateLimited, listener);
    try {
      const store: RateLimitStore = {
        increment: (_key, windowMs) => ({ count: 3, resetAt: 1_700_000_000_000 + windowMs }),
      };
      const get = await serve({ limit: 2, store, windowMs: 5_000 });
      const res = await get('/refused');
      expect(res.status).toBe(429);
      expect(messages).toHaveLength(1);
      expect(messages[0]).toEqual({
        req: expect.objectContaining({ url: '/refused' }),
        key: 'ip:127.0.0.1',
        limit: 2,
        resetAt: 1_700_000_005_000,
      });
    } finally {
      unsubscribe(channels.rateLimited, listener);
    }
  });

  it('counts with fixed windows when asked by name, with a store that has no sliding windows', async () => {
    const { store } = recordingStore(); // increment only
    const get = await serve({ limit: 1, store, algorithm: 'fixed' });
    expect((await get()).status).toBe(200);
    expect((await get()).status).toBe(429);
  });

  it('writes no IETF fields unless asked', async () => {
    const get = await serve({ limit: 2 });
    const res = await get();
    expect(res.status).toBe(200);
    expect(res.headers.get('x-ratelimit-limit')).toBe('2');
    expect(res.headers.has('ratelimit-policy')).toBe(false);
    expect(res.headers.has('ratelimit')).toBe(false);
  });

  it('says "per second" of a one-second window', async () => {
    const store: RateLimitStore = { increment: () => ({ count: 2, resetAt: Date.now() + 1_000 }) };
    const res = await (await serve({ limit: 1, windowMs: 1_000, store }))();
    expect(res.status).toBe(429);
    expect(((await res.json()) as ProblemDetails).detail).toBe(
      'Rate limit exceeded: at most 1 request per second.',
    );
  });

  it('reports a key not seen yet as a whole window ahead of it', async () => {
    const get = await serve({
      limit: 3,
      windowMs: 30_000,
      report: () => true,
      standardHeaders: true,
    });
    const res = await get();
    expect(res.status).toBe(200);
    expect(res.headers.get('x-ratelimit-remaining')).toBe('3');
    expect(res.headers.get('x-ratelimit-reset')).toMatch(/^(29|30)$/);
    expect(res.headers.get('ratelimit')).toMatch(/^"default";r=3;t=(29|30)$/);
  });

  it('reports nothing with a store that cannot peek when the headers are off', async () => {
    const { store, keys } = recordingStore(); // increment only
    const get = await serve({ limit: 5, store, report: () => true, headers: false });
    const res = await get();
    expect(res.status).toBe(200);
    expect(res.headers.has('x-ratelimit-limit')).toBe(false);
    expect(res.headers.has('ratelimit')).toBe(false);
    expect(keys).toEqual([]);
  });

  it('answers 503 with Retry-After when the store fails', async () => {
    const log = captureLogger();
    const failure = new Error('store down');
    const throwing: RateLimitStore = {
      increment() {
        throw failure;
      },
    };
    const get = await serve({ store: throwing }, log);
    const res = await get();
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.headers.get('retry-after')).toBe('5');
    expect(res.headers.has('x-ratelimit-limit')).toBe(false);
    const problem = (await res.json()) as ProblemDetails;
    expect(problem.status).toBe(503);
    expect(problem.detail).toBe('Rate limiting is unavailable for now.');
    expect(JSON.stringify(problem)).not.toContain('store down');
    expect(log.errors).toEqual([failure]);
  });

  it('answers 503 when an asynchronous store rejects', async () => {
    const log = captureLogger();
    const rejecting: RateLimitStore = { increment: () => Promise.reject(new Error('timeout')) };
    const get = await serve({ store: rejecting, windowMs: 2_000 }, log);
    const res = await get();
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('2');
    expect(log.errors).toHaveLength(1);
  });

  it('lets requests through a failing store with failOpen', async () => {
    const throwing: RateLimitStore = {
      increment() {
        throw new Error('store down');
      },
    };
    const rejecting: RateLimitStore = { increment: () => Promise.reject(new Error('timeout')) };
    for (const store of [throwing, rejecting]) {
      const get = await serve({ store, failOpen: true, limit: 1 });
      for (let i = 0; i < 2; i++) {
        const res = await get();
        expect(res.status).toBe(200);
        expect(res.headers.has('x-ratelimit-limit')).toBe(false);
      }
    }
  });

  it('treats a failing key function like a failing store: 503, or through with failOpen', async () => {
    const lookupFailed = new Error('key lookup down');
    const keys = [
      () => {
        throw lookupFailed;
      },
      () => Promise.reject(lookupFailed),
    ];
    for (const key of keys) {
      const log = captureLogger();
      const res = await (await serve({ key }, log))();
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(JSON.stringify(await res.json())).not.toContain('key lookup down');
      expect(log.errors).toEqual([lookupFailed]);
      const open = await (await serve({ key, failOpen: true }))();
      expect(open.status).toBe(200);
    }
  });

  it('keeps X-RateLimit-Remaining at zero however far over the limit', async () => {
    const store: RateLimitStore = { increment: () => ({ count: 50, resetAt: Date.now() + 2_500 }) };
    const get = await serve({ limit: 10, store });
    const res = await get();
    expect(res.status).toBe(429);
    expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(res.headers.get('retry-after')).toBe('3');
  });

  it('never tells a client to retry in less than a second', async () => {
    const store: RateLimitStore = { increment: () => ({ count: 2, resetAt: Date.now() - 10 }) };
    const get = await serve({ limit: 1, store });
    const res = await get();
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('1');
  });
});

describe('rateLimit options', () => {
  const invalid = (options: unknown) => () => rateLimit(options as RateLimitOptions);

  it('names the option meant by a typo', () => {
    expect(invalid({ limt: 5 })).toThrow(TypeError);
    expect(invalid({ limt: 5 })).toThrow(/unknown option `limt`.*Did you mean `limit`\?/);
    expect(invalid({ windowMS: 5 })).toThrow(/`windowMs`/);
    expect(invalid({ standardHeader: true })).toThrow(/`standardHeaders`/);
  });

  it('rejects invalid values with ERR_INVALID_OPTION', () => {
    const cases = [
      { limit: 0 },
      { limit: 2.5 },
      { limit: '10' },
      { windowMs: -1 },
      { windowMs: Number.POSITIVE_INFINITY },
      { key: 'ip' },
      { skip: true },
      { headers: 'yes' },
      { standardHeaders: 1 },
      { failOpen: 'no' },
      { store: {} },
      { trustProxy: 'not-a-range' },
      { trustProxy: -1 },
    ];
    for (const options of cases) {
      let caught: unknown;
      try {
        rateLimit(options as RateLimitOptions);
      } catch (error) {
        caught = error;
      }
      expect(caught, JSON.stringify(options)).toBeInstanceOf(TypeError);
      expect((caught as { code?: string }).code).toBe('ERR_INVALID_OPTION');
    }
  });

  it('names the option at fault, and what it must be', () => {
    const messages: [unknown, string][] = [
      [{ limit: 0 }, '`limit` must be an integer, at least 1'],
      [{ windowMs: 0 }, '`windowMs` must be milliseconds, at least 1'],
      [{ windowMs: 1.5 }, '`windowMs` must be milliseconds, at least 1'],
      [{ key: 'ip' }, '`key` must be a function'],
      [{ skip: true }, '`skip` must be a function'],
      [{ report: 'preflight' }, '`report` must be a function'],
      [{ headers: 'yes' }, '`headers` must be a boolean'],
      [{ standardHeaders: 1 }, '`standardHeaders` must be a boolean'],
      [{ failOpen: 'no' }, '`failOpen` must be a boolean'],
      [{ skipSuccessfulRequests: 1 }, '`skipSuccessfulRequests` must be a boolean'],
      [{ store: {} }, '`store` must have an `increment(key, windowMs)` method'],
    ];
    for (const [options, message] of messages) {
      expect(invalid(options), JSON.stringify(options)).toThrow(`rateLimit(): ${message}`);
    }
  });

  it('takes a store that is an object, not a function that happens to count', () => {
    const counting = Object.assign(() => undefined, {
      increment: () => ({ count: 1, resetAt: Date.now() + 60_000 }),
    });
    expect(invalid({ store: counting })).toThrow(
      'rateLimit(): `store` must have an `increment(key, windowMs)` method',
    );
    expect(invalid({ store: 'redis' })).toThrow(/`store` must have/);
  });

  it('does not touch the caller’s options', () => {
    const options = Object.freeze({ limit: 5, windowMs: 1_000, headers: true });
    expect(typeof rateLimit(options)).toBe('function');
    expect(options).toEqual({ limit: 5, windowMs: 1_000, headers: true });
  });

  it('returns a named middleware', () => {
    expect(rateLimit().name).toBe('rateLimitMiddleware');
  });
});
