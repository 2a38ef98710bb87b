/**
 * The floor: a `ws` WebSocketServer that broadcasts by looping over `wss.clients` with one
 * payload string, the same `{"type":"push","event":"tick","data":…}` portico sends.
 */
import { WebSocketServer } from 'ws';
import { createFanoutServer } from '../realtime/serve.js';

const { server, start } = createFanoutServer();
const wss = new WebSocketServer({ server, path: '/ws', perMessageDeflate: false });
wss.on('connection', (ws) => {
  ws.on('error', () => {});
});

start({
  broadcast(data) {
    const payload = JSON.stringify({ type: 'push', event: 'tick', data });
    for (const c of wss.clients) c.send(payload);
  },
  connections: () => wss.clients.size,
});
