import type { FanoutComparison } from '../realtime/types.js';

/** Broadcast to N WebSocket connections: raw `ws` vs portico's channel protocol vs Socket.IO. */
export const wsComparison: FanoutComparison = {
  kind: 'fanout',
  name: 'ws',
  title: 'broadcast to N WebSocket connections',
  description:
    'One server process holds N WebSocket connections, opened by a client process and each ' +
    'subscribed to one channel; the server broadcasts K messages (one per event-loop turn, ' +
    'each carrying `{round, seq, sent, text}` with a 64-character text, `sent` being the send ' +
    'time) and the client process times every delivery. raw `ws` loops over `wss.clients` with ' +
    'one `{"type":"push","event":"tick","data":…}` string; portico runs `createUpgradeHandler` + ' +
    '`createChannelProtocol({ hub, heartbeat: 0, rateLimit: false })`, clients send ' +
    '`{"type":"subscribe","channel":"bench"}` and the server calls `hub.publish(\'bench\', ' +
    "'tick', data)`; Socket.IO 4 (WebSocket transport only) joins each client to a room on its " +
    "`subscribe` and broadcasts with `io.to('bench').emit('tick', data)`. Targets: portico at " +
    '90 % or more of raw `ws` deliveries/s, at most 1.25× its memory per connection, and 3× ' +
    'Socket.IO’s deliveries/s or more.',
  baseline: 'ws-raw',
  secondaryBaseline: 'socketio',
  servers: [
    {
      name: 'ws-raw',
      label: 'raw ws (wss.clients loop)',
      entry: 'bench/ws/raw.ts',
      client: 'ws',
      path: '/ws',
    },
    {
      name: 'portico',
      label: 'portico channel protocol + hub',
      entry: 'bench/ws/portico.ts',
      client: 'ws',
      path: '/ws',
      subscribe: JSON.stringify({ type: 'subscribe', channel: 'bench' }),
    },
    {
      name: 'socketio',
      label: 'Socket.IO 4 (websocket transport, room)',
      entry: 'bench/ws/socketio.ts',
      client: 'socketio',
      path: '/',
    },
  ],
  notes: [
    'No compression (permessage-deflate off everywhere), no heartbeats during the run ' +
      '(portico `heartbeat: 0`; Socket.IO keeps its default 25 s ping).',
    'The client process uses the `ws` client for raw ws and portico, socket.io-client ' +
      "(`transports: ['websocket']`, one Manager per connection) for Socket.IO: the client " +
      'side of Socket.IO costs more per message, which can bound its deliveries/s; server CPU ' +
      'per delivery is measured on the server process alone.',
    'The “3× Socket.IO” target cannot be met on this machine by any server: the floor itself ' +
      '(raw `ws`) is only about 1.3× Socket.IO, because about 70 % of each delivery is the ' +
      'kernel’s `writev` on loopback (about 15 µs system against 6.5 µs user time per delivery ' +
      'in `node --cpu-prof` profiles, for raw ws and portico alike). portico’s server CPU per ' +
      'delivery is about 0.7× Socket.IO’s.',
    'Memory: pushes are serialized once per message for all subscribers; a connection’s id is ' +
      'made only when used and its channels live in two fields, a Map only from the second ' +
      '(from 1.35× to about 1.1–1.2× raw ws per connection; V8 heap about 3.3–3.7 KiB against ' +
      'raw ws’s 2.5–2.8).',
  ],
};
