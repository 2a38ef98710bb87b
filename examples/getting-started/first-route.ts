// Step 1 of docs/getting-started.md: one route behind an API key, on plain node:http.
// node --import tsx examples/getting-started/first-route.ts   (env: PORT; listens on 127.0.0.1)
import { createServer } from 'node:http';
import {
  apiKeyAuth,
  authenticate,
  createRouter,
  MemoryApiKeyStore,
  requirePrincipal,
  sendJson,
  toNodeListener,
} from 'portico';
import { importApiKey } from 'portico/auth';
import { DEMO_API_KEY, runIfMain } from '../frameworks/shared.js';

export async function createApp({ apiKey = DEMO_API_KEY } = {}) {
  // The store keeps each key's SHA-256, never the key; createApiKey() generates new keys.
  const keys = new MemoryApiKeyStore();
  await importApiKey(keys, apiKey, { owner: 'demo' });

  const app = toNodeListener([
    authenticate([apiKeyAuth({ store: keys })]), // no good X-API-Key: a 401 problem
    createRouter({
      '/hello': {
        GET: (req, res) => sendJson(res, 200, { hello: requirePrincipal(req).sub }),
      },
    }),
  ]);
  const server = createServer(app);

  async function close(): Promise<void> {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  return { server, close };
}

await runIfMain(import.meta.url, 'Getting started, step 1', 3015, () => createApp());
