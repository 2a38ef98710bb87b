/**
 * What each piece of the reference server's chain costs, without sockets: chains of portico's
 * own middleware built up one piece at a time (as examples/reference-server/app.ts orders
 * them, with an API key), each answering `GET /api/me` through node's own IncomingMessage and
 * ServerResponse, rounds interleaved, the best round of each kept. Not part of `npm run
 * bench`: a tool for working on the request path. Run it against the build, as users get it:
 *
 *   npm run build && TSX_TSCONFIG_PATH=bench/tsconfig.dist.json \
 *     node --import tsx bench/reference/chain-costs.ts
 */

import type { RequestListener } from 'node:http';
import {
  apiKeyAuth,
  authenticate,
  compose,
  cors,
  createApiKey,
  createCredentialGuard,
  createRouter,
  MemoryApiKeyStore,
  type Middleware,
  mount,
  rateLimit,
  requestId,
  requireHttps,
  securityHeaders,
  sendJson,
  toNodeListener,
} from 'portico';
import { compression, maintenanceMode, shedLoad } from 'portico/http';
import { MemoryRateLimitStore } from 'portico/rate-limit';
import { API_KEY_OWNER } from './shared.js';
import { requestWithoutSocket } from './socketless.js';

const ROUNDS = 7;
const REQUESTS = 20_000;

const keys = new MemoryApiKeyStore();
const { key } = await createApiKey(keys, { owner: 'alice', name: 'bench' });
const lines = [
  ...['Host', 'api.bench.example', 'X-API-Key', key, 'X-Forwarded-Proto', 'https'],
  ...['X-Forwarded-For', '203.0.113.7', 'User-Agent', 'bench', 'Accept', '*/*'],
];
const body = { ...API_KEY_OWNER, method: 'api_key' };
const answer: Middleware = (_req, res) => sendJson(res, 200, body);
const limits = { limit: 1e9, windowMs: 60_000, trustProxy: 1, store: new MemoryRateLimitStore() };
const guard = createCredentialGuard({ ...limits, store: new MemoryRateLimitStore() });
const identity = authenticate([apiKeyAuth({ store: keys })], { optional: true, guard });
const router = createRouter({ '/api/me': { GET: answer } });
const shed = shedLoad({ maxEventLoopDelay: 1_000 });
const unavailable = [maintenanceMode({ enabled: false }), shed];

/** Each piece, in the reference server's order; the chain of a row is every piece up to it. */
const pieces: [string, Middleware[]][] = [
  ['requestId', [requestId()]],
  ['securityHeaders', [securityHeaders({ trustProxy: 1 })]],
  ['compression (no Accept-Encoding)', [compression()]],
  ["mount('/api', maintenance + shed)", [mount('/api', compose(unavailable))]],
  [
    "mount('/api', rateLimit report)",
    [mount('/api', rateLimit({ ...limits, report: () => true }))],
  ],
  ['requireHttps', [requireHttps({ trustProxy: 1, origin: 'https://api.bench.example' })]],
  ['cors', [cors({ origins: ['http://localhost:5173'], credentials: true })]],
  ['authenticate (API key, guard)', [identity]],
  ['router.match', [router.match]],
  ['rateLimit (per caller)', [rateLimit(limits)]],
  ['identity.required', [identity.required]],
];

const bare: RequestListener = (_req, res) => {
  const json = JSON.stringify(body);
  res.writeHead(200, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(json),
  });
  res.end(json);
};
const rows: [string, RequestListener][] = [
  ['bare handler (writeHead)', bare],
  ['sendJson alone', toNodeListener([answer])],
];
const chain: Middleware[] = [];
for (const [name, middleware] of pieces) {
  chain.push(...middleware);
  rows.push([`+ ${name}`, toNodeListener([...chain, answer])]);
}
rows.push(['+ router.dispatch (the route answers)', toNodeListener([...chain, router.dispatch])]);

for (const [name, listener] of rows) {
  const status = await requestWithoutSocket(listener, lines);
  if (status !== 200) throw new Error(`${name}: answered ${status}`);
}
const best = new Map<string, number>();
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, listener] of rows) {
    const start = performance.now();
    for (let i = 0; i < REQUESTS; i++) await requestWithoutSocket(listener, lines);
    const us = ((performance.now() - start) * 1000) / REQUESTS;
    best.set(name, Math.min(best.get(name) ?? Number.POSITIVE_INFINITY, us));
  }
}
let previous = 0;
console.log('µs per request (best of %d rounds), and what the row adds to the one above', ROUNDS);
for (const [name] of rows) {
  const us = best.get(name)!;
  const delta = us - previous;
  console.log(
    `${name.padEnd(40)} ${us.toFixed(2).padStart(6)}  ${delta >= 0 ? '+' : ''}${delta.toFixed(2)}`,
  );
  previous = us;
}
shed.close();
