import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseCookie, parseSetCookie, serialize } from 'cookie';
import { createContextKey, getContextValue, setContextValue } from '../core/context.js';
import { PorticoError, unauthorized } from '../core/errors.js';
import type { OriginAllowlist } from '../cors/origin.js';
import { assertKnownOptions, invalidOption } from '../internal/options.js';
import { type Authenticator, challenge } from './authenticator.js';
import { createOriginGuard } from './csrf.js';
import { AUTH_PROBLEM, authenticationRequired } from './errors.js';
import type { Principal } from './principal.js';
import {
  announceRevocation,
  processRevocations,
  type Revocations,
  sessionCredentialId,
} from './revocations.js';
import { cookieAttributes, type SessionCookieOptions } from './session-cookie.js';
import { MemorySessionStore, type SessionRecord, type SessionStore } from './session-store.js';

/**
 * Options of {@link createSessions}.
 *
 * @example
 * ```ts
 * const options: SessionOptions = {
 *   allowedOrigins: ['https://app.example.com'],
 *   cookieName: '__Host-session',
 *   idleTimeout: 15 * 60,
 *   absoluteTimeout: 8 * 60 * 60,
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
   * Seconds without a request after which a session ends.
   * @defaultValue `1800` (30 minutes)
   */
  idleTimeout?: number;
  /**
   * Seconds after sign-in after which a session ends however active it is; also the
   * cookie's `Max-Age`.
   * @defaultValue `43200` (12 hours)
   */
  absoluteTimeout?: number;
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

/**
 * Who signs in, as {@link Sessions.signIn} takes it.
 *
 * @example
 * ```ts
 * const user: SessionUser = { sub: 'u-42', name: 'Alice', role: 'user', scopes: ['read:messages'] };
 * ```
 */
export interface SessionUser {
  sub: string;
  name?: string;
  role?: string;
  scopes: readonly string[];
  /** Application data kept with the session (never secrets). */
  data?: Record<string, unknown>;
}

/**
 * What may change on a privilege change ({@link Sessions.rotate}).
 *
 * @example
 * ```ts
 * const promotion: SessionUpdate = { role: 'admin' };
 * ```
 */
export type SessionUpdate = Partial<Pick<SessionRecord, 'name' | 'role' | 'scopes' | 'data'>>;

/**
 * The session manager {@link createSessions} returns.
 *
 * @example
 * ```ts
 * await sessions.signIn(req, res, { sub: user.id, scopes: user.scopes }); // POST /login
 * await sessions.rotate(req, res, { role: 'admin' }); // after a privilege change
 * await sessions.signOut(req, res); // POST /logout
 * const record = await sessions.read(req); // { sub, createdAt, lastSeenAt, … } | undefined
 * ```
 * @see {@link https://cheatsheetseries.owasp.org/cheatsheets/Session_Management_Cheat_Sheet.html | OWASP Session Management Cheat Sheet}
 */
export interface Sessions {
  /** The `Session` authenticator for `authenticate([...])`, with the CSRF guard. */
  readonly authenticator: Authenticator;
  /** Starts a session under a new id (any session the request carried is deleted) and sets the cookie. */
  signIn(req: IncomingMessage, res: ServerResponse, user: SessionUser): Promise<void>;
  /** Deletes the request's session server-side and clears the cookie. */
  signOut(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /**
   * Moves the session to a new id (call it on a privilege change), applying `update`; the
   * old id stops working. No valid session is a 401.
   */
  rotate(req: IncomingMessage, res: ServerResponse, update?: SessionUpdate): Promise<void>;
  /** The request's live session, if any; never throws for a bad cookie, never touches it. */
  read(req: IncomingMessage): Promise<SessionRecord | undefined>;
}

const OPTIONS = [
  'allowedOrigins',
  'store',
  'cookieName',
  'idleTimeout',
  'absoluteTimeout',
  'cookie',
  'now',
  'revocations',
];
/** 32 random bytes in base64url, unpadded. */
const ID_SHAPE = /^[A-Za-z0-9_-]{43}$/;

type Found =
  | { kind: 'none' | 'invalid' | 'expired' }
  | { kind: 'ok'; hash: string; record: SessionRecord };

/** The store key of an id. */
function hashId(id: string): string {
  return createHash('sha256').update(id).digest('base64url');
}

function seconds(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw invalidOption(`createSessions: \`${name}\` must be a positive whole number of seconds`);
  }
  return value;
}

