import { redisAndCluster } from '../lib/redis-cluster.js';
import type { FanoutComparison } from '../realtime/types.js';

const subscribe = JSON.stringify({ type: 'subscribe', channel: 'bench' });

/** WebSocket broadcast across processes: portico's in-memory hub vs its hub on RedisBroker. */
export const redisFanoutComparison: FanoutComparison = {
  kind: 'fanout',
  name: 'redis-fanout',
  title: 'WebSocket broadcast across processes through Redis',
  description:
    'N WebSocket connections, opened by a client process and each subscribed to one channel ' +
    '(`{"type":"subscribe","channel":"bench"}`) with portico’s channel protocol ' +
    '(`createUpgradeHandler` + `createChannelProtocol({ hub, heartbeat: 0, rateLimit: false })`); ' +
    "the server broadcasts K messages with `hub.publish('bench', 'tick', data)` (one per " +
    'event-loop turn, each awaited, carrying `{round, seq, sent, text}`) and the client process ' +
    'times every delivery. The baseline is bench/ws/portico.ts as is: one process, the ' +
    'default in-memory hub. With Redis, the same server runs as **two processes**, each ' +
    'holding half the connections, their hubs on `new RedisBroker({ client: new Redis(url) })` ' +
    "against one real `redis-server` (started for the run on 127.0.0.1, `--save '' " +
    '--appendonly no`); every broadcast is published through the first process only, so ' +
    'every delivery crosses Redis (the broker’s publish script, then pub/sub to each ' +
    'process’s subscriber connection), and half of them reach the other process only that way. ' +
    'The cluster rows run the same two processes with `new RedisBroker({ client: new ' +
    'Cluster(seeds) })` against six `redis-server --cluster-enabled yes` (three primaries, a ' +
    'replica each, same flags): the channel’s keys live on one slot, so every publish runs ' +
    'on one primary and comes back by sharded pub/sub (`SPUBLISH` / `SSUBSCRIBE`); the last ' +
    'row adds `waitForReplicas: 1, waitTimeoutMs: 1000`, so every publish also waits for ' +
    'that primary’s replica to acknowledge it (`WAIT`) before the next one is sent.',
  baseline: 'portico-local',
  clients: { full: 2000, quick: 500 },
  servers: [
    {
      name: 'portico-local',
      label: 'portico, in-memory hub (1 process)',
      entry: 'bench/ws/portico.ts',
      client: 'ws',
      path: '/ws',
      subscribe,
    },
    {
      name: 'portico-redis',
      label: 'portico, RedisBroker hub (2 processes)',
      entry: 'bench/redis-fanout/portico-redis.ts',
      client: 'ws',
      path: '/ws',
      subscribe,
      processes: 2,
    },
    {
      name: 'portico-redis-cluster',
      label: 'portico, RedisBroker hub on a Redis Cluster (2 processes)',
      entry: 'bench/redis-fanout/portico-redis-cluster.ts',
      client: 'ws',
      path: '/ws',
      subscribe,
      processes: 2,
    },
    {
      name: 'portico-redis-cluster-wait',
      label: 'portico, RedisBroker hub on a Redis Cluster, waitForReplicas: 1 (2 processes)',
      entry: 'bench/redis-fanout/portico-redis-cluster-wait.ts',
      client: 'ws',
      path: '/ws',
      subscribe,
      processes: 2,
    },
  ],
  ...redisAndCluster(),
  notes: [
    'Before measuring, probes are broadcast through the first process until every client has ' +
      'one: with Redis, that proves both processes’ subscriptions are live in Redis (on the ' +
      'cluster, their sharded subscriptions on the primary of the channel’s slot).',
    'Deliveries/s, latency and server CPU per delivery are over all the server processes (both ' +
      'pinned to CPU 0 with `taskset`, the client process to CPU 1); the redis-server is not ' +
      'pinned and its CPU is not counted, nor are the cluster’s six nodes (three primaries + ' +
      'three replicas on the same machine, none pinned, replicating every publish). Memory per ' +
      'connection adds up both processes (so the Redis rows carry a second process’s baseline ' +
      'and its Redis connections: on the cluster, a connection per node and a sharded ' +
      'subscriber connection per primary in each process).',
    'A publish through `RedisBroker` is one `EVALSHA` (offset, bounded history of 1,000 ' +
      'events per channel in a Redis list, `PUBLISH`, or `SPUBLISH` on the cluster), awaited ' +
      'by the send loop before the ' +
      'next message; each process parses a message once and hands the same object to all its ' +
      'subscribers, so the push is serialized once per process.',
    'No compression (permessage-deflate off), no heartbeats during the run (`heartbeat: 0`).',
  ],
};
