/**
 * The baseline: portico `rateLimit` (limit 1e9 per 60 s, its default in-memory store) + router
 * under `toNodeListener`, answering `GET /api/hello`. It imports the build in `dist/` (what
 * users run); `npm run bench` builds it first.
 */
import { createServer } from 'node:http';
import { serve } from '../lib/serve.js';

// Types from the sources, code from the build: typechecking needs no build, the run uses it.
const { createRouter, rateLimit, sendJson, toNodeListener } = (await import(
  new URL('../../dist/index.js', import.meta.url).href
)) as typeof import('../../src/index.js');

const listener = toNodeListener([
  rateLimit({ limit: 1e9, windowMs: 60_000 }),
  createRouter({
    '/api/hello': { GET: (_req, res) => sendJson(res, 200, { hello: 'world' }) },
  }),
]);

serve(createServer(listener));
