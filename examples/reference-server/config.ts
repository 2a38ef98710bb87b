import { readFileSync } from 'node:fs';
import type { JwkSet, TrustProxy } from 'portico';
import { LOG_LEVELS, type LogLevel } from './logging.js';
import type { UpstreamConfig } from './upstream.js';

/** Everything the reference server reads from its environment. */
export interface ServerConfig {
  port: number;
  host: string;
  /** Set from `BASE_URL`; when absent the listening address is used once known. */
  baseUrl: string | undefined;
  tls: { cert: Buffer; key: Buffer; ca: Buffer | undefined } | undefined;
  production: boolean;
  trustProxy: TrustProxy;
  corsOrigins: string[];
  rateLimit: number;
  /** `RATE_LIMIT_WINDOW` (seconds in the environment), in milliseconds. */
  rateLimitWindowMs: number;
  /** `REGISTRATION_LIMIT` (10): dynamic client registrations (`POST /register`) per client IP per hour. */
  registrationLimit: number;
  /** `DEMO_API_KEY`: the demo key owned by alice; unset, one is generated and printed once. */
  demoApiKey: string | undefined;
  /** `SIGNING_KEY`: a PEM file with the RS256 token signing key; unset, one is made at start. */
  signingKeyPath: string | undefined;
  /** `DEMO_FAPI_JWKS`: the public keys of client `demo-fapi` (private_key_jwt); unset, no such client. */
  demoFapiJwks: JwkSet | undefined;
  /** `SSE_HEARTBEAT` (seconds): between comment heartbeats on `/events`, in milliseconds. */
  sseHeartbeatMs: number;
  /** `WS_HEARTBEAT` (seconds): between WebSocket pings, in milliseconds; a peer that misses one is ended. */
  wsHeartbeatMs: number;
  /** `REDIS_URL`: shared state and fan-out in Redis, so that several processes act as one. */
  redisUrl: string | undefined;
  /** `REDIS_CLUSTER`: the same through a Redis Cluster, from these seed nodes (instead of `REDIS_URL`). */
  redisCluster: { host: string; port: number }[] | undefined;
  /** `WEBHOOK_ALLOW_PRIVATE=1`: webhook URLs may point at loopback/private addresses (and use http). */
  webhookAllowPrivate: boolean;
  /** `CLIENT_METADATA_ALLOW_PRIVATE=1`: client metadata documents may be fetched from loopback/private addresses. */
  clientMetadataAllowPrivate?: boolean;
  /** `WEBHOOK_RETRY_SCHEDULE` (seconds): between delivery attempts, in milliseconds; unset, the library's schedule. */
  webhookRetrySchedule: number[] | undefined;
  /** `WEBHOOK_TIMEOUT` (seconds, 15): what a delivery attempt may take, in milliseconds. */
  webhookTimeoutMs: number;
  /** `LOG_LEVEL` (`info`): pino's level of the access log and events; `silent` for none. */
  logLevel: LogLevel;
  /** `MAINTENANCE=1`: `/api/*`, `/events` and `/ws` answer 503 until the process restarts without it. */
  maintenance: boolean;
  /** `MAINTENANCE_RETRY_AFTER` (seconds, 120): the `Retry-After` of maintenance, in milliseconds. */
  maintenanceRetryAfterMs: number;
  /** `OVERLOAD_MAX_DELAY` (milliseconds, 1000): the event-loop delay past which new requests get 503. */
  overloadMaxDelayMs: number;
  /** `UPSTREAM_ISSUER`, `UPSTREAM_CLIENT_ID`, `UPSTREAM_CLIENT_SECRET`, `UPSTREAM_NAME`: sign-in at an upstream provider. */
  upstream?: UpstreamConfig | undefined;
}

/** Thrown for a setting the server cannot start with; main prints it and exits 1. */
export class ConfigError extends Error {}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) {
    throw new ConfigError(`${name} must be an integer ≥ ${min}, got "${raw}"`);
  }
  return value;
}

