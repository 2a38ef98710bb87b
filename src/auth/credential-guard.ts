import type { IncomingMessage } from 'node:http';
import type { Duration } from '../core/duration.js';
import { HttpError, serviceUnavailable, tooManyRequests } from '../core/errors/errors.js';
import type { TrustProxy } from '../http/proxy.js';
import {
  assertKnownOptions,
  countOption,
  durationOption,
  invalidOption,
} from '../internal/options.js';
import { isPromiseLike } from '../internal/promise.js';
import { defaultRateLimitKey } from '../rate-limit/key.js';
import { MemoryRateLimitStore } from '../rate-limit/memory-store.js';
import type { RateLimitHit, RateLimitStore } from '../rate-limit/store.js';

/** Options of {@link createCredentialGuard}. */
export interface CredentialGuardOptions {
  /**
   * Refused credentials allowed per client IP and window; past it every attempt from that
   * address, a right password included, gets 429 until the window ends.
   * @defaultValue `10`
   */
  limit?: number;
  /**
   * The length of a window, in milliseconds.
   * @defaultValue `900_000` (15 minutes)
   */
  windowMs?: Duration;
  /**
   * Where refusals are counted. Share one store (Redis) across the processes of a service so
   * that a guesser cannot spread its guesses over them.
   * @defaultValue a new `MemoryRateLimitStore`
   */
  store?: RateLimitStore;
  /**
   * Which proxies to believe about the client's address (give exact proxy addresses: a broad
   * range lets a direct client choose its own `X-Forwarded-For`, hence a fresh budget).
   * @defaultValue `false`: the socket's peer is the client
   */
  trustProxy?: TrustProxy;
  /**
   * The prefix of the guard's keys in the store, apart from a rate limit's sharing it.
   * @defaultValue `'refused:'`
   */
  prefix?: string;
}

const OWNER = 'createCredentialGuard()';
const KNOWN_OPTIONS = [
  'limit',
  'windowMs',
  'store',
  'trustProxy',
  'prefix',
] as const satisfies readonly (keyof CredentialGuardOptions)[];

/**
 * Counts refused credentials per client IP, on every surface that checks one: `authenticate()`,
 * the WebSocket upgrade, the authorization server's sign-in forms and client authentication,
 * a sign-in handler of your own. One guard passed to each makes them one budget: a guesser
 * who spends it on `/login` is refused on `/ws` too. Refusals are counted by address only, so
 * nobody can lock a user out from another address.
 *
 * @example
 * ```ts
 * const guard = createCredentialGuard({ limit: 10, windowMs: 15 * 60_000 });
 * const auth = authenticate(authenticators, { guard });
 * const upgrade = createUpgradeHandler({ path: '/ws', authenticators, guard, onConnection });
 * const oauth = createAuthorizationServer({ ...options, guard });
 * ```
 */
export interface CredentialGuard {
  /**
   * Before a credential is verified: throws a 429 {@link HttpError} (with `Retry-After`) when
   * the client has spent its refusals, so no password hash is computed for it. Synchronous
   * (it throws, or returns nothing) while the store answers synchronously (the memory store);
   * a promise otherwise: `await` it.
   */
  check(req: IncomingMessage): void | Promise<void>;
  /**
   * After a credential was refused: counts it, and throws the 429 when this refusal went
   * past the limit (the caller then answers that instead of its verdict).
   */
  refused(req: IncomingMessage): Promise<void>;
  /**
   * Runs `verify` between `check` and, when it throws a 4xx {@link HttpError} or returns
   * `undefined` (a refusal), `refused`; the refusal is rethrown (or `undefined` returned) once
   * counted.
   */
  attempt<T>(req: IncomingMessage, verify: () => Promise<T | undefined>): Promise<T | undefined>;
}

const UNAVAILABLE_RETRY_SECONDS = 5;

