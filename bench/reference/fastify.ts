/**
 * Fastify 5 with the stack the reference server runs on `/api/*`: @fastify/helmet,
 * @fastify/cors (the same origins, credentials), @fastify/rate-limit (in memory, max 1e9 per
 * 60 s) and `@fastify/jwt` verifying the reference server's own access token in an
 * `onRequest` hook (`request.jwtVerify()`) with the server's public key (SPKI PEM), RS256
 * only, its `iss` and `aud`. It trusts one proxy hop, as the reference server's `TRUST_PROXY=1`.
 * Logger off (Fastify's default).
 */
import cors from '@fastify/cors';
import helmet from '@fastify/helmet';
import fastifyJwt from '@fastify/jwt';
import rateLimit from '@fastify/rate-limit';
import Fastify from 'fastify';
import { serve } from '../lib/serve.js';
import { BASE_URL, CORS_ORIGINS, RATE_LIMIT, VARIABLES, variable } from './shared.js';

// The nearest hop only, as `TRUST_PROXY=1` (the function form: the types leave out a number).
const app = Fastify({ trustProxy: (_address: string, hop: number) => hop < 1 });
await app.register(helmet);
await app.register(cors, { origin: CORS_ORIGINS, credentials: true });
await app.register(rateLimit, { max: RATE_LIMIT, timeWindow: 60_000 });
await app.register(fastifyJwt, {
  secret: { public: variable(VARIABLES.publicKey) },
  verify: { algorithms: ['RS256'], allowedIss: BASE_URL, allowedAud: BASE_URL },
});
// A missing or bad token rejects: Fastify's error handler answers its 401.
app.addHook('onRequest', async (request) => {
  await request.jwtVerify();
});
app.get('/api/me', async (request) => {
  const { sub, name, role, scope } = request.user as {
    sub: string;
    name?: string;
    role?: string;
    scope?: string;
  };
  // What the reference server answers: a client acting for itself is named by its id.
  return {
    sub,
    name: name ?? sub,
    role: role ?? 'service',
    scopes: scope === undefined ? [] : scope.split(' '),
    method: 'bearer',
  };
});

await app.ready();
serve(app.server);
