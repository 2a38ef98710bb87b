// The page at `/`: a console for a signed-in session (post a message, watch it arrive over
// /events and /ws, see the raw frames). Its scripts are files of their own, so the page's
// policy allows no inline script at all.
import type { MethodTable } from 'portico';
import { assetRoutes, pagePolicy, SHARED_ASSETS } from '../browser/assets.js';

const here = new URL('./console/', import.meta.url);

/** `/` and the files it loads; the page talks to its own origin only (fetch, SSE and ws). */
export function consoleRoutes(): Record<string, MethodTable> {
  return assetRoutes(
    {
      '/': new URL('index.html', here),
      '/console.js': new URL('console.js', here),
      '/live.js': new URL('live.js', SHARED_ASSETS),
      '/style.css': new URL('style.css', SHARED_ASSETS),
    },
    pagePolicy([]),
  );
}
