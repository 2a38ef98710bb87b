/** portico, API key: `apiKeyAuth` over a `MemoryApiKeyStore` holding the run's one key. */
import type { ApiKeyRecord } from '../../src/index.js';
import { portico, serveAuthenticated } from './portico-app.js';
import { VARIABLES, variable } from './shared.js';

const { apiKeyAuth, MemoryApiKeyStore } = portico;

// The record `createApiKey` made in the orchestrator (the key's hash, never the key).
const store = new MemoryApiKeyStore();
store.save(JSON.parse(variable(VARIABLES.apiKeyRecord)) as ApiKeyRecord);

serveAuthenticated(apiKeyAuth({ store }));
