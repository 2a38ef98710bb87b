/**
 * The response headers the portico server of the `http` comparison sends for
 * `GET /api/hello` (request id, security headers, CORS for the allowed origin, rate-limit
 * counters, Content-Type and Content-Length), written by hand for the two references.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

const ORIGIN = 'http://localhost:5173';
const EXPOSE =
  'X-Request-ID, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, RateLimit, ' +
  'RateLimit-Policy, Retry-After, Location, ETag, WWW-Authenticate';
let remaining = 1e9;

/** The headers of one answer with `body`, counting it against the rate limit. */
export function porticoHeaders(
  req: IncomingMessage,
  body: string,
): Record<string, string | number> {
  const cors = req.headers.origin === ORIGIN;
  return {
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
}
