/**
 * portico: `createUpgradeHandler` + `createChannelProtocol` over a `createHub()`; clients
 * send `{"type":"subscribe","channel":"bench"}` and the server publishes on the hub. It
 * imports the build in `dist/` (what users run); `npm run bench` builds it first.
 */
import { createFanoutServer } from '../realtime/serve.js';

// Types from the sources, code from the build: typechecking needs no build, the run uses it.
const ws = (await import(
  new URL('../../dist/ws.js', import.meta.url).href
)) as typeof import('../../src/ws/index.js');
const realtime = (await import(
  new URL('../../dist/realtime.js', import.meta.url).href
)) as typeof import('../../src/realtime/index.js');

const hub = realtime.createHub();
const protocol = ws.createChannelProtocol({ hub, heartbeat: 0, rateLimit: false });
const { server, start } = createFanoutServer();
server.on(
  'upgrade',
  ws.createUpgradeHandler({
    path: '/ws',
    onConnection: (socket, ctx) => protocol.handle(socket, ctx),
  }),
);

start({
  broadcast: (data) => hub.publish('bench', 'tick', data),
  connections: () => protocol.size,
});
