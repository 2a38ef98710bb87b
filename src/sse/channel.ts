import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Logger, log, loggerOption } from '../core/logger.js';
import { requestFields } from '../core/trace-context.js';
import { assertKnownOptions, functionOption, invalidOption } from '../internal/options.js';
import type { HubMessage, Position } from '../realtime/broker.js';
import { followChannel } from '../realtime/follow.js';
import type { Hub } from '../realtime/hub.js';
import { formatPosition, parsePosition } from '../realtime/position.js';
import { formatEvent, type ServerSentEvent } from './format.js';
import { lastEventId } from './last-event-id.js';
import {
  createEventStream,
  EVENT_STREAM_OPTIONS,
  type EventStream,
  type EventStreamOptions,
  type PreparedEventStream,
  WRITE_FORMATTED,
} from './stream.js';

/**
 * Options of {@link streamChannel}: where the events come from and how they are written,
 * plus every option of {@link createEventStream}.
 *
 * @example
 * ```ts
 * const options: ChannelStreamOptions = { hub, channel: 'news', heartbeat: 15_000 };
 * streamChannel(req, res, options);
 * ```
 */
export interface ChannelStreamOptions extends EventStreamOptions {
  /** The hub the channel lives on. */
  hub: Hub;
  /** The channel to stream. */
  channel: string;
  /**
   * The event written for each hub message. Its `id` must be what `parseId` reads back.
   * @defaultValue `{ id: formatPosition(m), event: m.event, data: m.data }`
   */
  toEvent?: (message: HubMessage) => ServerSentEvent;
  /**
   * Reads a client's `Last-Event-ID` back into a position; `undefined` for an id that is not
   * one of ours, which then gets the reset event.
   * @defaultValue {@link parsePosition}
   */
  parseId?: (id: string) => Position | undefined;
  /**
   * The event written to a client that cannot be caught up (too far behind, from before a
   * restart, an unknown id), before the live events. Give it the `id` of `position`, so that
   * the client's next reconnection resumes from there.
   * @defaultValue `{ event: 'reset', id: formatPosition(position), data: { reason: 'too-far-behind' } }`
   */
  toReset?: (position: Position) => ServerSentEvent;
  /**
   * Also read the last event id from this query parameter when the header is absent (for
   * clients that cannot set headers). Off unless given.
   * @defaultValue none: only the `Last-Event-ID` header is read
   */
  lastEventIdQuery?: string;
  /**
   * Where the broker's failure to replay is logged (`error`, with the channel and the
   * request's ids; the stream is then closed, and the client reconnects with its
   * `Last-Event-ID`). A pino logger is passed as it is.
   * @defaultValue portico's default logger (errors on stderr)
   */
  logger?: Logger;
}

const OWN_OPTIONS = [
  'hub',
  'channel',
  'toEvent',
  'parseId',
  'toReset',
  'lastEventIdQuery',
  'logger',
] as const satisfies readonly (keyof ChannelStreamOptions)[];
/** Every option name `streamChannel` takes, its own and the stream's. */
const KNOWN_OPTIONS = [...OWN_OPTIONS, ...EVENT_STREAM_OPTIONS];
const OWNER = 'streamChannel()';

const defaultToEvent = (m: HubMessage): ServerSentEvent => ({
  id: formatPosition(m),
  event: m.event,
  data: m.data,
});

/**
 * Each hub message formatted once per `toEvent` (and `json` setting) for every stream that
 * shares them: a broadcast to 10,000 streams formats one event, not 10,000.
 */
const formatted = new WeakMap<
  (message: HubMessage) => ServerSentEvent,
  [json: WeakMap<HubMessage, string>, text: WeakMap<HubMessage, string>]
>();