function isRecord(value: unknown): value is SessionRecord {
  const r = value as SessionRecord | undefined;
  return (
    typeof r === 'object' &&
    r !== null &&
    typeof r.sub === 'string' &&
    Array.isArray(r.scopes) &&
    Number.isFinite(r.lastSeenAt) &&
    Number.isFinite(r.expiresAt)
  );
}

function assertUser(user: SessionUser): void {
  const ok =
    typeof user === 'object' &&
    user !== null &&
    typeof user.sub === 'string' &&
    user.sub !== '' &&
    Array.isArray(user.scopes) &&
    user.scopes.every((s) => typeof s === 'string') &&
    (user.name === undefined || typeof user.name === 'string') &&
    (user.role === undefined || typeof user.role === 'string') &&
    (user.data === undefined || (typeof user.data === 'object' && user.data !== null));
  if (!ok) {
    throw invalidOption('signIn(): `user` needs a non-empty `sub` and a `scopes` array of strings');
  }
}

function assertWritable(res: ServerResponse, what: string): void {
  if (res.headersSent) {
    throw new PorticoError(
      `${what}: the response headers have already been sent`,
      'ERR_HEADERS_SENT',
    );
  }
}

/**
 * Cookie sessions: 256-bit random ids in an `HttpOnly; Secure; SameSite=Strict` cookie,
 * records kept server-side under the SHA-256 of the id, idle and absolute expiry, a new id
 * at every sign-in (no session fixation) and on {@link Sessions.rotate}, and a CSRF guard:
 * a state-changing request authenticated by the cookie (and every sign-in and sign-out)
 * must not come from an `Origin` outside `allowedOrigins`, nor, without `Origin`, be marked
 * `Sec-Fetch-Site: cross-site`. A request with neither header (a non-browser client) passes.
 *
 * A bad cookie (malformed, unknown, a session that ended) is a 401 (`invalid-credentials`,
 * or `credentials-expired` for an idle or absolute expiry) that clears the cookie.
 *
 * @example
 * ```ts
 * const sessions = createSessions({ allowedOrigins: ['https://app.example.com'] });
 * const login: Middleware = async (req, res) => {
 *   const { username, password } = await readJson(req);
 *   const user = await users.verify(username, password); // your check
 *   if (!user) throw invalidCredentials([], 'The username or password is wrong.');
 *   await sessions.signIn(req, res, { sub: user.id, name: user.name, scopes: user.scopes });
 *   sendNoContent(res);
 * };
 * const app = compose([
 *   createRouter({ '/login': { POST: login } }),
 *   authenticate([sessions.authenticator, jwtBearer(bearerOptions)]),
 *   routes,
 * ]);
 * ```
 * @see {@link https://datatracker.ietf.org/doc/html/draft-ietf-httpbis-rfc6265bis | RFC 6265bis (draft)} (cookies)
 * @see {@link https://cheatsheetseries.owasp.org/cheatsheets/Session_Management_Cheat_Sheet.html | OWASP Session Management Cheat Sheet}
 * @see {@link https://cheatsheetseries.owasp.org/cheatsheets/Cross-Site_Request_Forgery_Prevention_Cheat_Sheet.html | OWASP Cross-Site Request Forgery Prevention Cheat Sheet}
 */
