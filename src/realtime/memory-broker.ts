import { randomBytes } from 'node:crypto';
import type { Duration } from '../core/duration.js';
import { PorticoError } from '../core/errors/errors.js';
import { type Logger, loggerOption } from '../core/logger.js';
import {
  assertKnownOptions,
  countOption,
  durationOption,
  functionOption,
} from '../internal/options.js';
import type {
  Broker,
  HistoryResult,
  HubDraft,
  HubListener,
  HubMessage,
  HubRedaction,
  Position,
  Unsubscribe,
} from './broker.js';
import { deliverToListeners } from './deliver.js';

/**
 * Options of `MemoryBroker`.
 *
 * @example
 * ```ts
 * const options: MemoryBrokerOptions = { historySize: 500, onError: (err) => log.warn(err) };
 * const broker = new MemoryBroker(options);
 * ```
 */
export interface MemoryBrokerOptions {
  /**
   * The most events kept per channel for resuming clients (an integer ≥ 0); older ones are
   * evicted.
   * @defaultValue `1_000`
   */
  historySize?: number;
  /**
   * How long an event stays in the history, in milliseconds (an integer ≥ 1); unset keeps it
   * until evicted by `historySize`.
   * @defaultValue `undefined`: no time limit
   */
  historyTtl?: Duration;
  /**
   * Where a listener that throws or rejects is logged (`error`, with the channel); delivery
   * to the other listeners goes on. A pino logger is passed as it is.
   * @defaultValue portico's default logger (errors on stderr)
   */
  logger?: Logger;
  /**
   * The clock, in epoch milliseconds (tests inject one).
   * @defaultValue `Date.now`
   */
  now?: () => number;
}

const OWNER = 'new MemoryBroker()';
const KNOWN_OPTIONS = [
  'historySize',
  'historyTtl',
  'logger',
  'now',
] as const satisfies readonly (keyof MemoryBrokerOptions)[];

/** One channel: its offset counter, its ring buffer of recent events and its listeners. */
interface Channel {
  /** Offset of the last event published (0 before any). */
  last: number;
  ring: (HubMessage | undefined)[];
  /** Index in `ring` of the oldest held event. */
  head: number;
  /** Events held. */
  count: number;
  listeners: Set<HubListener>;
}

/**
 * The in-process {@link Broker}: offsets that grow by one per channel, a random epoch per
 * broker instance (so positions from before a restart are recognised as another epoch), a
 * bounded ring buffer per channel, and synchronous delivery in which one failing listener
 * never keeps the message from the others. Subscribers of other processes see nothing:
 * behind several instances, use a shared broker. Each channel name keeps its offset counter
 * (a few dozen bytes) for the broker's life, so that offsets never restart within an epoch.
 * `redact()` rewrites held events in place (same offset, epoch and time).
 *
 * @example
 * ```ts
 * const broker = new MemoryBroker({ historySize: 500, historyTtl: 300_000 }); // 5 minutes
 * const hub = createHub({ broker });
 * ```
 */
export class MemoryBroker implements Broker {
  /** This instance's epoch, random. */
  readonly epoch: string = randomBytes(12).toString('base64url');
  readonly #channels = new Map<string, Channel>();
  readonly #size: number;
  readonly #ttl: number | undefined;
  readonly #logger: Logger;
  readonly #now: () => number;
  #closed = false;

  constructor(options: MemoryBrokerOptions = {}) {
    assertKnownOptions(OWNER, options, KNOWN_OPTIONS);
    this.#size = countOption(OWNER, 'historySize', options.historySize, 1_000, { min: 0 });
    this.#ttl =
      options.historyTtl === undefined
        ? undefined
        : durationOption(OWNER, 'historyTtl', options.historyTtl, 0, { min: 1 });
    this.#logger = loggerOption(OWNER, options.logger);
    this.#now = functionOption(OWNER, 'now', options.now) ?? Date.now;
  }

  publish(channel: string, draft: HubDraft): HubMessage {
    this.#assertOpen();
    const state = this.#channel(channel);
    const time = this.#now();
    this.#expire(state, time);
    state.last += 1;
    const message: HubMessage = Object.freeze({
      channel,
      offset: state.last,
      epoch: this.epoch,
      event: draft.event,
      data: draft.data,
      time,
    });
    if (this.#size > 0) {
      if (state.count === this.#size) {
        state.ring[state.head] = message;
        state.head = (state.head + 1) % this.#size;
      } else {
        state.ring[(state.head + state.count) % this.#size] = message;
        state.count += 1;
      }
    }
    deliverToListeners(state.listeners, message, this.#logger, 'realtime');
    return message;
  }

  subscribe(channel: string, listener: HubListener): Unsubscribe {
    this.#assertOpen();
    if (typeof listener !== 'function') throw new TypeError('listener must be a function');
    const state = this.#channel(channel);
    // Each subscription gets its own entry, so one function may be subscribed twice (a
    // wrapper only then: the usual single subscription costs no extra closure).
    const entry: HubListener = state.listeners.has(listener)
      ? (message) => listener(message)
      : listener;
    state.listeners.add(entry);
    return () => {
      state.listeners.delete(entry);
    };
  }

  history(channel: string, since: Position): HistoryResult {
    if (this.#closed) return { events: [], recovered: false };
    const state = this.#channels.get(channel);
    if (state === undefined) {
      // Nothing was ever published here in this epoch: only "nothing seen yet" is complete.
      return { events: [], recovered: since.epoch === this.epoch && since.offset === 0 };
    }
    this.#expire(state, this.#now());
    const held: HubMessage[] = [];
    for (let i = 0; i < state.count; i++) held.push(state.ring[(state.head + i) % this.#size]!);
    const oldest = state.last - state.count + 1;
    const offset = since.offset;
    const sameEpoch = since.epoch === this.epoch && Number.isSafeInteger(offset);
    if (sameEpoch && offset >= oldest - 1 && offset <= state.last) {
      return { events: held.slice(offset - oldest + 1), recovered: true };
    }
    return { events: held, recovered: false };
  }

  redact(channel: string, replace: HubRedaction): number {
    this.#assertOpen();
    const state = this.#channels.get(channel);
    if (state === undefined) return 0;
    this.#expire(state, this.#now());
    let replaced = 0;
    for (let i = 0; i < state.count; i++) {
      const index = (state.head + i) % this.#size;
      const held = state.ring[index]!;
      const draft = replace(held);
      if (draft === undefined) continue;
      state.ring[index] = Object.freeze({ ...held, event: draft.event, data: draft.data });
      replaced += 1;
    }
    return replaced;
  }

  position(channel: string): Position {
    return { epoch: this.epoch, offset: this.#channels.get(channel)?.last ?? 0 };
  }

  close(): void {
    this.#closed = true;
    this.#channels.clear();
  }

  #channel(name: string): Channel {
    let state = this.#channels.get(name);
    if (state === undefined) {
      state = { last: 0, ring: [], head: 0, count: 0, listeners: new Set() };
      this.#channels.set(name, state);
    }
    return state;
  }

  /** Evicts the events older than `historyTtl`. */
  #expire(state: Channel, now: number): void {
    if (this.#ttl === undefined) return;
    const limit = now - this.#ttl;
    while (state.count > 0 && state.ring[state.head]!.time <= limit) {
      state.ring[state.head] = undefined;
      state.head = (state.head + 1) % this.#size;
      state.count -= 1;
    }
  }

  #assertOpen(): void {
    if (this.#closed) throw new PorticoError('The broker is closed.', 'ERR_HUB_CLOSED');
  }
}
