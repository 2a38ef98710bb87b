// The demo's API key store. Demo only: never use a published key for real.
import { MemoryApiKeyStore } from 'portico';
import { importApiKey } from 'portico/auth';

/** The API key the demo accepts (send it as `X-API-Key`), with the scope read:messages. */
export const DEMO_API_KEY = 'demo-nest-key-0123456789abcdef';

export const keys = new MemoryApiKeyStore();

/** Stores the demo key (its hash only). */
export const keysReady = importApiKey(keys, DEMO_API_KEY, {
  owner: 'demo',
  scopes: ['read:messages'],
});
