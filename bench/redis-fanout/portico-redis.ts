/**
 * bench/ws/portico.ts with its hub on a `RedisBroker` (Redis at `$BENCH_REDIS_URL`, started by
 * the orchestrator): every publish runs the broker's Lua script and every delivery comes back
 * through Redis pub/sub, as it does between processes.
 */
process.env.BENCH_HUB = 'redis';
await import('../ws/portico.js');
