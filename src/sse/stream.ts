import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import {
  bindToCredential,
  type CredentialEnd,
  type Revocations,
  revocationsOption,
} from '../auth/revocations.js';
import type { Duration } from '../core/duration.js';
import { methodNotAllowed } from '../core/errors/errors.js';
import { getPrincipal } from '../core/principal.js';
import { published, type SseEndedMessage, type SseOpenedMessage } from '../diagnostics/channels.js';
import {
  assertKnownOptions,
  countOption,
  durationOption,
  invalidOption,
} from '../internal/options.js';
import { connectionCap, MAX_TIMER_DELAY } from '../realtime/connection-options.js';
import { PrincipalConnections } from '../realtime/principal-connections.js';
import { formatComment, formatEvent, type ServerSentEvent } from './format.js';

export { type LastEventIdOptions, lastEventId } from './last-event-id.js';

/**
 * The media type of an event stream.
 *
 * @example
 * ```ts
 * res.writeHead(200, { 'Content-Type': EVENT_STREAM_TYPE, 'Cache-Control': 'no-store' });
 * ```
 * @see {@link https://html.spec.whatwg.org/multipage/server-sent-events.html | HTML: Server-sent events}
 */
export const EVENT_STREAM_TYPE = 'text/event-stream; charset=utf-8';

/**
 * Options of {@link createEventStream}.
 *
 * @see {@link https://html.spec.whatwg.org/multipage/server-sent-events.html | HTML: Server-sent events}
 */
export interface EventStreamOptions {
  /**
   * Reconnection time sent in a first `retry:` line, in milliseconds; `false` sends none.
   * @defaultValue `3_000` (3 seconds)
   */
  retry?: Duration | false;
  /**
   * Spread of the `retry` hint, as a fraction: each stream gets `retry` ± up to this much,
   * so that clients cut off together do not all come back in the same instant.
   * @defaultValue `0.2`
   */
  retryJitter?: number;
  /**
   * Time between comment heartbeats, which keep proxies and load balancers from closing an
   * idle stream, in milliseconds; `0` sends none.
   * @defaultValue `15_000` (15 seconds)
   */
  heartbeat?: Duration;
  /**
   * How many events may wait while the client is not reading (after `res.write()` returned
   * `false`, until `'drain'`); one more and the stream is closed as a slow consumer.
   * @defaultValue `1_000`
   */
  maxQueue?: number;
  /**
   * How many bytes of events may wait while the client is not reading; past it the stream
   * is closed as a slow consumer.
   * @defaultValue `1_048_576` (1 MiB)
   */
  maxQueueBytes?: number;
  /**
   * JSON-encode `data`; with `false` it must be a string (see `formatEvent`).
   * @defaultValue `true`
   */
  json?: boolean;
  /**
   * Further response headers (e.g. `Vary`); the event-stream headers always win.
   * @defaultValue none
   */
  headers?: OutgoingHttpHeaders;
  /**
   * Where the end of the request's credential is heard. A stream whose request carries a
   * principal (`getPrincipal(req)`, set by `authenticate()`) is bound to its credential: when
   * one of its `credentialIds` is revoked (an API key deleted, a session signed out, a grant
   * revoked) or its `expiresAt` passes, the stream writes
   * `event: credential-ended` / `data: {"reason":"revoked"}` (or `"expired"`) and ends, at
   * once: nothing published afterwards is written. Give the service's cross-process bus.
   * @defaultValue `processRevocations()`, this process
   */
  revocations?: Revocations;
  /**
   * The most event streams one principal (`getPrincipal(req).sub`) may hold open in this
   * process at once; one more is refused with a 429 problem (`Retry-After`) before any
   * header is written. Streams without a principal are not counted against it.
   * @defaultValue none: no cap
   */
  maxConnectionsPerPrincipal?: number;
}

/**
 * Why a stream ended: the client went away (`client`), {@link EventStream.close} was called
 * (`server`), the client did not read fast enough (`slow-consumer`), the response
 * failed (`error`), or the credential it was opened with was revoked (`credential-revoked`)
 * or expired (`credential-expired`).
 */
export type EventStreamCloseReason =
  | 'client'
  | 'server'
  | 'slow-consumer'
  | 'error'
  | 'credential-revoked'
  | 'credential-expired';

/**
 * An open `text/event-stream` response, from {@link createEventStream}.
 *
 * @see {@link https://html.spec.whatwg.org/multipage/server-sent-events.html | HTML: Server-sent events}
 */
