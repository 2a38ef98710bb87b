// Mistakes that used to fail silently (issue 38): a duration in seconds, a forgotten `await`,
// an unset environment variable, an option name from another library. Each is a TypeError
// (ERR_INVALID_OPTION) at construction, naming the option and the likely fix.
import { describe, expect, it } from 'vitest';
import { parseDuration } from '../../src/internal/duration.js';
import {
  assertGivenOptions,
  assertKnownOptions,
  assertNotThenable,
  durationOption,
} from '../../src/internal/options.js';
import { thrownTypeError as thrown } from '../helpers/errors.js';

describe('duration strings', () => {
  it.each([
    ['500ms', 500],
    ['0ms', 0],
    ['5s', 5_000],
    ['1.5s', 1_500],
    ['.5s', 500],
    ['15m', 900_000],
    ['12h', 43_200_000],
    [' 2 s ', 2_000],
    ['0.0004s', 0],
  ])('reads %j as %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', '5', '5d', 'ms', '-5s', '1e3ms', '5 seconds', '5S', 'Infinityms', '1.s'])(
    'refuses %j',
    (text) => {
      expect(parseDuration(text)).toBeUndefined();
    },
  );
});

describe('durationOption', () => {
  it('refuses a number under the floor as seconds written as milliseconds', () => {
    const error = thrown(() => durationOption('rateLimit()', 'windowMs', 60, 60_000));
    expect(error).toBeInstanceOf(TypeError);
    expect(error.code).toBe('ERR_INVALID_OPTION');
    expect(error.message).toBe(
      "rateLimit(): `windowMs` is 60 ms, which looks like seconds: did you mean 60_000? (write '60ms' for 60 milliseconds)",
    );
    expect(thrown(() => durationOption('o()', 'maxTokenAge', 900, 0)).message).toContain(
      'did you mean 900_000?',
    );
    expect(thrown(() => durationOption('o()', 'clockTolerance', 5, 5_000)).message).toContain(
      "did you mean 5_000? (write '5ms' for 5 milliseconds)",
    );
  });

  it('takes the floor itself, 0 where 0 is allowed, and the fallback', () => {
    expect(durationOption('o()', 'd', 1_000, 7)).toBe(1_000);
    expect(durationOption('o()', 'd', 0, 7)).toBe(0);
    expect(durationOption('o()', 'd', undefined, 7)).toBe(7);
    expect(() => durationOption('o()', 'd', 0, 7, { min: 1 })).toThrow(/at least 1/);
  });

  it('takes a string with its unit below the floor: a sub-second value written on purpose', () => {
    expect(durationOption('o()', 'd', '60ms', 7)).toBe(60);
    expect(durationOption('o()', 'd', '1.5s', 7)).toBe(1_500);
    expect(durationOption('o()', 'd', '15m', 7)).toBe(900_000);
  });

  it('keeps the bounds for strings, and refuses a string without a unit', () => {
    expect(() => durationOption('o()', 'codeTtl', '2m', 7, { max: 60_000 })).toThrow(
      'o(): `codeTtl` must be milliseconds, 0–60000',
    );
    expect(() => durationOption('o()', 'd', '0ms', 7, { min: 1 })).toThrow(/at least 1/);
    expect(thrown(() => durationOption('o()', 'd', '60', 7)).message).toBe(
      "o(): `d` must be milliseconds (a number) or a string with a unit ('500ms', '5s', '15m', '12h'), not \"60\"",
    );
  });

  it('has lower floors where sub-second values are normal', () => {
    expect(durationOption('o()', 'd', 100, 7, { floor: 100 })).toBe(100);
    expect(() => durationOption('o()', 'd', 99, 7, { floor: 100 })).toThrow(/did you mean 99_000/);
  });
});

