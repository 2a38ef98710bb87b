// Issue 38: rateLimit() options as users write them from express-rate-limit and
// @fastify/rate-limit: a window in seconds, `max` for `limit`, a store still being made.
import { describe, expect, it } from 'vitest';
import { fromExpressRateLimitStore } from '../../src/rate-limit/express-store.js';
import { MemoryRateLimitStore } from '../../src/rate-limit/memory-store.js';
import { rateLimit } from '../../src/rate-limit/rate-limit.js';
import { thrownTypeError as thrown } from '../helpers/errors.js';

describe('rateLimit() refuses at construction', () => {
  it('windowMs: 60 as seconds, and takes 60_000, "1m" and "60ms"', () => {
    const error = thrown(() => rateLimit({ windowMs: 60 }));
    expect(error).toBeInstanceOf(TypeError);
    expect(error.code).toBe('ERR_INVALID_OPTION');
    expect(error.message).toBe(
      "rateLimit(): `windowMs` is 60 ms, which looks like seconds: did you mean 60_000? (write '60ms' for 60 milliseconds)",
    );
    expect(() => rateLimit({ windowMs: 60_000 })).not.toThrow();
    expect(() => rateLimit({ windowMs: '1m' })).not.toThrow();
    expect(() => rateLimit({ windowMs: '60ms' })).not.toThrow();
    expect(() => rateLimit({ windowMs: 'a minute' as never })).toThrow(
      /`windowMs` must be milliseconds \(a number\) or a string with a unit/,
    );
  });

  it('max (express-rate-limit, @fastify/rate-limit) and suggests limit, not key', () => {
    expect(thrown(() => rateLimit({ max: 100 } as never)).message).toBe(
      "rateLimit(): unknown option `max`. Did you mean `limit`? (express-rate-limit's and @fastify/rate-limit's `max` is portico's `limit`)",
    );
    expect(thrown(() => rateLimit({ timeWindow: 60_000 } as never)).message).toContain(
      'Did you mean `windowMs`?',
    );
    expect(thrown(() => rateLimit({ keyGenerator: () => 'k' } as never)).message).toContain(
      'Did you mean `key`?',
    );
  });

  it('a store given as a Promise', () => {
    const store = Promise.resolve(new MemoryRateLimitStore());
    expect(() => rateLimit({ store: store as never })).toThrow(
      'rateLimit(): `store` is a Promise: did you forget `await`?',
    );
  });

  it('fromExpressRateLimitStore({ windowMs: 60 })', () => {
    const store = { increment: () => ({ totalHits: 1, resetTime: undefined }) };
    expect(() => fromExpressRateLimitStore(store as never, { windowMs: 60 })).toThrow(
      /`windowMs` is 60 ms, which looks like seconds/,
    );
  });
});
