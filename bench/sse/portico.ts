/**
 * portico: `streamChannel(req, res, { hub, channel: 'bench', heartbeat: 0 })` per
 * `GET /events` (events `id: <epoch>:<offset>`, `event: tick`, JSON data, `Last-Event-ID`
 * resume); the server publishes on the hub. It imports the build in `dist/` (what users run);
 * `npm run bench` builds it first.
 */
import { createFanoutServer } from '../realtime/serve.js';

// Types from the sources, code from the build: typechecking needs no build, the run uses it.
const sse = (await import(
  new URL('../../dist/sse.js', import.meta.url).href
)) as typeof import('../../src/sse/index.js');
const realtime = (await import(
  new URL('../../dist/realtime.js', import.meta.url).href
)) as typeof import('../../src/realtime/index.js');

const hub = realtime.createHub();
let open = 0;

const { start } = createFanoutServer((req, res) => {
  if (req.method !== 'GET' || req.url !== '/events') {
    res.writeHead(404).end();
    return;
  }
  const stream = sse.streamChannel(req, res, { hub, channel: 'bench', heartbeat: 0 });
  open++;
  stream.onClose(() => {
    open--;
  });
});

start({
  broadcast: (data) => hub.publish('bench', 'tick', data),
  connections: () => open,
});
