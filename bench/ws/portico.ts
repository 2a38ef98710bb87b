/**
 * portico: `createUpgradeHandler` + `createChannelProtocol` over a `createHub()`; clients
 * send `{"type":"subscribe","channel":"bench"}` and the server publishes on the hub. With
 * `BENCH_HUB=redis` (bench/redis-fanout/portico-redis.ts) the hub's broker is a `RedisBroker`
 * on `$BENCH_REDIS_URL`; with `BENCH_HUB=redis-cluster` (bench/redis-fanout/
 * portico-redis-cluster.ts) on an ioredis `Cluster` of `$BENCH_REDIS_CLUSTER`, and
 * `redis-cluster-wait` adds `waitForReplicas: 1, waitTimeoutMs: 1000`. It imports the build in
 * `dist/` (what users run); `npm run bench` builds it first.
 */
import { REDIS_URL_VARIABLE } from '../lib/redis.js';
import { BENCH_REDIS_CLUSTER, parseSeeds } from '../lib/redis-cluster.js';
import { createFanoutServer } from '../realtime/serve.js';

// Types from the sources, code from the build: typechecking needs no build, the run uses it.
const ws = (await import(
  new URL('../../dist/ws.js', import.meta.url).href
)) as typeof import('../../src/ws/index.js');
const realtime = (await import(
  new URL('../../dist/realtime.js', import.meta.url).href
)) as typeof import('../../src/realtime/index.js');

async function redisBroker(hub: string) {
  const { Cluster, Redis } = await import('ioredis');
  const { RedisBroker } = (await import(
    new URL('../../dist/redis.js', import.meta.url).href
  )) as typeof import('../../src/redis/index.js');
  // A prefix per row: the cluster rows share one Redis Cluster, and with one channel name the
  // ticks of one row's rounds also reached the other row's clients, late ones counted as
  // duplicates of the next round there (the round ids are the same in every row).
  const prefix = `portico:hub:${hub}:`;
  if (hub === 'redis') {
    const url = process.env[REDIS_URL_VARIABLE];
    if (url === undefined) throw new Error(`${REDIS_URL_VARIABLE} is not set`);
    return new RedisBroker({ client: new Redis(url), prefix });
  }
  const seeds = process.env[BENCH_REDIS_CLUSTER];
  if (seeds === undefined) throw new Error(`${BENCH_REDIS_CLUSTER} is not set`);
  const client = new Cluster(parseSeeds(seeds));
  if (hub === 'redis-cluster') return new RedisBroker({ client, prefix });
  return new RedisBroker({ client, prefix, waitForReplicas: 1, waitTimeoutMs: 1_000 });
}

async function hubBroker() {
  const hub = process.env.BENCH_HUB;
  if (hub === undefined || hub === '') return {};
  if (hub !== 'redis' && hub !== 'redis-cluster' && hub !== 'redis-cluster-wait') {
    throw new Error(`BENCH_HUB=${hub}: expected redis, redis-cluster or redis-cluster-wait`);
  }
  return { broker: await redisBroker(hub) };
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
