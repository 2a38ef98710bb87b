import type { IncomingMessage } from 'node:http';
import type { Duration } from '../../core/duration.js';
import type { OriginAllowlist } from '../../cors/origin.js';
import {
  assertKnownOptions,
  durationOption,
  functionOption,
  invalidOption,
} from '../../internal/options.js';
import { processRevocations, type Revocations } from '../revocations.js';
import { cookieAttributes, SessionCookie, type SessionCookieOptions } from './cookie.js';
import { createOriginGuard } from './csrf.js';
import { MemorySessionStore, type SessionStore } from './store.js';

/**
 * Options of `createSessions()`.
 *
 * @example
 * ```ts
 * const options: SessionOptions = {
 *   allowedOrigins: ['https://app.example.com'],
 *   cookieName: '__Host-session',
 *   idleTimeout: 15 * 60_000, // 15 minutes
 *   absoluteTimeout: 8 * 3_600_000, // 8 hours
 * };
 * ```
 * @see {@link https://cheatsheetseries.owasp.org/cheatsheets/Session_Management_Cheat_Sheet.html | OWASP Session Management Cheat Sheet}
 */
export interface SessionOptions {
  /**
   * The origins whose pages may make state-changing requests (anything but GET, HEAD and
   * OPTIONS) with the session cookie: the CSRF guard. List the service's own origin (for
   * example `https://app.example.com`) and those of its front ends; a list and/or RegExps,
   * or a function, as `cors()` takes. `'*'` and `'null'` are refused: they would disable
   * the guard.
   */
  allowedOrigins: OriginAllowlist;
  /**
   * Where sessions live.
   * @defaultValue a new {@link MemorySessionStore}
   */
  store?: SessionStore;
  /**
   * The cookie's name. A `__Host-` name (`__Host-session`) makes browsers insist on
   * `Secure`, `Path=/` and no `Domain`, so a sibling subdomain cannot plant it.
   * @defaultValue `'session'`
   */
  cookieName?: string;
  /**
   * How long a session may go without a request before it ends, in milliseconds (at least
   * `1_000`, at most `absoluteTimeout`).
   * @defaultValue `1_800_000` (30 minutes)
   */
  idleTimeout?: Duration;
  /**
   * How long after sign-in a session ends however active it is, in milliseconds (at least
   * `1_000`); also the cookie's `Max-Age` (written in seconds).
   * @defaultValue `43_200_000` (12 hours)
   */
  absoluteTimeout?: Duration;
  /**
   * Attributes of the cookie.
   * @defaultValue `{ secure: true, sameSite: 'strict', path: '/' }`, no `Domain`
   */
  cookie?: SessionCookieOptions;
  /**
   * The clock, in epoch milliseconds; inject one to test expiry without waiting.
   * @defaultValue `Date.now`
   */
  now?: () => number;
  /**
   * Where a signed-out session's revocation is announced, so that the streams opened with it
   * end (give the service's cross-process bus).
   * @defaultValue `processRevocations()`, this process
   */
  revocations?: Revocations;
}

/** What `createSessions()` works with, once its options are validated. */
export interface SessionSettings {
  readonly store: SessionStore;
  readonly now: () => number;
  readonly revocations: Revocations;
  /** The idle timeout, in milliseconds. */
  readonly idleTimeout: number;
  /** The absolute timeout, in milliseconds. */
  readonly absoluteTimeout: number;
  readonly cookie: SessionCookie;
  /** The CSRF guard: throws a 403 for a cross-site state-changing request. */
  readonly assertAllowedOrigin: (req: IncomingMessage) => Promise<void>;
}

const OWNER = 'createSessions()';
const OPTIONS = [
  'allowedOrigins',
  'store',
  'cookieName',
  'idleTimeout',
  'absoluteTimeout',
  'cookie',
  'now',
  'revocations',
] as const satisfies readonly (keyof SessionOptions)[];
/** The shortest timeout: the cookie's `Max-Age` counts whole seconds. */
const MIN_TIMEOUT = 1_000;

function allowedOriginsOf(origins: OriginAllowlist | undefined): OriginAllowlist {
  if (origins === undefined) {
    throw invalidOption(
      `${OWNER}: \`allowedOrigins\` is required (the CSRF guard): list your own origin, e.g. \`['https://app.example.com']\``,
    );
  }
  if (origins === '*' || (Array.isArray(origins) && origins.includes('null'))) {
    throw invalidOption(
      `${OWNER}: \`allowedOrigins\` must name origins; '*' and 'null' would let any page use the session`,
    );
  }
  return origins;
}

/** Validates the options of `createSessions()` (a `TypeError` `ERR_INVALID_OPTION` otherwise). */
export function sessionSettings(options: SessionOptions): SessionSettings {
  if (options === undefined || options === null) {
    throw invalidOption(`${OWNER}: options with \`allowedOrigins\` are required`);
  }
  assertKnownOptions(OWNER, options, OPTIONS);
  const origins = allowedOriginsOf(options.allowedOrigins);
  const assertAllowedOrigin = createOriginGuard(OWNER, origins);
  const store = options.store ?? new MemorySessionStore();
  if (
    typeof store?.get !== 'function' ||
    typeof store.set !== 'function' ||
    typeof store.delete !== 'function'
  ) {
    throw invalidOption(`${OWNER}: \`store\` needs get, set and delete methods`);
  }
  const now = functionOption(OWNER, 'now', options.now) ?? Date.now;
  const revocations = options.revocations ?? processRevocations();
  const bounds = { min: MIN_TIMEOUT };
  const idleTimeout = durationOption(OWNER, 'idleTimeout', options.idleTimeout, 1_800_000, bounds);
  const absoluteTimeout = durationOption(
    OWNER,
    'absoluteTimeout',
    options.absoluteTimeout,
    43_200_000,
    bounds,
  );
  if (idleTimeout > absoluteTimeout) {
    throw invalidOption(`${OWNER}: \`idleTimeout\` must not exceed \`absoluteTimeout\``);
  }
  const name = options.cookieName ?? 'session';
  const cookie = new SessionCookie(name, cookieAttributes(name, options.cookie));
  return { store, now, revocations, idleTimeout, absoluteTimeout, cookie, assertAllowedOrigin };
}
