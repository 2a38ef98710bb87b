// What the route handlers share: the API key store, the channel hub, and the chain that runs
// before each of them (request id, security headers, authentication). Demo only: never use a
// published key for real.
import {
  apiKeyAuth,
  authenticate,
  createCredentialGuard,
  createHub,
  MemoryApiKeyStore,
  type Middleware,
  requestId,
  securityHeaders,
} from 'portico';
import { importApiKey } from 'portico/auth';

/** The API key the demo accepts (send it as `X-API-Key`). */
export const DEMO_API_KEY = 'demo-next-key-0123456789abcdef';

const keys = new MemoryApiKeyStore();
await importApiKey(keys, DEMO_API_KEY, { owner: 'demo' });

/** The channel the event stream and the posted messages share. */
export const hub = createHub();

/** The chain before every route: refused credentials count per client, then 429. */
export const front: Middleware[] = [
  requestId(),
  securityHeaders(),
  authenticate([apiKeyAuth({ store: keys })], { guard: createCredentialGuard() }),
];
