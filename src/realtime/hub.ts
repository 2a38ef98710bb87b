import { PorticoError } from '../core/errors/errors.js';
import { type Logger, log, loggerOption } from '../core/logger.js';
import { CONTROL } from '../internal/grammar.js';
import { assertKnownOptions, invalidOption } from '../internal/options.js';
import type {
  Broker,
  HistoryResult,
  HubListener,
  HubMessage,
  HubRedaction,
  Position,
  Unsubscribe,
} from './broker.js';
import { MemoryBroker } from './memory-broker.js';

/**
 * Options of {@link createHub}.
 *
 * @example
 * ```ts
 * const options: HubOptions = { broker: new MemoryBroker({ historySize: 200 }) };
 * const hub = createHub(options);
 * ```
 */
export interface HubOptions {
  /**
   * Where messages go. A broker given here stays the caller's to close; the default one is
   * closed by {@link Hub.close}.
   * @defaultValue a new `MemoryBroker` (this process only)
   */
  broker?: Broker;
  /**
   * Where an asynchronous broker's failure to subscribe is logged (`error`, with the channel;
   * the listener then gets nothing, and `ready` rejects). A pino logger is passed as it is.
   * @defaultValue portico's default logger (errors on stderr)
   */
  logger?: Logger;
}

/**
 * The channel hub that WebSocket and SSE share.
 *
 * @example
 * ```ts
 * const hub: Hub = createHub();
 * await hub.publish('room:1', 'message', { text: 'hi' });
 * ```
 */
export interface Hub {
  /** Publishes one event on `channel`; resolves with the message as the broker recorded it. */
  publish(channel: string, event: string, data: unknown): Promise<HubMessage>;
  /**
   * Delivers every later message of `channel` to `listener` until the returned function runs.
   * Its `ready` settles once the broker's subscription is active (at once for the in-memory
   * broker; after Redis acknowledged it for a shared one).
   */
  subscribe(channel: string, listener: HubListener): Subscription;
  /** The events of `channel` after `since`, and whether none is missing. */
  replay(channel: string, since: Position): Promise<HistoryResult>;
  /** Where `channel` stands now: the epoch and the offset of its newest event (0 for none). */
  position(channel: string): Promise<Position>;
  /**
   * Rewrites the history of `channel` in place: each held message for which `replace` returns
   * a draft is replaced by it, keeping its offset, epoch and time (resume positions stay
   * valid), so that a deleted or edited message is never replayed as it was. Resolves with how
   * many were replaced. Live subscribers are not told: publish an event for them. Throws
   * (`ERR_HUB_REDACT_UNSUPPORTED`) when the broker cannot rewrite its history.
   */
  redact(channel: string, replace: HubRedaction): Promise<number>;
  /** Ends every subscription made through this hub, and closes the broker if the hub made it. */
  close(): Promise<void>;
}

/**
 * What {@link Hub.subscribe} returns: call it to unsubscribe; `ready` settles once the broker
 * delivers (and rejects when it could not subscribe).
 *
 * @example
 * ```ts
 * const subscription: Subscription = hub.subscribe('room:1', listener);
 * await subscription.ready;
 * subscription();
 * ```
 */
export type Subscription = Unsubscribe & { readonly ready: Promise<void> };

/** The `ready` of every subscription its broker made at once (one shared, settled promise). */
const SUBSCRIBED: Promise<void> = Promise.resolve();

const OWNER = 'createHub()';
const KNOWN_OPTIONS = ['broker', 'logger'] as const satisfies readonly (keyof HubOptions)[];
const MAX_NAME_LENGTH = 200;

function assertName(kind: 'channel' | 'event', name: unknown): asserts name is string {
  if (
    typeof name !== 'string' ||
    name.length === 0 ||
    name.length > MAX_NAME_LENGTH ||
    CONTROL.test(name)
  ) {
    const error = new TypeError(
      `The ${kind} name must be 1–${MAX_NAME_LENGTH} characters without control characters.`,
    );
    (error as TypeError & { code: string }).code = 'ERR_INVALID_ARG_VALUE';
    throw error;
  }
}

function closedError(): PorticoError {
  return new PorticoError('The hub is closed.', 'ERR_HUB_CLOSED');
}

function redactUnsupported(): PorticoError {
  return new PorticoError(
    "The hub's broker cannot rewrite its history (it has no `redact` method).",
    'ERR_HUB_REDACT_UNSUPPORTED',
  );
}

