// The single-page app of the reference server, served as static files at
// http://127.0.0.1:5173 (a redirect URI registered for the `demo-spa` client).
//   npm start                                          (the reference server, port 3000)
//   node --import tsx examples/spa/server.ts           (env: API_URL, default http://127.0.0.1:3000)
// then open http://127.0.0.1:5173 and sign in as alice / alice-password.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { createRouter, securityHeaders, sendJson, toNodeListener } from 'portico';
import { assetRoutes, pagePolicy, SHARED_ASSETS } from '../browser/assets.js';

const here = new URL('./public/', import.meta.url);

/** The SPA's server for the service at `api`; `close()` stops it. */
export function createSpa({ api = 'http://127.0.0.1:3000' } = {}) {
  const apiOrigin = new URL(api).origin;
  const wsOrigin = apiOrigin.replace(/^http/, 'ws'); // ws:// or wss://
  const page = new URL('index.html', here);
  const server = createServer(
    toNodeListener([
      securityHeaders(),
      createRouter({
        // `/callback` is the same page: it finishes the sign-in
        ...assetRoutes(
          {
            '/': page,
            '/callback': page,
            '/spa.js': new URL('spa.js', here),
            '/live.js': new URL('live.js', SHARED_ASSETS),
            '/style.css': new URL('style.css', SHARED_ASSETS),
          },
          pagePolicy([apiOrigin, wsOrigin]),
        ),
        '/config.json': { GET: (_req, res) => sendJson(res, 200, { api: apiOrigin }) },
      }),
    ]),
  );
  const close = () => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return { server, close };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { server, close } = createSpa({ api: process.env.API_URL || undefined });
  server.listen(Number(process.env.PORT || 5173), '127.0.0.1', () => {
    const { port } = server.address() as AddressInfo;
    console.log(`SPA example on http://127.0.0.1:${port} (sign in as alice / alice-password)`);
  });
  process.once('SIGTERM', () => void close());
  process.once('SIGINT', () => void close());
}
