/**
 * bench/ws/portico.ts with its hub on Redis: `createUpgradeHandler` + `createChannelProtocol`
 * over `createHub({ broker: new RedisBroker({ client: new Redis(url) }) })`, so every publish
 * runs the broker's Lua script and every delivery comes back through Redis pub/sub (as it
 * does between processes). Redis is at `$BENCH_REDIS_URL` (started by the orchestrator). It
 * imports the build in `dist/`; `npm run bench` builds it first.
 */
import { Redis } from 'ioredis';
import { REDIS_URL_VARIABLE } from '../lib/redis.js';
import { createFanoutServer } from '../realtime/serve.js';

// Types from the sources, code from the build: typechecking needs no build, the run uses it.
const ws = (await import(
  new URL('../../dist/ws.js', import.meta.url).href
)) as typeof import('../../src/ws/index.js');
const realtime = (await import(
  new URL('../../dist/realtime.js', import.meta.url).href
)) as typeof import('../../src/realtime/index.js');
const { RedisBroker } = (await import(
  new URL('../../dist/redis.js', import.meta.url).href
)) as typeof import('../../src/redis/index.js');

const url = process.env[REDIS_URL_VARIABLE];
if (url === undefined) throw new Error(`${REDIS_URL_VARIABLE} is not set`);

const hub = realtime.createHub({ broker: new RedisBroker({ client: new Redis(url) }) });
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
