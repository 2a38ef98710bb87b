/**
 * Redis-backed state for portico behind several processes, on one Redis or a Redis Cluster,
 * through `ioredis` or node-redis v5 (`redis`), both optional peer dependencies: {@link RedisRateLimitStore} (exact limits across processes),
 * {@link RedisBroker} (the realtime hub's fan-out and resume history across processes),
 * {@link RedisWebhookStore} (a durable, leased webhook delivery queue shared by every sender),
 * {@link RedisSessionStore}, {@link RedisApiKeyStore}, {@link RedisClientStore} (OAuth clients
 * added at run time) and {@link RedisRecordStore} (one-time codes and refresh-token rotation
 * atomic across processes).
 * When Redis is down, what needs it fails fast with {@link RedisUnavailableError}, answered as
 * a 503 problem with `Retry-After`; ioredis reconnects on its own.
 *
 * Not re-exported from the root `portico` entry, so that apps without Redis never load a
 * Redis client: import it from `portico/redis`.
 *
 * @module portico/redis
 */
export { RedisApiKeyStore, type RedisApiKeyStoreOptions } from './api-key-store.js';
export { RedisBroker, type RedisBrokerOptions } from './broker.js';
export { RedisClientStore, type RedisClientStoreOptions } from './client-store.js';
export type {
  NodeRedisClient,
  NodeRedisCluster,
  NodeRedisListener,
} from './node-redis-connection.js';
export { RedisRateLimitStore, type RedisRateLimitStoreOptions } from './rate-limit-store.js';
export { RedisRecordStore, type RedisRecordStoreOptions } from './record-store.js';
export { RedisReplayStore, type RedisReplayStoreOptions } from './replay-store.js';
export { type RedisClient, RedisUnavailableError } from './script.js';
export { RedisSessionStore, type RedisSessionStoreOptions } from './session-store.js';
export { RedisWebhookStore, type RedisWebhookStoreOptions } from './webhook-store.js';
