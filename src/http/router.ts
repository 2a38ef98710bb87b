import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Middleware, Next } from '../core/compose.js';
import { createContextKey, getContextValue, setContextValue } from '../core/context.js';
import { badRequest, methodNotAllowed, notFound } from '../core/errors.js';
import { send } from '../core/send.js';
import { invalidOption } from '../internal/options.js';
import { targetPath } from '../internal/target.js';

/**
 * Handlers by HTTP method for one path. `HEAD` falls back to `GET` (the body is left out,
 * the headers kept); `OPTIONS` falls back to `204` with `Allow`; other methods get `405`
 * with `Allow`.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-9 | RFC 9110 §9}
 */
export type MethodTable = Readonly<Partial<Record<string, Middleware>>>;

const METHOD = /^[A-Z]+$/;

/**
 * Serves one path by method: 405 with `Allow` for methods not in the table, HEAD served by
 * GET without a body, OPTIONS (not a CORS preflight, which `cors()` answers first) 204 with
 * `Allow`.
 *
 * @example
 * ```ts
 * const messages = methods({ GET: listMessages, POST: createMessage });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-9.3.2 | RFC 9110 §9.3.2} (HEAD)
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-9.3.7 | RFC 9110 §9.3.7} (OPTIONS)
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.5.6 | RFC 9110 §15.5.6}
 */
export function methods(table: MethodTable): Middleware {
  const handlers = new Map<string, Middleware>();
  for (const [name, handler] of Object.entries(table)) {
    if (!METHOD.test(name))
      throw invalidOption(`methods(): \`${name}\` is not an upper-case method`);
    if (typeof handler !== 'function') throw invalidOption(`methods(): ${name} needs a function`);
    handlers.set(name, handler);
  }
  if (!handlers.has('HEAD') && handlers.has('GET')) handlers.set('HEAD', handlers.get('GET')!);
  const allowList = [...new Set([...handlers.keys(), 'OPTIONS'])];
  const allow = allowList.join(', ');
  const options = handlers.get('OPTIONS');
  return function methodTable(req, res, next) {
    const handler = handlers.get(req.method ?? '');
    if (handler !== undefined) return handler(req, res, next);
    if (req.method === 'OPTIONS' && options === undefined) {
      send(res, 204, undefined, { Allow: allow });
      return;
    }
    throw methodNotAllowed(allowList, `${req.method} is not supported here; use ${allow}.`);
  };
}

const paramsKey = createContextKey<Readonly<Record<string, string>>>('params');
const EMPTY: Readonly<Record<string, string>> = Object.freeze({});

/**
 * The path parameters the router matched (`/api/messages/:id` → `{ id }`), percent-decoded.
 *
 * @example
 * ```ts
 * const { id } = getParams(req);
 * ```
 */
export function getParams(req: IncomingMessage): Readonly<Record<string, string>> {
  return getContextValue(req, paramsKey) ?? EMPTY;
}

/**
 * The request path without its query string. A request target in absolute form
 * (`GET http://host/api/messages`, RFC 9112 §3.2.2) gives its path (`/` when it has none);
 * `req.url` itself is left as it is.
 *
 * @example
 * ```ts
 * // GET /api/messages?limit=10, or GET http://api.example.com/api/messages?limit=10
 * getPathname(req); // '/api/messages'
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9112#section-3.2.2 | RFC 9112 §3.2.2}
 */
export function getPathname(req: IncomingMessage): string {
  return targetPath(req.url ?? '/');
}

interface ParamRoute {
  segments: readonly string[];
  names: readonly (string | undefined)[];
  handler: Middleware;
}

function toHandler(path: string, value: Middleware | MethodTable): Middleware {
  if (typeof value === 'function') return value;
  if (value !== null && typeof value === 'object') return methods(value);
  throw invalidOption(`createRouter(): route \`${path}\` needs a function or a method table`);
}

/**
 * A small path router: exact paths and `:name` segments, each served by a middleware or a
 * {@link MethodTable}. Paths that match nothing go on to `next()`; a known path with an
 * unsupported method is a 405 with `Allow`.
 *
 * @example
 * ```ts
 * const routes = createRouter({
 *   '/api/messages': { GET: list, POST: create },
 *   '/api/messages/:id': { GET: read, PUT: replace, PATCH: update, DELETE: remove },
 * });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.5.6 | RFC 9110 §15.5.6}
 */
export function createRouter(
  routes: Readonly<Record<string, Middleware | MethodTable>>,
): Middleware {
  const exact = new Map<string, Middleware>();
  const dynamic: ParamRoute[] = [];
  for (const [path, value] of Object.entries(routes)) {
    if (!path.startsWith('/')) throw invalidOption(`createRouter(): \`${path}\` must start with /`);
    const handler = toHandler(path, value);
    if (!path.includes('/:')) {
      exact.set(path, handler);
      continue;
    }
    const segments = path.split('/');
    dynamic.push({
      segments,
      names: segments.map((s) => (s.startsWith(':') ? s.slice(1) : undefined)),
      handler,
    });
  }
  return function router(req: IncomingMessage, res: ServerResponse, next: Next) {
    const pathname = getPathname(req);
    const handler = exact.get(pathname);
    if (handler !== undefined) return handler(req, res, next);
    if (dynamic.length === 0) return next();
    const parts = pathname.split('/');
    for (const route of dynamic) {
      if (route.segments.length !== parts.length) continue;
      let params: Record<string, string> | undefined;
      let matched = true;
      for (let i = 0; i < parts.length; i++) {
        const name = route.names[i];
        const part = parts[i]!;
        if (name === undefined) {
          if (part !== route.segments[i]) {
            matched = false;
            break;
          }
        } else {
          if (part === '') {
            matched = false;
            break;
          }
          params ??= {};
          params[name] = decodeSegment(part);
        }
      }
      if (matched) {
        setContextValue(req, paramsKey, params ?? EMPTY);
        return route.handler(req, res, next);
      }
    }
    return next();
  };
}

function decodeSegment(part: string): string {
  if (!part.includes('%')) return part;
  try {
    return decodeURIComponent(part);
  } catch {
    throw badRequest('The request path holds an invalid percent-encoding.', {
      code: 'ERR_INVALID_PATH',
    });
  }
}

/**
 * Runs `middleware` only for paths under `prefix` (`/api` covers `/api` and `/api/…`, not
 * `/apiary`); other requests go straight on.
 *
 * @example
 * ```ts
 * mount('/api', rateLimit({ limit: 100 }))
 * ```
 */
export function mount(prefix: string, middleware: Middleware): Middleware {
  if (!prefix.startsWith('/')) throw invalidOption('mount(): the prefix must start with /');
  if (prefix === '/') return middleware;
  const base = prefix.endsWith('/') ? prefix.slice(0, -1) : prefix;
  const withSlash = `${base}/`;
  return function mounted(req, res, next) {
    const pathname = getPathname(req);
    if (pathname === base || pathname.startsWith(withSlash)) return middleware(req, res, next);
    return next();
  };
}

/**
 * Ends a chain: every request that reaches it is a 404 problem. Put it last in Koa or any
 * host whose own "not found" answer is not a problem.
 *
 * @example
 * ```ts
 * app.use(toKoa([routes, notFoundHandler()]));
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.5.5 | RFC 9110 §15.5.5}
 */
export function notFoundHandler(detail = 'Nothing is served at this path.'): Middleware {
  return function notFoundMiddleware() {
    throw notFound(detail);
  };
}
