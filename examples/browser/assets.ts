// Static files for the example pages (the reference server's console at `/`, the SPA):
// read once at start, served with the page's own Content-Security-Policy.
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { createETag, type MethodTable } from 'portico';
import { sendRepresentation } from 'portico/http';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** The directory of the browser code both pages share (`live.js`, `style.css`). */
export const SHARED_ASSETS = new URL('.//', import.meta.url);

/**
 * Routes serving `files` (URL path → file URL) with `csp`. The pages hold no secret, but
 * they change with the code: browsers revalidate them (`no-cache`, a strong `ETag`), and may
 * ask for byte ranges (`Accept-Ranges: bytes`).
 */
export function assetRoutes(files: Record<string, URL>, csp: string): Record<string, MethodTable> {
  const routes: Record<string, MethodTable> = {};
  for (const [path, file] of Object.entries(files)) {
    const body = readFileSync(file);
    const options = {
      contentType: TYPES[extname(file.pathname)] ?? 'application/octet-stream',
      etag: createETag(body),
      headers: { 'Cache-Control': 'no-cache', 'Content-Security-Policy': csp },
    };
    routes[path] = { GET: (req, res) => sendRepresentation(req, res, body, options) };
  }
  return routes;
}

/**
 * The policy of a page that loads its own scripts and styles and talks to `connect`
 * (origins for fetch, EventSource and WebSocket): nothing else loads, nothing frames it.
 */
export function pagePolicy(connect: string[], formAction = "'none'"): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    `connect-src 'self' ${connect.join(' ')}`.trimEnd(),
    "img-src 'self' data:",
    `form-action ${formAction}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}
