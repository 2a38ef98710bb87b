import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Middleware, Next } from '../core/compose.js';
import type { Duration } from '../core/duration.js';
import { isToken } from '../internal/grammar.js';
import { addHeadSegment, type HeadSegment, headSegment } from '../internal/head.js';
import { appendVary } from '../internal/headers.js';
import {
  assertKnownOptions,
  booleanOption,
  durationOption,
  invalidOption,
} from '../internal/options.js';
import { buildOriginMatcher, type OriginAllowlist } from './origin.js';

/**
 * The methods {@link cors} allows by default.
 *
 * @example
 * ```ts
 * cors({ origins: ['https://app.example.com'], methods: [...DEFAULT_CORS_METHODS, 'QUERY'] });
 * ```
 * @see {@link https://fetch.spec.whatwg.org/#http-cors-protocol | Fetch: the CORS protocol} (`Access-Control-Allow-Methods`)
 */
export const DEFAULT_CORS_METHODS: readonly string[] = Object.freeze([
  'GET',
  'HEAD',
  'PUT',
  'PATCH',
  'POST',
  'DELETE',
]);

/**
 * The request headers {@link cors} allows by default: credentials, the request id,
 * conditional requests, an event stream's `Last-Event-ID`, and the session and version
 * headers of the MCP Streamable HTTP transport, so browser MCP clients work without options.
 *
 * @example
 * ```ts
 * cors({
 *   origins: ['https://app.example.com'],
 *   allowedHeaders: [...DEFAULT_CORS_ALLOWED_HEADERS, 'X-Tenant'],
 * });
 * ```
 * @see {@link https://fetch.spec.whatwg.org/#http-cors-protocol | Fetch: the CORS protocol} (`Access-Control-Allow-Headers`)
 * @see {@link https://modelcontextprotocol.io/specification/2025-06-18/basic/transports#streamable-http | MCP: Streamable HTTP}
 */
export const DEFAULT_CORS_ALLOWED_HEADERS: readonly string[] = Object.freeze([
  'Authorization',
  'Content-Type',
  'X-API-Key',
  'X-Request-ID',
  'If-Match',
  'If-None-Match',
  'If-Modified-Since',
  'If-Unmodified-Since',
  'Last-Event-ID',
  'Mcp-Session-Id',
  'MCP-Protocol-Version',
]);

/**
 * The response headers {@link cors} exposes by default: the request id, the rate-limit
 * headers, those that creation, caching, throttling and authentication answers carry, and
 * the MCP session id a browser MCP client must send back. CORS-safelisted ones
 * (`Content-Type`, `Last-Modified`, …) are readable without it.
 *
 * @example
 * ```ts
 * cors({
 *   origins: ['https://app.example.com'],
 *   exposedHeaders: [...DEFAULT_CORS_EXPOSED_HEADERS, 'X-Total-Count'],
 * });
 * ```
 * @see {@link https://fetch.spec.whatwg.org/#http-cors-protocol | Fetch: the CORS protocol} (`Access-Control-Expose-Headers`)
 * @see {@link https://modelcontextprotocol.io/specification/2025-06-18/basic/transports#session-management | MCP: session management}
 */
export const DEFAULT_CORS_EXPOSED_HEADERS: readonly string[] = Object.freeze([
  'X-Request-ID',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'RateLimit',
  'RateLimit-Policy',
  'Retry-After',
  'Location',
  'ETag',
  'WWW-Authenticate',
  'Mcp-Session-Id',
]);

/**
 * Options of {@link cors}.
 *
 * @see {@link https://fetch.spec.whatwg.org/#http-cors-protocol | Fetch: the CORS protocol}
 */
