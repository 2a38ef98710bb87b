import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type Broker,
  createHub,
  type EventStream,
  type HubMessage,
  type MethodTable,
  type Position,
  type Revocations,
  send as sendResponse,
  streamChannel,
} from 'portico';
import type { Logger } from 'portico/diagnostics';
import { MemoryBroker } from 'portico/realtime';
import { EVENT_STREAM_TYPE } from 'portico/sse';
import { publishChange } from './history.js';
import type { Message } from './messages.js';

/** The hub channel that carries every new message, whatever its own channel. */
export const EVENTS_CHANNEL = 'messages';
/** How many events a reconnecting client can still catch up on. */
const HISTORY_SIZE = 1000;
/** A `Last-Event-ID` this server issued: a decimal offset. */
const OFFSET = /^(?:0|[1-9]\d{0,15})$/;

/** What a stream sends when it cannot replay what the client missed. */
const RESET = { event: 'stream.reset', reason: 'too-far-behind' } as const;

/**
 * `GET /events`: every message created over REST, as Server-Sent Events
 * (`id: <offset>`, `data: {"event":"message.created","data":<message>}`), with comment
 * heartbeats every `heartbeat` milliseconds. A client that comes back with `Last-Event-ID` gets
 * what it missed while the history still holds it; otherwise an explicit `reset` event
 * (`{"event":"stream.reset","reason":"too-far-behind"}`) before the live events, never a
 * silent gap. Authentication is the caller's (mounted in front of the route). With a broker
 * shared through Redis, a client resumes on whichever process it reconnects to.
 */
export async function createEvents(options: {
  /** Milliseconds between comment heartbeats. */
  heartbeat: number;
  /** Where the events go: in memory, or Redis when several processes serve as one. */
  broker?: Broker;
  /** Where ended credentials are heard: a stream ends with the credential that opened it. */
  revocations: Revocations;
  /** Open streams per principal, at most (the next: 429). */
  maxStreamsPerPrincipal: number;
  /** Where failures are logged. */
  logger: Logger;
}) {
  const { logger } = options;
  const broker = options.broker ?? new MemoryBroker({ historySize: HISTORY_SIZE, logger });
  const hub = createHub({ broker, logger });
  const streams = new Set<EventStream>();
  // The ids are bare offsets, read back in the broker's current epoch: known at start, and
  // followed with every event (a new one when Redis lost its data).
  let epoch = (await hub.position(EVENTS_CHANNEL)).epoch;

  // Made once, so every stream shares one formatting of each event.
  const ids = {
    toEvent: (message: HubMessage) => {
      epoch = message.epoch;
      return { id: String(message.offset), data: { event: message.event, data: message.data } };
    },
    parseId: (id: string) => (OFFSET.test(id) ? { epoch, offset: Number(id) } : undefined),
    // Too far behind, from before a restart, or not one of our ids: say so, with the id of
    // the newest event, so that the next reconnection resumes from there.
    toReset: (position: Position) => ({
      event: 'reset',
      id: String(position.offset),
      data: RESET,
    }),
  };

  function open(req: IncomingMessage, res: ServerResponse): void {
    const stream = streamChannel(req, res, {
      hub,
      channel: EVENTS_CHANNEL,
      heartbeat: options.heartbeat,
      revocations: options.revocations,
      maxConnectionsPerPrincipal: options.maxStreamsPerPrincipal,
      logger,
      ...ids,
    });
    streams.add(stream);
    stream.onClose(() => streams.delete(stream));
  }

  const routes: Record<string, MethodTable> = {
    '/events': {
      GET: (req, res) => open(req, res),
      // the headers of the stream, without opening one
      HEAD: (_req, res) =>
        sendResponse(res, 200, undefined, {
          'Content-Type': EVENT_STREAM_TYPE,
          'Cache-Control': 'no-cache, no-transform',
        }),
    },
  };

  return {
    routes,
    /** Fans a new message out to every open stream (and into the history); never rejects. */
    publish(message: Message): Promise<void> {
      return hub.publish(EVENTS_CHANNEL, 'message.created', message).then(
        () => {},
        (error: unknown) => {
          logger.error(
            { component: 'events', event: 'publish.failed', err: error },
            'publishing an event failed',
          );
        },
      );
    },
    /**
     * A message updated or deleted: its older versions leave the replay history (a deleted
     * one's text is never replayed), then `message.updated` / `message.deleted` is streamed.
     */
    change(change: Parameters<typeof publishChange>[2]): Promise<void> {
      return publishChange(hub, [EVENTS_CHANNEL], change);
    },
    /**
     * Ends every open stream, the hub staying open: the requests still in flight during a
     * graceful shutdown publish what they create (to other processes, with Redis).
     */
    endStreams(): void {
      for (const stream of [...streams]) stream.close();
    },
    /** Ends every open stream and the hub (for a graceful shutdown). */
    async close(): Promise<void> {
      for (const stream of [...streams]) stream.close();
      await hub.close();
    },
  };
}
