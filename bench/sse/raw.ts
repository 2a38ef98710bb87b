/**
 * The floor: node:http answering `GET /events` with the event-stream headers, keeping every
 * response in a Set, and broadcasting by writing one preformatted event to each in a loop.
 */
import type { ServerResponse } from 'node:http';
import { createFanoutServer } from '../realtime/serve.js';

const streams = new Set<ServerResponse>();
let id = 0;

const { start } = createFanoutServer((req, res) => {
  if (req.method !== 'GET' || req.url !== '/events') {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, {
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache, no-transform',
  });
  res.flushHeaders();
  req.socket.setNoDelay(true);
  streams.add(res);
  res.on('close', () => streams.delete(res));
});

start({
  broadcast(data) {
    const event = `id: ${++id}\nevent: tick\ndata: ${JSON.stringify(data)}\n\n`;
    for (const res of streams) res.write(event);
  },
  connections: () => streams.size,
});
