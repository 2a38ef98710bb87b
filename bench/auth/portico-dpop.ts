/**
 * portico, a DPoP-bound RS256 token with its ES256 proof (RFC 9449), the verified-token cache
 * on: each request verifies the proof (an ES256 signature, `htm`, `htu`, `iat`, `ath`, the
 * key's thumbprint against `cnf.jkt`) and then the token (cached after the first).
 * autocannon resends one proof, so this server's replay store remembers nothing (every `jti`
 * is new to it) and its proofs live longer than the run; `MemoryReplayStore` would add one
 * map insert per request.
 */
import type { JSONWebKeySet } from 'jose';
import { portico, serveAuthenticated } from './portico-app.js';
import { AUDIENCE, DPOP_MAX_AGE_MS, DPOP_ORIGIN, ISSUER, VARIABLES, variable } from './shared.js';

const auth = (await import(
  new URL('../../dist/auth.js', import.meta.url).href
)) as typeof import('../../src/auth/index.js');

serveAuthenticated(
  portico.jwtBearer({
    jwks: JSON.parse(variable(VARIABLES.jwks)) as JSONWebKeySet,
    issuer: ISSUER,
    audience: AUDIENCE,
    algorithms: ['RS256'],
    dpop: {
      origin: DPOP_ORIGIN,
      required: true,
      verifier: auth.createDpopVerifier({
        maxAge: DPOP_MAX_AGE_MS,
        replay: { remember: () => true },
      }),
    },
  }),
);
