import type { RequestListener } from 'node:http';

/**
 * What a graceful shutdown waits for before it closes the hubs and the stores: the requests
 * being answered, and the work they start once answered (a new message's fan-out and its
 * webhook deliveries). Without it, a request in flight at SIGTERM would find Redis closed
 * (a 503) or its message would reach no other process and no webhook subscriber.
 */
export function createInFlight() {
  let requests = 0;
  const work = new Set<Promise<unknown>>();
  const waiters: (() => void)[] = [];
  const idle = () => requests === 0 && work.size === 0;
  const settle = () => {
    if (!idle()) return;
    for (const resolve of waiters.splice(0)) resolve();
  };
  return {
    /** `listener`, with each request counted until its response is closed. */
    track(listener: RequestListener): RequestListener {
      // one shared handler ('close' comes once per response): no closure per request
      const finished = () => {
        requests--;
        settle();
      };
      return (req, res) => {
        requests++;
        res.on('close', finished);
        listener(req, res);
      };
    },
    /** Counts `promise` (which must not reject) until it settles. */
    add(promise: Promise<unknown>): void {
      work.add(promise);
      promise.finally(() => {
        work.delete(promise);
        settle();
      });
    },
    /** Resolves once no request is being answered and no work is pending. */
    drained(): Promise<void> {
      if (idle()) return Promise.resolve();
      return new Promise((resolve) => {
        waiters.push(resolve);
      });
    },
  };
}
