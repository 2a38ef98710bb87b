/**
 * bench/ws/portico.ts with its hub on a `RedisBroker` over an ioredis `Cluster` (seed nodes in
 * `$BENCH_REDIS_CLUSTER`, six nodes started by the orchestrator): every publish runs the
 * broker's Lua script on the primary of the channel's slot and every delivery comes back
 * through sharded pub/sub (`SPUBLISH` / `SSUBSCRIBE`), as it does between processes.
 */
process.env.BENCH_HUB = 'redis-cluster';
await import('../ws/portico.js');
