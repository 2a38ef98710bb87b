// The shared pieces of the Redis stores: the prefix that keeps a store's keys on one hash slot
// (checked with Redis's own rule for hash tags), and the client check naming both libraries.
import { describe, expect, it } from 'vitest';
import { connectionOf, oneSlotPrefix, redisStoreOptions } from '../../src/redis/commands.js';

/** The part of `key` Redis hashes to find its slot (the hash-tag rule of the cluster spec). */
function hashedPart(key: string): string {
  const open = key.indexOf('{');
  if (open < 0) return key;
  const close = key.indexOf('}', open + 1);
  return close < 0 || close === open + 1 ? key : key.slice(open + 1, close);
}

describe('oneSlotPrefix', () => {
  it.each([
    ['portico:apikey:', '{portico:apikey:}'],
    ['app:{keys}:', 'app:{keys}:'],
    ['', '{portico}'],
    ['}odd', '}odd{portico}'],
    ['a{b', '{a{b}'],
    ['{}x:', '{{}x:}'],
  ])('puts every key under %j on one slot (%j)', (prefix, expected) => {
    const tagged = oneSlotPrefix(prefix);
    expect(tagged).toBe(expected);
    const parts = new Set(
      ['id:1', 'hash:abc', 'ids', 'owner:}{x}', ''].map((k) => hashedPart(tagged + k)),
    );
    expect(parts.size).toBe(1);
  });
});

describe('the client of a store', () => {
  it.each([undefined, null, {}, { get: () => null }, 'redis://localhost'])(
    'refuses %j, naming both client libraries',
    (client) => {
      expect(() => connectionOf('new RedisRateLimitStore()', client)).toThrow(
        /new RedisRateLimitStore\(\): `client` must be an ioredis client \(Redis or Cluster\) or a node-redis v5 client/,
      );
    },
  );

  it('validates the time bounds once, in milliseconds', () => {
    const client = { evalsha() {}, call() {}, pipeline() {}, duplicate() {}, status: 'ready' };
    expect(() =>
      redisStoreOptions('S', { client, timeoutMs: 0 }, { prefix: 'p:', timeoutMs: 1 }),
    ).toThrow(/S: `timeoutMs` must be milliseconds/);
    expect(() =>
      redisStoreOptions('S', { client, waitForReplicas: -1 }, { prefix: 'p:', timeoutMs: 1 }),
    ).toThrow(/`waitForReplicas` must be an integer, 0–16/);
    expect(() =>
      redisStoreOptions(
        'S',
        { client, prefix: 5 as unknown as string },
        { prefix: 'p:', timeoutMs: 1 },
      ),
    ).toThrow(/`prefix` must be a string/);
    const { commands, prefix } = redisStoreOptions('S', { client }, { prefix: 'p:', timeoutMs: 7 });
    expect([prefix, commands.timeoutMs, commands.replicas, commands.waitTimeoutMs]).toEqual([
      'p:',
      7,
      0,
      1_000,
    ]);
  });
});
