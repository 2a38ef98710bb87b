/**
 * One event as the hub carries it: where it sits in its channel's stream, and what it says.
 *
 * @example
 * ```ts
 * hub.subscribe('room:1', (m: HubMessage) => {
 *   stream.send({ id: formatPosition(m), event: m.event, data: m.data });
 * });
 * ```
 */
export interface HubMessage {
  /** The channel it was published on. */
  channel: string;
  /** Its place in the channel's stream: 1 for the first event of an epoch, then +1 each. */
  offset: number;
  /** The stream's epoch: offsets only compare within one epoch. */
  epoch: string;
  /** The event name (the SSE `event` field, the WebSocket message type). */
  event: string;
  /** The payload, as published. */
  data: unknown;
  /** When the broker accepted it, in epoch milliseconds. */
  time: number;
}

/**
 * What a client last saw of one channel: the epoch and the offset of its last event. Offset 0
 * means "nothing yet" in that epoch.
 *
 * @example
 * ```ts
 * const since: Position | undefined = parsePosition(req.headers['last-event-id']);
 * ```
 */
export interface Position {
  /** The epoch of the last event seen. */
  epoch: string;
  /** The offset of the last event seen. */
  offset: number;
}

/**
 * What the publisher gives; the broker assigns `channel`, `offset`, `epoch` and `time`.
 *
 * @example
 * ```ts
 * const draft: HubDraft = { event: 'message', data: { text: 'hi' } };
 * const message = await broker.publish('room:1', draft);
 * ```
 */
export interface HubDraft {
  /** The event name. */
  event: string;
  /** The payload. */
  data: unknown;
}

/**
 * The events missed since a {@link Position}. When `recovered` is false, some were lost
 * (evicted from the bounded buffer, or another epoch): `events` holds what the broker still
 * has, and the client must be told explicitly that it is too far behind.
 *
 * @example
 * ```ts
 * const { events, recovered }: HistoryResult = await hub.replay('room:1', since);
 * if (!recovered) stream.send({ event: 'too-far-behind', data: {} });
 * for (const m of events) stream.send({ id: formatPosition(m), event: m.event, data: m.data });
 * ```
 */
export interface HistoryResult {
  /** Events after the position, oldest first (all held events when not recovered). */
  events: HubMessage[];
  /** Whether `events` is exactly every event after the position. */
  recovered: boolean;
}

/**
 * Called with each message of a channel. A throw or rejection is reported, never spread.
 *
 * @example
 * ```ts
 * const listener: HubListener = (m) => socket.send(JSON.stringify(m));
 * ```
 */
export type HubListener = (message: HubMessage) => void | Promise<void>;

/**
 * Stops one subscription; calling it again does nothing.
 *
 * @example
 * ```ts
 * const off: Unsubscribe = hub.subscribe('room:1', listener);
 * socket.on('close', off);
 * ```
 */
export type Unsubscribe = () => void;

/**
 * Rewrites one held message of a channel's history: the draft that replaces it (keeping its
 * offset, epoch and time, so that resume positions stay valid), or `undefined` to leave it.
 *
 * @example
 * ```ts
 * const redaction: HubRedaction = (m) =>
 *   m.event === 'message.created' && (m.data as { id: number }).id === 1
 *     ? { event: 'message.deleted', data: { id: 1 } }
 *     : undefined;
 * await hub.redact('room:1', redaction);
 * ```
 */
export type HubRedaction = (message: HubMessage) => HubDraft | undefined;

/**
 * Where the hub's messages go: assigns offsets, delivers to subscribers (of this process, or
 * of every process for a shared broker such as Redis pub/sub) and keeps a bounded history per
 * channel for resuming clients. `MemoryBroker` is the in-process one.
 *
 * @example
 * ```ts
 * const broker: Broker = new MemoryBroker({ historySize: 500 });
 * const off = await broker.subscribe('room:1', (m) => console.log(m.offset, m.data));
 * const sent = await broker.publish('room:1', { event: 'message', data: { text: 'hi' } });
 * const { events, recovered } = await broker.history('room:1', { epoch: sent.epoch, offset: 0 });
 * const head = await broker.position('room:1'); // { epoch: sent.epoch, offset: 1 }
 * off();
 * await broker.close();
 * ```
 */
export interface Broker {
  /** Assigns the next offset of `channel`, records the message and delivers it. */
  publish(channel: string, draft: HubDraft): HubMessage | Promise<HubMessage>;
  /** Delivers every later message of `channel` to `listener`. */
  subscribe(channel: string, listener: HubListener): Unsubscribe | Promise<Unsubscribe>;
  /** The events of `channel` after `since`, and whether none is missing. */
  history(channel: string, since: Position): HistoryResult | Promise<HistoryResult>;
  /** Where `channel` stands now: the current epoch and the offset of its newest event (0 for none). */
  position(channel: string): Position | Promise<Position>;
  /**
   * Replaces, in place, each held message of `channel` for which `replace` returns a draft
   * (same offset, epoch and time); resolves with how many were replaced. Live subscribers are
   * not told: publish an event of your own for them. Optional: without it, `hub.redact()`
   * throws.
   */
  redact?(channel: string, replace: HubRedaction): number | Promise<number>;
  /** Drops subscribers and history, and releases connections and timers. */
  close(): void | Promise<void>;
}
