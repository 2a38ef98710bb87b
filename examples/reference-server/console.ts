// The page at `/`: a console for a signed-in session (post a message, watch it arrive over
// /events and /ws, see the raw frames), in English or French as the browser's Accept-Language
// prefers. Its scripts are files of their own, so the page's policy allows no inline script.
import { readFileSync } from 'node:fs';
import { createETag, type MethodTable } from 'portico';
import type { SignIn } from 'portico/client';
import { negotiateLanguage, sendRepresentation, setContentLanguage } from 'portico/http';
import { assetRoutes, pagePolicy, SHARED_ASSETS } from '../browser/assets.js';

const here = new URL('./console/', import.meta.url);

/** The console page in each language it is written in, the first one the default. */
const TEMPLATES = {
  en: readFileSync(new URL('index.html', here), 'utf8'),
  fr: readFileSync(new URL('index.fr.html', here), 'utf8'),
};
const LANGUAGES = Object.keys(TEMPLATES) as (keyof typeof TEMPLATES)[];
const SIGN_IN_WITH = { en: 'Sign in with', fr: 'Se connecter avec' };

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A page with its "Sign in with …" links (none without an upstream provider). */
function pageWith(language: keyof typeof TEMPLATES, signIn: SignIn | undefined): Buffer {
  const links = (signIn?.links('/') ?? [])
    .map(
      (link) =>
        `<p class="sign-in-with"><a href="${escapeHtml(link.href)}">${SIGN_IN_WITH[language]} ${escapeHtml(link.label)}</a></p>`,
    )
    .join('\n    ');
  return Buffer.from(TEMPLATES[language].replace('<!--sign-in-with-->', links));
}

/**
 * `/` in the browser's language, and the files it loads; the page talks to its own origin only.
 * With `signIn`, its sign-in also offers the upstream provider.
 */
export function consoleRoutes(signIn?: SignIn): Record<string, MethodTable> {
  const PAGES = { en: pageWith('en', signIn), fr: pageWith('fr', signIn) };
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