export function createSessions(options: SessionOptions): Sessions {
  if (options === undefined || options === null) {
    throw invalidOption('createSessions: options with `allowedOrigins` are required');
  }
  assertKnownOptions('createSessions', options, OPTIONS);
  const origins = options.allowedOrigins;
  if (origins === undefined) {
    throw invalidOption(
      "createSessions: `allowedOrigins` is required (the CSRF guard): list your own origin, e.g. `['https://app.example.com']`",
    );
  }
  if (origins === '*' || (Array.isArray(origins) && origins.includes('null'))) {
    throw invalidOption(
      "createSessions: `allowedOrigins` must name origins; '*' and 'null' would let any page use the session",
    );
  }
  const assertAllowedOrigin = createOriginGuard('createSessions', origins);
  const store = options.store ?? new MemorySessionStore();
  if (
    typeof store?.get !== 'function' ||
    typeof store.set !== 'function' ||
    typeof store.delete !== 'function'
  ) {
    throw invalidOption('createSessions: `store` needs get, set and delete methods');
  }
  if (options.now !== undefined && typeof options.now !== 'function') {
    throw invalidOption('createSessions: `now` must be a function returning epoch milliseconds');
  }
  const now = options.now ?? Date.now;
  const revocations = options.revocations ?? processRevocations();
  const idleMs = seconds('idleTimeout', options.idleTimeout, 1800) * 1000;
  const absoluteTimeout = seconds('absoluteTimeout', options.absoluteTimeout, 43_200);
  const absoluteMs = absoluteTimeout * 1000;
  if (idleMs > absoluteMs) {
    throw invalidOption('createSessions: `idleTimeout` must not exceed `absoluteTimeout`');
  }
  const name = options.cookieName ?? 'session';
  const attributes = cookieAttributes(name, options.cookie);
  const clearCookie = serialize(name, '', { ...attributes, maxAge: 0 });
  const stateKey = createContextKey<{ hash: string; record: SessionRecord } | null>(
    `session:${name}`,
  );

  /**
   * 401 for a bad cookie. Without `res` to append to (the authenticator), the error carries
   * the header that clears the cookie.
   */
  const rejected = (kind: 'invalid' | 'expired', res?: ServerResponse) => {
    if (res !== undefined) setCookie(res, clearCookie);
    const headers = res === undefined ? { 'Set-Cookie': clearCookie } : undefined;
    return kind === 'expired'
      ? unauthorized('The session has expired; sign in again.', {
          code: 'ERR_AUTH_EXPIRED',
          typeSlug: AUTH_PROBLEM.expired,
          title: 'Credentials expired',
          headers,
        })
      : unauthorized('The session is not valid; sign in again.', {
          code: 'ERR_AUTH_INVALID',
          typeSlug: AUTH_PROBLEM.invalid,
          title: 'Invalid credentials',
          headers,
        });
  };

  /** The id the request's cookie carries, `undefined` when absent, `false` when malformed. */
  function cookieId(req: IncomingMessage): string | false | undefined {
    const header = req.headers.cookie;
    if (header === undefined || header === '') return undefined;
    let value: string | undefined;
    try {
      value = parseCookie(header)[name];
    } catch {
      return false;
    }
    if (value === undefined) return undefined;
    return ID_SHAPE.test(value) ? value : false;
  }

  async function lookup(req: IncomingMessage): Promise<Found> {
    const state = getContextValue(req, stateKey);
    if (state === null) return { kind: 'none' };
    if (state !== undefined) return { kind: 'ok', ...state };
    const id = cookieId(req);
    if (id === undefined) return { kind: 'none' };
    if (id === false) return { kind: 'invalid' };
    // The store is keyed by the SHA-256 of the id: a lookup's timing can only tell about
    // digests, which say nothing usable about other ids, so no constant-time compare is
    // needed here (and no secret is compared anywhere else).
    const hash = hashId(id);
    const record = await store.get(hash);
    if (!isRecord(record)) return { kind: 'invalid' };
    const t = now();
    if (record.expiresAt <= t || record.lastSeenAt + idleMs <= t) {
      await store.delete(hash);
      return { kind: 'expired' };
    }
    return { kind: 'ok', hash, record };
  }

  /** Sets (or replaces, for the same name, path and domain) our cookie, keeping any other. */
  function setCookie(res: ServerResponse, line: string): void {
    const existing = res.getHeader('Set-Cookie');
    const lines =
      existing === undefined ? [] : Array.isArray(existing) ? existing : [String(existing)];
    const kept = lines.filter((other) => {
      const parsed = parseSetCookie(other);
      return !(
        parsed.name === name &&
        parsed.path === attributes.path &&
        parsed.domain === attributes.domain
      );
    });
    res.setHeader('Set-Cookie', [...kept, line]);
  }

  /** Deletes the session the request carries (or was given earlier in this request), if any. */
  async function forget(req: IncomingMessage): Promise<void> {
    const state = getContextValue(req, stateKey);
    if (state === null) return;
    const id = state === undefined ? cookieId(req) : undefined;
    const hash = state !== undefined ? state.hash : typeof id === 'string' ? hashId(id) : undefined;
    if (hash === undefined) return;
    await store.delete(hash);
    // streams opened with the session end now, before the caller answers
    await announceRevocation(revocations, [sessionCredentialId(hash)]);
  }

  /**
   * How long the store keeps a record: until the session ends, plus one idle period in which
   * it is still known, so that a late request is told "expired" rather than "invalid".
   */
  const keepFor = (record: SessionRecord, t: number) =>
    Math.min(record.lastSeenAt + idleMs, record.expiresAt) - t + idleMs;

  /** Stores `record` under a fresh id and sets the cookie. */
  async function issue(req: IncomingMessage, res: ServerResponse, record: SessionRecord) {
    const id = randomBytes(32).toString('base64url');
    const hash = hashId(id);
    const t = record.lastSeenAt;
    await store.set(hash, record, keepFor(record, t));
    const maxAge = Math.max(1, Math.ceil((record.expiresAt - t) / 1000));
    setCookie(res, serialize(name, id, { ...attributes, maxAge }));
    setContextValue(req, stateKey, { hash, record });
  }

  const authenticator: Authenticator = {
    scheme: 'Session',
    headers: ['Cookie'],
    // cookies have no registered scheme; this one names the cookie and never makes a browser prompt
    challenge: challenge('Cookie', { 'cookie-name': name }),
    async authenticate(req) {
      const found = await lookup(req);
      if (found.kind === 'none') return undefined;
      if (found.kind !== 'ok') throw rejected(found.kind);
      await assertAllowedOrigin(req);
      const { hash } = found;
      let { record } = found;
      const t = now();
      if (t > record.lastSeenAt) {
        record = { ...record, lastSeenAt: t };
        const ttl = keepFor(record, t);
        if (store.touch !== undefined) await store.touch(hash, t, ttl);
        else await store.set(hash, record, ttl);
      }
      setContextValue(req, stateKey, { hash, record });
      const principal: Principal = {
        sub: record.sub,
        scopes: [...record.scopes],
        method: 'session',
        credentialIds: [sessionCredentialId(hash)],
        expiresAt: record.expiresAt,
      };
      if (record.name !== undefined) principal.name = record.name;
      if (record.role !== undefined) principal.role = record.role;
      return principal;
    },
  };

  return {
    authenticator,

    async signIn(req, res, user) {
      assertUser(user);
      assertWritable(res, 'signIn()');
      await assertAllowedOrigin(req); // no login CSRF
      await forget(req);
      const t = now();
      const record: SessionRecord = {
        sub: user.sub,
        scopes: [...user.scopes],
        createdAt: t,
        lastSeenAt: t,
        expiresAt: t + absoluteMs,
      };
      if (user.name !== undefined) record.name = user.name;
      if (user.role !== undefined) record.role = user.role;
      if (user.data !== undefined) record.data = { ...user.data };
      await issue(req, res, record);
    },

    async signOut(req, res) {
      assertWritable(res, 'signOut()');
      await assertAllowedOrigin(req);
      await forget(req);
      setCookie(res, clearCookie);
      setContextValue(req, stateKey, null);
    },

    async rotate(req, res, update = {}) {
      assertWritable(res, 'rotate()');
      const found = await lookup(req);
      if (found.kind === 'none') throw authenticationRequired([]);
      if (found.kind !== 'ok') throw rejected(found.kind, res);
      await store.delete(found.hash);
      const record: SessionRecord = { ...found.record, lastSeenAt: now() };
      if (update.name !== undefined) record.name = update.name;
      if (update.role !== undefined) record.role = update.role;
      if (update.scopes !== undefined) record.scopes = [...update.scopes];
      if (update.data !== undefined) record.data = { ...update.data };
      await issue(req, res, record);
    },

    async read(req) {
      const found = await lookup(req);
      return found.kind === 'ok'
        ? { ...found.record, scopes: [...found.record.scopes] }
        : undefined;
    },
  };
}
