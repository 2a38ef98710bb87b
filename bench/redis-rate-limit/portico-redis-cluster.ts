/**
 * portico `rateLimit` (limit 1e9 per 60 s) counting in a Redis Cluster through
 * `RedisRateLimitStore` on an ioredis `Cluster` client (one `EVALSHA` per request, sent to the
 * primary of the key's slot) + router under `toNodeListener`, answering `GET /api/hello`. The
 * cluster's seed nodes are in `$BENCH_REDIS_CLUSTER` (six nodes started by the orchestrator).
 * It imports the build in `dist/`; `npm run bench` builds it first.
 */
import { createServer } from 'node:http';
import { Cluster } from 'ioredis';
import { BENCH_REDIS_CLUSTER, parseSeeds } from '../lib/redis-cluster.js';
import { serve } from '../lib/serve.js';

// Types from the sources, code from the build: typechecking needs no build, the run uses it.
const { createRouter, rateLimit, sendJson, toNodeListener } = (await import(
  new URL('../../dist/index.js', import.meta.url).href
)) as typeof import('../../src/index.js');
const { RedisRateLimitStore } = (await import(
  new URL('../../dist/redis.js', import.meta.url).href
)) as typeof import('../../src/redis/index.js');

const seeds = process.env[BENCH_REDIS_CLUSTER];
if (seeds === undefined) throw new Error(`${BENCH_REDIS_CLUSTER} is not set`);

const listener = toNodeListener([
  rateLimit({
    limit: 1e9,
    windowMs: 60_000,
    store: new RedisRateLimitStore({ client: new Cluster(parseSeeds(seeds)) }),
  }),
  createRouter({
    '/api/hello': { GET: (_req, res) => sendJson(res, 200, { hello: 'world' }) },
  }),
]);

serve(createServer(listener));
