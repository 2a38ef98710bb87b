import type { Middleware } from '../../core/compose.js';
import { badRequest } from '../../core/errors/errors.js';
import { invalidOption } from '../../internal/options.js';
import { type CompiledMethods, compileMethods, type MethodTable } from './methods.js';
import { canonicalPath } from './request-path.js';

/**
 * The route a router matched for a request, as `getRoute(req)` reads it once
 * `router.match` (or the router itself) has run.
 */
export interface RouteMatch {
  /** The route's pattern, as written in the table: `'/api/messages/:id'`. */
  readonly route: string;
  /** The path parameters, percent-decoded: `{ id: '42' }`. */
  readonly params: Readonly<Record<string, string>>;
  /**
   * The methods the route serves (its `Allow` list: `HEAD` with `GET`, and `OPTIONS`);
   * `undefined` for a route one middleware serves whatever the method.
   */
  readonly methods: readonly string[] | undefined;
}

/** One route of a table, compiled: its pattern, and its middleware or its methods. */
export interface CompiledRoute {
  /** The pattern as written (`/api/messages/:id`). */
  readonly pattern: string;
  /** The method table, compiled; `undefined` when one middleware serves every method. */
  readonly methods: CompiledMethods | undefined;
  /** The middleware, for a route that serves every method with one. */
  readonly handler: Middleware | undefined;
  /** The {@link RouteMatch} of an exact path, built once. */
  readonly exact: RouteMatch;
}

/** A path matched to a route, with its parameters percent-decoded. */
export interface PathMatch {
  readonly route: CompiledRoute;
  readonly params: Readonly<Record<string, string>>;
  /** What `getRoute(req)` gives for it. */
  readonly match: RouteMatch;
}

interface ParamRoute {
  readonly route: CompiledRoute;
  /** The pattern split at `/`. */
  readonly segments: readonly string[];
  /** The parameter name of each segment, `undefined` for a literal one. */
  readonly names: readonly (string | undefined)[];
}

const OWNER = 'createRouter()';
const EMPTY: Readonly<Record<string, string>> = Object.freeze({});

/**
 * The paths of a router, compiled once: exact paths in a `Map`, `:name` patterns in the
 * order given. {@link RouteTable.match} finds the route of a path.
 *
 * @example
 * ```ts
 * const table = new RouteTable({ '/api/messages/:id': { GET: read } });
 * table.match('/api/messages/42')?.params; // { id: '42' }
 * ```
 */
export class RouteTable {
  readonly #exact = new Map<string, CompiledRoute>();
  readonly #dynamic: ParamRoute[] = [];

  constructor(routes: Readonly<Record<string, Middleware | MethodTable>>) {
    if (typeof routes !== 'object' || routes === null) {
      throw invalidOption(`${OWNER}: give the routes as an object of paths`);
    }
    for (const [written, value] of Object.entries(routes)) {
      const pattern = patternOf(written);
      const route = compileRoute(written, value);
      if (!pattern.includes('/:')) {
        this.#exact.set(pattern, route);
        continue;
      }
      const segments = pattern.split('/');
      const names = segments.map((s) => (s.startsWith(':') ? s.slice(1) : undefined));
      const given = names.filter((n) => n !== undefined);
      if (given.some((n) => n === '') || new Set(given).size !== given.length) {
        throw invalidOption(`${OWNER}: \`${pattern}\` needs a distinct name after each :`);
      }
      this.#dynamic.push({ route, segments, names });
    }
  }

  /**
   * The route of `pathname`, or `undefined`: an exact path first, then the `:name` patterns
   * in the order given. Throws a 400 problem when a parameter's percent-encoding is invalid.
   */
  match(pathname: string): PathMatch | undefined {
    const exact = this.#exact.get(pathname);
    if (exact !== undefined) return { route: exact, params: EMPTY, match: exact.exact };
    if (this.#dynamic.length === 0) return undefined;
    const parts = pathname.split('/');
    for (const candidate of this.#dynamic) {
      if (candidate.segments.length !== parts.length) continue;
      const params = matchSegments(candidate, parts);
      if (params === undefined) continue;
      const { route } = candidate;
      return { route, params, match: { ...route.exact, params } };
    }
    return undefined;
  }
}

/** A route's path in the normal form requests are matched in (`/caf%c3%a9` → `/caf%C3%A9`). */
function patternOf(written: string): string {
  if (!written.startsWith('/')) throw invalidOption(`${OWNER}: \`${written}\` must start with /`);
  try {
    return canonicalPath(written);
  } catch {
    throw invalidOption(
      `${OWNER}: \`${written}\` is not a path requests can have (an encoded / or \\, a dot or empty segment, an invalid escape)`,
    );
  }
}

function compileRoute(pattern: string, value: Middleware | MethodTable): CompiledRoute {
  let methods: CompiledMethods | undefined;
  if (typeof value !== 'function') {
    if (value === null || typeof value !== 'object') {
      throw invalidOption(`${OWNER}: route \`${pattern}\` needs a function or a method table`);
    }
    methods = compileMethods(`${OWNER}: route \`${pattern}\``, value);
  }
  const exact = Object.freeze({ route: pattern, params: EMPTY, methods: methods?.allowList });
  return {
    pattern,
    methods,
    handler: methods === undefined ? (value as Middleware) : undefined,
    exact,
  };
}

/** The parameters of `parts` against one pattern, or `undefined` when it does not match. */
function matchSegments(
  candidate: ParamRoute,
  parts: readonly string[],
): Readonly<Record<string, string>> | undefined {
  let params: Record<string, string> | undefined;
  for (let i = 0; i < parts.length; i++) {
    const name = candidate.names[i];
    const part = parts[i]!;
    if (name === undefined) {
      if (part !== candidate.segments[i]) return undefined;
    } else {
      if (part === '') return undefined;
      params ??= {};
      params[name] = decodeSegment(part);
    }
  }
  return params ?? EMPTY;
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
