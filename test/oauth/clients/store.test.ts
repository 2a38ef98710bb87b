import { afterEach, describe, expect, it } from 'vitest';
import { defineClient, type OAuthClient } from '../../../src/oauth/clients/client.js';
import {
  clientStores,
  MemoryClientStore,
  type WritableClientStore,
} from '../../../src/oauth/clients/store.js';
import { closeAll, json, request } from '../../helpers/http.js';
import {
  expectChangesAtNextRequest,
  startServerOver,
  writableStoreChecks,
} from './writable-store-checks.js';

afterEach(closeAll);

const definition = {
  grantTypes: ['client_credentials'] as const,
  redirectUris: [],
  scopes: ['read:messages'],
};

describe('MemoryClientStore, the writable store contract', () => {
  for (const check of writableStoreChecks) {
    it(check.name, () =>
      check.run((options) => {
        const store = new MemoryClientStore([], options);
        return () => store;
      }),
    );
  }

  it('counts the clients given to the constructor, and refuses more than maxClients', async () => {
    const a = await defineClient({ clientId: 'a', secret: 'secret-of-a', ...definition });
    const b = { ...a, clientId: 'b' };
    expect(() => new MemoryClientStore([a, b], { maxClients: 1 })).toThrow(
      'new MemoryClientStore(): 2 clients given, more than `maxClients` (1)',
    );
    const store = new MemoryClientStore([a], { maxClients: 1 });
    expect(() => store.add(b)).toThrow(expect.objectContaining({ status: 503 }));
    expect(() => new MemoryClientStore([], { maxClients: 0 })).toThrow(
      'new MemoryClientStore(): `maxClients` must be an integer, at least 1',
    );
    expect(() => new MemoryClientStore([], { maxClient: 3 } as never)).toThrow(
      'new MemoryClientStore(): unknown option `maxClient`. Did you mean `maxClients`?',
    );
    expect(() => new MemoryClientStore({} as never)).toThrow(
      'new MemoryClientStore(): `clients` must be an array of clients (defineClient())',
    );
  });

  it('shows a change at the next request of a real authorization server', async () => {
    await expectChangesAtNextRequest(new MemoryClientStore());
  });
});

describe('clientStores: configured clients beside stored ones', () => {
  async function configured(): Promise<OAuthClient> {
    return defineClient({ clientId: 'web', secret: 'configured-secret', ...definition });
  }

  it('finds configured clients first, and refuses any write naming one (409 ERR_CLIENT_CONFIGURED)', async () => {
    const web = await configured();
    const stored = new MemoryClientStore();
    // a client of that id in the store (added before `web` was configured) is never seen
    const impostor = await defineClient({
      clientId: 'web',
      secret: 'impostor-secret',
      ...definition,
    });
    stored.add(impostor);
    const clients = clientStores([web], stored);
    expect(await clients.get('web')).toBe(web);
    for (const write of [
      () => clients.add({ ...web, scopes: ['write:messages'] }),
      () => clients.replace({ ...web, scopes: ['write:messages'] }),
      () => clients.remove('web'),
    ]) {
      await expect(write()).rejects.toMatchObject({ status: 409, code: 'ERR_CLIENT_CONFIGURED' });
    }
    expect(await clients.get('web')).toBe(web);
    expect(stored.get('web')).toBe(impostor);

    const partner = await defineClient({
      clientId: 'partner',
      secret: 'partner-secret',
      ...definition,
    });
    await clients.add(partner);
    expect(await clients.get('partner')).toBe(partner);
    expect(stored.get('partner')).toBe(partner);
    expect(await clients.replace({ ...partner, scopes: [] })).toBe(true);
    expect(await clients.remove('partner')).toBe(true);
    expect(await clients.remove('partner')).toBe(false);
  });

  it('serves configured and stored clients through one real server, changes at the next request', async () => {
    const web = await configured();
    const clients = clientStores([web], new MemoryClientStore());
    await expectChangesAtNextRequest(clients);
    // the configured client still gets its tokens
    const server = await startServerOver(clients);
    const reply = await request(server, '/token', {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from('web:configured-secret').toString('base64')}`,
      },
      body: 'grant_type=client_credentials',
    });
    expect([reply.status, json(reply).scope]).toEqual([200, 'read:messages']);
  });

  it('refuses what is not a list of clients or not a writable store, at once', async () => {
    const web = await configured();
    const readOnly = { get: () => undefined } as unknown as WritableClientStore;
    expect(() => clientStores([web], readOnly)).toThrow(
      'clientStores(): `stored` must be a writable client store (get, add, replace, remove)',
    );
    expect(() => clientStores([web, web], new MemoryClientStore())).toThrow(
      'clientStores(): two clients have the id `web`',
    );
    expect(() => clientStores([Promise.resolve(web) as never], new MemoryClientStore())).toThrow(
      'clientStores(): `configuredClients[0]` is a Promise: did you forget `await`?',
    );
    expect(() => clientStores(web as never, new MemoryClientStore())).toThrow(
      'clientStores(): `configuredClients` must be an array of clients',
    );
  });
});
