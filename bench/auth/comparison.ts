import type { Comparison } from '../lib/types.js';
import { sameBytesFloor } from '../lib/verify.js';
import { authFixture } from './fixture.js';
import { API_KEY_BODY, BEARER_BODY, DPOP_BODY, VARIABLES } from './shared.js';

const bearer = { authorization: `Bearer $${VARIABLES.token}` };
/** No credential, and a token with the right claims and `kid` signed by another key. */
const refusedBearer: Record<string, string>[] = [
  {},
  { authorization: `Bearer $${VARIABLES.forgedToken}` },
];

/** A route behind bearer RS256 auth, with and without the verified-token cache. */
export const authComparison: Comparison = {
  name: 'auth',
  title: 'a route behind bearer RS256 auth',
  description:
    '`GET /api/me` answering the principal’s `{"sub":…,"method":…}`. Every bearer server ' +
    'verifies the same RS256 access token (2048-bit key, `iss`, `aud`, `sub`, `scope`, 15 min ' +
    'lifetime, minted for the run) sent as `Authorization: Bearer …`; the API-key server gets ' +
    'an `X-API-Key` made by `createApiKey`. portico runs `authenticate([…])` + router under ' +
    '`toNodeListener`: `apiKeyAuth({ store })` over a `MemoryApiKeyStore` holding that one key, ' +
    "or `jwtBearer({ jwks, issuer, audience, algorithms: ['RS256'] })` with the " +
    'verified-token cache (its default) or `cache: false`. Fastify 5 runs `@fastify/jwt` ' +
    "with the public key and `verify: { algorithms: ['RS256'], allowedIss, allowedAud }` in " +
    'an `onRequest` hook (`request.jwtVerify()`). Express 5 runs ' +
    '`express-oauth2-jwt-bearer` `auth({ issuer, jwksUri, audience, tokenSigningAlg: ' +
    "'RS256' })`. Target: portico bearer with the cache at 80 % or more of the API-key route, " +
    'ahead of Fastify’s and at 2× Express’s or more.',
  baseline: 'portico-api-key',
  secondaryBaseline: 'bare',
  servers: [
    {
      name: 'bare',
      label: 'bare node:http (no credential check)',
      entry: 'bench/auth/bare.ts',
      requestHeaders: bearer,
    },
    sameBytesFloor('portico-api-key'),
    {
      name: 'portico-api-key',
      label: 'portico, API key',
      entry: 'bench/auth/portico-api-key.ts',
      requestHeaders: { 'x-api-key': `$${VARIABLES.apiKey}` },
      expectBody: API_KEY_BODY,
      refuses: [{}, { 'x-api-key': `$${VARIABLES.unknownApiKey}` }],
    },
    {
      name: 'portico-bearer',
      label: 'portico, bearer RS256, verified-token cache',
      entry: 'bench/auth/portico-bearer.ts',
      requestHeaders: bearer,
      refuses: refusedBearer,
    },
    {
      name: 'portico-bearer-nocache',
      label: 'portico, bearer RS256, `cache: false`',
      entry: 'bench/auth/portico-bearer-nocache.ts',
      requestHeaders: bearer,
      refuses: refusedBearer,
    },
    {
      name: 'portico-dpop',
      label: 'portico, DPoP-bound RS256 token + ES256 proof, verified-token cache',
      entry: 'bench/auth/portico-dpop.ts',
      requestHeaders: {
        authorization: `DPoP $${VARIABLES.dpopToken}`,
        dpop: `$${VARIABLES.dpopProof}`,
      },
      expectBody: DPOP_BODY,
      refuses: [
        {},
        { authorization: `Bearer $${VARIABLES.dpopToken}` },
        { authorization: `DPoP $${VARIABLES.dpopToken}`, dpop: `$${VARIABLES.dpopStrangerProof}` },
      ],
    },
    {
      name: 'fastify-jwt',
      label: 'Fastify 5 + @fastify/jwt',
      entry: 'bench/auth/fastify-jwt.ts',
      requestHeaders: bearer,
      refuses: refusedBearer,
    },
    {
      name: 'express-jwt-bearer',
      label: 'Express 5 + express-oauth2-jwt-bearer',
      entry: 'bench/auth/express-jwt-bearer.ts',
      requestHeaders: bearer,
      refuses: refusedBearer,
    },
  ],
  request: { method: 'GET', path: '/api/me', headers: {} },
  expect: { status: 200, body: BEARER_BODY },
  setup: authFixture,
  notes: [
    'Every request carries the same token, the best case for a cache: the cached row is the ' +
      'cost of a token seen before (a SHA-256 of it and a map lookup; the check before ' +
      'measuring fills the cache), `cache: false` the cost of a new one (an RSA signature ' +
      'check each time).',
    'Before measuring, each authenticating server is checked to answer 401 without a ' +
      'credential and to a bad one (for bearer, the same claims and `kid` signed by another ' +
      'key; for the API key, a well-formed key in no store).',
    'The API-key route hashes the key (SHA-256) and looks it up in memory on every request ' +
      '(no cache, so revocation is immediate); its `method` is `api_key`, hence a body one ' +
      'byte longer.',
    'portico takes the public key set as `jwks` (in memory); Express fetches the same set ' +
      'over HTTP from a key-set server in its own process, once, before measuring (it keeps ' +
      'it 10 minutes). `express-oauth2-jwt-bearer` 1.x verifies with `jose` 4, portico with ' +
      '`jose` 6; Express has no verified-token cache, so it checks the signature every time, ' +
      'and keeps its default weak `ETag`.',
    '`@fastify/jwt` 10 verifies with fast-jwt 6 and leaves fast-jwt’s verified-token cache ' +
      'off (`cache` is unset by default; its default `errorCacheTTL` only matters with a ' +
      'cache), so it checks the RSA signature on every request: compare it with portico’s ' +
      '`cache: false` row for the same work, with the cached row for each library’s default. ' +
      'It takes the public key (the fixture’s JWK exported as PEM) in memory, does not check ' +
      '`kid` or `typ`, and answers a refused request with its own JSON error body; logger off ' +
      '(Fastify’s default), no ETag.',
    'The DPoP row sends a token bound to an ES256 key (`cnf.jkt`) as `Authorization: DPoP` ' +
      'with a proof of that key (`htm`, `htu`, `iat`, `ath`): each request verifies the ' +
      'proof’s ES256 signature through jose’s WebCrypto (the key imported and its thumbprint ' +
      'taken once per distinct `jwk`), then finds the token in the verified-token cache. ' +
      'The signature check is the cost: an ES256 verification is about 70 µs in node:crypto ' +
      'alone and 150 µs through WebCrypto here. autocannon resends one proof, so that server’s replay store ' +
      'accepts every `jti` and its proofs live 30 minutes; a real one adds a map insert ' +
      '(`MemoryReplayStore`) or a Redis `SET NX` (`RedisReplayStore`) per request. Its ' +
      'refusals: no credential, the bound token sent as `Bearer`, a proof of another key.',
    'bare node:http checks no credential: it is the floor, not a competitor.',
    '`$BENCH_AUTH_…` below stand for the key set, token and API key that ' +
      '[`bench/auth/fixture.ts`](bench/auth/fixture.ts) makes for each run (and passes to ' +
      'every server in its environment); they are not stored. `node --import tsx ' +
      'bench/auth/fixture.ts` prints a fresh set as `export` lines, for running a server by hand.',
    'portico runs from its tsup build in `dist/` (what `npm install portico` gives), built by ' +
      '`npm run bench` before measuring.',
  ],
};