describe('a forgotten await', () => {
  it('names the option and the line to write', () => {
    const error = thrown(() =>
      assertKnownOptions('createAuthorizationServer()', { keys: Promise.resolve({}) }, ['keys']),
    );
    expect(error.code).toBe('ERR_INVALID_OPTION');
    expect(error.message).toBe(
      'createAuthorizationServer(): `keys` is a Promise: did you forget `await`? (`keys: await createKeySet()`)',
    );
  });

  it('sees any thenable, and options given as a Promise', () => {
    // biome-ignore lint/suspicious/noThenProperty: a thenable is what is tested
    const thenable = { then: () => {} };
    expect(() => assertNotThenable('o()', 'store', thenable)).toThrow(
      'o(): `store` is a Promise: did you forget `await`?',
    );
    expect(() => assertKnownOptions('o()', Promise.resolve({}), [])).toThrow(
      'o(): `options` is a Promise',
    );
    expect(() => assertNotThenable('o()', 'store', { get: () => {} })).not.toThrow();
  });
});

describe('an option given as undefined', () => {
  it('is an error where a value was clearly meant (an unset environment variable)', () => {
    const error = thrown(() =>
      assertGivenOptions('jwtBearer()', { secret: process.env.PORTICO_NOT_SET }, ['secret']),
    );
    expect(error.code).toBe('ERR_INVALID_OPTION');
    expect(error.message).toMatch(
      /^jwtBearer\(\): `secret` is undefined: is its environment variable set\?/,
    );
  });

  it('lets an option left out alone', () => {
    expect(() => assertGivenOptions('jwtBearer()', {}, ['secret'])).not.toThrow();
  });
});

describe('names from other libraries', () => {
  const known = ['limit', 'windowMs', 'key', 'headers', 'failOpen', 'handler'];

  it('hints portico’s name for a known alias before any close name', () => {
    expect(thrown(() => assertKnownOptions('rateLimit()', { max: 10 }, known)).message).toBe(
      "rateLimit(): unknown option `max`. Did you mean `limit`? (express-rate-limit's and @fastify/rate-limit's `max` is portico's `limit`)",
    );
    expect(
      thrown(() => assertKnownOptions('rateLimit()', { timeWindow: 60_000 }, known)).message,
    ).toContain('Did you mean `windowMs`? (@fastify/rate-limit');
    expect(
      thrown(() => assertKnownOptions('rateLimit()', { keyGenerator: () => 'k' }, known)).message,
    ).toContain('Did you mean `key`?');
    expect(
      thrown(() => assertKnownOptions('rateLimit()', { passOnStoreError: true }, known)).message,
    ).toContain('Did you mean `failOpen`?');
  });

  it('knows the names of cors, helmet and the JWT middlewares', () => {
    expect(thrown(() => assertKnownOptions('cors()', { origin: '*' }, ['origins'])).message).toBe(
      "cors(): unknown option `origin`. Did you mean `origins`? (the cors package's `origin` is portico's `origins`)",
    );
    expect(
      thrown(() =>
        assertKnownOptions('securityHeaders()', { hsts: {} }, ['strictTransportSecurity']),
      ).message,
    ).toContain('Did you mean `strictTransportSecurity`?');
    expect(
      thrown(() => assertKnownOptions('jwtBearer()', { maxAge: '15m' }, ['maxTokenAge'])).message,
    ).toContain('Did you mean `maxTokenAge`?');
    // an option that lives elsewhere in portico: where to find it
    expect(
      thrown(() => assertKnownOptions('jwtBearer()', { credentialsRequired: false }, ['issuer']))
        .message,
    ).toBe(
      "jwtBearer(): unknown option `credentialsRequired`. (express-jwt's `credentialsRequired: false` is `authenticate([...], { optional: true })` in portico)",
    );
  });

  it('keeps the edit-distance hint for a typo', () => {
    expect(thrown(() => assertKnownOptions('rateLimit()', { limt: 1 }, known)).message).toBe(
      'rateLimit(): unknown option `limt`. Did you mean `limit`?',
    );
  });
});
