import { Cluster, Redis } from 'ioredis';
import {
  type ApiKeyStore,
  type Broker,
  createHub,
  type RateLimitStore,
  type RecordStore,
  type Revocations,
  type SessionStore,
  serviceUnavailable,
  type WebhookStore,
} from 'portico';
import { createRevocations, type ReplayStore } from 'portico/auth';
import type { Logger } from 'portico/diagnostics';
import { MemoryClientStore, type WritableClientStore } from 'portico/oauth';
import { MemoryBroker } from 'portico/realtime';
import {
  RedisApiKeyStore,
  RedisBroker,
  RedisClientStore,
  RedisRateLimitStore,
  RedisRecordStore,
  RedisReplayStore,
  RedisSessionStore,
  RedisWebhookStore,
} from 'portico/redis';
import { MemoryWebhookStore } from 'portico/webhook';
import { type MessageRepository, memoryMessages, type Stored } from './messages.js';

/**
 * The most clients that may register themselves: past it `POST /register` answers 503, and no
 * registered client is ever forgotten to make room.
 */
const REGISTERED_CLIENTS = 10_000;

/** One Redis (`REDIS_URL`) or the seed nodes of a Redis Cluster (`REDIS_CLUSTER`). */
export type RedisLocation = { url: string } | { cluster: { host: string; port: number }[] };

/**
 * Where the state that processes must share lives: in this process (no `REDIS_URL`), or in
 * Redis, so that processes sharing one Redis and one `BASE_URL` act as one service.
 */
export interface SharedState {
  /** The rate-limit counters; `undefined`: the limiter's own in-memory store. */
  rateLimitStore: RateLimitStore | undefined;
  /** Wrong device user codes per user (RFC 8628 §5.1 lockout); `undefined`: in memory. */
  deviceFailureStore: RateLimitStore | undefined;
  /**
   * The clients that registered themselves (RFC 7591), bounded: in this process, or in Redis
   * (a client registered on one process works on every process).
   */
  clientStore: WritableClientStore;
  /** Authorization codes, refresh tokens, device codes; `undefined`: in memory. */
  oauthStore: RecordStore | undefined;
  /**
   * The ids of accepted client assertions and of accepted DPoP proofs, a store each (neither
   * can fill the other's); `undefined`: in memory, a store each too.
   */
  replayStores: { assertions: ReplayStore; dpop: ReplayStore } | undefined;
  /** The upstream sign-in transactions used already (each callback accepted once); `undefined`: in memory. */
  signInReplay: ReplayStore | undefined;
  /**
   * A value every process must agree on (the token signing key, the form key): made by
   * `make` in this process, or by the first process and read from Redis by the others.
   */
  agreed(name: string, make: () => string): Promise<string>;
  /** The messages of `/api/messages`. */
  messages: MessageRepository;
  /** API keys and sessions; `undefined`: in memory. */
  apiKeyStore: ApiKeyStore | undefined;
  sessionStore: SessionStore | undefined;
  /** Webhook subscriptions and the delivery queue (shared: a crashed sender's deliveries are taken over). */
  webhookStore: WebhookStore;
  /** A broker for one hub: `name` keeps the hubs' channels apart. */
  broker(name: string, historySize: number): Broker;
  /**
   * Where ended credentials are announced (a key deleted, a session signed out, a grant
   * revoked): every process's streams, sockets and webhook subscriptions of that credential
   * end. Its hub is the service's own, closed to clients.
   */
  revocations: Revocations;
  /** What readiness depends on: Redis answering `PING` (nothing in memory). */
  checks: Record<string, () => Promise<unknown>>;
  /** Closes the Redis connections. */
  close(): Promise<void>;
}

