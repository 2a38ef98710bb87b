/**
 * The channel hub that WebSocket and SSE share: `publish` / `subscribe` by channel name over
 * a broker (in-process by default; the broker interface lets a shared one fan out across
 * processes), offsets that grow per channel within an epoch, and a bounded history from
 * which a reconnecting client recovers what it missed, or learns it is too far behind.
 *
 * @module portico/realtime
 */
export type {
  Broker,
  HistoryResult,
  HubDraft,
  HubListener,
  HubMessage,
  HubRedaction,
  Position,
  Unsubscribe,
} from './broker.js';
export {
  type Following,
  type FollowOptions,
  type FollowStart,
  followChannel,
} from './follow.js';
export { createHub, type Hub, type HubOptions, type Subscription } from './hub.js';
export { MemoryBroker, type MemoryBrokerOptions } from './memory-broker.js';
export { formatPosition, parsePosition } from './position.js';
