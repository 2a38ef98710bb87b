/**
 * portico's authorization server (`createAuthorizationServer`) with one `client_credentials`
 * client, an RS256 key set made at start, and its routes under `toNodeListener` + router.
 * `POST /token` authenticates the client (`client_secret_basic`: scrypt once, then a SHA-256
 * cache of secrets that verified), checks the scope and signs an RFC 9068 access token (JWT,
 * RS256). It imports the build in `dist/` (what users run); `npm run bench` builds it first.
 */
import { createServer } from 'node:http';
import { serve } from '../lib/serve.js';
import { AUDIENCE, CLIENT_ID, CLIENT_SECRET, ISSUER, SCOPE } from './shared.js';

// Types from the sources, code from the build: typechecking needs no build, the run uses it.
const dist = new URL('../../dist/index.js', import.meta.url).href;
const {
  createAuthorizationServer,
  createKeySet,
  createRouter,
  createSessions,
  defineClient,
  MemoryClientStore,
  toNodeListener,
} = (await import(dist)) as typeof import('../../src/index.js');

const server = createAuthorizationServer({
  issuer: ISSUER,
  resources: [{ identifier: AUDIENCE }],
  clients: new MemoryClientStore([
    await defineClient({
      clientId: CLIENT_ID,
      secret: CLIENT_SECRET,
      grantTypes: ['client_credentials'],
      redirectUris: [],
      scopes: [SCOPE],
    }),
  ]),
  keys: await createKeySet(), // RS256, 2048-bit
  users: { verify: () => undefined, get: () => undefined },
  sessions: createSessions({ allowedOrigins: [new URL(ISSUER).origin] }),
});

serve(createServer(toNodeListener([createRouter(server.routes)])));