export interface EventStream {
  /**
   * Sends one event. Returns `true` when written or queued, `false` once the stream is
   * closed (a no-op then). Throws a `TypeError` for an invalid event.
   */
  send(event: ServerSentEvent): boolean;
  /** Sends a comment, which clients ignore; same return value as {@link EventStream.send}. */
  comment(text?: string): boolean;
  /** Ends the response and releases everything (reason `server`). Idempotent. */
  close(): void;
  /** Whether the stream has ended, for whatever reason. */
  readonly closed: boolean;
  /** The reason the stream ended, once it has. */
  readonly closeReason: EventStreamCloseReason | undefined;
  /** Calls `listener` once when the stream ends (at once if it already has). */
  onClose(listener: (reason: EventStreamCloseReason) => void): void;
}

/** The option names of {@link createEventStream}. @internal */
export const EVENT_STREAM_OPTIONS = [
  'retry',
  'retryJitter',
  'heartbeat',
  'maxQueue',
  'maxQueueBytes',
  'json',
  'headers',
  'revocations',
  'maxConnectionsPerPrincipal',
] as const satisfies readonly (keyof EventStreamOptions)[];

let open = 0;
/** The event streams each principal holds open in this process. */
const byPrincipal = new PrincipalConnections();

function noop(): void {}

/** The last event of a stream whose credential ended. */
const credentialEnded = (reason: CredentialEnd) =>
  formatEvent({ event: 'credential-ended', data: { reason } });

/**
 * Writes an already formatted event (what `formatEvent` returns) to a stream: how
 * `streamChannel` sends one formatting of a hub message to every stream.
 * @internal
 */
export const WRITE_FORMATTED: unique symbol = Symbol('portico.sse.writeFormatted');

/** An {@link EventStream} with its internal prepared-write method. */
export type PreparedEventStream = EventStream & {
  [WRITE_FORMATTED](chunk: string): boolean;
};

/**
 * How many event streams are open in this process (heartbeat timer and listeners still
 * held). For leak tests.
 * @internal
 */
export function countOpenEventStreams(): number {
  return open;
}

const OWNER = 'createEventStream()';

/** `retryJitter`: a fraction from 0 to 1. */
function jitterOption(value: unknown): number {
  if (value === undefined) return 0.2;
  if (typeof value !== 'number' || !(value >= 0 && value <= 1)) {
    throw invalidOption(`${OWNER}: \`retryJitter\` must be a number from 0 to 1`);
  }
  return value;
}

function jittered(retry: number, jitter: number): number {
  return Math.max(0, Math.round(retry * (1 + (Math.random() * 2 - 1) * jitter)));
}

/**
 * Answers `res` with a `text/event-stream` and returns its writer. The headers
 * (`Content-Type: text/event-stream; charset=utf-8`, `Cache-Control: no-cache, no-transform`
 * so compression leaves it alone, `X-Accel-Buffering: no` for nginx) are flushed at once,
 * followed by a jittered `retry:` hint. Comment heartbeats run on an unref'd timer. When
 * `res.write()` returns `false`, events queue up to `maxQueue` / `maxQueueBytes` until
 * `'drain'`; past that the slow client is dropped. When the client goes away, the timer
 * and every listener are released and {@link EventStream.onClose} listeners run.
 *
 * A stream opened by an authenticated request (`getPrincipal(req)`) ends with its credential:
 * revoked or expired, it writes `event: credential-ended` and ends (see
 * {@link EventStreamOptions.revocations}); `maxConnectionsPerPrincipal` caps how many one
 * principal holds open (a 429 problem is thrown beyond it, before any header is written).
 *
 * @example
 * ```ts
 * const events: Middleware = (req, res) => {
 *   const stream = createEventStream(req, res, { heartbeat: 15_000 });
 *   const off = bus.subscribe((message) => stream.send({ id: message.id, data: message }));
 *   stream.onClose(off);
 * };
 * ```
 * @see {@link https://html.spec.whatwg.org/multipage/server-sent-events.html | HTML: Server-sent events}
 */
