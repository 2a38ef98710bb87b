import type { Middleware } from '../core/compose.js';
import type { Duration } from '../core/duration.js';
import { QUOTABLE } from '../internal/grammar.js';
import { addHeadSegment, headSegment, setHeadLine } from '../internal/head.js';
import {
  assertKnownOptions,
  booleanOption,
  durationOption,
  invalidOption,
} from '../internal/options.js';
import { createProxyTrust, type TrustProxy } from './proxy.js';

/**
 * Options of the `Strict-Transport-Security` header.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc6797#section-6.1 | RFC 6797 §6.1}
 */
export interface StrictTransportSecurityOptions {
  /**
   * How long the browser keeps to HTTPS only, in milliseconds; written in whole seconds
   * (`max-age`, rounded down).
   * @defaultValue `31_536_000_000` (365 days)
   */
  maxAge?: Duration;
  /** Whether subdomains are covered too. @defaultValue `true` */
  includeSubDomains?: boolean;
  /**
   * Ask to be put on the browsers' preload lists; needs `includeSubDomains` and a `maxAge`
   * of at least a year (`31_536_000_000`).
   * @defaultValue `false`
   */
  preload?: boolean;
}

/**
 * Options of {@link securityHeaders}. Every header can be set to `false` to leave it out.
 *
 * @see {@link https://owasp.org/www-project-secure-headers/ | OWASP Secure Headers Project}
 */
export interface SecurityHeadersOptions {
  /**
   * `Content-Security-Policy`. The default forbids everything, which suits a JSON API;
   * pages need their own policy.
   * @defaultValue `"default-src 'none'; frame-ancestors 'none'"`
   */
  contentSecurityPolicy?: string | false;
  /**
   * `Strict-Transport-Security`, sent only on requests that arrived over HTTPS (own TLS or a
   * trusted proxy's `X-Forwarded-Proto: https`), as RFC 6797 §7.2 demands.
   * @defaultValue `{ maxAge: 31_536_000_000, includeSubDomains: true, preload: false }`
   */
  strictTransportSecurity?: StrictTransportSecurityOptions | false;
  /** `X-Content-Type-Options: nosniff`. @defaultValue `true` */
  xContentTypeOptions?: boolean;
  /** `X-Frame-Options`. @defaultValue `'DENY'` */
  xFrameOptions?: 'DENY' | 'SAMEORIGIN' | false;
  /**
   * `Permissions-Policy`.
   * @defaultValue `"camera=(), microphone=(), geolocation=(), payment=(), usb=()"`
   */
  permissionsPolicy?: string | false;
  /** `Referrer-Policy`: one policy or a comma-separated fallback list. @defaultValue `'no-referrer'` */
  referrerPolicy?: string | false;
  /**
   * `Cross-Origin-Opener-Policy`, e.g. `'same-origin'`. It isolates *documents* from
   * cross-origin openers, so it is off for APIs and worth turning on for HTML pages.
   * @defaultValue `false`
   */
  crossOriginOpenerPolicy?: string | false;
  /**
   * Which proxies may say the request came over HTTPS (`X-Forwarded-Proto`), for HSTS.
   * @defaultValue `false` (only the server's own TLS counts)
   */
  trustProxy?: TrustProxy;
}

/**
 * The default `Content-Security-Policy`, for APIs: nothing may load, nothing may frame.
 *
 * @example
 * ```ts
 * securityHeaders({ contentSecurityPolicy: `${API_CONTENT_SECURITY_POLICY}; report-to csp` });
 * ```
 * @see {@link https://www.w3.org/TR/CSP3/ | CSP Level 3}
 */
export const API_CONTENT_SECURITY_POLICY = "default-src 'none'; frame-ancestors 'none'";

const DEFAULT_PERMISSIONS_POLICY = 'camera=(), microphone=(), geolocation=(), payment=(), usb=()';

const KNOWN = [
  'contentSecurityPolicy',
  'strictTransportSecurity',
  'xContentTypeOptions',
  'xFrameOptions',
  'permissionsPolicy',
  'referrerPolicy',
  'crossOriginOpenerPolicy',
  'trustProxy',
] as const satisfies readonly (keyof SecurityHeadersOptions)[];

const KNOWN_HSTS = [
  'maxAge',
  'includeSubDomains',
  'preload',
] as const satisfies readonly (keyof StrictTransportSecurityOptions)[];

const OWNER = 'securityHeaders()';

/** A year, in milliseconds: the default HSTS `maxAge`, and the least the preload lists take. */
const YEAR_MS = 31_536_000_000;

const REFERRER_POLICIES = new Set([
  'no-referrer',
  'no-referrer-when-downgrade',
  'origin',
  'origin-when-cross-origin',
  'same-origin',
  'strict-origin',
  'strict-origin-when-cross-origin',
  'unsafe-url',
]);

const OPENER_POLICIES = new Set([
  'unsafe-none',
  'same-origin-allow-popups',
  'same-origin',
  'noopener-allow-popups',
]);

/** A header value: visible ASCII, spaces, tabs and obs-text; no CR, LF or other controls. */
function headerValue(name: string, value: unknown): string | undefined {
  if (value === false) return undefined;
  if (typeof value !== 'string' || value.trim() === '') {
    throw invalidOption(`${OWNER}: \`${name}\` must be a non-empty string or false`);
  }
  if (!QUOTABLE.test(value)) {
    throw invalidOption(`${OWNER}: \`${name}\` must not contain CR, LF or control characters`);
  }
  return value.trim();
}

