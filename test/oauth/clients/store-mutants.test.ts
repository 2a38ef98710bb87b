// The client stores (clients/store.ts) read as a unit: every refusal's message and hint, and
// each error a write answers with its status, code and detail (issue 39's mutation run).
import { describe, expect, it } from 'vitest';
import { defineClient, type OAuthClient } from '../../../src/oauth/clients/client.js';
import { clientStores, MemoryClientStore } from '../../../src/oauth/clients/store.js';

const definition = {
  grantTypes: ['client_credentials'] as const,
  redirectUris: [],
  scopes: ['read:messages'],
};
const client = (clientId: string): Promise<OAuthClient> =>
  defineClient({ clientId, secret: `secret-of-${clientId}-0123456789`, ...definition });

/** The TypeError `run` throws, synchronously or as a rejection: its message. */
async function optionRefusal(run: () => unknown): Promise<string> {
  let error: unknown;
  try {
    await run();
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(TypeError);
  expect((error as { code?: string }).code).toBe('ERR_INVALID_OPTION');
  return (error as Error).message;
}

const notAClient = (owner: string, name: string) =>
  `${owner}: \`${name}\` must be a client (defineClient())`;
const promised = (owner: string, name: string, fix?: string) =>
  `${owner}: \`${name}\` is a Promise: did you forget \`await\`?${fix === undefined ? '' : ` (\`${fix}\`)`}`;

describe('MemoryClientStore', () => {
  it('refuses what is not a client, naming the method and the argument', async () => {
    const store = new MemoryClientStore();
    for (const value of [null, undefined, {}, { clientId: 7 }, 'web']) {
      expect(await optionRefusal(() => store.add(value as never))).toBe(
        notAClient('MemoryClientStore.add()', 'client'),
      );
      expect(await optionRefusal(() => store.replace(value as never))).toBe(
        notAClient('MemoryClientStore.replace()', 'client'),
      );
      expect(await optionRefusal(() => new MemoryClientStore([value as never]))).toBe(
        notAClient('new MemoryClientStore()', 'clients[0]'),
      );
    }
    const pending = client('later');
    expect(await optionRefusal(() => store.add(pending as never))).toBe(
      promised('MemoryClientStore.add()', 'client', 'await defineClient({ … })'),
    );
    expect(await optionRefusal(() => new MemoryClientStore(pending as never))).toBe(
      promised('new MemoryClientStore()', 'clients', 'await Promise.all([…])'),
    );
    await pending;
  });

  it('answers a 409 naming the id taken and a 503 with Retry-After when full', async () => {
    const a = await client('a');
    const store = new MemoryClientStore([a], { maxClients: 2 });
    let error: unknown;
    try {
      store.add(a);
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({
      status: 409,
      code: 'ERR_CLIENT_EXISTS',
      message: 'A client with the id "a" exists already.',
    });
    store.add(await client('b'));
    try {
      store.add(await client('c'));
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({
      status: 503,
      code: 'ERR_CLIENT_STORE_FULL',
      message: 'The server holds as many clients as it can; try again later.',
      headers: { 'Retry-After': '60' },
    });
  });
});

describe('clientStores()', () => {
  it('refuses configured clients and stores that are not what it needs', async () => {
    const owner = 'clientStores()';
    const pending = Promise.resolve([]);
    expect(await optionRefusal(() => clientStores(pending as never, new MemoryClientStore()))).toBe(
      promised(owner, 'configuredClients', 'await Promise.all([…])'),
    );
    const pendingStore = Promise.resolve(new MemoryClientStore());
    expect(await optionRefusal(() => clientStores([], pendingStore as never))).toBe(
      promised(owner, 'stored'),
    );
    const writable = `${owner}: \`stored\` must be a writable client store (get, add, replace, remove), such as new MemoryClientStore() or new RedisClientStore()`;
    for (const stored of [null, undefined, {}, { get() {}, add() {}, replace() {} }]) {
      expect(await optionRefusal(() => clientStores([], stored as never))).toBe(writable);
    }
    expect(await optionRefusal(() => clientStores([null as never], new MemoryClientStore()))).toBe(
      notAClient(owner, 'configuredClients[0]'),
    );
  });

  it('refuses writes of what is not a client, naming the method', async () => {
    const clients = clientStores([await client('web')], new MemoryClientStore());
    expect(await optionRefusal(() => clients.add({} as never))).toBe(
      notAClient('clientStores().add()', 'client'),
    );
    expect(await optionRefusal(() => clients.replace(null as never))).toBe(
      notAClient('clientStores().replace()', 'client'),
    );
  });

  it('answers a 409 naming the configured client for every write of its id', async () => {
    const web = await client('web');
    const clients = clientStores([web], new MemoryClientStore());
    const expected = {
      status: 409,
      code: 'ERR_CLIENT_CONFIGURED',
      message:
        'The client "web" is configured on the server: it cannot be added, changed or removed at run time.',
    };
    await expect(clients.add(web)).rejects.toMatchObject(expected);
    await expect(clients.replace(web)).rejects.toMatchObject(expected);
    await expect(clients.remove('web')).rejects.toMatchObject(expected);
    expect(await clients.remove('other')).toBe(false);
    expect(await clients.remove(7 as never)).toBe(false);
    expect(await clients.get('web')).toBe(web);
  });
});
