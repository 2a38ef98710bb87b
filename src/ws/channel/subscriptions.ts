// The subscriptions of the channel protocol: hub channels followed, pushes sent, resumes.
import type { HubMessage, Position } from '../../realtime/broker.js';
import { followChannel } from '../../realtime/follow.js';
import type { Hub } from '../../realtime/hub.js';
import { formatPosition, parsePosition } from '../../realtime/position.js';
import type { ChannelGate } from './access.js';
import type { Connection, ConnectionOutput } from './connection.js';
import { channelName, optionalString } from './input.js';
import { ChannelSet } from './set.js';

/** A push as plain subscribers get it, serialized once per message for all of them. */
const plainPushes = new WeakMap<HubMessage, Buffer>();
/** A push with `channel` and `position`, for subscribers that asked to resume. */
const positionedPushes = new WeakMap<HubMessage, Buffer>();

function pushPayload(m: HubMessage, positioned: boolean): Buffer {
  const cache = positioned ? positionedPushes : plainPushes;
  let payload = cache.get(m);
  if (payload === undefined) {
    const push = positioned
      ? {
          type: 'push',
          channel: m.channel,
          event: m.event,
          data: m.data,
          position: formatPosition(m),
        }
      : { type: 'push', event: m.event, data: m.data };
    // Its own memory, not a slice of node's 8 KiB pool: a cached payload lives as long as the
    // hub's history keeps the message, and a pooled one would pin the whole block with it.
    const text = JSON.stringify(push);
    payload = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
    payload.write(text);
    cache.set(m, payload);
  }
  return payload;
}

/** The `since` of a `subscribe`: a position, `null` for one that is not ours, or absent. */
function sinceOf(message: Record<string, unknown>) {
  const since = optionalString(message, 'since', 1, 256);
  return since === undefined ? undefined : (parsePosition(since) ?? null);
}

/**
 * The `subscribe` and `unsubscribe` of a protocol: each subscription follows the hub channel
 * of its name (resuming from `since`, or afresh with `recover`), its pushes sent to the
 * connection; without a hub, subscriptions are only recorded (for channel relays).
 */
export class Subscriptions {
  readonly #hub: Hub | undefined;
  readonly #gate: ChannelGate;
  readonly #output: ConnectionOutput;

  constructor(hub: Hub | undefined, gate: ChannelGate, output: ConnectionOutput) {
    this.#hub = hub;
    this.#gate = gate;
    this.#output = output;
  }

  /** Serves a `subscribe` message. */
  subscribe(conn: Connection, message: Record<string, unknown>): void {
    const channel = channelName(message, true);
    const since = sinceOf(message);
    const recover = message.recover === true || since !== undefined;
    if (conn.channels?.has(channel) || !this.#gate.allows(conn, 'subscribe', channel)) return;
    conn.channels ??= new ChannelSet();
    if (this.#hub === undefined) {
      conn.channels.add(channel, undefined);
      return;
    }
    const output = this.#output;
    const { unsubscribe, ready } = followChannel(this.#hub, channel, {
      since,
      ...(recover && {
        onStart: ({ recovered, position }) =>
          output.sendJson(conn, {
            type: 'subscribed',
            channel,
            position: formatPosition(position),
            ...(recovered !== undefined && { recovered }),
          }),
        // live pushes lost later (a dropped broker connection): told like a failed resume
        onLost: (position: Position) =>
          output.sendJson(conn, {
            type: 'subscribed',
            channel,
            position: formatPosition(position),
            recovered: false,
          }),
      }),
      onEvent: (m: HubMessage) => {
        try {
          output.send(conn, pushPayload(m, recover));
        } catch (error) {
          output.fail(conn, error);
        }
      },
    });
    conn.channels.add(channel, unsubscribe);
    ready.catch((error: unknown) => {
      if (conn.channels?.get(channel) === unsubscribe) output.fail(conn, error);
    });
  }

  /** Ends the subscription of `conn` to `channel`, if any. */
  unsubscribe(conn: Connection, channel: string): void {
    conn.channels?.take(channel)?.();
  }

  /** Ends every subscription of `conn`. */
  unsubscribeAll(conn: Connection): void {
    if (conn.channels === undefined) return;
    for (const channel of conn.channels.names()) this.unsubscribe(conn, channel);
  }
}
