import { ExpiringMap } from '../../core/expiring-map.js';
import { assertKnownOptions } from '../../internal/options.js';

/** What an authorization code stands for, until it is exchanged (at most once). */
export interface AuthorizationCodeRecord {
  clientId: string;
  /** The redirect URI of the authorization request, to compare exactly at the exchange. */
  redirectUri: string;
  /**
   * The request named no redirect URI (the client's only one was used): the exchange may then
   * omit it too (RFC 6749 §4.1.3).
   */
  redirectUriOmitted?: boolean;
  sub: string;
  scope: readonly string[];
  /** PKCE S256 challenge, when one was sent. */
  codeChallenge?: string;
  nonce?: string;
  /** When the user signed in, epoch seconds (`auth_time`). */
  authTime: number;
  /** The grant the code starts: every token issued from it carries this id. */
  grantId: string;
  /**
   * The DPoP key the authorization request named (`dpop_jkt`, RFC 9449 §10): the code is
   * exchanged only with a proof of that key.
   */
  dpopJkt?: string;
}

/**
 * A pushed authorization request (RFC 9126), from `/par` until `/authorize` takes it (once).
 */
export interface PushedAuthorizationRecord {
  /** The client that pushed it: only its own `client_id` may use the `request_uri`. */
  clientId: string;
  /** The authorization request's parameters, as pushed and checked. */
  params: [string, string][];
}

/** A refresh token of a grant; rotated on every use. */
export interface RefreshTokenRecord {
  clientId: string;
  sub: string;
  scope: readonly string[];
  grantId: string;
  authTime?: number;
  /** Absolute end of the whole family, epoch ms: rotation never extends it. */
  familyExpiresAt: number;
  /**
   * The DPoP key (RFC 7638 thumbprint) the token is bound to: a public client's refresh
   * token is used only with a proof of that key (RFC 9449 §5).
   */
  jkt?: string;
}

/** A device authorization (RFC 8628), from `/device` until the device gets its tokens. */
export interface DeviceCodeRecord {
  clientId: string;
  scope: readonly string[];
  /** Normalised user code: 8 characters, no dash, upper case. */
  userCode: string;
  status: 'pending' | 'approved' | 'denied';
  sub?: string;
  authTime?: number;
  /** How long the device must wait between polls, in milliseconds; grows by `5_000` on `slow_down`. */
  interval: number;
  /** Last poll, epoch ms. */
  lastPollAt?: number;
  grantId: string;
  /**
   * When the device code expires, epoch ms. The device authorization endpoint saves the
   * record for longer than that, so that a device polling late is told `expired_token`
   * (RFC 8628 §3.5) rather than `invalid_grant` for a code never issued; a record past it
   * is never approved nor exchanged. Without it, the record ends with its entry in the store.
   */
  expiresAt?: number;
}

/**
 * A user's consent to a client, remembered: the scopes approved and the grant that every token
 * issued under it belongs to. One per user and client; a later approval adds its scopes.
 *
 * @example
 * ```ts
 * const grant: GrantRecord | undefined = await store.getGrant('alice', 'demo-web');
 * if (grant?.scope.includes('read:messages')) console.log('alice let demo-web read messages');
 * ```
 */
export interface GrantRecord {
  /** The grant id: the `grantId` of its codes, refresh tokens and access tokens. */
  id: string;
  /** The user who approved. */
  sub: string;
  /** The client approved. */
  clientId: string;
  /** Every scope approved so far, in the order first approved. */
  scope: readonly string[];
  /** When first approved, epoch ms. */
  createdAt: number;
}

/**
 * Whether a device authorization is past its `expiresAt` (a record without one is not).
 *
 * @example
 * ```ts
 * const record = await store.getDeviceCode(hashToken(deviceCode));
 * if (record !== undefined && isDeviceCodeExpired(record)) {
 *   throw new OAuthError('expired_token', 'The device code has expired; start over.');
 * }
 * ```
 */
export function isDeviceCodeExpired(record: DeviceCodeRecord, now = Date.now()): boolean {
  return record.expiresAt !== undefined && now >= record.expiresAt;
}

/** The outcome of consuming a one-time value. */
export type Consumed<R> =
  | { state: 'fresh'; record: R }
  | { state: 'used'; record: R; usedAt: number }
  | undefined;

