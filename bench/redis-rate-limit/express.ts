/**
 * Express 5 + express-rate-limit (limit 1e9 per 60 s, legacy `X-RateLimit-*` headers)
 * counting in Redis through rate-limit-redis's `RedisStore` over an ioredis client, answering
 * `GET /api/hello`. Redis is at `$BENCH_REDIS_URL` (started by the orchestrator).
 */
import { createServer } from 'node:http';
import express from 'express';
import { rateLimit } from 'express-rate-limit';
import { Redis } from 'ioredis';
import { type RedisReply, RedisStore } from 'rate-limit-redis';
import { REDIS_URL_VARIABLE } from '../lib/redis.js';
import { serve } from '../lib/serve.js';

const url = process.env[REDIS_URL_VARIABLE];
if (url === undefined) throw new Error(`${REDIS_URL_VARIABLE} is not set`);
const client = new Redis(url);

const app = express();
// ETag left at Express's default (weak, computed per body): what an Express app gets.
app.use(
  rateLimit({
    windowMs: 60_000,
    limit: 1e9,
    standardHeaders: false,
    legacyHeaders: true,
    store: new RedisStore({
      // rate-limit-redis's documented ioredis wiring.
      sendCommand: (command: string, ...args: string[]) =>
        client.call(command, ...args) as Promise<RedisReply>,
    }),
  }),
);
app.get('/api/hello', (_req, res) => {
  res.json({ hello: 'world' });
});

serve(createServer(app));
