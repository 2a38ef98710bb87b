import { Redis } from 'ioredis';
import {
  type ApiKeyStore,
  type Broker,
  MemoryBroker,
  MemoryWebhookStore,
  type RateLimitStore,
  type SessionStore,
  type WebhookStore,
} from 'portico';
import {
  RedisApiKeyStore,
  RedisBroker,
  RedisRateLimitStore,
  RedisSessionStore,
  RedisWebhookStore,
} from 'portico/redis';

/**
 * Where the state that processes must share lives: in this process (no `REDIS_URL`), or in
 * Redis, so that processes sharing one Redis and one `BASE_URL` act as one service.
 */
export interface SharedState {
  /** The rate-limit counters; `undefined`: the limiter's own in-memory store. */
  rateLimitStore: RateLimitStore | undefined;
  /** API keys and sessions; `undefined`: in memory. */
  apiKeyStore: ApiKeyStore | undefined;
  sessionStore: SessionStore | undefined;
  /** Webhook subscriptions and the delivery queue (shared: a crashed sender's deliveries are taken over). */
  webhookStore: WebhookStore;
  /** A broker for one hub: `name` keeps the hubs' channels apart. */
  broker(name: string, historySize: number): Broker;
  /** Closes the Redis connections. */
  close(): Promise<void>;
}

export function createSharedState(redisUrl: string | undefined): SharedState {
  if (redisUrl === undefined) {
    return {
      rateLimitStore: undefined,
      apiKeyStore: undefined,
      sessionStore: undefined,
      webhookStore: new MemoryWebhookStore(),
      broker: (_name, historySize) => new MemoryBroker({ historySize }),
      close: async () => {},
    };
  }
  // Commands fail fast while Redis is away (answered 503); ioredis reconnects on its own.
  const client = new Redis(redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: true });
  client.on('error', () => {
    // reported per request as 503 problems; ioredis logs nothing itself and retries
  });
  const brokers: RedisBroker[] = [];
  return {
    rateLimitStore: new RedisRateLimitStore({ client, prefix: 'portico:ref:rl:' }),
    webhookStore: new RedisWebhookStore({ client, prefix: 'portico:ref:wh:' }),
    apiKeyStore: new RedisApiKeyStore({ client, prefix: 'portico:ref:apikey:' }),
    sessionStore: new RedisSessionStore({ client, prefix: 'portico:ref:sess:' }),
    broker(name, historySize) {
      const broker = new RedisBroker({ client, prefix: `portico:ref:${name}:`, historySize });
      brokers.push(broker);
      return broker;
    },
    async close() {
      await Promise.all(brokers.map((broker) => broker.close()));
      await client.quit().catch(() => client.disconnect());
    },
  };
}
