// The kinds of record the authorization server keeps, each defined once (its name, its record
// type, its secondary keys), and the typed access to them derived from the generic
// RecordStore: a new kind is one `recordKind` entry here.
import { isPromiseLike } from '../../internal/promise.js';
import type {
  Consumed,
  FoundRecord,
  MemoryRecordStore,
  RecordCondition,
  RecordKeys,
  RecordStore,
  StoredRecord,
} from './store.js';

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
  /**
   * The resources (RFC 8707) the authorization request named: the grant is for them alone.
   * Absent: for any configured resource, the default one unless a token request names another.
   */
  resources?: readonly string[];
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
  /** The resources (RFC 8707) of the grant, which a refresh never widens; absent: any configured. */
  resources?: readonly string[];
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
  /** The resources (RFC 8707) the device authorization request named; absent: any configured. */
  resources?: readonly string[];
}

/**
 * A user's consent to a client, remembered: the scopes approved and the grant that every token
 * issued under it belongs to. One per user and client; a later approval adds its scopes.
 *
 * @example
 * ```ts
 * const grants = await server.consents.list('alice');
 * const grant: GrantRecord | undefined = grants.find((held) => held.clientId === 'demo-web');
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
 * const record = await deviceCodes(store).get(hashToken(deviceCode));
 * if (record !== undefined && isDeviceCodeExpired(record)) {
 *   throw new OAuthError('expired_token', 'The device code has expired; start over.');
 * }
 * ```
 */
export function isDeviceCodeExpired(record: DeviceCodeRecord, now = Date.now()): boolean {
  return record.expiresAt !== undefined && now >= record.expiresAt;
}

type Maybe<T> = T | Promise<T>;

/** `fn` of `value`, synchronously when `value` is no promise (a memory store stays synchronous). */
function then<T, U>(value: Maybe<T>, fn: (value: T) => Maybe<U>): Maybe<U> {
  return isPromiseLike(value) ? value.then(fn) : fn(value);
}

/**
 * What a store's method gives: at once from the memory store (synchronous), maybe a promise
 * from any other.
 */
type Out<S, T> = S extends MemoryRecordStore
  ? T
  : S extends { find(kind: string, id: string): Promise<unknown> }
    ? Promise<T>
    : Maybe<T>;

/** The records of one kind in a {@link RecordStore}, typed. @internal */
export interface KindRecords<R extends object, S extends RecordStore = RecordStore> {
  /** Saves (inserts or replaces) `record` as `id` for `ttlMs`, with the kind's secondary keys. */
  save(id: string, record: R, ttlMs: number): Out<S, void>;
  /** The live record `id` and whether it was consumed. */
  find(id: string): Out<S, Consumed<R>>;
  /** The live, unconsumed record `id`. */
  get(id: string): Out<S, R | undefined>;
  /** The live record whose lookup key is `key`. */
  findByKey(key: string): Out<S, FoundRecord<R> | undefined>;
  /** The live records of `group`. */
  list(group: string): Out<S, readonly FoundRecord<R>[]>;
  /** Marks `id` used: `fresh` for exactly one caller. */
  consume(id: string): Out<S, Consumed<R>>;
  /** Replaces the live, unused `id`, keeping its lifetime, when it meets `when`. */
  replace(id: string, record: R, when?: RecordCondition): Out<S, boolean>;
  /** Removes `id` (when it meets `when`): true for the one caller that did. */
  destroy(id: string, when?: RecordCondition): Out<S, boolean>;
  /** The live, unused record `id`, removed: for one caller of several at once. */
  take(id: string): Out<S, R | undefined>;
}

/** A kind of record: its name in the store, and the typed access to it in a store. @internal */
export interface RecordKind<R extends object> {
  <S extends RecordStore>(store: S): KindRecords<R, S>;
  /** The kind's name in the store (and in its Redis keys). */
  readonly kind: string;
  /** Whether a stored value has the shape of the kind's records. */
  readonly is: (value: unknown) => value is R;
}

