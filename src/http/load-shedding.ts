// Load shedding: while the process is overloaded (its event loop late, its heap full, too many
// requests in flight), new requests are answered 503 with `Retry-After` before any work, so
// that the ones already taken finish and the process recovers instead of falling over.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Middleware } from '../core/compose.js';
import type { Duration } from '../core/duration.js';
import { serviceUnavailable } from '../core/errors/errors.js';
import { assertKnownOptions, countOption, durationOption } from '../internal/options.js';

/** Options of {@link shedLoad}. Every duration is in milliseconds. */
export interface LoadSheddingOptions {
  /**
   * The event-loop delay past which the process counts as overloaded, in milliseconds: the
   * longest delay seen in the last `sampleInterval`.
   * @defaultValue `1_000` (1 second)
   */
  maxEventLoopDelay?: Duration;
  /** Heap in use (bytes) past which the process counts as overloaded. @defaultValue none */
  maxHeapUsedBytes?: number;
  /** Requests in flight through this middleware past which new ones are refused. @defaultValue none */
  maxInFlight?: number;
  /**
   * When refused clients should come back, in milliseconds (`Retry-After`, whole seconds).
   * @defaultValue `10_000` (10 seconds)
   */
  retryAfter?: Duration;
  /**
   * How often the load is sampled, in milliseconds; the event loop's delay is measured
   * between samples with `perf_hooks.monitorEventLoopDelay`.
   * @defaultValue `500`
   */
  sampleInterval?: Duration;
}

/** What {@link shedLoad} measured last. */
export interface LoadSample {
  /** The longest event-loop delay of the last interval, in milliseconds. */
  eventLoopDelay: number;
  /** Heap in use, in bytes (measured only with `maxHeapUsedBytes`). */
  heapUsed: number | undefined;
  /** Requests in flight through the middleware now. */
  inFlight: number;
}

/** The middleware of {@link shedLoad}, with what it measures. */
export interface LoadShedder extends Middleware {
  /** Whether new requests are refused now (as of the last sample, or `maxInFlight`). */
  readonly overloaded: boolean;
  /** The last sample. */
  sample(): LoadSample;
  /** Stops sampling (the timer is `unref`ed: it never keeps the process alive anyway). */
  close(): void;
}

const OPTIONS = [
  'maxEventLoopDelay',
  'maxHeapUsedBytes',
  'maxInFlight',
  'retryAfter',
  'sampleInterval',
] as const satisfies readonly (keyof LoadSheddingOptions)[];
const OWNER = 'shedLoad()';

/**
 * Refuses new requests while the process is overloaded: 503 with `Retry-After` and a problem
 * (`ERR_OVERLOADED`), answered before any later middleware runs (no body is read, no store
 * asked). Overloaded means the event loop was late by more than `maxEventLoopDelay` in the
 * last `sampleInterval` (a sample of `perf_hooks.monitorEventLoopDelay`, and of the sampling
 * timer's own lateness), or the heap past `maxHeapUsedBytes`, or more than `maxInFlight`
 * requests in flight through it. After a blocked loop, the requests queued behind the block
 * are answered 503 at once, and the process takes new ones again at the first sample that
 * finds it well. Give it to a WebSocket upgrade's `middleware` and to event-stream routes
 * too: a refused handshake gets the 503, no 101.
 *
 * @example
 * ```ts
 * const shed = shedLoad({ maxEventLoopDelay: 1_000, maxInFlight: 5_000 });
 * const app = toNodeListener([mount('/api', shed), router]);
 * // on shutdown
 * shed.close();
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.6.4 | RFC 9110 §15.6.4}
 */
export function shedLoad(options: LoadSheddingOptions = {}): LoadShedder {
  assertKnownOptions(OWNER, options, OPTIONS);
  const maxDelay = durationOption(OWNER, 'maxEventLoopDelay', options.maxEventLoopDelay, 1_000, {
    min: 1,
    floor: 10,
  });
  const interval = durationOption(OWNER, 'sampleInterval', options.sampleInterval, 500, {
    min: 10,
    floor: 10,
  });
  const retryAfter = durationOption(OWNER, 'retryAfter', options.retryAfter, 10_000);
  const maxHeap =
    options.maxHeapUsedBytes === undefined
      ? undefined
      : countOption(OWNER, 'maxHeapUsedBytes', options.maxHeapUsedBytes, 0, { min: 1 });
  const maxInFlight =
    options.maxInFlight === undefined
      ? undefined
      : countOption(OWNER, 'maxInFlight', options.maxInFlight, 0, { min: 1 });
  const refusal = serviceUnavailable(retryAfter / 1000, 'The service is overloaded.', {
    code: 'ERR_OVERLOADED',
  });

  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  let last: LoadSample = { eventLoopDelay: 0, heapUsed: undefined, inFlight: 0 };
  let overloaded = false;
  let inFlight = 0;
  let expected = Date.now() + interval;

  const timer = setInterval(() => {
    const now = Date.now();
    // the timer's own lateness catches a block the histogram has not folded in yet
    const late = Math.max(0, now - expected);
    expected = now + interval;
    const delay = Math.max(late, histogram.max / 1e6 - 10);
    histogram.reset();
    const heapUsed = maxHeap === undefined ? undefined : process.memoryUsage().heapUsed;
    last = { eventLoopDelay: Math.max(0, delay), heapUsed, inFlight };
    overloaded = delay > maxDelay || (heapUsed !== undefined && heapUsed > (maxHeap as number));
  }, interval);
  timer.unref();

  const done = () => {
    inFlight--;
  };
  const middleware: Middleware = function loadShedding(_req, res, next) {
    if (overloaded || (maxInFlight !== undefined && inFlight >= maxInFlight)) throw refusal;
    inFlight++;
    res.once('close', done);
    return next();
  };
  return Object.defineProperties(middleware, {
    overloaded: {
      get: () => overloaded || (maxInFlight !== undefined && inFlight >= maxInFlight),
      enumerable: true,
    },
    sample: { value: () => ({ ...last, inFlight }) },
    close: {
      value() {
        clearInterval(timer);
        histogram.disable();
      },
    },
  }) as LoadShedder;
}
