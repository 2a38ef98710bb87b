/**
 * The servers of the `overload` comparison: a portico app answering `GET /api/hello` whose
 * event loop is blocked for {@link BLOCK_MS} every {@link PERIOD_MS} while it is under load (a
 * synchronous task, as a large JSON parse or a sync crypto call would be), with or without
 * `shedLoad()` in front. It imports the build in `dist/`.
 */
import { createServer } from 'node:http';
import { serve } from '../lib/serve.js';
import { BLOCK_MS, PERIOD_MS } from './shared.js';

const dist = (name: string) => new URL(`../../dist/${name}.js`, import.meta.url).href;
const portico = (await import(dist('index'))) as typeof import('../../src/index.js');
const http = (await import(dist('http'))) as typeof import('../../src/http/index.js');

/** Requests per period that count as load (the check before measuring sends a handful). */
const UNDER_LOAD = 200;

/** Serves the app, with `shedLoad()` first when `shed` is true. */
export function serveBlocked(shed: boolean): void {
  const { createRouter, requestId, securityHeaders, sendJson, toNodeListener } = portico;
  let seen = 0;
  const count: import('../../src/index.js').Middleware = (_req, _res, next) => {
    seen++;
    return next();
  };
  const chain = [
    count,
    ...(shed
      ? [http.shedLoad({ maxEventLoopDelay: 50, sampleInterval: 20, retryAfter: 1_000 })]
      : []),
    requestId(),
    securityHeaders(),
    createRouter({
      '/api/hello': { GET: (_req, res) => sendJson(res, 200, { hello: 'world' }) },
    }),
  ];
  setInterval(() => {
    const loaded = seen >= UNDER_LOAD;
    seen = 0;
    if (!loaded) return;
    const until = Date.now() + BLOCK_MS;
    while (Date.now() < until) {
      // the event loop is blocked: requests queue in the kernel
    }
  }, PERIOD_MS).unref();
  serve(createServer(toNodeListener(chain)));
}
