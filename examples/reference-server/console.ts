// The page at `/`: a console for a signed-in session (post a message, watch it arrive over
// /events and /ws, see the raw frames), in English or French as the browser's Accept-Language
// prefers. Its scripts are files of their own, so the page's policy allows no inline script.
import { readFileSync } from 'node:fs';
import { createETag, type MethodTable } from 'portico';
import { negotiateLanguage, sendRepresentation, setContentLanguage } from 'portico/http';
import { assetRoutes, pagePolicy, SHARED_ASSETS } from '../browser/assets.js';

const here = new URL('./console/', import.meta.url);

/** The console page in each language it is written in, the first one the default. */
const PAGES = {
  en: readFileSync(new URL('index.html', here)),
  fr: readFileSync(new URL('index.fr.html', here)),
};
const LANGUAGES = Object.keys(PAGES) as (keyof typeof PAGES)[];

/** `/` in the browser's language, and the files it loads; the page talks to its own origin only. */
export function consoleRoutes(): Record<string, MethodTable> {
  const csp = pagePolicy([]);
  const headers = { 'Cache-Control': 'no-cache', 'Content-Security-Policy': csp };
  const contentType = 'text/html; charset=utf-8';
  const etags = { en: createETag(PAGES.en), fr: createETag(PAGES.fr) };
  return {
    '/': {
      GET: (req, res) => {
        const language = negotiateLanguage(req.headers['accept-language'], LANGUAGES, 'en') as
          | 'en'
          | 'fr';
        setContentLanguage(res, language);
        const etag = etags[language];
        return sendRepresentation(req, res, PAGES[language], { contentType, etag, headers });
      },
    },
    ...assetRoutes(
      {
        '/console.js': new URL('console.js', here),
        '/live.js': new URL('live.js', SHARED_ASSETS),
        '/style.css': new URL('style.css', SHARED_ASSETS),
      },
      csp,
    ),
  };
}
