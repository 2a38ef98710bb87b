// Relayed `message`s: to the connections of this process, and across processes over the hub.
import { randomUUID } from 'node:crypto';
import type { WebSocket } from 'ws';
import type { HubMessage } from '../../realtime/broker.js';
import type { Hub, Subscription } from '../../realtime/hub.js';
import type { ChannelGate } from './access.js';
import { type Connection, type ConnectionOutput, connectionId } from './connection.js';
import { channelName } from './input.js';
import type { ChannelMessageReader, ChannelMessageSender } from './options.js';

/**
 * A relayed `message`, as its receivers get it: the fields the message reader returned (the
 * chat `text` and `user` by default), then who sent it and on which channel.
 */
export interface RelayedMessage {
  [field: string]: unknown;
  type: 'message';
  from?: string | undefined;
  channel?: string | undefined;
}

/** A relay as it crosses processes: who sent it, and what its receivers get. */
interface RelayEnvelope {
  origin: string;
  message: RelayedMessage;
}

/** The event name of relays on the relay channel. */
const RELAY_EVENT = 'relay';

function isEnvelope(data: unknown): data is RelayEnvelope {
  const e = data as Partial<RelayEnvelope> | null;
  const m = e?.message;
  return (
    typeof e?.origin === 'string' &&
    typeof m === 'object' &&
    m !== null &&
    m.type === 'message' &&
    (m.from === undefined || typeof m.from === 'string') &&
    (m.channel === undefined || typeof m.channel === 'string')
  );
}

/** Where relayed messages cross processes, for one channel protocol. */
export interface RelayLink {
  /** Sends a relay this process delivered itself to the other processes. */
  publish(message: RelayedMessage): void;
  /** Starts receiving the other processes' relays (while started, later calls do nothing). */
  start(): void;
  /** Stops receiving them until the next `start()` (no connection left to deliver to). */
  stop(): void;
  /** Stops receiving them, for good. */
  close(): void;
}

/**
 * Links a channel protocol to the relays of the other processes over `hub` channel
 * `channel`: `deliver` gets each relay another protocol published (never this one's own,
 * which it delivered at once), with its payload and channel; a failed publish or
 * subscription goes to `report`.
 */
export function createRelayLink(
  hub: Hub,
  channel: string,
  deliver: (payload: Buffer, channel: string | undefined) => void,
  report: (error: unknown) => void,
): RelayLink {
  const origin = randomUUID();
  let subscription: Subscription | undefined;
  let closed = false;
  const receive = (m: HubMessage) => {
    if (m.event !== RELAY_EVENT || !isEnvelope(m.data) || m.data.origin === origin) return;
    deliver(Buffer.from(JSON.stringify(m.data.message)), m.data.message.channel);
  };
  return {
    publish(message) {
      if (closed) return;
      const envelope: RelayEnvelope = { origin, message };
      hub.publish(channel, RELAY_EVENT, envelope).then(undefined, report);
    },
    start() {
      if (subscription !== undefined || closed) return;
      subscription = hub.subscribe(channel, receive);
      subscription.ready.then(undefined, report);
    },
    stop() {
      subscription?.();
      subscription = undefined;
    },
    close() {
      closed = true;
      this.stop();
    },
  };
}

/** The sender of a message as a reader sees it (its id made only if the reader asks). */
function senderOf(conn: Connection): ChannelMessageSender {
  return {
    get id() {
      return connectionId(conn);
    },
    principal: conn.principal,
    user: conn.user,
  };
}

/**
 * The `message`s of a protocol: read by `read`, checked against the gate when they name a
 * channel, delivered at once to the other connections of this process (of that channel,
 * when named) and, through `link`, to those of the other processes.
 */
export class Relays {
  readonly #connections: ReadonlyMap<WebSocket, Connection>;
  readonly #read: ChannelMessageReader;
  readonly #gate: ChannelGate;
  readonly #output: ConnectionOutput;
  readonly link: RelayLink | undefined;

  constructor(
    connections: ReadonlyMap<WebSocket, Connection>,
    read: ChannelMessageReader,
    gate: ChannelGate,
    output: ConnectionOutput,
    cross: { hub: Hub; channel: string } | undefined,
  ) {
    this.#connections = connections;
    this.#read = read;
    this.#gate = gate;
    this.#output = output;
    this.link =
      cross === undefined
        ? undefined
        : createRelayLink(
            cross.hub,
            cross.channel,
            (payload, channel) => this.deliver(payload, channel),
            (error) => output.report(error),
          );
  }

  /** Serves a `message` from `from`. */
  relay(from: Connection, message: Record<string, unknown>): void {
    const fields = this.#read(message, senderOf(from));
    if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) {
      throw new TypeError('createChannelProtocol(): `message` must return an object of fields');
    }
    const channel = channelName(message, false);
    if (channel !== undefined && !this.#gate.allows(from, 'publish', channel)) return;
    const out: RelayedMessage = { type: 'message', ...fields, from: from.principal?.sub };
    out.type = 'message'; // first, and the protocol's, whatever the reader returned
    if (channel === undefined) delete out.channel;
    else out.channel = channel;
    this.deliver(Buffer.from(JSON.stringify(out)), channel, from);
    this.link?.publish(out);
  }

  /** A relay to every connection of this process but its sender (of `channel`, if named). */
  deliver(payload: Buffer, channel: string | undefined, from?: Connection): void {
    for (const conn of this.#connections.values()) {
      if (conn === from) continue;
      if (channel !== undefined && !conn.channels?.has(channel)) continue;
      this.#output.send(conn, payload);
    }
  }
}
