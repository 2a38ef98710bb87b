/**
 * portico: `createUpgradeHandler` + `createChannelProtocol` over a `createHub()`; clients
 * send `{"type":"subscribe","channel":"bench"}` and the server publishes on the hub. With
 * `BENCH_HUB=redis` (bench/redis-fanout/portico-redis.ts) the hub's broker is a `RedisBroker`
 * on `$BENCH_REDIS_URL`. It imports the build in `dist/` (what users run); `npm run bench` builds
 * it first.
 */
import { REDIS_URL_VARIABLE } from '../lib/redis.js';
import { createFanoutServer } from '../realtime/serve.js';

// Types from the sources, code from the build: typechecking needs no build, the run uses it.
const ws = (await import(
  new URL('../../dist/ws.js', import.meta.url).href
)) as typeof import('../../src/ws/index.js');
const realtime = (await import(
  new URL('../../dist/realtime.js', import.meta.url).href
)) as typeof import('../../src/realtime/index.js');

async function redisBroker(url: string) {
  const { Redis } = await import('ioredis');
  const { RedisBroker } = (await import(
    new URL('../../dist/redis.js', import.meta.url).href
  )) as typeof import('../../src/redis/index.js');
  return new RedisBroker({ client: new Redis(url) });
}

async function hubBroker() {
  if (process.env.BENCH_HUB !== 'redis') return {};
  const url = process.env[REDIS_URL_VARIABLE];
  if (url === undefined) throw new Error(`${REDIS_URL_VARIABLE} is not set`);
  return { broker: await redisBroker(url) };
}

const hub = realtime.createHub(await hubBroker());
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
