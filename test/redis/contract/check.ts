// What one check of the store contract is: a plain async function given a client factory and
// a prefix of its own, that drives the stores through their public methods only.
import { expect } from 'vitest';
import type { RedisClient } from '../../../src/redis/script.js';

/** What a check is given. */
export interface CheckContext {
  /** A new client of the target every call: two clients are two processes. */
  client(): unknown;
  /** A prefix no other check uses: the check's keys never meet another's. */
  prefix: string;
  /** Whether the target is a Redis Cluster. */
  cluster: boolean;
  /** The port of the primary holding a key's slot (cluster targets only). */
  primaryOf?(key: string): Promise<number>;
}

/** One behaviour of a store, with exact expected values. */
export interface Check {
  name: string;
  /** Only on cluster targets (where keys spread over primaries). */
  clusterOnly?: boolean;
  /** Its own time bound, when it needs more than the default. */
  timeoutMs?: number;
  run(context: CheckContext): Promise<void>;
}

/** The checks of one store. */
export interface CheckGroup {
  store: string;
  checks: readonly Check[];
}

/**
 * A target's client as the stores' options type it. The stores take any client their
 * connection layer knows (`connectionOf`), whichever library the target uses.
 */
export const asClient = (client: unknown): RedisClient => client as RedisClient;

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** `primaryOf` of the target, which a spread check needs. */
export function primaryOfTarget(context: CheckContext): (key: string) => Promise<number> {
  const { primaryOf } = context;
  if (primaryOf === undefined) throw new Error('this check needs a cluster target (primaryOf)');
  return primaryOf;
}

/** How many distinct primaries hold `keys`. */
export async function primariesOf(context: CheckContext, keys: readonly string[]): Promise<number> {
  const primaryOf = primaryOfTarget(context);
  const ports = await Promise.all(keys.map((key) => primaryOf(key)));
  expect(ports.every((port) => port > 0)).toBe(true);
  return new Set(ports).size;
}
