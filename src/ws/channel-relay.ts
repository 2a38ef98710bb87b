import { randomUUID } from 'node:crypto';
import type { HubMessage } from '../realtime/broker.js';
import type { Hub, Subscription } from '../realtime/hub.js';

/** A relayed `message`, as its receivers get it. */
export interface RelayedMessage {
  type: 'message';
  text: string;
  from?: string;
  user?: string;
  channel?: string;
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
    typeof m.text === 'string' &&
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
