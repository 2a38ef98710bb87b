// Where the authorization server finds its clients: a read side every endpoint uses, a write
// side for clients added, changed and removed while the server runs (what dynamic client
// registration builds on), the bounded memory store, and the composition in which the clients
// configured with defineClient() always win over stored ones.
import { conflict, serviceUnavailable } from '../../core/errors/errors.js';
import {
  assertKnownOptions,
  assertNotThenable,
  countOption,
  invalidOption,
} from '../../internal/options.js';
import type { OAuthClient } from './client.js';

/**
 * Where the server looks clients up, at every request that names one: an app's database, a
 * file, {@link MemoryClientStore}, `RedisClientStore` (`portico/redis`), or
 * {@link clientStores} (configured clients beside stored ones). Nothing is cached: what `get`
 * answers now is what the next request sees.
 *
 * @example
 * ```ts
 * const clients: ClientStore = {
 *   get: (clientId) => (clientId === service.clientId ? service : undefined),
 * };
 * ```
 */
export interface ClientStore {
  get(clientId: string): OAuthClient | undefined | Promise<OAuthClient | undefined>;
}

/**
 * A {@link ClientStore} clients can be added to, changed in and removed from while the server
 * runs ({@link MemoryClientStore}, `RedisClientStore`): the next request sees the change. Pass
 * it as `clients` of `createAuthorizationServer()` as it is, or beside the configured clients
 * with {@link clientStores}. Every write is atomic: of two `add`s of one id, exactly one wins.
 *
 * @example
 * ```ts
 * await store.add(await defineClient({ clientId: 'partner', secret, grantTypes: ['client_credentials'], redirectUris: [], scopes: ['read:messages'] }));
 * await store.replace({ ...(await store.get('partner'))!, scopes: [] });
 * await store.remove('partner'); // true: its next token request is `invalid_client`
 * ```
 */
export interface WritableClientStore extends ClientStore {
  /**
   * Adds a client. Throws a 409 (`ERR_CLIENT_EXISTS`) when its id is taken, and a 503
   * (`ERR_CLIENT_STORE_FULL`) when the store holds as many clients as it may.
   */
  add(client: OAuthClient): void | Promise<void>;
  /**
   * Replaces the client of the same id (changed scopes, redirect URIs, a new secret hash):
   * `false`, and nothing written, when there is none.
   */
  replace(client: OAuthClient): boolean | Promise<boolean>;
  /** Removes a client: whether there was one. */
  remove(clientId: string): boolean | Promise<boolean>;
}

/**
 * Options of {@link MemoryClientStore}.
 *
 * @example
 * ```ts
 * const options: MemoryClientStoreOptions = { maxClients: 1_000 };
 * ```
 */
export interface MemoryClientStoreOptions {
  /**
   * The most clients the store holds, those given to the constructor included. Once full, an
   * `add` is refused with a 503 (`ERR_CLIENT_STORE_FULL`): no client is ever forgotten to
   * make room.
   * @defaultValue `10_000`
   */
  maxClients?: number;
}

const MEMORY_OPTIONS = [
  'maxClients',
] as const satisfies readonly (keyof MemoryClientStoreOptions)[];

/** The default bound of the writable stores. @internal */
export const DEFAULT_MAX_CLIENTS = 10_000;

/** Refuses what is not a client: a Promise (`defineClient()` without `await`) above all. */
function clientOf(owner: string, name: string, client: unknown): OAuthClient {
  assertNotThenable(owner, name, client, 'await defineClient({ … })');
  if (typeof (client as OAuthClient | null)?.clientId !== 'string') {
    throw invalidOption(`${owner}: \`${name}\` must be a client (defineClient())`);
  }
  return client as OAuthClient;
}

/** The 409 of an `add` whose id is taken. @internal */
export const clientExists = (clientId: string) =>
  conflict(`A client with the id ${JSON.stringify(clientId)} exists already.`, {
    code: 'ERR_CLIENT_EXISTS',
  });

/** The 503 of an `add` to a full store. @internal */
export const clientStoreFull = () =>
  serviceUnavailable(60, 'The server holds as many clients as it can; try again later.', {
    code: 'ERR_CLIENT_STORE_FULL',
  });

/**
 * Clients held in memory, in one process: given at start, and added, replaced or removed
 * while the server runs ({@link WritableClientStore}), at most `maxClients` of them. Behind
 * several processes, use `RedisClientStore` (`portico/redis`).
 *
 * @example
 * ```ts
 * const clients = new MemoryClientStore([await defineClient({ … })], { maxClients: 1_000 });
 * clients.add(await defineClient({ clientId: 'partner', … }));
 * clients.remove('partner'); // true
 * ```
 */
export class MemoryClientStore implements WritableClientStore {
  readonly #clients = new Map<string, OAuthClient>();
  readonly #max: number;

