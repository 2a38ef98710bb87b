/**
 * Server-Sent Events: {@link createEventStream}, the `text/event-stream` writer with
 * heartbeats, a jittered `retry` hint and a bounded queue that drops slow clients; the
 * `formatEvent` and `formatComment` formatters it uses; {@link lastEventId}
 * for reconnecting clients; and {@link streamChannel}, which streams one channel of the
 * realtime hub with `Last-Event-ID` resume.
 *
 * @see {@link https://html.spec.whatwg.org/multipage/server-sent-events.html | HTML: Server-sent events}
 * @module portico/sse
 */
export {
  type ChannelStreamOptions,
  streamChannel,
} from './channel.js';
export type {
  FormatOptions,
  ServerSentEvent,
} from './format.js';
export {
  createEventStream,
  EVENT_STREAM_TYPE,
  type EventStream,
  type EventStreamCloseReason,
  type EventStreamOptions,
  type LastEventIdOptions,
  lastEventId,
} from './stream.js';
