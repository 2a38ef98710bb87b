/** portico, bearer RS256 with the verified-token cache (the default). */
import type { JSONWebKeySet } from 'jose';
import { portico, serveAuthenticated } from './portico-app.js';
import { AUDIENCE, ISSUER, VARIABLES, variable } from './shared.js';

serveAuthenticated(
  portico.jwtBearer({
    jwks: JSON.parse(variable(VARIABLES.jwks)) as JSONWebKeySet,
    issuer: ISSUER,
    audience: AUDIENCE,
    algorithms: ['RS256'],
  }),
);
