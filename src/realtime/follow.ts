import type { HubMessage, Position, Unsubscribe } from './broker.js';
import type { Hub } from './hub.js';

/**
 * How a {@link followChannel} subscription starts, told before any event.
 *
 * @example
 * ```ts
 * const onStart = ({ recovered, position }: FollowStart) => {
 *   if (recovered === false) stream.send({ event: 'reset', id: formatPosition(position), data: {} });
 * };
 * ```
 */
export interface FollowStart {
  /**
   * Only when a `since` was given (even `null`): whether every event after it follows. When
   * `false`, some are lost and none is replayed; the client must be told.
   */
  recovered?: boolean;
  /**
   * The position the events that follow come after: `since` when recovered, else where the
   * channel stands now (what the client should resume from next time).
   */
  position: Position;
}

/**
 * Options of {@link followChannel}.
 *
 * @example
 * ```ts
 * const options: FollowOptions = {
 *   since: parsePosition(lastEventId(req)),
 *   onEvent: (m) => stream.send({ id: formatPosition(m), event: m.event, data: m.data }),
 * };
 * ```
 */
export interface FollowOptions {
  /**
   * What the client saw last: the events after it are replayed before the live ones. `null`
   * for a position the client sent that cannot be read (another server's, a corrupted one):
   * then `recovered` is `false`. Unset for a client that starts afresh.
   * @defaultValue `undefined`: live events only, nothing replayed
   */
  since?: Position | null | undefined;
  /**
   * Called once, before any event, when `since` is given (even `null`) or `onStart` is wanted.
   * @defaultValue none
   */
  onStart?: (start: FollowStart) => void;
  /** Each event, the replayed ones then the live ones, in offset order and each once. */
  onEvent: (message: HubMessage) => void;
  /**
   * Called when live events were lost after the start: a gap in the offsets (a subscriber
   * connection that dropped while others published) that the history no longer covers, or a
   * new epoch (the broker lost its data). The client must reload; `position` is where the
   * events that follow come after. Gaps the history covers are filled without a call.
   * Only followed subscriptions (with `since` or `onStart`) watch for gaps.
   * @defaultValue none: losses are not reported
   */
  onLost?: (position: Position) => void;
}

/**
 * A subscription made by {@link followChannel}.
 *
 * @example
 * ```ts
 * const { unsubscribe, ready }: Following = followChannel(hub, 'room:1', { onEvent });
 * ready.catch(() => stream.close());
 * stream.onClose(unsubscribe);
 * ```
 */
export interface Following {
  /** Ends the subscription; nothing is delivered afterwards. Idempotent. */
  unsubscribe: Unsubscribe;
  /**
   * Settles once the catch-up is done and events flow live; rejects (the subscription then
   * ended) when the broker could not replay or tell the channel's position.
   */
  ready: Promise<void>;
}

/**
 * Subscribes to a channel and catches a reconnecting client up without a gap or a duplicate:
 * the live subscription starts first and holds its events back while the history is read,
 * then the missed events go out, then the held ones, deduplicated by offset. A client too far
 * behind (evicted from the bounded history, another epoch, an unreadable position) gets
 * `recovered: false` and the position to resume from next time, never a silent gap. This is
 * the recovery of Server-Sent Events (`Last-Event-ID`) and of the WebSocket channel
 * (`subscribe` with `since`).
 *
 * @example
 * ```ts
 * const since = req.headers['last-event-id'] === undefined ? undefined : (parsePosition(req.headers['last-event-id']) ?? null);
 * const { unsubscribe, ready } = followChannel(hub, 'room:1', {
 *   since,
 *   onStart: ({ recovered, position }) => {
 *     if (recovered === false) stream.send({ event: 'reset', id: formatPosition(position), data: {} });
 *   },
 *   onEvent: (m) => stream.send({ id: formatPosition(m), event: m.event, data: m.data }),
 * });
 * stream.onClose(unsubscribe);
 * ready.catch(() => stream.close());
 * ```
 */
export function followChannel(hub: Hub, channel: string, options: FollowOptions): Following {
  const { since, onStart, onEvent } = options;
  if (typeof onEvent !== 'function') throw new TypeError('followChannel: `onEvent` is required');
  if (since === undefined && onStart === undefined) {
    return { unsubscribe: hub.subscribe(channel, onEvent), ready: Promise.resolve() };
  }
  const { onLost } = options;
  /** Live events held back while the history is read (the catch-up, or a gap being filled). */
  let held: HubMessage[] | undefined = [];
  let last: Position | undefined;
  let done = false;
  const deliver = (message: HubMessage) => {
    if (done) return;
    if (last !== undefined && message.epoch === last.epoch && message.offset <= last.offset) return;
    last = { epoch: message.epoch, offset: message.offset };
    onEvent(message);
  };
  const lost = (position: Position) => {
    last = position;
    onLost?.(position);
  };
  /** Reads what a gap missed from the history, holding live events meanwhile. */
  const fillGap = async (from: Position, first: HubMessage) => {
    held = [first];
    const before = { epoch: first.epoch, offset: first.offset - 1 };
    try {
      const history = await hub.replay(channel, from);
      if (done) return;
      if (history.recovered) for (const message of history.events) deliver(message);
      else lost(before);
    } catch {
      if (!done) lost(before);
    }
    const pending = held ?? [];
    held = undefined;
    for (const message of pending) receive(message);
  };
  const receive = (message: HubMessage) => {
    if (done) return;
    if (held !== undefined) {
      held.push(message);
      return;
    }
    if (last !== undefined && message.epoch !== last.epoch) {
      lost({ epoch: message.epoch, offset: message.offset - 1 });
    } else if (last !== undefined && message.offset > last.offset + 1) {
      void fillGap(last, message);
      return;
    }
    deliver(message);
  };
  const off = hub.subscribe(channel, receive);
  const unsubscribe: Unsubscribe = () => {
    done = true;
    held = undefined;
    off();
  };

  const catchUp = async () => {
    // The live subscription must be active before the history is read, or an event published
    // in between would be in neither.
    await off.ready;
    let start: FollowStart;
    let missed: readonly HubMessage[] = [];
    if (since === undefined) {
      start = { position: await hub.position(channel) };
    } else if (since === null) {
      start = { recovered: false, position: await hub.position(channel) };
    } else {
      const history = await hub.replay(channel, since);
      if (history.recovered) {
        start = { recovered: true, position: since };
        missed = history.events;
      } else {
        // The newest of what is held is where the channel stands, unless nothing is held.
        const newest = history.events.at(-1);
        start = {
          recovered: false,
          position:
            newest === undefined
              ? await hub.position(channel)
              : { epoch: newest.epoch, offset: newest.offset },
        };
      }
    }
    if (done) return;
    last = start.position;
    onStart?.(start);
    for (const message of missed) deliver(message);
    const pending = held ?? [];
    held = undefined;
    for (const message of pending) receive(message);
  };

  const ready = catchUp().catch((error: unknown) => {
    unsubscribe();
    throw error;
  });
  return { unsubscribe, ready };
}