/**
 * Where the authorization server keeps codes, refresh tokens, device codes and revoked
 * grants, under hashes of the values (never the values). One-time values are consumed
 * atomically: of two concurrent redemptions only one sees `fresh`. A consumed code or
 * rotated refresh token stays known (as `used`) until it would have expired, so a replay is
 * detected. A store fails closed: it never forgets a live revocation or a used value to make
 * room, and refuses new ones (a 503 `HttpError`) rather than do so. The in-memory store is
 * {@link MemoryOAuthStore}; a Redis store implements the same contract with `GETDEL`/Lua.
 */
export interface OAuthStore {
  saveCode(hash: string, record: AuthorizationCodeRecord, ttlMs: number): void | Promise<void>;
  /**
   * Reads a code without consuming it, so that the token endpoint checks the client, the
   * redirect URI and the PKCE verifier before it spends the code.
   */
  getCode(
    hash: string,
  ): Consumed<AuthorizationCodeRecord> | Promise<Consumed<AuthorizationCodeRecord>>;
  consumeCode(
    hash: string,
  ): Consumed<AuthorizationCodeRecord> | Promise<Consumed<AuthorizationCodeRecord>>;

  saveRefreshToken(hash: string, record: RefreshTokenRecord, ttlMs: number): void | Promise<void>;
  /** Marks the token rotated and returns its previous state. */
  rotateRefreshToken(
    hash: string,
  ): Consumed<RefreshTokenRecord> | Promise<Consumed<RefreshTokenRecord>>;
  /** Reads without consuming (introspection, revocation). */
  getRefreshToken(
    hash: string,
  ): Consumed<RefreshTokenRecord> | Promise<Consumed<RefreshTokenRecord>>;
  deleteRefreshToken(hash: string): void | Promise<void>;

  saveDeviceCode(hash: string, record: DeviceCodeRecord, ttlMs: number): void | Promise<void>;
  getDeviceCode(hash: string): DeviceCodeRecord | undefined | Promise<DeviceCodeRecord | undefined>;
  /** The device authorization a user code belongs to, with its hash. */
  findDeviceCode(
    userCode: string,
  ):
    | { hash: string; record: DeviceCodeRecord }
    | undefined
    | Promise<{ hash: string; record: DeviceCodeRecord } | undefined>;
  /** Replaces the record, keeping its expiry. */
  updateDeviceCode(hash: string, record: DeviceCodeRecord): void | Promise<void>;
  /** Removes an approved device code as its tokens are issued; true for the one caller that did. */
  consumeDeviceCode(hash: string): boolean | Promise<boolean>;

  /** Keeps a pushed authorization request for `ttlMs`, under the hash of its `request_uri`. */
  savePushedRequest(
    hash: string,
    record: PushedAuthorizationRecord,
    ttlMs: number,
  ): void | Promise<void>;
  /**
   * Reads a pushed request without taking it, so that `/authorize` checks the client that
   * presents its `request_uri` before it spends it: another client cannot burn it.
   */
  getPushedRequest(
    hash: string,
  ): PushedAuthorizationRecord | undefined | Promise<PushedAuthorizationRecord | undefined>;
  /** Takes a pushed request, atomically: of two concurrent uses only one gets it. */
  consumePushedRequest(
    hash: string,
  ): PushedAuthorizationRecord | undefined | Promise<PushedAuthorizationRecord | undefined>;

  /**
   * Remembers a consent for `ttlMs`, replacing the one of the same user and client. Like the
   * other records, a bounded store refuses a new one (503) rather than forget a live one: a
   * forgotten consent would hide its tokens from the user's list of authorized apps.
   */
  saveGrant(record: GrantRecord, ttlMs: number): void | Promise<void>;
  /** The live consent of `sub` to `clientId`. */
  getGrant(
    sub: string,
    clientId: string,
  ): GrantRecord | undefined | Promise<GrantRecord | undefined>;
  /** Every live consent of `sub`, oldest first. */
  listGrants(sub: string): readonly GrantRecord[] | Promise<readonly GrantRecord[]>;
  /** Forgets the consent `id` of `sub`, and returns it (undefined when `sub` has none by that id). */
  deleteGrant(sub: string, id: string): GrantRecord | undefined | Promise<GrantRecord | undefined>;

  /**
   * Revokes a grant: its refresh tokens fail, its access tokens read as revoked. Never lost:
   * a store with a bound records it past the bound, and never shortens an earlier one.
   */
  revokeGrant(grantId: string, ttlMs: number): void | Promise<void>;
  isGrantRevoked(grantId: string): boolean | Promise<boolean>;

