/**
 * bench/redis-fanout/portico-redis-cluster.ts with `waitForReplicas: 1, waitTimeoutMs: 1000`
 * on the `RedisBroker`: every publish also waits (`WAIT 1 1000`) for the primary's replica to
 * acknowledge it before it resolves.
 */
process.env.BENCH_HUB = 'redis-cluster-wait';
await import('../ws/portico.js');
