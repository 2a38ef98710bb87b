/**
 * The portico app of the `http` comparison: request id + security headers + CORS + rate limit
 * + router, under `toNodeListener` (errors become problem details), answering
 * `GET /api/hello`. It imports the build in `dist/` (what users run); `npm run bench` builds it
 * first.
 */
import type { RequestListener } from 'node:http';

// Types from the sources, code from the build: typechecking needs no build, the run uses it.
const dist = new URL('../../dist/index.js', import.meta.url).href;
const { cors, createRouter, rateLimit, requestId, securityHeaders, sendJson, toNodeListener } =
  (await import(dist)) as typeof import('../../src/index.js');

export function porticoListener(): RequestListener {
  return toNodeListener([
    requestId(),
    securityHeaders(),
    cors({ origins: ['http://localhost:5173'], credentials: true }),
    rateLimit({ limit: 1e9, windowMs: 60_000 }),
    createRouter({
      '/api/hello': { GET: (_req, res) => sendJson(res, 200, { hello: 'world' }) },
    }),
  ]);
}