export interface CorsOptions {
  /**
   * The origins allowed to read responses: `'*'`, a list of exact origins
   * (`'https://app.example.com'`, written as browsers send them) and/or RegExps matched
   * against the whole origin, or a (possibly async) function. The `null` origin is refused
   * unless `'null'` is listed. See {@link OriginAllowlist}.
   */
  origins: OriginAllowlist;
  /**
   * Whether browsers may send cookies and HTTP authentication and read the answer
   * (`Access-Control-Allow-Credentials: true`). Cannot be combined with `origins: '*'`.
   * @defaultValue `false`
   */
  credentials?: boolean;
  /**
   * Methods allowed in cross-origin requests (`Access-Control-Allow-Methods`).
   * @defaultValue {@link DEFAULT_CORS_METHODS}: `GET, HEAD, PUT, PATCH, POST, DELETE`
   */
  methods?: readonly string[];
  /**
   * Request headers allowed in cross-origin requests (`Access-Control-Allow-Headers`).
   * @defaultValue {@link DEFAULT_CORS_ALLOWED_HEADERS}: `Authorization, Content-Type,
   * X-API-Key, X-Request-ID, If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since,
   * Last-Event-ID, Mcp-Session-Id, MCP-Protocol-Version`
   */
  allowedHeaders?: readonly string[];
  /**
   * Response headers scripts may read (`Access-Control-Expose-Headers`), set on every
   * answer to an allowed origin, error answers included.
   * @defaultValue {@link DEFAULT_CORS_EXPOSED_HEADERS}: `X-Request-ID, X-RateLimit-Limit,
   * X-RateLimit-Remaining, X-RateLimit-Reset, RateLimit, RateLimit-Policy, Retry-After, Location, ETag,
   * WWW-Authenticate, Mcp-Session-Id`
   */
  exposedHeaders?: readonly string[];
  /**
   * How long browsers may cache a preflight answer, in milliseconds; written in whole
   * seconds (`Access-Control-Max-Age`, rounded down). Browsers cap it (Chromium at 2 hours).
   * @defaultValue `86_400_000` (24 hours)
   */
  maxAge?: Duration;
}

const KNOWN_OPTIONS = [
  'origins',
  'credentials',
  'methods',
  'allowedHeaders',
  'exposedHeaders',
  'maxAge',
] as const satisfies readonly (keyof CorsOptions)[];

const OWNER = 'cors()';

function tokenList(
  name: string,
  value: readonly string[] | undefined,
  fallback: readonly string[],
  credentials: boolean,
): string | undefined {
  if (value === undefined) return fallback.join(', ');
  if (!Array.isArray(value)) {
    throw invalidOption(
      `${OWNER}: \`${name}\` must be an array of names, e.g. ['${fallback[0]}'].`,
    );
  }
  for (const item of value as readonly unknown[]) {
    if (!isToken(item)) {
      throw invalidOption(
        `${OWNER}: \`${name}\` holds ${JSON.stringify(item)}, which is not a token.`,
      );
    }
    if (item === '*' && credentials) {
      throw invalidOption(
        `${OWNER}: \`${name}\` cannot use '*' with \`credentials: true\` (browsers take it literally); list the names.`,
      );
    }
  }
  return value.length === 0 ? undefined : value.join(', ');
}

/**
 * Whether a request is a CORS preflight: `OPTIONS` with `Origin` and
 * `Access-Control-Request-Method`.
 *
 * @example
 * ```ts
 * if (isPreflightRequest(req)) return sendNoContent(res);
 * ```
 * @see {@link https://fetch.spec.whatwg.org/#cors-preflight-request | Fetch: CORS-preflight request}
 */
export function isPreflightRequest(req: IncomingMessage): boolean {
  return (
    req.method === 'OPTIONS' &&
    req.headers.origin !== undefined &&
    req.headers['access-control-request-method'] !== undefined
  );
}

/**
 * Cross-origin resource sharing. A preflight is answered at once with 204: from an allowed
 * origin with `Access-Control-Allow-Origin` (that origin, or `*`), `-Allow-Methods`,
 * `-Allow-Headers`, `-Max-Age` and `-Allow-Credentials`; from any other origin without them,
 * so the browser blocks the call. Other requests go on; those from an allowed origin get
 * `Access-Control-Allow-Origin`, `-Allow-Credentials` and `-Expose-Headers` *before* the rest
 * of the chain runs, so error answers carry them too. Unless `origins` is `'*'`, every answer
 * gets `Vary: Origin` (appended), so shared caches keep each origin's answer apart.
 *
 * Options are checked once: unknown names (`maxage`) and misspelt origins
 * (`'http://localhost:5173/'`) throw a `TypeError` with a hint, and so does `origins: '*'`
 * with `credentials: true`.
 *
 * @example
 * ```ts
 * const app = compose([
 *   cors({ origins: ['https://app.example.com'], credentials: true }),
 *   routes,
 * ]);
 * ```
 * @see {@link https://fetch.spec.whatwg.org/#http-cors-protocol | Fetch: the CORS protocol}
 */
