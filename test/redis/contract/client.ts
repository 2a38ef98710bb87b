// RedisClientStore: the writable client store contract (the checks MemoryClientStore passes
// too, test/oauth/clients/store.test.ts), each view a store on a client of its own (another
// process), and the changes seen at the next request of a real authorization server.
import { RedisClientStore } from '../../../src/redis/client-store.js';
import {
  expectChangesAtNextRequest,
  writableStoreChecks,
} from '../../oauth/clients/writable-store-checks.js';
import { asClient, type CheckContext, type CheckGroup } from './check.js';

const views =
  (context: CheckContext) =>
  (options: { maxClients?: number } = {}) =>
  () =>
    new RedisClientStore({
      client: asClient(context.client()),
      prefix: context.prefix,
      ...options,
    });

export const clientChecks: CheckGroup = {
  store: 'RedisClientStore',
  checks: [
    ...writableStoreChecks.map((check) => ({
      name: check.name,
      timeoutMs: 20_000,
      run: (context: CheckContext) => check.run(views(context)),
    })),
    {
      name: 'shows a change at the next request of a real authorization server',
      timeoutMs: 30_000,
      run: (context: CheckContext) => expectChangesAtNextRequest(views(context)()()),
    },
  ],
};
