import type { FanoutComparison } from '../realtime/types.js';

/** Broadcast to N Server-Sent Events streams: a raw node:http loop vs portico vs better-sse. */
export const sseComparison: FanoutComparison = {
  kind: 'fanout',
  name: 'sse',
  title: 'broadcast to N Server-Sent Events streams',
  description:
    'One server process holds N `GET /events` streams (`text/event-stream`, chunked), opened ' +
    'by a client process over node:http; the server broadcasts K events (one per event-loop ' +
    'turn, `event: tick`, an `id`, and JSON data `{round, seq, sent, text}` with a 64-character ' +
    'text, `sent` being the send time) and the client process times every delivery. The raw ' +
    'loop writes one preformatted `id: n\\nevent: tick\\ndata: …\\n\\n` string to each response; ' +
    "portico runs `streamChannel(req, res, { hub, channel: 'bench', heartbeat: 0 })` (ids " +
    '`<epoch>:<offset>` with `Last-Event-ID` resume, each event formatted once for every ' +
    'stream) and publishes with `hub.publish`; better-sse registers each `createSession(req, ' +
    'res, { keepAlive: null })` on one `createChannel()` and calls `channel.broadcast(data, ' +
    "'tick')`. Targets: portico at 90 % or more of the raw loop’s deliveries/s, and ahead of " +
    'better-sse.',
  baseline: 'sse-raw',
  secondaryBaseline: 'better-sse',
  servers: [
    {
      name: 'sse-raw',
      label: 'raw node:http write loop',
      entry: 'bench/sse/raw.ts',
      client: 'sse',
      path: '/events',
    },
    {
      name: 'portico',
      label: 'portico streamChannel (hub)',
      entry: 'bench/sse/portico.ts',
      client: 'sse',
      path: '/events',
    },
    {
      name: 'better-sse',
      label: 'better-sse channel',
      entry: 'bench/sse/better-sse.ts',
      client: 'sse',
      path: '/events',
    },
  ],
  notes: [
    'No heartbeats or keep-alive comments during the run (portico `heartbeat: 0`, better-sse ' +
      '`keepAlive: null`); portico and better-sse send their first `retry:` line as by default.',
    'better-sse gives each broadcast one `crypto.randomUUID()` id; portico the hub position ' +
      '(`<epoch>:<offset>`); the raw loop a counter.',
  ],
};