/**
 * The type of a field: `'string'`, `'number'` (finite), `'boolean'`, `'strings'` (an array of
 * strings), `'pairs'` (an array of `[string, string]`), `'…?'` the same or absent, or the list
 * of the strings it may be.
 */
type FieldType = 'string' | 'number' | 'boolean' | 'strings' | 'pairs';
type FieldSpec = FieldType | `${FieldType}?` | readonly string[];

/** The shape of a kind's records: every field of `R`, with its type. */
export type RecordShape<R> = { readonly [K in keyof R]-?: FieldSpec };

const FIELD_CHECKS: Record<FieldType, (value: unknown) => boolean> = {
  string: (value) => typeof value === 'string',
  number: (value) => Number.isFinite(value),
  boolean: (value) => typeof value === 'boolean',
  strings: (value) => Array.isArray(value) && value.every((item) => typeof item === 'string'),
  pairs: (value) =>
    Array.isArray(value) &&
    value.every(
      (pair) =>
        Array.isArray(pair) &&
        pair.length === 2 &&
        typeof pair[0] === 'string' &&
        typeof pair[1] === 'string',
    ),
};

function fieldIs(spec: FieldSpec, value: unknown): boolean {
  if (typeof spec !== 'string') return spec.includes(value as string);
  if (spec.endsWith('?')) {
    return value === undefined || FIELD_CHECKS[spec.slice(0, -1) as FieldType](value);
  }
  return FIELD_CHECKS[spec as FieldType](value);
}

/**
 * Defines a kind of record: its name, the shape of its records (a stored value of another
 * shape, written by another version or another app, reads as absent), and its secondary keys.
 * @internal
 */
export function recordKind<R extends object>(
  kind: string,
  shape: RecordShape<R>,
  keysOf?: (record: R) => RecordKeys,
): RecordKind<R> {
  const specs = Object.entries(shape) as [string, FieldSpec][];
  const is = (value: unknown): value is R =>
    typeof value === 'object' &&
    value !== null &&
    specs.every(([field, spec]) => fieldIs(spec, (value as Record<string, unknown>)[field]));
  const typed = (found: Consumed<StoredRecord>) =>
    found !== undefined && is(found.record) ? (found as Consumed<R>) : undefined;
  const found = (held: FoundRecord<StoredRecord> | undefined) =>
    held !== undefined && is(held.record) ? (held as FoundRecord<R>) : undefined;
  const access = (store: RecordStore): KindRecords<R> => ({
    save: (id, record, ttlMs) => store.save(kind, id, record, ttlMs, keysOf?.(record)),
    find: (id) => then(store.find(kind, id), typed),
    get: (id) =>
      then(store.find(kind, id), (held) => {
        const record = typed(held);
        return record?.state === 'fresh' ? record.record : undefined;
      }),
    findByKey: (key) => then(store.findByKey(kind, key), found),
    list: (group) =>
      then(store.list(kind, group), (held) =>
        held.flatMap((one) => {
          const record = found(one);
          return record === undefined ? [] : [record];
        }),
      ),
    consume: (id) => then(store.consume(kind, id), typed),
    replace: (id, record, when) => store.replace(kind, id, record, when),
    destroy: (id, when) => store.destroy(kind, id, when),
    take: (id) =>
      then(store.find(kind, id), (held) => {
        const record = typed(held);
        if (record?.state !== 'fresh') return undefined;
        return then(store.destroy(kind, id), (gone) => (gone ? record.record : undefined));
      }),
  });
  return Object.assign(access as <S extends RecordStore>(store: S) => KindRecords<R, S>, {
    kind,
    is,
  });
}

