import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  createEventStream,
  createHub,
  EVENT_STREAM_TYPE,
  type EventStream,
  type HubMessage,
  lastEventId,
  MemoryBroker,
  type MethodTable,
  send as sendResponse,
} from 'portico';
import type { Message } from './messages.js';

/** The hub channel that carries every new message, whatever its own channel. */
export const EVENTS_CHANNEL = 'messages';
/** How many events a reconnecting client can still catch up on. */
const HISTORY_SIZE = 1000;
/** A `Last-Event-ID` this server issued: a decimal offset. */
const OFFSET = /^(?:0|[1-9]\d{0,15})$/;

/** What a stream sends when it cannot replay what the client missed. */
const RESET = { event: 'stream.reset', reason: 'too-far-behind' } as const;

/** The offset in a `Last-Event-ID`; `undefined` for none, `null` for one that is not ours. */
function resumeOffset(req: IncomingMessage): number | null | undefined {
  const id = lastEventId(req);
  if (id === undefined || id === '') return undefined;
  if (!OFFSET.test(id)) return null;
  const offset = Number(id);
  return Number.isSafeInteger(offset) ? offset : null;
}

/**
 * `GET /events`: every message created over REST, as Server-Sent Events
 * (`id: <offset>`, `data: {"event":"message.created","data":<message>}`), with comment
 * heartbeats every `heartbeatSeconds`. A client that comes back with `Last-Event-ID` gets
 * what it missed while the history still holds it; otherwise an explicit `reset` event
 * (`{"event":"stream.reset","reason":"too-far-behind"}`) before the live events, never a
 * silent gap. Authentication is the caller's (mounted in front of the route).
 */
export function createEvents(options: { heartbeatSeconds: number }) {
  const broker = new MemoryBroker({ historySize: HISTORY_SIZE });
  const hub = createHub({ broker });
  const streams = new Set<EventStream>();

  function send(stream: EventStream, message: HubMessage): void {
    stream.send({
      id: String(message.offset),
      data: { event: message.event, data: message.data },
    });
  }

  async function open(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const since = resumeOffset(req);
    const stream = createEventStream(req, res, { heartbeat: options.heartbeatSeconds * 1000 });
    streams.add(stream);
    // Subscribe before replaying, holding live events back until the replay is out:
    // then nothing published meanwhile is lost, and the offsets dedupe the overlap.
    let held: HubMessage[] | undefined = since === undefined ? undefined : [];
    let lastSent = -1;
    const deliver = (message: HubMessage) => {
      if (message.offset <= lastSent) return;
      lastSent = message.offset;
      send(stream, message);
    };
    const off = hub.subscribe(EVENTS_CHANNEL, (message) => {
      if (held === undefined) deliver(message);
      else held.push(message);
    });
    stream.onClose(() => {
      off();
      streams.delete(stream);
    });
    if (since === undefined) return;

    const history =
      since === null
        ? undefined
        : await hub.replay(EVENTS_CHANNEL, { epoch: broker.epoch, offset: since });
    if (stream.closed) return;
    if (since !== null && history?.recovered) {
      lastSent = since;
      for (const message of history.events) deliver(message);
    } else {
      // Too far behind, from before a restart, or not one of our ids: say so, and give
      // the id of the newest event so that the next reconnection resumes from here.
      const newest = history?.events.at(-1)?.offset ?? (await newestOffset());
      if (stream.closed) return;
      lastSent = newest;
      stream.send({ event: 'reset', id: String(newest), data: RESET });
    }
    const pending = held ?? [];
    held = undefined;
    for (const message of pending) deliver(message);
  }

  /** The offset of the newest event of the channel (0 when there is none). */
  async function newestOffset(): Promise<number> {
    const { events } = await hub.replay(EVENTS_CHANNEL, { epoch: broker.epoch, offset: 0 });
    return events.at(-1)?.offset ?? 0;
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
    /** Fans a new message out to every open stream (and into the history). */
    publish(message: Message): void {
      hub.publish(EVENTS_CHANNEL, 'message.created', message).catch((error: unknown) => {
        console.error('portico reference server: publishing an event failed', error);
      });
    },
    /** Ends every open stream and the hub (for a graceful shutdown). */
    async close(): Promise<void> {
      for (const stream of [...streams]) stream.close();
      await hub.close();
    },
  };
}