export function createEventStream(
  req: IncomingMessage,
  res: ServerResponse,
  options: EventStreamOptions = {},
): EventStream {
  assertKnownOptions(OWNER, options, EVENT_STREAM_OPTIONS);
  const retry =
    options.retry === false ? false : durationOption(OWNER, 'retry', options.retry, 3_000);
  const jitter = jitterOption(options.retryJitter);
  const heartbeat = durationOption(OWNER, 'heartbeat', options.heartbeat, 15_000, {
    max: MAX_TIMER_DELAY,
  });
  const maxQueue = countOption(OWNER, 'maxQueue', options.maxQueue, 1_000, { min: 0 });
  const maxQueueBytes = countOption(OWNER, 'maxQueueBytes', options.maxQueueBytes, 1_048_576, {
    min: 0,
  });
  const format = { json: options.json !== false };
  const cap = connectionCap(OWNER, options.maxConnectionsPerPrincipal);
  const revocations = revocationsOption(OWNER, options.revocations);
  if (res.headersSent) throw new Error(`${OWNER}: the response headers were already sent`);
  // an event stream answers GET (and HEAD, whose body node never sends); a POST or any other
  // method is told which ones it may use, before anything is written
  if (req.method !== undefined && req.method !== 'GET' && req.method !== 'HEAD') {
    throw methodNotAllowed(['GET', 'HEAD'], 'An event stream is read with GET.');
  }
  const principal = getPrincipal(req);
  const releaseSlot = principal === undefined ? noop : byPrincipal.claim(principal.sub, cap);
  let unbind = noop;

  let closeReason: EventStreamCloseReason | undefined;
  const opened = performance.now();
  let congested = false;
  const queue: string[] = [];
  let queuedBytes = 0;
  const listeners: ((reason: EventStreamCloseReason) => void)[] = [];
  let timer: NodeJS.Timeout | undefined;

  const release = (reason: EventStreamCloseReason) => {
    if (closeReason !== undefined) return;
    closeReason = reason;
    open--;
    unbind();
    releaseSlot();
    if (timer !== undefined) clearInterval(timer);
    timer = undefined;
    queue.length = 0;
    queuedBytes = 0;
    res.off('close', onGone);
    res.off('drain', onDrain);
    res.off('error', onError);
    req.off('error', onError);
    for (const listener of listeners.splice(0)) notify(listener, reason);
    if (published.sseEnded.hasSubscribers) {
      const durationMs = Math.round(performance.now() - opened);
      published.sseEnded.publish({ req, reason, durationMs } satisfies SseEndedMessage);
    }
  };
  const onGone = () => release('client');
  const onError = () => {
    release('error');
    res.destroy();
  };
  const onDrain = () => {
    congested = false;
    while (queue.length > 0 && !congested) {
      const chunk = queue.shift() as string;
      queuedBytes -= Buffer.byteLength(chunk);
      congested = !res.write(chunk);
    }
  };
  /** Ends the stream with its last event, at once: nothing queued or published later goes out. */
  const endForCredential = (reason: CredentialEnd) => {
    if (closeReason !== undefined) return;
    release(reason === 'revoked' ? 'credential-revoked' : 'credential-expired');
    res.end(credentialEnded(reason));
  };
  const write = (chunk: string): boolean => {
    if (closeReason !== undefined) return false;
    if (!congested) {
      congested = !res.write(chunk);
      return true;
    }
    const bytes = Buffer.byteLength(chunk);
    if (queue.length + 1 > maxQueue || queuedBytes + bytes > maxQueueBytes) {
      release('slow-consumer');
      res.destroy();
      return false;
    }
    queue.push(chunk);
    queuedBytes += bytes;
    return true;
  };

  open++;
  res.on('close', onGone);
  res.on('drain', onDrain);
  res.on('error', onError);
  req.on('error', onError);
  try {
    res.writeHead(200, {
      ...options.headers,
      'Content-Type': EVENT_STREAM_TYPE,
      'Cache-Control': 'no-cache, no-transform',
      'X-Accel-Buffering': 'no',
    });
  } catch (error) {
    release('error');
    throw error;
  }
  res.flushHeaders();
  if (published.sseOpened.hasSubscribers) {
    published.sseOpened.publish({ req } satisfies SseOpenedMessage);
  }
  req.socket?.setNoDelay(true);
  if (retry !== false) write(formatEvent({ retry: jittered(retry, jitter) }));
  if (heartbeat > 0) {
    timer = setInterval(() => {
      if (!congested) write(formatComment());
    }, heartbeat);
    timer.unref();
  }
  if (principal !== undefined) {
    unbind = bindToCredential(principal, {
      onEnd: endForCredential,
      ...(revocations !== undefined && { revocations }),
    });
  }

  const stream: PreparedEventStream = {
    [WRITE_FORMATTED]: write,
    send: (event) => (closeReason === undefined ? write(formatEvent(event, format)) : false),
    comment: (text) => (closeReason === undefined ? write(formatComment(text)) : false),
    close() {
      if (closeReason !== undefined) return;
      release('server');
      res.end();
    },
    get closed() {
      return closeReason !== undefined;
    },
    get closeReason() {
      return closeReason;
    },
    onClose(listener) {
      if (closeReason !== undefined) notify(listener, closeReason);
      else listeners.push(listener);
    },
  };
  return stream;
}

/** Runs a close listener; one that throws does not keep the others from running. */
function notify(
  listener: (reason: EventStreamCloseReason) => void,
  reason: EventStreamCloseReason,
): void {
  try {
    listener(reason);
  } catch (err) {
    queueMicrotask(() => {
      throw err;
    });
  }
}
