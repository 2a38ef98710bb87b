import type { ServerResponse } from 'node:http';
import type { RateLimitStore } from './store.js';

/** Which answers give their request back to the count. */
export interface GiveBack {
  successful: boolean;
  failed: boolean;
}

/**
 * Once `res` is done, gives its request back to `store` when its answer is one the limiter
 * does not count: a success (status below 400) or a failure (400 and above, or a response
 * that never finished). A store that fails to decrement only leaves the request counted.
 */
export function giveBackWhenDone(
  res: ServerResponse,
  store: RateLimitStore,
  key: string,
  giveBack: GiveBack,
): void {
  const done = (): void => {
    const succeeded = res.writableFinished && res.statusCode < 400;
    if (succeeded ? !giveBack.successful : !giveBack.failed) return;
    try {
      const decremented = store.decrement?.(key);
      if (decremented !== undefined) decremented.catch(() => {});
    } catch {
      // the request stays counted
    }
  };
  // the client may have gone while an asynchronous store was counting
  if (res.closed) done();
  else res.once('close', done);
}