export function createSharedState(
  location: RedisLocation | undefined,
  logger: Logger,
): SharedState {
  if (location === undefined) {
    return {
      revocations: createRevocations(),
      rateLimitStore: undefined,
      clientStore: new MemoryClientStore([], { maxClients: REGISTERED_CLIENTS }),
      oauthStore: undefined,
      replayStores: undefined,
      signInReplay: undefined,
      deviceFailureStore: undefined,
      messages: memoryMessages(),
      agreed: async (_name, make) => make(),
      apiKeyStore: undefined,
      sessionStore: undefined,
      webhookStore: new MemoryWebhookStore(),
      broker: (_name, historySize) => new MemoryBroker({ historySize, logger }),
      checks: {},
      close: async () => {},
    };
  }
  const client = connect(location);
  client.on('error', () => {
    // reported per request as 503 problems; ioredis logs nothing itself and retries
  });
  // On a cluster, what must outlive a failover (messages, keys, sessions ended, revocations,
  // the agreed keys) waits for its replica: Redis replicates asynchronously.
  const replicated = 'cluster' in location ? { waitForReplicas: 1, waitTimeoutMs: 250 } : {};
  const brokers: RedisBroker[] = [];
  const broker = (name: string, historySize: number) => {
    const made = new RedisBroker({
      client,
      prefix: `portico:ref:${name}:`,
      historySize,
      logger,
      ...replicated,
    });
    brokers.push(made);
    return made;
  };
  // revocations cross processes on a hub of their own, which no client can subscribe to
  const revocationHub = createHub({ broker: broker('revocations', 16), logger });
  const revocations = createRevocations({ transport: revocationHub });
  return {
    revocations,
    rateLimitStore: new RedisRateLimitStore({ client, prefix: 'portico:ref:rl:' }),
    clientStore: new RedisClientStore({
      client,
      prefix: 'portico:ref:clients:',
      maxClients: REGISTERED_CLIENTS,
    }),
    webhookStore: new RedisWebhookStore({
      client,
      prefix: 'portico:ref:wh:',
      shards: 'cluster' in location ? 4 : 1,
    }),
    apiKeyStore: new RedisApiKeyStore({
      client,
      prefix: 'portico:ref:apikey:',
      revocations,
      ...replicated,
    }),
    oauthStore: new RedisRecordStore({ client, prefix: 'portico:ref:oauth:', ...replicated }),
    replayStores: {
      assertions: new RedisReplayStore({ client, prefix: 'portico:ref:jti:assertion:' }),
      dpop: new RedisReplayStore({ client, prefix: 'portico:ref:jti:dpop:' }),
    },
    signInReplay: new RedisReplayStore({ client, prefix: 'portico:ref:sign-in:' }),
    deviceFailureStore: new RedisRateLimitStore({ client, prefix: 'portico:ref:device:' }),
    messages: redisMessages(client, 'portico:ref:messages', 'cluster' in location),
    async agreed(name, make) {
      // The first process sets it; every later one reads that. Redis must be private to the
      // service (ACLs, TLS): the signing key is kept there.
      const key = `portico:ref:agreed:${name}`;
      await durably(client, 'cluster' in location, ['SET', key, make(), 'NX']);
      const value = await client.get(key);
      if (value === null) throw new Error(`Redis lost ${key}`);
      return value;
    },
    sessionStore: new RedisSessionStore({ client, prefix: 'portico:ref:sess:', ...replicated }),
    broker,
    checks: { redis: () => client.ping() },
    async close() {
      revocations.close();
      await revocationHub.close();
      await Promise.all(brokers.map((broker) => broker.close()));
      await client.quit().catch(() => client.disconnect());
    },
  };
}

/** A client for one Redis, or for a cluster (commands fail fast while a slot has no primary). */
function connect(location: RedisLocation): Redis | Cluster {
  // Commands fail fast while Redis is away (answered 503); ioredis reconnects on its own.
  if ('url' in location) {
    return new Redis(location.url, { maxRetriesPerRequest: 1, enableOfflineQueue: true });
  }
  return new Cluster(location.cluster, {
    // a promoted replica's slots are learnt within a second
    slotsRefreshInterval: 1_000,
    clusterRetryStrategy: (times) => Math.min(100 * times, 1_000),
    redisOptions: { maxRetriesPerRequest: 1 },
  });
}

/** `command`, then on a cluster `WAIT` for one replica (250 ms at most) on the same connection. */
async function durably(
  client: Redis | Cluster,
  cluster: boolean,
  command: [string, ...(string | number)[]],
): Promise<void> {
  const [name, ...args] = command;
  const batch = client.pipeline().call(name, ...args);
  if (cluster) batch.call('WAIT', 1, 250);
  const [[error] = [null]] = (await batch.exec()) ?? [];
  if (error) throw error;
}

/** Messages in one Redis hash (id → JSON), read whole for the list: fine for a demo's size. */
function redisMessages(client: Redis | Cluster, key: string, cluster: boolean): MessageRepository {
  const revive = (json: string): Stored => {
    const raw = JSON.parse(json) as Omit<Stored, 'modified'> & { modified: number };
    return { ...raw, modified: new Date(raw.modified) };
  };
  // Redis away: a 503 problem with Retry-After, not a 500
  const unavailable = (error: unknown): never => {
    throw serviceUnavailable(5, 'Messages are unavailable for now; try again shortly.', {
      cause: error,
    });
  };
  return {
    async get(id) {
      const json = await client.hget(key, id).catch(unavailable);
      return json === null ? undefined : revive(json);
    },
    async put(stored) {
      const json = JSON.stringify({ ...stored, modified: stored.modified.getTime() });
      await durably(client, cluster, ['HSET', key, stored.message.id, json]).catch(unavailable);
    },
    async list() {
      const all = (await client.hvals(key).catch(unavailable)).map(revive);
      return all.sort((a, b) => a.message.createdAt.localeCompare(b.message.createdAt));
    },
  };
}