/** `replace`, with each draft it returns checked like a published one. */
function checkedRedaction(replace: HubRedaction): HubRedaction {
  return (message) => {
    const draft = replace(message);
    if (draft === undefined) return undefined;
    if (typeof draft !== 'object' || draft === null) {
      throw new TypeError('redact: `replace` must return a draft { event, data } or undefined');
    }
    assertName('event', draft.event);
    return { event: draft.event, data: draft.data };
  };
}

/**
 * Creates the channel hub: `publish` / `subscribe` by channel name over a {@link Broker}
 * (in-process by default, Redis pub/sub for fan-out across processes), and `replay` for
 * clients that come back with a position (`Last-Event-ID`, a WebSocket resume token).
 * Channel and event names are 1–200 characters without control characters, else a
 * `TypeError`.
 *
 * @example
 * ```ts
 * const hub = createHub();
 * const off = hub.subscribe('room:1', (m) => stream.send({ id: formatPosition(m), event: m.event, data: m.data }));
 * await hub.publish('room:1', 'message', { text: 'hello' });
 *
 * const since = parsePosition(req.headers['last-event-id']);
 * if (since) {
 *   const { events, recovered } = await hub.replay('room:1', since);
 *   if (!recovered) stream.send({ event: 'reset', data: { reason: 'too-far-behind' } });
 * }
 * off();
 * await hub.close();
 * ```
 */
export function createHub(options: HubOptions = {}): Hub {
  assertKnownOptions(OWNER, options, KNOWN_OPTIONS);
  const given = options.broker;
  if (
    given !== undefined &&
    (typeof given !== 'object' ||
      given === null ||
      typeof given.publish !== 'function' ||
      typeof given.subscribe !== 'function' ||
      typeof given.history !== 'function' ||
      typeof given.position !== 'function' ||
      typeof given.close !== 'function')
  ) {
    throw invalidOption(
      `${OWNER}: \`broker\` must implement publish, subscribe, history, position, close`,
    );
  }
  const logger = loggerOption(OWNER, options.logger);
  const broker = given ?? new MemoryBroker();
  const active = new Set<Unsubscribe>();
  let closed = false;

  return {
    async publish(channel, event, data) {
      assertName('channel', channel);
      assertName('event', event);
      if (closed) throw closedError();
      return broker.publish(channel, { event, data });
    },

    subscribe(channel, listener) {
      assertName('channel', channel);
      if (typeof listener !== 'function') throw new TypeError('listener must be a function');
      if (closed) throw closedError();
      let done = false;
      let release: Unsubscribe | undefined;
      const unsubscribe = (() => {
        if (done) return;
        done = true;
        active.delete(unsubscribe);
        release?.();
      }) as Subscription;
      const result = broker.subscribe(channel, listener);
      let ready: Promise<void>;
      if (typeof result === 'function') {
        release = result;
        ready = SUBSCRIBED;
      } else {
        ready = Promise.resolve(result).then(
          (off) => {
            if (done) off();
            else release = off;
          },
          (error: unknown) => {
            active.delete(unsubscribe);
            done = true;
            log(
              logger,
              'error',
              { component: 'realtime', event: 'subscribe.failed', channel, err: error },
              'subscribing to a hub channel failed',
            );
            throw error;
          },
        );
        ready.catch(() => {}); // logged; `ready` rejects for who awaits it
      }
      Object.defineProperty(unsubscribe, 'ready', { value: ready });
      active.add(unsubscribe);
      return unsubscribe;
    },

    async replay(channel, since) {
      assertName('channel', channel);
      if (typeof since !== 'object' || since === null) {
        throw new TypeError('replay: `since` must be a position { epoch, offset }');
      }
      if (closed) throw closedError();
      return broker.history(channel, since);
    },

    async position(channel) {
      assertName('channel', channel);
      if (closed) throw closedError();
      return broker.position(channel);
    },

    async redact(channel, replace) {
      assertName('channel', channel);
      if (typeof replace !== 'function')
        throw new TypeError('redact: `replace` must be a function');
      if (closed) throw closedError();
      if (typeof broker.redact !== 'function') throw redactUnsupported();
      return broker.redact(channel, checkedRedaction(replace));
    },

    async close() {
      if (closed) return;
      closed = true;
      for (const unsubscribe of [...active]) unsubscribe();
      if (given === undefined) await broker.close();
    },
  };
}