/**
 * Creates the {@link CredentialGuard} that throttles credential guessing across surfaces.
 * While its store is unreachable, credentials are refused with 503 (it fails closed).
 *
 * @example
 * ```ts
 * const guard = createCredentialGuard({ store: new RedisRateLimitStore({ redis }) });
 * const login: Middleware = async (req, res) => {
 *   const user = await guard.attempt(req, () => users.verify(username, password));
 *   if (user === undefined) throw unauthorized('Wrong user name or password.');
 * };
 * ```
 */
export function createCredentialGuard(options: CredentialGuardOptions = {}): CredentialGuard {
  assertKnownOptions(OWNER, options, KNOWN_OPTIONS);
  const limit = countOption(OWNER, 'limit', options.limit, 10);
  const windowMs = durationOption(OWNER, 'windowMs', options.windowMs, 900_000, { min: 1 });
  const store = options.store ?? new MemoryRateLimitStore();
  if (typeof store?.increment !== 'function') {
    throw invalidOption('createCredentialGuard(): `store` must be a RateLimitStore');
  }
  const prefix = options.prefix ?? 'refused:';
  if (typeof prefix !== 'string') {
    throw invalidOption('createCredentialGuard(): `prefix` must be a string');
  }
  const ipKey = defaultRateLimitKey(options.trustProxy ?? false);
  const keyOf = (req: IncomingMessage) => `${prefix}${ipKey(req)}`;
  const detail = 'Too many refused credentials from this address: try again later.';

  const spent = (resetAt: number) =>
    tooManyRequests(Math.max(1, Math.ceil((resetAt - Date.now()) / 1000)), detail, {
      code: 'ERR_CREDENTIALS_THROTTLED',
    });
  const unavailable = (cause: unknown) =>
    serviceUnavailable(UNAVAILABLE_RETRY_SECONDS, 'Credentials cannot be checked for now.', {
      cause,
    });

  const throwIfSpent = (hit: RateLimitHit | undefined): void => {
    if (hit !== undefined && hit.count >= limit) throw spent(hit.resetAt);
  };

  const guard: CredentialGuard = {
    check(req) {
      if (store.peek === undefined) return;
      let hit: ReturnType<NonNullable<RateLimitStore['peek']>>;
      try {
        hit = store.peek(keyOf(req));
      } catch (error) {
        throw unavailable(error);
      }
      if (!isPromiseLike(hit)) return throwIfSpent(hit);
      return hit.then(throwIfSpent, (error) => {
        throw unavailable(error);
      });
    },
    async refused(req) {
      let hit: Awaited<ReturnType<RateLimitStore['increment']>>;
      try {
        hit = await store.increment(keyOf(req), windowMs);
      } catch (error) {
        throw unavailable(error);
      }
      if (hit.count > limit) throw spent(hit.resetAt);
    },
    async attempt(req, verify) {
      await guard.check(req);
      let result: Awaited<ReturnType<typeof verify>>;
      try {
        result = await verify();
      } catch (error) {
        if (isRefusal(error)) await guard.refused(req);
        throw error;
      }
      if (result === undefined) await guard.refused(req);
      return result;
    },
  };
  return guard;
}

/** A verdict on a credential (a 4xx other than 429), as opposed to a failure of ours. */
export function isRefusal(error: unknown): boolean {
  return (
    error instanceof HttpError && error.status >= 400 && error.status < 500 && error.status !== 429
  );
}

/** Checks a `guard` option: a {@link CredentialGuard}, or `undefined` for none. */
export function guardOption(owner: string, value: unknown): CredentialGuard | undefined {
  if (value !== undefined && !isCredentialGuard(value)) {
    throw invalidOption(`${owner}: \`guard\` must be a CredentialGuard (createCredentialGuard())`);
  }
  return value;
}

/** Whether `value` looks like a {@link CredentialGuard} (option validation). */
export function isCredentialGuard(value: unknown): value is CredentialGuard {
  const guard = value as Partial<CredentialGuard> | null;
  return (
    typeof guard?.check === 'function' &&
    typeof guard.refused === 'function' &&
    typeof guard.attempt === 'function'
  );
}
