import type { Principal } from '../core/principal.js';
import { published, type RevocationMessage } from '../diagnostics/channels.js';
import { invalidOption } from '../internal/options.js';

/**
 * What carries revocations between processes: a hub (`createHub()` from `portico/realtime`,
 * over a `RedisBroker` to cross processes) or anything with the same two methods.
 */
export interface RevocationTransport {
  publish(channel: string, event: string, data: unknown): Promise<unknown>;
  subscribe(channel: string, listener: (message: { data: unknown }) => void): () => void;
}

/** Options of {@link createRevocations}. */
export interface RevocationsOptions {
  /**
   * Carries each revocation to the other processes of the service (give a hub over a shared
   * broker, and keep its channel closed to clients). Without it, revocations reach this
   * process only.
   * @defaultValue none
   */
  transport?: RevocationTransport;
  /**
   * The transport's channel.
   * @defaultValue `'portico:revocations'`
   */
  channel?: string;
}

/** Why a delivery bound to a credential ended. */
export type CredentialEnd = 'revoked' | 'expired';

/**
 * The revocation bus: stores and servers announce a credential's end (`revoke`), and every
 * long-lived delivery opened with it (an event stream, a WebSocket connection, a webhook
 * subscription) hears it (`watch`) and ends. Watchers in this process are told synchronously,
 * before `revoke` returns, so nothing published afterwards reaches them; other processes hear
 * it through the transport.
 *
 * @example
 * ```ts
 * const revocations = createRevocations();
 * const stop = revocations.watch(['api_key:key_123'], () => stream.close());
 * await revocations.revoke(['api_key:key_123']); // the stream is closed by now
 * ```
 */
export interface Revocations {
  /** Announces that the credentials of `ids` ended: their watchers here at once, elsewhere through the transport. */
  revoke(ids: readonly string[]): Promise<void>;
  /** Calls `onRevoked` once, when one of `ids` is revoked; the returned function stops watching. */
  watch(ids: readonly string[], onRevoked: (id: string) => void): () => void;
  /**
   * Calls `listener` with every id revoked from now on, here or (through the transport) in
   * another process: for what is found by id rather than held (webhook subscriptions of a
   * grant). With a transport, a revocation of this process is heard twice (at once, then as
   * it comes back through the hub): make the listener idempotent. The returned function stops
   * listening.
   */
  listen(listener: (id: string) => void): () => void;
  /** Watchers held now (tests, metrics). */
  readonly size: number;
  /** Stops listening to the transport. */
  close(): void;
}

type Watcher = { ids: readonly string[]; onRevoked: (id: string) => void; done: boolean };

/**
 * Creates a revocation bus. Without a transport it serves one process; with a hub over a
 * shared broker (Redis), a revocation in one process ends the deliveries of every process.
 *
 * @example
 * ```ts
 * const revocations = createRevocations({
 *   transport: createHub({ broker: new RedisBroker({ redis }) }),
 * });
 * const keys = new MemoryApiKeyStore({ revocations });
 * ```
 */
