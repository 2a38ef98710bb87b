import type { IncomingMessage, ServerResponse } from 'node:http';

/** Continues with the next middleware; resolves when the rest of the chain has run. */
export type Next = () => Promise<void>;

/**
 * The one building block of portico: a function over node's request and response that
 * either answers or calls `next()`. Throwing (or rejecting) an {@link HttpError} answers
 * with its problem.
 *
 * @example
 * ```ts
 * const hello: Middleware = (req, res) => sendJson(res, 200, { hello: 'world' });
 * ```
 */
export type Middleware = (
  req: IncomingMessage,
  res: ServerResponse,
  next: Next,
) => void | Promise<void>;

/** One settled promise for every step that finished synchronously: nothing allocated per step. */
const RESOLVED: Promise<void> = Promise.resolve();

const done: Next = () => RESOLVED;

/**
 * Runs middleware in order, each reaching the next through `next()`, and the chain's own
 * `next` after the last. Calling `next()` twice from one middleware is an error.
 *
 * @example
 * ```ts
 * const app = compose([requestId(), securityHeaders(), cors({ origins }), routes]);
 * http.createServer(toNodeListener(app));
 * ```
 */
export function compose(middleware: readonly Middleware[]): Middleware {
  for (const fn of middleware) {
    if (typeof fn !== 'function') throw new TypeError('compose() takes an array of functions');
  }
  const stack = middleware.slice();
  if (stack.length === 1) return stack[0]!;
  return function composed(req, res, next = done) {
    let index = -1;
    const dispatch = (i: number): Promise<void> => {
      if (i <= index) return Promise.reject(new Error('next() called more than once'));
      index = i;
      const fn = i === stack.length ? next : stack[i];
      if (fn === undefined) return RESOLVED;
      try {
        const result =
          i === stack.length ? (fn as Next)() : (fn as Middleware)(req, res, () => dispatch(i + 1));
        return result instanceof Promise ? result : RESOLVED;
      } catch (err) {
        return Promise.reject(err);
      }
    };
    return dispatch(0);
  };
}