function formatterFor(toEvent: (message: HubMessage) => ServerSentEvent, json: boolean) {
  let caches = formatted.get(toEvent);
  if (caches === undefined) {
    caches = [new WeakMap(), new WeakMap()];
    formatted.set(toEvent, caches);
  }
  const cache = caches[json ? 0 : 1];
  const options = { json };
  return (message: HubMessage): string => {
    let text = cache.get(message);
    if (text === undefined) {
      text = formatEvent(toEvent(message), options);
      cache.set(message, text);
    }
    return text;
  };
}

const defaultToReset = (position: Position): ServerSentEvent => ({
  event: 'reset',
  id: formatPosition(position),
  data: { reason: 'too-far-behind' },
});

/**
 * Streams one hub channel as Server-Sent Events, with resume: a client that reconnects with
 * `Last-Event-ID` gets every event it missed while the broker's history still holds them,
 * then the live ones, without a gap or a duplicate; one too far behind (or with an id that is
 * not ours) gets an explicit reset event first, never a silent gap. The stream itself is
 * {@link createEventStream}'s: heartbeats, jittered `retry`, slow clients dropped, everything
 * released when the client goes away, ended (`event: credential-ended`) when the credential of
 * an authenticated request is revoked or expires, and capped per principal when
 * `maxConnectionsPerPrincipal` is given.
 *
 * @example
 * ```ts
 * const hub = createHub();
 * const routes = { '/events': { GET: (req, res) => void streamChannel(req, res, { hub, channel: 'news' }) } };
 * await hub.publish('news', 'headline', { title: 'portico 1.0' });
 * ```
 * @see {@link https://html.spec.whatwg.org/multipage/server-sent-events.html#last-event-id | HTML: Server-sent events, `Last-Event-ID`}
 */
export function streamChannel(
  req: IncomingMessage,
  res: ServerResponse,
  options: ChannelStreamOptions,
): EventStream {
  assertKnownOptions(OWNER, options, KNOWN_OPTIONS);
  const { hub, channel, lastEventIdQuery } = options;
  if (typeof hub !== 'object' || hub === null || typeof hub.subscribe !== 'function') {
    throw invalidOption(`${OWNER}: \`hub\` must be a hub from createHub()`);
  }
  const toEvent = functionOption(OWNER, 'toEvent', options.toEvent) ?? defaultToEvent;
  const parseId = functionOption(OWNER, 'parseId', options.parseId) ?? parsePosition;
  const toReset = functionOption(OWNER, 'toReset', options.toReset) ?? defaultToReset;
  const logger = loggerOption(OWNER, options.logger);
  const streamOptions: EventStreamOptions = {};
  for (const key of EVENT_STREAM_OPTIONS) {
    if (options[key] !== undefined) Object.assign(streamOptions, { [key]: options[key] });
  }

  const id = lastEventId(
    req,
    lastEventIdQuery === undefined ? {} : { queryParameter: lastEventIdQuery },
  );
  const since = id === undefined || id === '' ? undefined : (parseId(id) ?? null);
  const format = formatterFor(toEvent, options.json !== false);
  // Subscribe first: a bad channel name or a closed hub throws before any header is written.
  let stream: PreparedEventStream | undefined;
  const { unsubscribe, ready } = followChannel(hub, channel, {
    since,
    ...(since !== undefined && {
      onStart: ({ recovered, position }) => {
        if (recovered === false) stream?.send(toReset(position));
      },
      // live events lost later (a dropped broker connection): the same explicit reset
      onLost: (position: Position) => stream?.send(toReset(position)),
    }),
    onEvent: (message) => {
      if (stream !== undefined && !stream.closed) stream[WRITE_FORMATTED](format(message));
    },
  });
  try {
    stream = createEventStream(req, res, streamOptions) as PreparedEventStream;
  } catch (error) {
    unsubscribe();
    throw error;
  }
  stream.onClose(unsubscribe);
  ready.catch((error: unknown) => {
    if (stream.closed) return;
    log(
      logger,
      'error',
      { component: 'sse', event: 'replay.failed', channel, ...requestFields(req), err: error },
      'replaying a channel failed',
    );
    stream.close();
  });
  return stream;
}