export function cors(options: CorsOptions): Middleware {
  assertKnownOptions(OWNER, options, KNOWN_OPTIONS);
  if (options === undefined || options === null || options.origins === undefined) {
    throw invalidOption(
      "cors(): `origins` is required: '*', a list such as ['https://app.example.com'], or a function.",
    );
  }
  const credentials = booleanOption(OWNER, 'credentials', options.credentials, false);
  const wildcard = options.origins === '*';
  if (wildcard && credentials) {
    throw invalidOption(
      "cors(): `origins: '*'` cannot be combined with `credentials: true`; list the origins allowed to send credentials.",
    );
  }
  const maxAge = durationOption(OWNER, 'maxAge', options.maxAge, 86_400_000);
  const allowMethods = tokenList('methods', options.methods, DEFAULT_CORS_METHODS, credentials);
  const allowHeaders = tokenList(
    'allowedHeaders',
    options.allowedHeaders,
    DEFAULT_CORS_ALLOWED_HEADERS,
    credentials,
  );
  const exposeHeaders = tokenList(
    'exposedHeaders',
    options.exposedHeaders,
    DEFAULT_CORS_EXPOSED_HEADERS,
    credentials,
  );
  const maxAgeValue = String(Math.floor(maxAge / 1000));
  const matches = buildOriginMatcher(OWNER, options.origins);
  const allowedLines = allowedOriginLines(credentials, exposeHeaders);

  const answerPreflight = (res: ServerResponse, allowOrigin: string | undefined): void => {
    if (allowOrigin !== undefined) {
      res.setHeader('Access-Control-Allow-Origin', allowOrigin);
      if (credentials) res.setHeader('Access-Control-Allow-Credentials', 'true');
      if (allowMethods !== undefined) res.setHeader('Access-Control-Allow-Methods', allowMethods);
      if (allowHeaders !== undefined) res.setHeader('Access-Control-Allow-Headers', allowHeaders);
      res.setHeader('Access-Control-Max-Age', maxAgeValue);
    }
    // 204 carries no Content-Length (RFC 9110 §8.6).
    res.statusCode = 204;
    res.end();
  };

  if (wildcard) {
    // The same answer for every origin (and none): no Vary (Fetch §3.2.5).
    return function corsAnyOrigin(req: IncomingMessage, res: ServerResponse, next: Next) {
      if (isPreflightRequest(req)) return answerPreflight(res, '*');
      addHeadSegment(res, allowedLines('*'));
      return next();
    };
  }

  const proceed = (
    req: IncomingMessage,
    res: ServerResponse,
    next: Next,
    origin: string,
    allowed: boolean,
  ): void | Promise<void> => {
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined) {
      appendVary(res, 'Access-Control-Request-Method');
      appendVary(res, 'Access-Control-Request-Headers');
      return answerPreflight(res, allowed ? origin : undefined);
    }
    if (allowed) addHeadSegment(res, allowedLines(origin));
    return next();
  };

  return function corsAllowlist(req: IncomingMessage, res: ServerResponse, next: Next) {
    // Vary even without Origin: a cached non-CORS answer must not serve a CORS request.
    appendVary(res, 'Origin');
    const origin = req.headers.origin;
    if (origin === undefined) return next();
    const allowed = matches(origin);
    if (typeof allowed === 'boolean') return proceed(req, res, next, origin, allowed);
    return allowed.then((ok) => proceed(req, res, next, origin, ok));
  };
}

/** How many allowed origins keep their lines made (a function or pattern may allow any). */
const KEPT_ORIGINS = 100;

/**
 * The lines of an answer to an allowed origin's request, made once per origin (for the first
 * {@link KEPT_ORIGINS} seen; past them, per request).
 */
function allowedOriginLines(
  credentials: boolean,
  exposeHeaders: string | undefined,
): (origin: string) => HeadSegment {
  const kept = new Map<string, HeadSegment>();
  return (origin) => {
    const known = kept.get(origin);
    if (known !== undefined) return known;
    const lines: [string, string][] = [['Access-Control-Allow-Origin', origin]];
    if (credentials) lines.push(['Access-Control-Allow-Credentials', 'true']);
    if (exposeHeaders !== undefined) lines.push(['Access-Control-Expose-Headers', exposeHeaders]);
    const segment = headSegment(lines);
    if (kept.size < KEPT_ORIGINS) kept.set(origin, segment);
    return segment;
  };
}
