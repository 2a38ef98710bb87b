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
   */
  since?: Position | null | undefined;
  /** Called once, before any event, when `since` is given (even `null`) or `onStart` is wanted. */
  onStart?: (start: FollowStart) => void;
  /** Each event, the replayed ones then the live ones, in offset order and each once. */
  onEvent: (message: HubMessage) => void;
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
  let held: HubMessage[] | undefined = [];
  let last: Position | undefined;
  let done = false;
  const deliver = (message: HubMessage) => {
    if (done) return;
    if (last !== undefined && message.epoch === last.epoch && message.offset <= last.offset) return;
    last = { epoch: message.epoch, offset: message.offset };
    onEvent(message);
  };
  const off = hub.subscribe(channel, (message) => {
    if (held === undefined) deliver(message);
    else held.push(message);
  });
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
    for (const message of pending) deliver(message);
  };

  const ready = catchUp().catch((error: unknown) => {
    unsubscribe();
    throw error;
  });
  return { unsubscribe, ready };
}