function hstsValue(option: StrictTransportSecurityOptions | false | undefined): string | undefined {
  if (option === false) return undefined;
  const o = option ?? {};
  if (typeof o !== 'object' || o === null) {
    throw invalidOption(`${OWNER}: \`strictTransportSecurity\` must be an object or false`);
  }
  assertKnownOptions(`${OWNER}: strictTransportSecurity`, o, KNOWN_HSTS);
  const maxAge = durationOption(OWNER, 'strictTransportSecurity.maxAge', o.maxAge, YEAR_MS);
  const includeSubDomains = booleanOption(
    OWNER,
    'strictTransportSecurity.includeSubDomains',
    o.includeSubDomains,
    true,
  );
  const preload = booleanOption(OWNER, 'strictTransportSecurity.preload', o.preload, false);
  if (preload && (!includeSubDomains || maxAge < YEAR_MS)) {
    throw invalidOption(
      `${OWNER}: \`strictTransportSecurity.preload\` needs \`includeSubDomains\` and a \`maxAge\` of at least 31_536_000_000 (a year)`,
    );
  }
  return `max-age=${Math.floor(maxAge / 1000)}${includeSubDomains ? '; includeSubDomains' : ''}${preload ? '; preload' : ''}`;
}

/** Validates a policy token; `list` allows a comma-separated fallback list (Referrer-Policy). */
function policyValue(
  name: string,
  value: unknown,
  allowed: ReadonlySet<string>,
  list: boolean,
): string | undefined {
  const text = headerValue(name, value);
  if (text === undefined) return undefined;
  const semi = text.indexOf(';'); // parameters such as `report-to` are kept as given
  const head = list || semi === -1 ? text : text.slice(0, semi);
  const tokens = (list ? head.split(',') : [head]).map((t) => t.trim().toLowerCase());
  for (const token of tokens) {
    if (!allowed.has(token)) {
      throw invalidOption(
        `${OWNER}: \`${name}\` must be one of ${[...allowed].join(', ')} (or false)`,
      );
    }
  }
  return list || semi === -1 ? tokens.join(', ') : tokens[0] + text.slice(semi);
}

/**
 * Sets the security headers a service should send on every answer: a Content Security
 * Policy, HSTS (over HTTPS only), `nosniff`, frame denial, a Permissions Policy, a referrer
 * policy and a cross-origin opener policy. It also removes `X-Powered-By`, which Express
 * sets on every answer (as helmet does; `app.disable('x-powered-by')` is no longer needed).
 * Options are validated and the header values computed once, here; the headers are set
 * before the rest of the chain runs, so a handler can still override one with
 * `res.setHeader` (a page that needs another CSP) or drop it with `res.removeHeader`.
 *
 * @example
 * ```ts
 * const app = compose([
 *   securityHeaders({ trustProxy: 'loopback', xFrameOptions: 'SAMEORIGIN' }),
 *   routes,
 * ]);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6797 | RFC 6797} (HSTS)
 * @see {@link https://www.w3.org/TR/CSP3/ | CSP Level 3}
 * @see {@link https://www.w3.org/TR/permissions-policy/ | Permissions Policy}
 * @see {@link https://www.w3.org/TR/referrer-policy/ | Referrer Policy}
 * @see {@link https://html.spec.whatwg.org/multipage/browsers.html#cross-origin-opener-policies | HTML: Cross-origin opener policies}
 */
export function securityHeaders(options: SecurityHeadersOptions = {}): Middleware {
  assertKnownOptions(OWNER, options, KNOWN);
  options ??= {};
  const headers: [string, string][] = [];
  const add = (name: string, value: string | undefined) => {
    if (value !== undefined) headers.push([name, value]);
  };
  add(
    'Content-Security-Policy',
    headerValue(
      'contentSecurityPolicy',
      options.contentSecurityPolicy ?? API_CONTENT_SECURITY_POLICY,
    ),
  );
  if (booleanOption(OWNER, 'xContentTypeOptions', options.xContentTypeOptions, true)) {
    add('X-Content-Type-Options', 'nosniff');
  }
  const frame = options.xFrameOptions ?? 'DENY';
  if (frame !== false) {
    const upper = typeof frame === 'string' ? frame.toUpperCase() : '';
    if (upper !== 'DENY' && upper !== 'SAMEORIGIN') {
      throw invalidOption(`${OWNER}: \`xFrameOptions\` must be 'DENY', 'SAMEORIGIN' or false`);
    }
    add('X-Frame-Options', upper);
  }
  add(
    'Permissions-Policy',
    headerValue('permissionsPolicy', options.permissionsPolicy ?? DEFAULT_PERMISSIONS_POLICY),
  );
  add(
    'Referrer-Policy',
    policyValue('referrerPolicy', options.referrerPolicy ?? 'no-referrer', REFERRER_POLICIES, true),
  );
  add(
    'Cross-Origin-Opener-Policy',
    policyValue(
      'crossOriginOpenerPolicy',
      options.crossOriginOpenerPolicy ?? false,
      OPENER_POLICIES,
      false,
    ),
  );
  const hsts = hstsValue(options.strictTransportSecurity);
  const trust = createProxyTrust(options.trustProxy ?? false);
  // the lines, validated and frozen once: added to the response's head in one go
  const segment = headSegment(headers);

  return function securityHeadersMiddleware(req, res, next) {
    // Express sets `X-Powered-By: Express` before any middleware: it only tells attackers
    // what runs here (helmet removes it too)
    if (res.hasHeader('X-Powered-By')) res.removeHeader('X-Powered-By');
    addHeadSegment(res, segment);
    if (hsts !== undefined && trust.isSecure(req)) {
      setHeadLine(res, 'Strict-Transport-Security', 'strict-transport-security', hsts);
    }
    return next();
  };
}