function logLevel(raw: string | undefined): LogLevel {
  if (raw === undefined || raw === '') return 'info';
  const level = raw.toLowerCase() as LogLevel;
  if (!LOG_LEVELS.includes(level)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${raw}"`);
  }
  return level;
}

function trustProxyFrom(raw: string | undefined): TrustProxy {
  if (raw === undefined || raw === '' || raw === '0' || raw === 'false') return false;
  if (/^\d+$/.test(raw)) return Number(raw);
  return raw;
}

function pem(env: NodeJS.ProcessEnv, name: string): Buffer | undefined {
  const path = env[name];
  if (!path) return undefined;
  try {
    return readFileSync(path);
  } catch (err) {
    throw new ConfigError(`${name}: cannot read ${path} (${(err as Error).message})`);
  }
}

/** The public JWK Set in the file at `path`, or `undefined` when the variable is unset. */
function jwksFile(path: string | undefined): JwkSet | undefined {
  if (!path) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ConfigError(
      `DEMO_FAPI_JWKS: cannot read a JSON file at ${path} (${(err as Error).message})`,
    );
  }
  const keys = (value as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length === 0) {
    throw new ConfigError(`DEMO_FAPI_JWKS: ${path} is not a JWK Set ({ "keys": [ … ] })`);
  }
  return value as JwkSet;
}

function redisUrl(raw: string | undefined): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('REDIS_URL is not a URL (redis://host:port)');
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new ConfigError('REDIS_URL must be a redis:// or rediss:// URL');
  }
  return raw;
}

/** `REDIS_CLUSTER`: comma-separated `host:port` seed nodes (an IPv6 host in brackets). */
function redisCluster(
  raw: string | undefined,
  url: string | undefined,
): { host: string; port: number }[] | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  if (url !== undefined && url !== '') {
    throw new ConfigError('set REDIS_URL (one Redis) or REDIS_CLUSTER (a cluster), not both');
  }
  return raw.split(',').map((seed) => {
    const match = /^\s*(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):(\d{1,5})\s*$/.exec(seed);
    const port = Number(match?.[2]);
    if (match === null || port < 1 || port > 65_535) {
      throw new ConfigError(`REDIS_CLUSTER: "${seed.trim()}" is not host:port`);
    }
    return { host: match[1]!.replace(/^\[|\]$/g, ''), port };
  });
}

/** The environment speaks seconds (the contract's unit); the service, milliseconds. */
const SECOND = 1000;

/** `WEBHOOK_RETRY_SCHEDULE`: comma-separated seconds (fractions allowed, at most a week each), as milliseconds. */
function retrySchedule(raw: string | undefined): number[] | undefined {
  if (raw === undefined || raw === '') return undefined;
  return raw.split(',').map((part) => {
    const seconds = Number(part.trim());
    if (part.trim() === '' || !Number.isFinite(seconds) || seconds < 0 || seconds > 604_800) {
      throw new ConfigError(
        `WEBHOOK_RETRY_SCHEDULE must be comma-separated seconds (0–604800), got "${raw}"`,
      );
    }
    return Math.round(seconds * SECOND);
  });
}

/**
 * `CLIENT_METADATA_ALLOW_PRIVATE=1`: the authorization server fetches client ID metadata
 * documents from loopback and private addresses too (local demos and tests).
 */
export function clientMetadataAllowPrivate(env: NodeJS.ProcessEnv = process.env): boolean {
  const value = env.CLIENT_METADATA_ALLOW_PRIVATE;
  return value === '1' || value === 'true';
}

