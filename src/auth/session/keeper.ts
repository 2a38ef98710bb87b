// The server side of createSessions(): finding, storing, refreshing and forgetting records.
import { hash, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createContextKey, getContextValue, setContextValue } from '../../core/context.js';
import { type HttpError, unauthorized } from '../../core/errors/errors.js';
import { AUTH_PROBLEM } from '../errors.js';
import { announceRevocation, sessionCredentialId } from '../revocations.js';
import type { SessionSettings } from './options.js';
import type { SessionRecord } from './store.js';

/** What the request's cookie leads to. */
export type Found =
  | { kind: 'none' | 'invalid' | 'expired' }
  | { kind: 'ok'; hash: string; record: SessionRecord };

/** The session a request was found or given, `null` once it signed out. */
type State = { hash: string; record: SessionRecord } | null;

/** The store key of an id. */
function hashId(id: string): string {
  return hash('sha256', id, 'base64url');
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

/**
 * Keeps the sessions of one `createSessions()`: records under the SHA-256 of their id, idle
 * and absolute expiry, and the session of the request at hand in its context, so that a
 * request looks its session up once.
 */
export class SessionKeeper {
  readonly #settings: SessionSettings;
  readonly #state;

  constructor(settings: SessionSettings) {
    this.#settings = settings;
    this.#state = createContextKey<State>(`session:${settings.cookie.name}`);
  }

  /** The session the request carries (or was given earlier in this request). */
  async lookup(req: IncomingMessage): Promise<Found> {
    const state = getContextValue(req, this.#state);
    if (state === null) return { kind: 'none' };
    if (state !== undefined) return { kind: 'ok', ...state };
    const id = this.#settings.cookie.read(req);
    if (id === undefined) return { kind: 'none' };
    if (id === false) return { kind: 'invalid' };
    // The store is keyed by the SHA-256 of the id: a lookup's timing can only tell about
    // digests, which say nothing usable about other ids, so no constant-time compare is
    // needed here (and no secret is compared anywhere else).
    const { store, now, idleTimeout } = this.#settings;
    const hash = hashId(id);
    const record = await store.get(hash);
    if (!isRecord(record)) return { kind: 'invalid' };
    const t = now();
    if (record.expiresAt <= t || record.lastSeenAt + idleTimeout <= t) {
      await store.delete(hash);
      return { kind: 'expired' };
    }
    return { kind: 'ok', hash, record };
  }

  /** Marks the session used now (the idle timeout starts again) and remembers it for the request. */
  async touch(req: IncomingMessage, hash: string, found: SessionRecord): Promise<SessionRecord> {
    const { store, now } = this.#settings;
    let record = found;
    const t = now();
    if (t > record.lastSeenAt) {
      record = { ...record, lastSeenAt: t };
      const ttl = this.#keepFor(record, t);
      if (store.touch !== undefined) await store.touch(hash, t, ttl);
      else await store.set(hash, record, ttl);
    }
    setContextValue(req, this.#state, { hash, record });
    return record;
  }

  /** Stores `record` under a fresh id and sets the cookie. */
  async issue(req: IncomingMessage, res: ServerResponse, record: SessionRecord): Promise<void> {
    const id = randomBytes(32).toString('base64url');
    const hash = hashId(id);
    const t = record.lastSeenAt;
    await this.#settings.store.set(hash, record, this.#keepFor(record, t));
    this.#settings.cookie.set(res, id, Math.max(1, Math.ceil((record.expiresAt - t) / 1000)));
    setContextValue(req, this.#state, { hash, record });
  }

  /** Deletes the session the request carries (or was given earlier in this request), if any. */
  async forget(req: IncomingMessage): Promise<void> {
    const state = getContextValue(req, this.#state);
    if (state === null) return;
    const id = state === undefined ? this.#settings.cookie.read(req) : undefined;
    const hash = state !== undefined ? state.hash : typeof id === 'string' ? hashId(id) : undefined;
    if (hash === undefined) return;
    await this.#settings.store.delete(hash);
    // streams opened with the session end now, before the caller answers
    await announceRevocation(this.#settings.revocations, [sessionCredentialId(hash)]);
  }

  /** Records that the request has no session any more (it signed out). */
  signedOut(req: IncomingMessage): void {
    setContextValue(req, this.#state, null);
  }

  /**
   * 401 for a bad cookie. Without `res` to append to (the authenticator), the error carries
   * the header that clears the cookie.
   */
  rejected(kind: 'invalid' | 'expired', res?: ServerResponse): HttpError {
    const { cookie } = this.#settings;
    if (res !== undefined) cookie.clear(res);
    const headers = res === undefined ? { 'Set-Cookie': cookie.clearLine } : undefined;
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
  }

  /**
   * How long the store keeps a record: until the session ends, plus one idle period in which
   * it is still known, so that a late request is told "expired" rather than "invalid".
   */
  #keepFor(record: SessionRecord, t: number): number {
    const { idleTimeout } = this.#settings;
    return Math.min(record.lastSeenAt + idleTimeout, record.expiresAt) - t + idleTimeout;
  }
}