export function createRevocations(options: RevocationsOptions = {}): Revocations {
  const channel = options.channel ?? 'portico:revocations';
  if (typeof channel !== 'string' || channel === '') {
    throw invalidOption('createRevocations(): `channel` must be a non-empty string');
  }
  const transport = options.transport;
  if (
    transport !== undefined &&
    (typeof transport?.publish !== 'function' || typeof transport.subscribe !== 'function')
  ) {
    throw invalidOption('createRevocations(): `transport` must be a hub (publish, subscribe)');
  }
  const byId = new Map<string, Set<Watcher>>();
  const listeners = new Set<(id: string) => void>();
  let size = 0;

  function end(id: string): void {
    for (const listener of listeners) {
      try {
        listener(id);
      } catch {
        // a listener's failure must not spare the others
      }
    }
    const watchers = byId.get(id);
    if (watchers === undefined) return;
    for (const watcher of [...watchers]) {
      if (watcher.done) continue;
      stopWatching(watcher);
      try {
        watcher.onRevoked(id);
      } catch {
        // a watcher's failure must not spare the others
      }
    }
  }

  function stopWatching(watcher: Watcher): void {
    if (watcher.done) return;
    watcher.done = true;
    size--;
    for (const id of watcher.ids) {
      const set = byId.get(id);
      set?.delete(watcher);
      if (set?.size === 0) byId.delete(id);
    }
  }

  const unsubscribe = transport?.subscribe(channel, (message) => {
    const ids = (message.data as { ids?: unknown } | null)?.ids;
    if (!Array.isArray(ids)) return;
    const heard = ids.filter((id): id is string => typeof id === 'string');
    for (const id of heard) end(id);
    if (published.revocation.hasSubscribers && heard.length > 0) {
      published.revocation.publish({ ids: heard, origin: 'transport' } satisfies RevocationMessage);
    }
  });

  return {
    async revoke(ids) {
      const list = ids.filter((id) => typeof id === 'string' && id !== '');
      if (list.length === 0) return;
      for (const id of list) end(id);
      if (published.revocation.hasSubscribers) {
        published.revocation.publish({ ids: list, origin: 'local' } satisfies RevocationMessage);
      }
      await transport?.publish(channel, 'revoked', { ids: list });
    },
    watch(ids, onRevoked) {
      const watcher: Watcher = { ids: [...ids], onRevoked, done: false };
      if (watcher.ids.length === 0) return () => {};
      size++;
      for (const id of watcher.ids) {
        const set = byId.get(id);
        if (set === undefined) byId.set(id, new Set([watcher]));
        else set.add(watcher);
      }
      return () => stopWatching(watcher);
    },
    listen(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    get size() {
      return size;
    },
    close() {
      unsubscribe?.();
    },
  };
}

const PROCESS_KEY = Symbol.for('portico.revocations');

/**
 * The bus this process uses when none is given: stores (`MemoryApiKeyStore`, the session and
 * OAuth stores) announce on it and streams watch it, so that in one process a revocation ends
 * its deliveries without any wiring. Shared by the ESM and CommonJS builds.
 *
 * @example
 * ```ts
 * processRevocations().watch(['grant:g1'], () => socket.close(1008, 'grant revoked'));
 * ```
 */
export function processRevocations(): Revocations {
  const holder = globalThis as { [PROCESS_KEY]?: Revocations };
  holder[PROCESS_KEY] ??= createRevocations();
  return holder[PROCESS_KEY];
}

/**
 * Checks a `revocations` option: a bus, or `undefined` for the process's.
 *
 * @example
 * ```ts
 * const revocations = revocationsOption('myStream()', options.revocations) ?? processRevocations();
 * ```
 */
export function revocationsOption(owner: string, value: unknown): Revocations | undefined {
  if (value === undefined) return undefined;
  const bus = value as Partial<Revocations> | null;
  if (typeof bus?.watch !== 'function' || typeof bus.revoke !== 'function') {
    throw invalidOption(
      `${owner}: \`revocations\` must be a Revocations bus (createRevocations())`,
    );
  }
  return value as Revocations;
}

/** setTimeout's longest delay; a later deadline is reached in steps. */
const MAX_DELAY = 2 ** 31 - 1;

/** Options of {@link bindToCredential}. */
export interface BindToCredentialOptions {
  /** Where revocations are heard. @defaultValue {@link processRevocations} */
  revocations?: Revocations;
  /** Called once when the credential is revoked or expires. */
  onEnd(reason: CredentialEnd, id?: string): void;
  /** The clock, epoch ms (tests). @defaultValue `Date.now` */
  now?: () => number;
}

/**
 * Binds a long-lived delivery to the credential of `principal`: `onEnd` runs once, when one
 * of its `credentialIds` is revoked (synchronously, inside `revoke`) or at its `expiresAt`
 * (at once when already past). The returned function unbinds (call it when the delivery ends
 * first).
 *
 * @example
 * ```ts
 * const unbind = bindToCredential(principal, {
 *   onEnd: (reason) => socket.close(1008, `credential ${reason}`),
 * });
 * socket.on('close', unbind);
 * ```
 */
export function bindToCredential(
  principal: Pick<Principal, 'credentialIds' | 'expiresAt'>,
  options: BindToCredentialOptions,
): () => void {
  const revocations = options.revocations ?? processRevocations();
  const now = options.now ?? Date.now;
  let ended = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let unwatch = () => {};
  const finish = (reason: CredentialEnd, id?: string) => {
    if (ended) return;
    unbind();
    options.onEnd(reason, id);
  };
  function unbind(): void {
    ended = true;
    unwatch();
    if (timer !== undefined) clearTimeout(timer);
  }
  const ids = principal.credentialIds ?? [];
  if (ids.length > 0) unwatch = revocations.watch(ids, (id) => finish('revoked', id));
  const expiresAt = principal.expiresAt;
  if (expiresAt !== undefined && Number.isFinite(expiresAt)) {
    const arm = () => {
      const left = expiresAt - now();
      if (left <= 0) return finish('expired');
      timer = setTimeout(arm, Math.min(left, MAX_DELAY));
      timer.unref?.();
    };
    arm();
  }
  return () => {
    if (!ended) unbind();
  };
}

/**
 * The revocation id of an API key (`api_key:<id>`).
 *
 * @example
 * ```ts
 * await revocations.revoke([apiKeyCredentialId(record.id)]);
 * ```
 */
export const apiKeyCredentialId = (id: string): string => `api_key:${id}`;

/**
 * The revocation id of a session (`session:<the SHA-256 of its id>`, as its store keys it).
 *
 * @example
 * ```ts
 * revocations.watch([sessionCredentialId(hash)], () => stream.close());
 * ```
 */
export const sessionCredentialId = (hash: string): string => `session:${hash}`;

/**
 * The revocation id of an OAuth grant (`grant:<id>`): every token issued from it.
 *
 * @example
 * ```ts
 * await revocations.revoke([grantCredentialId(record.grantId)]);
 * ```
 */
export const grantCredentialId = (grantId: string): string => `grant:${grantId}`;

/**
 * The revocation id of one token without a grant (`token:<jti>`).
 *
 * @example
 * ```ts
 * await revocations.revoke([tokenCredentialId(payload.jti)]);
 * ```
 */
export const tokenCredentialId = (jti: string): string => `token:${jti}`;

/**
 * Announces a revocation, never rejecting: watchers in this process are ended before it
 * returns (synchronously); a transport failure is reported to `onError`, never thrown.
 *
 * @example
 * ```ts
 * store.delete(id);
 * void announceRevocation(revocations, [apiKeyCredentialId(id)], (error) => log.warn(error));
 * ```
 */
export function announceRevocation(
  revocations: Revocations,
  ids: readonly string[],
  onError: (error: unknown) => void = () => {},
): Promise<void> {
  return revocations.revoke(ids).catch(onError);
}
