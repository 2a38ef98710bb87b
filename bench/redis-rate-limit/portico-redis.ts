/**
 * portico `rateLimit` (limit 1e9 per 60 s) counting in Redis through `RedisRateLimitStore`
 * (one `EVALSHA` per request) + router under `toNodeListener`, answering `GET /api/hello`.
 * Redis is at `$BENCH_REDIS_URL` (started by the orchestrator). It imports the build in
 * `dist/`; `npm run bench` builds it first.
 */
import { createServer } from 'node:http';
import { Redis } from 'ioredis';
import { REDIS_URL_VARIABLE } from '../lib/redis.js';
import { serve } from '../lib/serve.js';

// Types from the sources, code from the build: typechecking needs no build, the run uses it.
const { createRouter, rateLimit, sendJson, toNodeListener } = (await import(
  new URL('../../dist/index.js', import.meta.url).href
)) as typeof import('../../src/index.js');
const { RedisRateLimitStore } = (await import(
  new URL('../../dist/redis.js', import.meta.url).href
)) as typeof import('../../src/redis/index.js');

const url = process.env[REDIS_URL_VARIABLE];
if (url === undefined) throw new Error(`${REDIS_URL_VARIABLE} is not set`);

const listener = toNodeListener([
  rateLimit({
    limit: 1e9,
    windowMs: 60_000,
    store: new RedisRateLimitStore({ client: new Redis(url) }),
  }),
  createRouter({
    '/api/hello': { GET: (_req, res) => sendJson(res, 200, { hello: 'world' }) },
  }),
]);

serve(createServer(listener));
