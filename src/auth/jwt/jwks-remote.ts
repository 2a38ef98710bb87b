import type { KeyObject, webcrypto } from 'node:crypto';
import type { createRemoteJWKSet, FetchImplementation, JWTVerifyGetKey, LocalJWKSet } from 'jose';
import type { JwkSet as JSONWebKeySet, Jwk as JWK } from '../../core/jwt-types.js';
import { loadedJose, loadJose } from '../../internal/lazy.js';
import { invalidOption } from '../../internal/options.js';
import { keysUnavailable } from './error.js';

/**
 * How a remote JWKS is fetched and kept (times in milliseconds, as `jose` takes them).
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc7517#section-5 | RFC 7517 §5}
 */
export interface RemoteJwksOptions {
  /**
   * After a fetch (successful or not), how long before a token with an unknown `kid` may
   * trigger another one, in milliseconds: a flood of random `kid`s costs the provider one
   * request per period.
   * @defaultValue `30_000` (30 seconds)
   */
  cooldownDuration?: number;
  /**
   * How long fetched keys are used before they are fetched again, in milliseconds.
   * @defaultValue `600_000` (10 minutes)
   */
  cacheMaxAge?: number;
  /** How long a fetch may take, in milliseconds. @defaultValue `5_000` (5 seconds) */
  timeoutDuration?: number;
  /** Headers sent with each fetch. @defaultValue none */
  headers?: Record<string, string>;
}

/** The key (or key resolver) `jose` verifies with, and what the verified-token cache needs. */
export interface KeySource {
  /** Handed to `jwtVerify` as is. */
  readonly key: Uint8Array | KeyObject | JWK | JWTVerifyGetKey | webcrypto.CryptoKey;
  /** Changes whenever the set of keys changes (a remote JWKS fetched with other keys). */
  generation(): number;
  /** Whether tokens verified earlier may be trusted without asking the source again. */
  isFresh(): boolean;
}

/** Whether `value` has the shape of a JWKS: `{ keys: [ {...}, ... ] }`. */
export function isJwkSetShape(value: unknown): value is JSONWebKeySet {
  if (typeof value !== 'object' || value === null) return false;
  const { keys } = value as { keys?: unknown };
  return (
    Array.isArray(keys) &&
    keys.every((k) => typeof k === 'object' && k !== null && !Array.isArray(k))
  );
}

/** Reads a URL option: `http:` or `https:` only. */
export function parseHttpUrl(owner: string, name: string, value: string | URL): URL {
  let url: URL;
  try {
    url = new URL(String(value));
  } catch {
    throw invalidOption(`${owner}: \`${name}\` must be an absolute URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw invalidOption(`${owner}: \`${name}\` must be an https: URL`);
  }
  return url;
}

/**
 * A remote JWKS through `jose`'s `createRemoteJWKSet` (caching, cooldown, refetch on an
 * unknown `kid`), made to survive a provider outage: when a fetch fails the last good keys
 * stay in use, and no further fetch is tried before the cooldown has passed (jose alone
 * would retry on every request). The generation moves when a fetch brings other keys.
 */
export function remoteSource(
  owner: string,
  jwksUrl: string | URL,
  options: RemoteJwksOptions = {},
  // how the keys are fetched: the global fetch, or one through an address guard
  fetchKeys: (href: string, init: RequestInit) => Promise<Response> = fetch,
): KeySource {
  const url = parseHttpUrl(owner, 'jwksUrl', jwksUrl);
  const remoteOptions = checkRemoteOptions(owner, options);
  const cooldown = remoteOptions.cooldownDuration ?? 30_000;
  let failures = 0;
  let successes = 0;
  let seen = 0;
  let failedAt = Number.NEGATIVE_INFINITY;
  const failed = () => {
    failures++;
    failedAt = Date.now();
  };
  const fetchJwks: FetchImplementation = async (href, init) => {
    try {
      const response = await fetchKeys(href, init);
      const body: unknown = response.status === 200 ? await response.json() : undefined;
      if (!isJwkSetShape(body)) throw new Error('The JWKS endpoint gave no key set');
      successes++;
      return Response.json(body);
    } catch (error) {
      failed();
      throw error;
    }
  };
  /** jose's remote set, made on the first verification (jose is loaded then, not at import). */
  let remote: ReturnType<typeof createRemoteJWKSet> | undefined;
  let createLocalJWKSet: typeof import('jose')['createLocalJWKSet'];
  const remoteSet = async () => {
    if (remote !== undefined) return remote;
    const jose = loadedJose() ?? (await loadJose());
    createLocalJWKSet = jose.createLocalJWKSet;
    remote ??= jose.createRemoteJWKSet(url, {
      ...remoteOptions,
      cooldownDuration: cooldown,
      [jose.customFetch]: fetchJwks,
    });
    return remote;
  };
  let lastGood: LocalJWKSet | undefined;
  let fingerprint: string | undefined;
  let generation = 0;
  /** Notes the keys jose now holds; a different set moves the generation. */
  const observe = () => {
    if (remote === undefined || successes === seen || remote.reloading) return;
    seen = successes;
    const jwks = remote.jwks();
    if (jwks === undefined) return;
    const print = JSON.stringify(jwks.keys);
    if (print === fingerprint) return;
    if (fingerprint !== undefined) generation++;
    fingerprint = print;
    lastGood = createLocalJWKSet(jwks);
  };
  const coolingAfterFailure = () => Date.now() < failedAt + cooldown;
  const key: JWTVerifyGetKey = async (header, token) => {
    if (coolingAfterFailure()) {
      if (lastGood === undefined) throw keysUnavailable();
      return lastGood(header, token);
    }
    const before = failures;
    try {
      const found = await (remote ?? (await remoteSet()))(header, token);
      observe();
      return found;
    } catch (error) {
      observe();
      if (failures === before) throw error;
      if (lastGood === undefined) throw keysUnavailable(error);
      return lastGood(header, token);
    }
  };
  return {
    key,
    generation: () => generation,
    isFresh: () => remote?.fresh === true || (lastGood !== undefined && coolingAfterFailure()),
  };
}

/**
 * jose's own checks of the remote set's options, made when the options are given (jose makes
 * them only when the set is created, on the first verification).
 */
function checkRemoteOptions(owner: string, options: RemoteJwksOptions): RemoteJwksOptions {
  const { cooldownDuration, cacheMaxAge, timeoutDuration, headers } = options;
  for (const [name, value] of Object.entries({ cooldownDuration, cacheMaxAge, timeoutDuration })) {
    if (value === undefined) continue;
    const integer = name !== 'timeoutDuration' || Number.isInteger(value);
    if (typeof value !== 'number' || !(value >= 0) || !integer) {
      throw invalidOption(`${owner}: \`jwksOptions.${name}\` must be a number ≥ 0 (jwksOptions)`);
    }
  }
  try {
    new Headers(headers);
  } catch (error) {
    throw invalidOption(`${owner}: ${(error as Error).message} (jwksOptions)`);
  }
  return { cooldownDuration, cacheMaxAge, timeoutDuration, headers };
}
