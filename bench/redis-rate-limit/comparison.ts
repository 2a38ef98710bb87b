import { checkRedisCounter, REDIS_URL_VARIABLE } from '../lib/redis.js';
import {
  BENCH_REDIS_CLUSTER,
  checkRedisClusterCounter,
  redisAndCluster,
} from '../lib/redis-cluster.js';
import type { Answer, Comparison } from '../lib/types.js';
import { sameBytesFloor } from '../lib/verify.js';

const WINDOW_MS = 60_000;
const LIMIT = '1000000000';

/** Where each Redis-backed server keeps its counters (each library's default prefix). */
const REDIS_PREFIX: Readonly<Record<string, string>> = {
  'portico-redis': 'portico:rl:',
  'express-rate-limit-redis': 'rl:',
};

/** Where the server on the Redis Cluster keeps its counters. */
const CLUSTER_PREFIX: Readonly<Record<string, string>> = {
  'portico-redis-cluster': 'portico:rl:',
};

/**
 * Proves the limiter counted this request: `X-RateLimit-Remaining` below the limit, a key in
 * Redis (on one of the cluster's primaries for the cluster row).
 */
async function checkCounted(
  answer: Answer,
  server: { spec: { name: string }; variables: Readonly<Record<string, string>> },
): Promise<string[]> {
  const problems: string[] = [];
  const remaining = Number(answer.headers['x-ratelimit-remaining']);
  if (!(Number.isInteger(remaining) && remaining >= 0 && remaining < Number(LIMIT))) {
    problems.push(
      `header x-ratelimit-remaining: ${JSON.stringify(answer.headers['x-ratelimit-remaining'])}, ` +
        'expected a count below the limit',
    );
  }
  const prefix = REDIS_PREFIX[server.spec.name];
  const url = server.variables[REDIS_URL_VARIABLE];
  if (prefix !== undefined) {
    if (url === undefined) problems.push(`no ${REDIS_URL_VARIABLE} from setup`);
    else problems.push(...(await checkRedisCounter(url, prefix, WINDOW_MS)));
  }
  const clusterPrefix = CLUSTER_PREFIX[server.spec.name];
  const seeds = server.variables[BENCH_REDIS_CLUSTER];
  if (clusterPrefix !== undefined) {
    if (seeds === undefined) problems.push(`no ${BENCH_REDIS_CLUSTER} from setup`);
    else problems.push(...(await checkRedisClusterCounter(seeds, clusterPrefix, WINDOW_MS)));
  }
  return problems;
}

/** A rate-limited route counting in Redis: portico's store vs express-rate-limit + rate-limit-redis. */
export const redisRateLimitComparison: Comparison = {
  name: 'redis-rate-limit',
  title: 'a rate-limited route counting in Redis',
  description:
    '`GET /api/hello` answering `{"hello":"world"}` behind a rate limit of 1e9 requests per ' +
    '60 s per client IP (it counts every request but never triggers), with ' +
    '`X-RateLimit-Limit` / `X-RateLimit-Remaining` on every answer. portico runs `rateLimit` + ' +
    'router under `toNodeListener`, counting in its default in-memory store (the baseline) or ' +
    'in Redis with `store: new RedisRateLimitStore({ client: new Redis(url) })` (one ' +
    '`EVALSHA` of an INCR/PTTL script per request), or the same store on a Redis Cluster ' +
    '(`client: new Cluster(seeds)`, the script sent to the primary of the key’s slot); ' +
    'Express 5 runs `express-rate-limit` with ' +
    'rate-limit-redis’s `RedisStore` (`sendCommand: (...args) => client.call(...args)` on an ' +
    'ioredis client, one `EVALSHA` per request). One real `redis-server` (started for the run ' +
    "on 127.0.0.1, `--save '' --appendonly no`) serves both single-Redis servers; the cluster " +
    'row runs against six `redis-server --cluster-enabled yes` (three primaries, a replica ' +
    'each, on the same machine, same flags). Target: portico ' +
    'with Redis ahead of express-rate-limit + rate-limit-redis.',
  baseline: 'portico-memory',
  servers: [
    {
      name: 'portico-memory',
      label: 'portico, in-memory store',
      entry: 'bench/redis-rate-limit/portico-memory.ts',
      expectHeaders: { 'x-ratelimit-limit': LIMIT },
    },
    sameBytesFloor('portico-redis'),
    {
      name: 'portico-redis',
      label: 'portico, RedisRateLimitStore',
      entry: 'bench/redis-rate-limit/portico-redis.ts',
      expectHeaders: { 'x-ratelimit-limit': LIMIT },
    },
    {
      name: 'portico-redis-cluster',
      label: 'portico, RedisRateLimitStore on a 6-node Redis Cluster',
      entry: 'bench/redis-rate-limit/portico-redis-cluster.ts',
      expectHeaders: { 'x-ratelimit-limit': LIMIT },
    },
    {
      name: 'express-rate-limit-redis',
      label: 'Express 5 + express-rate-limit + rate-limit-redis',
      entry: 'bench/redis-rate-limit/express.ts',
      expectHeaders: { 'x-ratelimit-limit': LIMIT },
    },
  ],
  request: { method: 'GET', path: '/api/hello', headers: {} },
  expect: { status: 200, body: '{"hello":"world"}', check: checkCounted },
  ...redisAndCluster(),
  notes: [
    'Before measuring, each server is checked to answer 200 with `X-RateLimit-Limit: ' +
      '1000000000` and a count in `X-RateLimit-Remaining`, and each Redis-backed server to ' +
      'have left a counter under its key prefix in Redis (`portico:rl:`, `rl:`) with a ' +
      'positive count expiring within the window (for the cluster row, on one of the ' +
      'cluster’s primaries, every primary scanned).',
    'Every request of a run comes from 127.0.0.1, so all of them hit the same Redis key: the ' +
      'worst case for one key, and the same for every store: on the cluster, every count goes ' +
      'to the one primary holding that key’s slot. Each single-Redis server keeps one ioredis ' +
      'connection (its commands pipelined by ioredis), as an app would; the cluster row keeps ' +
      'one ioredis `Cluster` client (a connection per node, each command routed by slot).',
    'Server CPU per request is the Node process’s alone; the redis-server’s own CPU is not ' +
      'counted, and on this two-core machine it shares the CPUs with ' +
      'the server and the load generator. The cluster’s six nodes (three primaries + three ' +
      'replicas, replicating every write) run on the same machine, none of them pinned, and ' +
      'their CPU is not counted either. They run during the whole comparison, the other rows ' +
      'included (idle then but for their cluster bus).',
    'Most of the Express row is Express’s own cost: in the `http` comparison, Express 5 with ' +
      'helmet, cors and express-rate-limit’s in-memory store answers at a similar rate on the ' +
      'same machine.',
    'Express keeps its default weak `ETag` (computed over each body); portico sends none. ' +
      'express-rate-limit: `legacyHeaders: true, standardHeaders: false`, like portico’s ' +
      'default headers.',
    'portico runs from its tsup build in `dist/` (what `npm install portico` gives), built by ' +
      '`npm run bench` before measuring.',
  ],
};
