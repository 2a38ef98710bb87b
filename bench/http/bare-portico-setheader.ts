/**
 * A second reference: plain node:http setting the same response headers as the portico
 * server (and as bare-portico-headers.ts writes in one `writeHead`), but with one
 * `setHeader` each, as middleware does. The gap between the two references is what node's
 * per-header API costs (validation, lower-casing, storing, then serialising); the gap
 * between this and portico is portico's own work.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { serve } from '../lib/serve.js';

const ORIGIN = 'http://localhost:5173';
const EXPOSE =
  'X-Request-ID, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, RateLimit, ' +
  'RateLimit-Policy, Retry-After, Location, ETag, WWW-Authenticate';
let remaining = 1e9;

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/api/hello') {
    const body = JSON.stringify({ hello: 'world' });
    const cors = req.headers.origin === ORIGIN;
    const headers: Record<string, string | number> = {
      'X-Request-ID': randomUUID(),
      'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
      'X-Content-Type-Options': 'nosniff',
      'X-Frame-Options': 'DENY',
      'Permissions-Policy': 'camera=(), microphone=(), geolocation=(), payment=(), usb=()',
      'Referrer-Policy': 'no-referrer',
      Vary: 'Origin',
      ...(cors && {
        'Access-Control-Allow-Origin': ORIGIN,
        'Access-Control-Allow-Credentials': 'true',
        'Access-Control-Expose-Headers': EXPOSE,
      }),
      'X-RateLimit-Limit': '1000000000',
      'X-RateLimit-Remaining': String(--remaining),
      'X-RateLimit-Reset': '60',
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(body),
    };
    // one setHeader per header, as middleware does: what node's API costs over one writeHead
    for (const name in headers) res.setHeader(name, headers[name]!);
    res.statusCode = 200;
    res.end(body);
    return;
  }
  res.writeHead(404, { 'Content-Length': 0 });
  res.end();
});

serve(server);
