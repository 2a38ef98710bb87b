/**
 * Fastify 5 + `@fastify/jwt` verifying the same RS256 token with the issuer's public key
 * (the fixture's one-key JWKS, as PEM), `iss`, `aud` and RS256 only. The verifier's cache
 * stays at `@fastify/jwt`'s default: fast-jwt's `cache` is off unless asked for, so the
 * signature is checked on every request. Logger off (Fastify's default).
 */
import { createPublicKey, type JsonWebKey } from 'node:crypto';
import fastifyJwt from '@fastify/jwt';
import Fastify from 'fastify';
import { serve } from '../lib/serve.js';
import { AUDIENCE, ISSUER, VARIABLES, variable } from './shared.js';

const { keys } = JSON.parse(variable(VARIABLES.jwks)) as { keys: JsonWebKey[] };
const [jwk] = keys;
if (jwk === undefined) throw new Error(`${VARIABLES.jwks} holds no key`);
const publicKey = createPublicKey({ key: jwk, format: 'jwk' })
  .export({ type: 'spki', format: 'pem' })
  .toString();

const app = Fastify();
await app.register(fastifyJwt, {
  secret: { public: publicKey },
  verify: { algorithms: ['RS256'], allowedIss: ISSUER, allowedAud: AUDIENCE },
});
// A missing or bad token rejects: Fastify's error handler answers its 401.
app.addHook('onRequest', async (request) => {
  await request.jwtVerify();
});
app.get('/api/me', async (request) => ({
  sub: (request.user as { sub?: string }).sub,
  method: 'bearer',
}));

await app.ready();
serve(app.server);
