import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Middleware } from '../../core/compose.js';
import { methodNotAllowed } from '../../core/errors/errors.js';
import { send } from '../../core/send.js';
import { invalidOption } from '../../internal/options.js';

/**
 * Handlers by HTTP method for one path. `HEAD` falls back to `GET` (the body is left out,
 * the headers kept); `OPTIONS` falls back to `204` with `Allow`; other methods get `405`
 * with `Allow`.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-9 | RFC 9110 §9}
 */
export type MethodTable = Readonly<Partial<Record<string, Middleware>>>;

const METHOD = /^[A-Z]+$/;

/** A method table checked and completed: `HEAD` by `GET`, the `Allow` list. */
export interface CompiledMethods {
  /** The handler of each method served, `HEAD` included when `GET` is. */
  readonly handlers: ReadonlyMap<string, Middleware>;
  /** The methods served, `OPTIONS` always among them. */
  readonly allowList: readonly string[];
  /** `allowList` as an `Allow` value. */
  readonly allow: string;
}

/**
 * Checks a method table (`owner` names the caller in errors) and completes it.
 *
 * @example
 * ```ts
 * compileMethods('methods()', { GET: read }).allow; // 'GET, HEAD, OPTIONS'
 * ```
 */
export function compileMethods(owner: string, table: MethodTable): CompiledMethods {
  const handlers = new Map<string, Middleware>();
  for (const [name, handler] of Object.entries(table)) {
    if (!METHOD.test(name))
      throw invalidOption(`${owner}: \`${name}\` is not an upper-case method`);
    if (typeof handler !== 'function') throw invalidOption(`${owner}: ${name} needs a function`);
    handlers.set(name, handler);
  }
  if (!handlers.has('HEAD') && handlers.has('GET')) handlers.set('HEAD', handlers.get('GET')!);
  const allowList = Object.freeze([...new Set([...handlers.keys(), 'OPTIONS'])]);
  return { handlers, allowList, allow: allowList.join(', ') };
}

/**
 * What a method table does with a request whose method it has no handler for: `OPTIONS` is
 * answered 204 with `Allow` (returns `true`), any other method is a 405 problem with `Allow`
 * (thrown). Returns `false` when the method has a handler.
 *
 * @example
 * ```ts
 * if (answerOtherMethod(compiled, req, res)) return; // answered OPTIONS
 * ```
 */
export function answerOtherMethod(
  compiled: CompiledMethods,
  req: IncomingMessage,
  res: ServerResponse,
): boolean {
  const method = req.method ?? '';
  if (compiled.handlers.has(method)) return false;
  if (method === 'OPTIONS') {
    send(res, 204, undefined, { Allow: compiled.allow });
    return true;
  }
  throw methodNotAllowed(
    compiled.allowList,
    `${method} is not supported here; use ${compiled.allow}.`,
  );
}

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
  const compiled = compileMethods('methods()', table);
  return function methodTable(req, res, next) {
    const handler = compiled.handlers.get(req.method ?? '');
    if (handler !== undefined) return handler(req, res, next);
    answerOtherMethod(compiled, req, res);
  };
}
