import type { IncomingMessage } from 'node:http';

/**
 * A typed slot for one per-request value (the authenticated principal, the request id,
 * route parameters…). Values live on the request object itself, so they are shared by
 * every framework that hands portico the same `IncomingMessage`.
 *
 * @example
 * ```ts
 * const tenantKey = createContextKey<string>('tenant');
 * setContextValue(req, tenantKey, 'acme');
 * getContextValue(req, tenantKey); // 'acme', typed string | undefined
 * ```
 */
export interface ContextKey<T> {
  /** Unique identity of the slot. */
  readonly id: symbol;
  /** A name for debugging. */
  readonly name: string;
  /** Phantom member carrying the value type; never set. */
  readonly __type?: T;
}

type WithContext = IncomingMessage & Record<symbol, unknown>;

/**
 * Creates a new typed per-request slot.
 *
 * @example
 * ```ts
 * const tenantKey = createContextKey<string>('tenant');
 * ```
 */
export function createContextKey<T>(name: string): ContextKey<T> {
  return Object.freeze({ id: Symbol(name), name });
}

/**
 * Stores `value` for this request under `key`. Values are symbol-keyed properties of the
 * request: invisible to `Object.keys`, `for…in` and `JSON.stringify`, and as fast to read as
 * any property.
 *
 * @example
 * ```ts
 * setContextValue(req, tenantKey, 'acme');
 * ```
 */
export function setContextValue<T>(req: IncomingMessage, key: ContextKey<T>, value: T): void {
  (req as WithContext)[key.id] = value;
}

/**
 * Reads the value stored for this request under `key`, if any.
 *
 * @example
 * ```ts
 * const tenant = getContextValue(req, tenantKey); // string | undefined
 * ```
 */
export function getContextValue<T>(req: IncomingMessage, key: ContextKey<T>): T | undefined {
  return (req as WithContext)[key.id] as T | undefined;
}

/**
 * The slot holding the request id that {@link getRequestId} returns.
 *
 * @example
 * ```ts
 * getContextValue(req, requestIdKey); // the same as getRequestId(req)
 * ```
 */
export const requestIdKey: ContextKey<string> = createContextKey<string>('requestId');

/**
 * The request id set by the `requestId()` middleware, if it ran.
 *
 * @example
 * ```ts
 * logger.info({ requestId: getRequestId(req) }, 'message created');
 * ```
 */
export function getRequestId(req: IncomingMessage): string | undefined {
  return getContextValue(req, requestIdKey);
}