  constructor(clients: readonly OAuthClient[] = [], options: MemoryClientStoreOptions = {}) {
    const owner = 'new MemoryClientStore()';
    assertNotThenable(owner, 'clients', clients, 'await Promise.all([…])');
    if (!Array.isArray(clients)) {
      throw invalidOption(`${owner}: \`clients\` must be an array of clients (defineClient())`);
    }
    assertKnownOptions(owner, options, MEMORY_OPTIONS);
    this.#max = countOption(owner, 'maxClients', options.maxClients, DEFAULT_MAX_CLIENTS);
    if (clients.length > this.#max) {
      throw invalidOption(
        `${owner}: ${clients.length} clients given, more than \`maxClients\` (${this.#max})`,
      );
    }
    clients.forEach((client, i) => {
      const checked = clientOf(owner, `clients[${i}]`, client);
      if (this.#clients.has(checked.clientId)) {
        throw invalidOption(`${owner}: two clients have the id \`${checked.clientId}\``);
      }
      this.#clients.set(checked.clientId, checked);
    });
  }

  /** Adds a client: a 409 when its id is taken, a 503 when the store is full. */
  add(client: OAuthClient): void {
    const checked = clientOf('MemoryClientStore.add()', 'client', client);
    if (this.#clients.has(checked.clientId)) throw clientExists(checked.clientId);
    if (this.#clients.size >= this.#max) throw clientStoreFull();
    this.#clients.set(checked.clientId, checked);
  }

  /** Replaces the client of the same id: `false`, nothing written, when there is none. */
  replace(client: OAuthClient): boolean {
    const checked = clientOf('MemoryClientStore.replace()', 'client', client);
    if (!this.#clients.has(checked.clientId)) return false;
    this.#clients.set(checked.clientId, checked);
    return true;
  }

  /** Removes a client: whether there was one. */
  remove(clientId: string): boolean {
    return this.#clients.delete(clientId);
  }

  get(clientId: string): OAuthClient | undefined {
    return this.#clients.get(clientId);
  }
}

/** The 409 of a write naming a configured client. */
const configured = (clientId: string) =>
  conflict(
    `The client ${JSON.stringify(clientId)} is configured on the server: it cannot be added, changed or removed at run time.`,
    { code: 'ERR_CLIENT_CONFIGURED' },
  );

/**
 * The clients configured on the server ({@link defineClient}) beside a store of clients
 * added at run time: a lookup finds a configured client first, and a write naming a
 * configured client's id (`add`, `replace`, `remove`) is refused with a 409
 * (`ERR_CLIENT_CONFIGURED`), so that a client added at run time can never shadow nor replace
 * one configured in code. The configured clients are fixed; the store's change at once.
 *
 * @example
 * ```ts
 * const clients = clientStores(
 *   [await defineClient({ clientId: 'web', secret: process.env.WEB_SECRET, … })],
 *   new RedisClientStore({ client: redis }),
 * );
 * const server = createAuthorizationServer({ clients, … });
 * await clients.add(await defineClient({ clientId: 'partner', … })); // stored in Redis
 * await clients.remove('web'); // throws: 409 ERR_CLIENT_CONFIGURED
 * ```
 */
export function clientStores(
  configuredClients: readonly OAuthClient[],
  stored: WritableClientStore,
): WritableClientStore {
  const owner = 'clientStores()';
  assertNotThenable(owner, 'configuredClients', configuredClients, 'await Promise.all([…])');
  if (!Array.isArray(configuredClients)) {
    throw invalidOption(`${owner}: \`configuredClients\` must be an array of clients`);
  }
  assertNotThenable(owner, 'stored', stored);
  for (const method of ['get', 'add', 'replace', 'remove'] as const) {
    if (typeof (stored as Partial<WritableClientStore> | null)?.[method] !== 'function') {
      throw invalidOption(
        `${owner}: \`stored\` must be a writable client store (get, add, replace, remove), such as new MemoryClientStore() or new RedisClientStore()`,
      );
    }
  }
  const fixed = new Map<string, OAuthClient>();
  configuredClients.forEach((client, i) => {
    const checked = clientOf(owner, `configuredClients[${i}]`, client);
    if (fixed.has(checked.clientId)) {
      throw invalidOption(`${owner}: two clients have the id \`${checked.clientId}\``);
    }
    fixed.set(checked.clientId, checked);
  });
  const refuseConfigured = (clientId: unknown) => {
    if (typeof clientId === 'string' && fixed.has(clientId)) throw configured(clientId);
  };
  return Object.freeze({
    get: (clientId: string) => fixed.get(clientId) ?? stored.get(clientId),
    async add(client: OAuthClient) {
      refuseConfigured(clientOf('clientStores().add()', 'client', client).clientId);
      await stored.add(client);
    },
    async replace(client: OAuthClient) {
      refuseConfigured(clientOf('clientStores().replace()', 'client', client).clientId);
      return stored.replace(client);
    },
    async remove(clientId: string) {
      refuseConfigured(clientId);
      return stored.remove(clientId);
    },
  });
}
