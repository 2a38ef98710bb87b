/**
 * The portico servers of the `auth` comparison: `authenticate([authenticator])` and a router
 * whose `GET /api/me` answers the principal's `{ sub, method }`, under `toNodeListener`
 * (problem details on errors). It imports the build in `dist/` (what users run); `npm run
 * bench` builds it first.
 */
import { createServer } from 'node:http';
import { serve } from '../lib/serve.js';

// Types from the sources, code from the build: typechecking needs no build, the run uses it.
const dist = new URL('../../dist/index.js', import.meta.url).href;
export const portico = (await import(dist)) as typeof import('../../src/index.js');

type Authenticator = import('../../src/index.js').Authenticator;

/** Serves `GET /api/me` behind `authenticate([authenticator])`. */
export function serveAuthenticated(authenticator: Authenticator): void {
  const { authenticate, createRouter, requirePrincipal, sendJson, toNodeListener } = portico;
  const listener = toNodeListener([
    authenticate([authenticator]),
    createRouter({
      '/api/me': {
        GET(req, res) {
          const { sub, method } = requirePrincipal(req);
          sendJson(res, 200, { sub, method });
        },
      },
    }),
  ]);
  serve(createServer(listener));
}