  /**
   * Throws a 503 `HttpError` (`ERR_STORE_FULL`, with `Retry-After`) while the store cannot
   * take a new grant without forgetting something it must keep (a bounded store whose revoked
   * grants or refresh tokens reached the bound). The token endpoint asks before every grant,
   * so that no code is spent nor refresh token rotated for tokens that cannot be saved. A
   * store without a bound (Redis) leaves it out.
   */
  checkCapacity?(): void | Promise<void>;
}

/** A consent and when it is forgotten, epoch ms. */
interface TimedGrant {
  record: GrantRecord;
  until: number;
}

interface OneTime<R> {
  record: R;
  usedAt?: number;
}

function consume<R>(map: ExpiringMap<OneTime<R>>, hash: string, mark: boolean): Consumed<R> {
  const entry = map.entry(hash);
  if (entry === undefined) return undefined;
  const { record, usedAt } = entry.value;
  if (usedAt !== undefined) return { state: 'used', record, usedAt };
  if (mark) entry.value.usedAt = map.now();
  return { state: 'fresh', record };
}

/** Options of {@link MemoryOAuthStore}. */
export interface MemoryOAuthStoreOptions {
  /**
   * Most entries of each kind (codes, refresh tokens, device codes, revoked grants, pushed
   * authorization requests, users with remembered consents). Past it
   * the store refuses new ones with a 503 rather than forget a live one; revocations are
   * recorded past it, and while they are over it no new grant is taken.
   * @defaultValue `100_000`
   */
  maxEntries?: number;
  /** The clock, epoch ms. @defaultValue `Date.now` */
  now?: () => number;
}

const MEMORY_STORE_OPTIONS = [
  'maxEntries',
  'now',
] as const satisfies readonly (keyof MemoryOAuthStoreOptions)[];

/**
 * An {@link OAuthStore} in this process's memory, bounded and swept. One process only:
 * behind several instances use a shared store. It fails closed: at `maxEntries` of a kind,
 * saving one more is refused with a 503 `HttpError` (`ERR_STORE_FULL`, with `Retry-After`)
 * rather than forgetting a live code, refresh token or device code (a forgotten used value
 * would let its replay go unnoticed). A revocation is always recorded, past the bound if need
 * be, and while revocations are over the bound {@link checkCapacity} refuses new grants, and
 * so do the `save…` methods: nobody can flood revocations until an old one is forgotten.
 *
 * @example
 * ```ts
 * const server = createAuthorizationServer({ issuer, clients, keys, store: new MemoryOAuthStore() });
 * ```
 */
export class MemoryOAuthStore implements OAuthStore {
  readonly #codes: ExpiringMap<OneTime<AuthorizationCodeRecord>>;
  readonly #refresh: ExpiringMap<OneTime<RefreshTokenRecord>>;
  readonly #devices: ExpiringMap<DeviceCodeRecord>;
  readonly #userCodes: ExpiringMap<string>;
  readonly #revoked: ExpiringMap<true>;
  readonly #pushed: ExpiringMap<PushedAuthorizationRecord>;
  /** Consents by user, then by client, each with its own deadline. */
  readonly #grants: ExpiringMap<Map<string, TimedGrant>>;

  constructor(options: MemoryOAuthStoreOptions = {}) {
    assertKnownOptions('MemoryOAuthStore', options, MEMORY_STORE_OPTIONS);
    const make = <V>() =>
      new ExpiringMap<V>(
        'MemoryOAuthStore',
        { maxEntries: options.maxEntries, now: options.now },
        { maxEntries: 100_000, maxEntriesOption: 'maxEntries', whenFull: 'refuse' },
      );
    this.#codes = make();
    this.#refresh = make();
    this.#devices = make();
    this.#userCodes = make();
    this.#revoked = make();
    this.#pushed = make();
    this.#grants = make();
  }

  saveCode(hash: string, record: AuthorizationCodeRecord, ttlMs: number): void {
    this.#revoked.assertRoom();
    this.#codes.set(hash, { record }, this.#codes.now() + ttlMs);
  }

