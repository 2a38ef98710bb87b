import type { IncomingMessage, ServerResponse } from 'node:http';
import { PorticoError } from '../../core/errors/errors.js';
import { invalidOption } from '../../internal/options.js';
import type { Authenticator } from '../authenticator.js';
import { authenticationRequired } from '../errors.js';
import { sessionAuthenticator } from './authenticator.js';
import { SessionKeeper } from './keeper.js';
import { type SessionOptions, sessionSettings } from './options.js';
import type { SessionRecord } from './store.js';

export type { SessionOptions } from './options.js';

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
  const settings = sessionSettings(options);
  const { store, now, cookie, assertAllowedOrigin } = settings;
  const keeper = new SessionKeeper(settings);

  return {
    authenticator: sessionAuthenticator(settings, keeper),

    async signIn(req, res, user) {
      assertUser(user);
      assertWritable(res, 'signIn()');
      await assertAllowedOrigin(req); // no login CSRF
      await keeper.forget(req);
      const t = now();
      const record: SessionRecord = {
        sub: user.sub,
        scopes: [...user.scopes],
        createdAt: t,
        lastSeenAt: t,
        expiresAt: t + settings.absoluteTimeout,
      };
      if (user.name !== undefined) record.name = user.name;
      if (user.role !== undefined) record.role = user.role;
      if (user.data !== undefined) record.data = { ...user.data };
      await keeper.issue(req, res, record);
    },

    async signOut(req, res) {
      assertWritable(res, 'signOut()');
      await assertAllowedOrigin(req);
      await keeper.forget(req);
      cookie.clear(res);
      keeper.signedOut(req);
    },

    async rotate(req, res, update = {}) {
      assertWritable(res, 'rotate()');
      const found = await keeper.lookup(req);
      if (found.kind === 'none') throw authenticationRequired([]);
      if (found.kind !== 'ok') throw keeper.rejected(found.kind, res);
      await store.delete(found.hash);
      const record: SessionRecord = { ...found.record, lastSeenAt: now() };
      if (update.name !== undefined) record.name = update.name;
      if (update.role !== undefined) record.role = update.role;
      if (update.scopes !== undefined) record.scopes = [...update.scopes];
      if (update.data !== undefined) record.data = { ...update.data };
      await keeper.issue(req, res, record);
    },

    async read(req) {
      const found = await keeper.lookup(req);
      return found.kind === 'ok'
        ? { ...found.record, scopes: [...found.record.scopes] }
        : undefined;
    },
  };
}