/** Authorization codes, under the hash of the code. @internal */
export const codes = recordKind<AuthorizationCodeRecord>('code', {
  clientId: 'string',
  redirectUri: 'string',
  redirectUriOmitted: 'boolean?',
  sub: 'string',
  scope: 'strings',
  codeChallenge: 'string?',
  nonce: 'string?',
  authTime: 'number',
  grantId: 'string',
  dpopJkt: 'string?',
  resources: 'strings?',
});

/** Refresh tokens, under the hash of the token: consumed (rotated) on every use. @internal */
export const refreshTokens = recordKind<RefreshTokenRecord>('rt', {
  clientId: 'string',
  sub: 'string',
  scope: 'strings',
  grantId: 'string',
  authTime: 'number?',
  familyExpiresAt: 'number',
  jkt: 'string?',
  resources: 'strings?',
});

/** Device authorizations, under the hash of the device code, found by user code. @internal */
export const deviceCodes = recordKind<DeviceCodeRecord>(
  'device',
  {
    clientId: 'string',
    scope: 'strings',
    userCode: 'string',
    status: ['pending', 'approved', 'denied'],
    sub: 'string?',
    authTime: 'number?',
    interval: 'number',
    lastPollAt: 'number?',
    grantId: 'string',
    expiresAt: 'number?',
    resources: 'strings?',
  },
  (record) => ({ lookup: record.userCode }),
);

/** Pushed authorization requests, under the hash of the `request_uri`. @internal */
export const pushedRequests = recordKind<PushedAuthorizationRecord>('par', {
  clientId: 'string',
  params: 'pairs',
});

/** Remembered consents, one per user and client, grouped by user. @internal */
export const consentRecords = recordKind<GrantRecord>(
  'consent',
  { id: 'string', sub: 'string', clientId: 'string', scope: 'strings', createdAt: 'number' },
  (record) => ({ group: record.sub }),
);

/** The id of the consent of `sub` to `clientId`. */
const consentId = (sub: string, clientId: string) =>
  `${encodeURIComponent(sub)}:${encodeURIComponent(clientId)}`;

/** A user's remembered consents in a {@link RecordStore}. @internal */
export interface Consents<S extends RecordStore = RecordStore> {
  /** The live consent of `sub` to `clientId`. */
  get(sub: string, clientId: string): Out<S, GrantRecord | undefined>;
  /** Every live consent of `sub`, oldest first. */
  list(sub: string): Out<S, GrantRecord[]>;
  /**
   * Remembers a consent for `ttlMs`, replacing the one of the same user and client. A bounded
   * store refuses a new one (503) rather than forget a live one: a forgotten consent would
   * hide its tokens from the user's list of authorized apps.
   */
  save(record: GrantRecord, ttlMs: number): Out<S, void>;
  /**
   * Forgets the consent `id` of `sub`, and returns it (undefined when `sub` has none by that
   * id); a consent replaced meanwhile by another grant stays.
   */
  delete(sub: string, id: string): Out<S, GrantRecord | undefined>;
}

/** The remembered consents of `store`. @internal */
export function consents<S extends RecordStore>(store: S): Consents<S>;
export function consents(store: RecordStore): Consents {
  const records = consentRecords(store);
  const list = (sub: string) =>
    then(records.list(sub), (found) =>
      found
        .map((held) => held.record)
        .filter((record) => record.sub === sub)
        .sort((a, b) => a.createdAt - b.createdAt),
    );
  return {
    get: (sub, clientId) =>
      then(records.get(consentId(sub, clientId)), (record) =>
        record?.sub === sub && record.clientId === clientId ? record : undefined,
      ),
    list,
    save: (record, ttlMs) => records.save(consentId(record.sub, record.clientId), record, ttlMs),
    delete: (sub, id) =>
      then(list(sub), (held) => {
        const grant = held.find((consent) => consent.id === id);
        if (grant === undefined) return undefined;
        return then(records.destroy(consentId(sub, grant.clientId), { id }), (gone) =>
          gone ? grant : undefined,
        );
      }),
  };
}
