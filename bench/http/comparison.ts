import type { Comparison } from '../lib/types.js';
import { sameBytesFloor } from '../lib/verify.js';

const ORIGIN = 'http://localhost:5173';

/** Headers that prove CORS, the rate limit and the security headers ran. */
const STACK_HEADERS = {
  'access-control-allow-origin': ORIGIN,
  'access-control-allow-credentials': 'true',
  'x-ratelimit-limit': '1000000000',
  'x-content-type-options': 'nosniff',
};

/** The request path of a minimal app: bare node:http vs portico vs Fastify 5 vs Express 5. */
export const httpComparison: Comparison = {
  name: 'http',
  title: 'request path of a minimal app',
  description:
    '`GET /api/hello` answering `{"hello":"world"}` (the same bytes and Content-Type from ' +
    'every server), sent with `Origin: http://localhost:5173` so CORS does its work. ' +
    'portico runs request id + security headers + CORS (credentials) + rate limit (in-memory, ' +
    'limit 1e9 per 60 s: it counts every request but never triggers) + router, under ' +
    '`toNodeListener` (problem details on errors); Fastify 5 runs @fastify/helmet + ' +
    '@fastify/cors + @fastify/rate-limit (in memory), and Express 5 helmet + cors + ' +
    'express-rate-limit, with the same settings. The `portico` row has nobody subscribed to ' +
    'its diagnostics channels (what it costs then is one `hasSubscribers` read per channel ' +
    'crossed); the next row is the same app with a no-op subscriber on every channel, the ' +
    '`request` TracingChannel included. Target: portico at 85 % or more of bare ' +
    'node:http, ahead of Fastify’s stack, and at 1.8× Express’s or more.',
  baseline: 'bare',
  secondaryBaseline: 'fastify',
  profile: ['portico-bytes', 'portico'],
  servers: [
    { name: 'bare', label: 'bare node:http', entry: 'bench/http/bare.ts' },
    sameBytesFloor('portico', 'node:http writing the same bytes as portico (its floor)'),
    {
      name: 'bare-portico-setheader',
      label: 'bare node:http + portico’s headers, one setHeader each',
      entry: 'bench/http/bare-portico-setheader.ts',
      expectHeaders: STACK_HEADERS,
    },
    {
      name: 'portico',
      label: 'portico',
      entry: 'bench/http/portico.ts',
      expectHeaders: STACK_HEADERS,
    },
    {
      name: 'portico-observed',
      label: 'portico, every diagnostics channel subscribed (no-op listeners)',
      entry: 'bench/http/portico-observed.ts',
      expectHeaders: STACK_HEADERS,
    },
    {
      name: 'fastify',
      label: 'Fastify 5 + @fastify/helmet + @fastify/cors + @fastify/rate-limit',
      entry: 'bench/http/fastify.ts',
      expectHeaders: STACK_HEADERS,
    },
    {
      name: 'express',
      label: 'Express 5 + helmet + cors + express-rate-limit',
      entry: 'bench/http/express.ts',
      expectHeaders: STACK_HEADERS,
    },
  ],
  request: { method: 'GET', path: '/api/hello', headers: { origin: ORIGIN } },
  expect: { status: 200, body: '{"hello":"world"}' },
  notes: [
    'The floor row writes, in one raw `writeHead`, byte for byte what portico answered just ' +
      'before measuring (its header lines, about 800 bytes against 170 for bare node:http, ' +
      'with a fresh request id, and its body: [`bench/lib/same-bytes.ts`]' +
      '(bench/lib/same-bytes.ts)): its gap to bare node:http is the cost of those headers ' +
      'alone, its gap to portico is portico’s own. The next row sets the same headers with ' +
      'one `setHeader` each, as middleware does: node validates, lower-cases and stores each ' +
      'one, then serialises them; its gap to the floor is what node’s per-header API costs ' +
      'before any of portico’s own work.',
    'portico runs from its tsup build in `dist/` (what `npm install portico` gives), built by ' +
      '`npm run bench` before measuring.',
    'Every handler calls `JSON.stringify` per request; bare node:http sets Content-Type and ' +
      'Content-Length itself, with no other header.',
    'Express keeps its default weak `ETag` (computed over each body), as an Express app gets ' +
      'out of the box; portico sends no ETag unless asked. helmet() and portico ' +
      '`securityHeaders()` use their defaults (their header sets differ).',
    'express-rate-limit: `legacyHeaders: true, standardHeaders: false`, like portico’s default ' +
      '`X-RateLimit-Limit` / `X-RateLimit-Remaining`.',
    'Fastify (logger off, its default) answers from an `async` route returning the object, ' +
      'with no response schema, so its default serializer calls `JSON.stringify` like the ' +
      'others (a schema would let it use fast-json-stringify); it sends no ETag by default. ' +
      '@fastify/helmet 13 wraps helmet 8 with its defaults (the same header set as the Express ' +
      'row, not portico’s) and builds its helmet middleware again on every request, as the ' +
      'plugin does by default. @fastify/cors with a fixed origin sends no `Vary: Origin` ' +
      '(portico and cors do). @fastify/rate-limit (`max: 1e9, timeWindow: 60_000`, its ' +
      'in-memory LRU store keyed by IP) sends its default `x-ratelimit-limit`, ' +
      '`-remaining` and `-reset`.',
  ],
};
