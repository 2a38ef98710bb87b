/**
 * better-sse: `createSession(req, res, { keepAlive: null })` per `GET /events`, registered
 * on one `createChannel()`; the server broadcasts with `channel.broadcast(data, 'tick')`.
 */
import { createChannel, createSession } from 'better-sse';
import { createFanoutServer } from '../realtime/serve.js';

const channel = createChannel();

const { start } = createFanoutServer((req, res) => {
  if (req.method !== 'GET' || req.url !== '/events') {
    res.writeHead(404).end();
    return;
  }
  // keepAlive off, like portico's `heartbeat: 0`.
  createSession(req, res, { keepAlive: null }).then(
    (session) => channel.register(session),
    () => res.destroy(),
  );
});

start({
  broadcast(data) {
    channel.broadcast(data, 'tick');
  },
  connections: () => channel.sessionCount,
});
