/** Whether a value that may be a promise is one (a thenable): the fast paths stay synchronous otherwise. */
export function isPromiseLike<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}
