import type { IncomingMessage } from 'node:http';
import { forbidden, type HttpError } from '../../core/errors/errors.js';
import { buildOriginMatcher, type OriginAllowlist } from '../../cors/origin.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

function csrfRefused(): HttpError {
  return forbidden('This request comes from a page that may not use the session.', {
    code: 'ERR_CSRF_ORIGIN',
    typeSlug: 'csrf-origin',
    title: 'Cross-site request refused',
  });
}

/**
 * The CSRF guard of cookie-authenticated requests: a state-changing request (not GET, HEAD
 * or OPTIONS) must not come from an `Origin` outside `allowedOrigins`, nor send
 * `Origin: null` unless marked `Sec-Fetch-Site: same-origin` (a form of this origin's own
 * page under `Referrer-Policy: no-referrer`), nor, without `Origin`, be marked
 * `Sec-Fetch-Site: cross-site`. A request with neither header (a non-browser client, which
 * no page can drive) passes. Throws a 403 problem.
 *
 * @example
 * ```ts
 * const guard = createOriginGuard('myApp', ['https://app.example.com']);
 * await guard(req); // throws 403 for a cross-site POST
 * ```
 * @see {@link https://cheatsheetseries.owasp.org/cheatsheets/Cross-Site_Request_Forgery_Prevention_Cheat_Sheet.html | OWASP Cross-Site Request Forgery Prevention Cheat Sheet}
 */
export function createOriginGuard(
  owner: string,
  allowedOrigins: OriginAllowlist,
): (req: IncomingMessage) => Promise<void> {
  const isAllowedOrigin = buildOriginMatcher(owner, allowedOrigins);
  return async function assertAllowedOrigin(req) {
    if (SAFE_METHODS.has(req.method ?? 'GET')) return;
    const origin = req.headers.origin;
    if (origin === 'null') {
      // A form posted from a page under `Referrer-Policy: no-referrer` (securityHeaders'
      // default) carries `Origin: null` (Fetch §3.1); then only the browser's own
      // `Sec-Fetch-Site` can vouch that the page was this very origin.
      if (req.headers['sec-fetch-site'] !== 'same-origin') throw csrfRefused();
      return;
    }
    if (origin !== undefined) {
      if (!(await isAllowedOrigin(origin))) throw csrfRefused();
      return;
    }
    if (req.headers['sec-fetch-site'] === 'cross-site') throw csrfRefused();
  };
}
