/**
 * Fastify 5 with @fastify/helmet, @fastify/cors and @fastify/rate-limit (in memory),
 * answering `GET /api/hello`. Logger off (Fastify's default), no response schema: the
 * object goes through Fastify's default serializer (`JSON.stringify`), as the other rows.
 */
import cors from '@fastify/cors';
import helmet from '@fastify/helmet';
import rateLimit from '@fastify/rate-limit';
import Fastify from 'fastify';
import { serve } from '../lib/serve.js';

const app = Fastify();
await app.register(helmet);
await app.register(cors, { origin: 'http://localhost:5173', credentials: true });
// Default headers: x-ratelimit-limit / -remaining / -reset (retry-after only once exceeded).
await app.register(rateLimit, { max: 1e9, timeWindow: 60_000 });
app.get('/api/hello', async () => ({ hello: 'world' }));

// Fastify's own node:http server, ready (plugins loaded, routes built) before it listens.
await app.ready();
serve(app.server);
