import { serialize } from 'cookie';
import { assertKnownOptions, invalidOption } from '../internal/options.js';

/**
 * Attributes of the session cookie. `HttpOnly` is always set.
 *
 * @example
 * ```ts
 * // local development over plain HTTP
 * createSessions({ allowedOrigins: ['http://localhost:5173'], cookie: { secure: false } });
 * ```
 * @see {@link https://datatracker.ietf.org/doc/html/draft-ietf-httpbis-rfc6265bis#section-4.1.2 | RFC 6265bis (draft) §4.1.2}
 */
export interface SessionCookieOptions {
  /**
   * The `Secure` attribute: the browser sends the cookie over HTTPS only. Turn it off only
   * for local development over plain HTTP (the name must not then start with `__Host-` or
   * `__Secure-`).
   * @defaultValue `true`
   */
  secure?: boolean;
  /**
   * The `SameSite` attribute. `'none'` (the cookie rides along cross-site requests, for an
   * app embedded in another site) needs `secure`, and leaves the origin check as the only
   * CSRF defence.
   * @defaultValue `'strict'`
   */
  sameSite?: 'strict' | 'lax' | 'none';
  /**
   * The `Path` attribute. Must be `/` for a `__Host-` name.
   * @defaultValue `'/'`
   */
  path?: string;
  /**
   * The `Domain` attribute, which shares the cookie with subdomains. Not allowed with a
   * `__Host-` name.
   * @defaultValue none (this host only)
   */
  domain?: string;
}

/** Validates the cookie attributes against the name's prefix rules (RFC 6265bis §4.1.3). */
export function cookieAttributes(name: unknown, cookie: SessionCookieOptions | undefined) {
  if (cookie !== undefined && cookie !== null && 'httpOnly' in cookie) {
    throw invalidOption('createSessions: `cookie.httpOnly` cannot be set; it is always on');
  }
  assertKnownOptions('createSessions: cookie', cookie, ['secure', 'sameSite', 'path', 'domain']);
  const secure = cookie?.secure ?? true;
  const sameSite = cookie?.sameSite ?? 'strict';
  const path = cookie?.path ?? '/';
  const domain = cookie?.domain;
  if (typeof secure !== 'boolean')
    throw invalidOption('createSessions: `cookie.secure` must be a boolean');
  if (sameSite !== 'strict' && sameSite !== 'lax' && sameSite !== 'none') {
    throw invalidOption("createSessions: `cookie.sameSite` must be 'strict', 'lax' or 'none'");
  }
  if (sameSite === 'none' && !secure) {
    throw invalidOption("createSessions: `cookie.sameSite: 'none'` needs `secure: true`");
  }
  if (typeof path !== 'string' || !path.startsWith('/')) {
    throw invalidOption("createSessions: `cookie.path` must start with '/'");
  }
  if (typeof name !== 'string')
    throw invalidOption('createSessions: `cookieName` must be a string');
  const lower = name.toLowerCase();
  if ((lower.startsWith('__host-') || lower.startsWith('__secure-')) && !secure) {
    throw invalidOption(
      `createSessions: a cookie named ${name.slice(0, name.indexOf('-') + 1)}… needs \`cookie.secure\`; use a plain name for development over HTTP`,
    );
  }
  if (lower.startsWith('__host-') && (path !== '/' || domain !== undefined)) {
    throw invalidOption("createSessions: a __Host- cookie needs `path: '/'` and no `domain`");
  }
  const attributes = { httpOnly: true, secure, sameSite, path, domain } as const;
  try {
    serialize(name, 'x', attributes);
  } catch {
    throw invalidOption(
      'createSessions: `cookieName`, `cookie.path` or `cookie.domain` is not valid in a cookie',
    );
  }
  return attributes;
}
