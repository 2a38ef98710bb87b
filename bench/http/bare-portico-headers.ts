/**
 * A reference: plain node:http writing, by hand, the same response headers as the portico
 * server (request id, security headers, CORS, rate-limit counters). The gap between this
 * and bare node:http is the cost of the headers alone; the gap between this and portico is
 * portico's own.
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
    res.writeHead(200, {
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
    });
    res.end(body);
    return;
  }
  res.writeHead(404, { 'Content-Length': 0 });
  res.end();
});

serve(server);
