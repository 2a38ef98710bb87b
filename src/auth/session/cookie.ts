import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseCookie, parseSetCookie, serialize } from 'cookie';
import { assertKnownOptions, booleanOption, invalidOption } from '../../internal/options.js';

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

const OWNER = 'createSessions()';
const COOKIE_OPTIONS = [
  'secure',
  'sameSite',
  'path',
  'domain',
] as const satisfies readonly (keyof SessionCookieOptions)[];

/** The validated attributes of the session cookie (`HttpOnly` always on). */
export interface CookieAttributes {
  readonly httpOnly: true;
  readonly secure: boolean;
  readonly sameSite: 'strict' | 'lax' | 'none';
  readonly path: string;
  readonly domain: string | undefined;
}

/** Validates the cookie attributes against the name's prefix rules (RFC 6265bis §4.1.3). */
export function cookieAttributes(
  name: unknown,
  cookie: SessionCookieOptions | undefined,
): CookieAttributes {
  if (cookie !== undefined && cookie !== null && 'httpOnly' in cookie) {
    throw invalidOption(`${OWNER}: \`cookie.httpOnly\` cannot be set; it is always on`);
  }
  assertKnownOptions(`${OWNER}: \`cookie\``, cookie, COOKIE_OPTIONS);
  const secure = booleanOption(OWNER, 'cookie.secure', cookie?.secure, true);
  const sameSite = cookie?.sameSite ?? 'strict';
  const path = cookie?.path ?? '/';
  const domain = cookie?.domain;
  if (sameSite !== 'strict' && sameSite !== 'lax' && sameSite !== 'none') {
    throw invalidOption(`${OWNER}: \`cookie.sameSite\` must be 'strict', 'lax' or 'none'`);
  }
  if (sameSite === 'none' && !secure) {
    throw invalidOption(`${OWNER}: \`cookie.sameSite: 'none'\` needs \`secure: true\``);
  }
  if (typeof path !== 'string' || !path.startsWith('/')) {
    throw invalidOption(`${OWNER}: \`cookie.path\` must start with '/'`);
  }
  if (typeof name !== 'string') throw invalidOption(`${OWNER}: \`cookieName\` must be a string`);
  const lower = name.toLowerCase();
  if ((lower.startsWith('__host-') || lower.startsWith('__secure-')) && !secure) {
    throw invalidOption(
      `${OWNER}: a cookie named ${name.slice(0, name.indexOf('-') + 1)}… needs \`cookie.secure\`; use a plain name for development over HTTP`,
    );
  }
  if (lower.startsWith('__host-') && (path !== '/' || domain !== undefined)) {
    throw invalidOption(`${OWNER}: a __Host- cookie needs \`path: '/'\` and no \`domain\``);
  }
  const attributes = { httpOnly: true, secure, sameSite, path, domain } as const;
  try {
    serialize(name, 'x', attributes);
  } catch {
    throw invalidOption(
      `${OWNER}: \`cookieName\`, \`cookie.path\` or \`cookie.domain\` is not valid in a cookie`,
    );
  }
  return attributes;
}

/** 32 random bytes in base64url, unpadded: the only shape a session id has. */
const ID_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/**
 * The session cookie of one `createSessions()`: reads the id a request carries, and sets or
 * clears the cookie on a response without disturbing the other cookies it sets.
 */
export class SessionCookie {
  readonly name: string;
  readonly #attributes: CookieAttributes;
  /** The `Set-Cookie` line that clears the cookie. */
  readonly clearLine: string;

  constructor(name: string, attributes: CookieAttributes) {
    this.name = name;
    this.#attributes = attributes;
    this.clearLine = serialize(name, '', { ...attributes, maxAge: 0 });
  }

  /** The id the request's cookie carries, `undefined` when absent, `false` when malformed. */
  read(req: IncomingMessage): string | false | undefined {
    const header = req.headers.cookie;
    if (header === undefined || header === '') return undefined;
    let value: string | undefined;
    try {
      value = parseCookie(header)[this.name];
    } catch {
      return false;
    }
    if (value === undefined) return undefined;
    return ID_SHAPE.test(value) ? value : false;
  }

  /** Sets the cookie to `id` for `maxAge` seconds. */
  set(res: ServerResponse, id: string, maxAge: number): void {
    this.#write(res, serialize(this.name, id, { ...this.#attributes, maxAge }));
  }

  /** Clears the cookie. */
  clear(res: ServerResponse): void {
    this.#write(res, this.clearLine);
  }

  /** Sets (or replaces, for the same name, path and domain) our cookie, keeping any other. */
  #write(res: ServerResponse, line: string): void {
    const existing = res.getHeader('Set-Cookie');
    const lines =
      existing === undefined ? [] : Array.isArray(existing) ? existing : [String(existing)];
    const { path, domain } = this.#attributes;
    const kept = lines.filter((other) => {
      const parsed = parseSetCookie(other);
      return !(parsed.name === this.name && parsed.path === path && parsed.domain === domain);
    });
    res.setHeader('Set-Cookie', [...kept, line]);
  }
}