/** Reads and checks the environment. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): ServerConfig {
  const cert = pem(env, 'TLS_CERT');
  const key = pem(env, 'TLS_KEY');
  if ((cert === undefined) !== (key === undefined)) {
    throw new ConfigError('TLS_CERT and TLS_KEY must be set together');
  }
  const ca = pem(env, 'TLS_CA');
  if (ca !== undefined && cert === undefined) {
    throw new ConfigError('TLS_CA needs TLS_CERT and TLS_KEY (client certificates need TLS)');
  }
  const tls = cert && key ? { cert, key, ca } : undefined;
  const production = env.NODE_ENV === 'production';
  const trustProxy = trustProxyFrom(env.TRUST_PROXY);
  if (production && tls === undefined && trustProxy === false) {
    throw new ConfigError(
      'NODE_ENV=production needs TLS: set TLS_CERT and TLS_KEY, or TRUST_PROXY=1 when TLS ends at a proxy',
    );
  }
  // used as given: the exact issuer string (a trailing slash too, as some issuers have)
  const baseUrl = env.BASE_URL ? env.BASE_URL : undefined;
  if (baseUrl !== undefined) {
    try {
      new URL(baseUrl);
    } catch {
      throw new ConfigError(`BASE_URL is not a URL: "${env.BASE_URL}"`);
    }
  }
  return {
    port: integer(env, 'PORT', 3000, 0),
    host: env.HOST || '127.0.0.1',
    baseUrl,
    tls,
    production,
    trustProxy,
    corsOrigins: (env.CORS_ORIGINS ?? 'http://localhost:5173,http://127.0.0.1:5173')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== ''),
    rateLimit: integer(env, 'RATE_LIMIT', 100, 1),
    rateLimitWindowMs: integer(env, 'RATE_LIMIT_WINDOW', 60, 1) * SECOND,
    registrationLimit: integer(env, 'REGISTRATION_LIMIT', 10, 1),
    demoApiKey: env.DEMO_API_KEY || undefined,
    signingKeyPath: env.SIGNING_KEY || undefined,
    demoFapiJwks: jwksFile(env.DEMO_FAPI_JWKS),
    sseHeartbeatMs: integer(env, 'SSE_HEARTBEAT', 15, 1) * SECOND,
    wsHeartbeatMs: integer(env, 'WS_HEARTBEAT', 30, 1) * SECOND,
    redisUrl: redisUrl(env.REDIS_URL),
    redisCluster: redisCluster(env.REDIS_CLUSTER, env.REDIS_URL),
    webhookAllowPrivate: env.WEBHOOK_ALLOW_PRIVATE === '1' || env.WEBHOOK_ALLOW_PRIVATE === 'true',
    clientMetadataAllowPrivate: clientMetadataAllowPrivate(env),
    webhookRetrySchedule: retrySchedule(env.WEBHOOK_RETRY_SCHEDULE),
    webhookTimeoutMs: integer(env, 'WEBHOOK_TIMEOUT', 15, 1) * SECOND,
    logLevel: logLevel(env.LOG_LEVEL),
    maintenance: env.MAINTENANCE === '1' || env.MAINTENANCE === 'true',
    maintenanceRetryAfterMs: integer(env, 'MAINTENANCE_RETRY_AFTER', 120, 0) * SECOND,
    overloadMaxDelayMs: integer(env, 'OVERLOAD_MAX_DELAY', 1000, 1),
    upstream: upstreamConfig(env),
  };
}

/** `UPSTREAM_*`: an OpenID Provider users may also sign in at, when `UPSTREAM_ISSUER` is set. */
function upstreamConfig(env: NodeJS.ProcessEnv): UpstreamConfig | undefined {
  const issuer = env.UPSTREAM_ISSUER;
  if (issuer === undefined || issuer === '') return undefined;
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw new ConfigError('UPSTREAM_ISSUER is not a URL (https://login.example.com)');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ConfigError('UPSTREAM_ISSUER must be an https URL');
  }
  const clientId = env.UPSTREAM_CLIENT_ID;
  if (clientId === undefined || clientId === '') {
    throw new ConfigError('UPSTREAM_CLIENT_ID is required with UPSTREAM_ISSUER');
  }
  return {
    issuer,
    clientId,
    clientSecret: env.UPSTREAM_CLIENT_SECRET || undefined,
    name: env.UPSTREAM_NAME || 'Upstream',
  };
}