  getCode(hash: string): Consumed<AuthorizationCodeRecord> {
    return consume(this.#codes, hash, false);
  }

  consumeCode(hash: string): Consumed<AuthorizationCodeRecord> {
    return consume(this.#codes, hash, true);
  }

  saveRefreshToken(hash: string, record: RefreshTokenRecord, ttlMs: number): void {
    this.#revoked.assertRoom();
    this.#refresh.set(hash, { record }, this.#refresh.now() + ttlMs);
  }

  rotateRefreshToken(hash: string): Consumed<RefreshTokenRecord> {
    return consume(this.#refresh, hash, true);
  }

  getRefreshToken(hash: string): Consumed<RefreshTokenRecord> {
    return consume(this.#refresh, hash, false);
  }

  deleteRefreshToken(hash: string): void {
    this.#refresh.delete(hash);
  }

  saveDeviceCode(hash: string, record: DeviceCodeRecord, ttlMs: number): void {
    this.#revoked.assertRoom();
    const until = this.#devices.now() + ttlMs;
    // both or neither: the index must have room before the record is written
    if (!this.#userCodes.entry(record.userCode)) this.#userCodes.assertRoom();
    this.#devices.set(hash, { ...record }, until);
    this.#userCodes.set(record.userCode, hash, until);
  }

  getDeviceCode(hash: string): DeviceCodeRecord | undefined {
    const record = this.#devices.get(hash);
    return record === undefined ? undefined : { ...record };
  }

  findDeviceCode(userCode: string): { hash: string; record: DeviceCodeRecord } | undefined {
    const hash = this.#userCodes.get(userCode);
    const record = hash === undefined ? undefined : this.getDeviceCode(hash);
    return hash === undefined || record === undefined ? undefined : { hash, record };
  }

  updateDeviceCode(hash: string, record: DeviceCodeRecord): void {
    const entry = this.#devices.entry(hash);
    if (entry !== undefined) this.#devices.set(hash, { ...record }, entry.until);
  }

  consumeDeviceCode(hash: string): boolean {
    const record = this.#devices.get(hash);
    if (record === undefined) return false;
    this.#devices.delete(hash);
    this.#userCodes.delete(record.userCode);
    return true;
  }

  savePushedRequest(hash: string, record: PushedAuthorizationRecord, ttlMs: number): void {
    this.#pushed.set(hash, structuredClone(record), this.#pushed.now() + ttlMs);
  }

  getPushedRequest(hash: string): PushedAuthorizationRecord | undefined {
    const record = this.#pushed.get(hash);
    return record === undefined ? undefined : structuredClone(record);
  }

  consumePushedRequest(hash: string): PushedAuthorizationRecord | undefined {
    const record = this.#pushed.get(hash);
    if (record !== undefined) this.#pushed.delete(hash);
    return record;
  }

  saveGrant(record: GrantRecord, ttlMs: number): void {
    const now = this.#grants.now();
    const byClient = this.#liveGrants(record.sub, now);
    byClient.set(record.clientId, { record: structuredClone(record), until: now + ttlMs });
    const until = Math.max(...[...byClient.values()].map((grant) => grant.until));
    this.#grants.set(record.sub, byClient, until, now);
  }

  getGrant(sub: string, clientId: string): GrantRecord | undefined {
    const grant = this.#liveGrants(sub, this.#grants.now()).get(clientId);
    return grant === undefined ? undefined : structuredClone(grant.record);
  }

  listGrants(sub: string): GrantRecord[] {
    return [...this.#liveGrants(sub, this.#grants.now()).values()]
      .map((grant) => structuredClone(grant.record))
      .sort((a, b) => a.createdAt - b.createdAt);
  }

  deleteGrant(sub: string, id: string): GrantRecord | undefined {
    const now = this.#grants.now();
    const entry = this.#grants.entry(sub, now);
    if (entry === undefined) return undefined;
    for (const [clientId, grant] of entry.value) {
      if (grant.record.id !== id || grant.until <= now) continue;
      entry.value.delete(clientId);
      if (entry.value.size === 0) this.#grants.delete(sub);
      return grant.record;
    }
    return undefined;
  }

  /** The consents of `sub` still live at `now`, by client (a copy). */
  #liveGrants(sub: string, now: number): Map<string, TimedGrant> {
    const held = this.#grants.entry(sub, now)?.value;
    return new Map([...(held ?? [])].filter(([, grant]) => grant.until > now));
  }

  revokeGrant(grantId: string, ttlMs: number): void {
    const earlier = this.#revoked.entry(grantId)?.until ?? 0;
    const until = Math.max(earlier, this.#revoked.now() + ttlMs);
    this.#revoked.setPastBound(grantId, true, until);
  }

  isGrantRevoked(grantId: string): boolean {
    return this.#revoked.get(grantId) === true;
  }

  /**
   * Throws a 503 `HttpError` (`ERR_STORE_FULL`) while revoked grants are at or over the bound,
   * or refresh tokens at it: a new grant would then have to forget something.
   */
  checkCapacity(): void {
    this.#revoked.assertRoom();
    this.#refresh.assertRoom();
  }
}
