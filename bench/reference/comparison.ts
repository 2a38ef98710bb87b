import type { Comparison } from '../lib/types.js';
import { sameBytesFloor } from '../lib/verify.js';
import { referenceFixture, referenceTeardown } from './fixture.js';
import { API_KEY_BODY, BEARER_BODY, RATE_LIMIT, VARIABLES } from './shared.js';

const apiKey = { 'x-api-key': `$${VARIABLES.apiKey}` };
const bearer = { authorization: `Bearer $${VARIABLES.token}` };
/** No credential, and a well-formed key that is in no store. */
const refusedApiKey: Record<string, string>[] = [
  {},
  { 'x-api-key': `$${VARIABLES.unknownApiKey}` },
];
/** No credential, and the same header and claims signed by another key. */
const refusedBearer: Record<string, string>[] = [
  {},
  { authorization: `Bearer $${VARIABLES.forgedToken}` },
];
/** Headers that prove the security headers and the rate limit ran. */
const STACK_HEADERS = {
  'x-content-type-options': 'nosniff',
  'x-ratelimit-limit': String(RATE_LIMIT),
};
/** And, on the reference server, `Cache-Control: no-store` of an answer to a credential. */
const REFERENCE_HEADERS = { ...STACK_HEADERS, 'cache-control': 'no-store' };

/** `GET /api/me` of the real reference server (examples/reference-server) against bare node:http and equivalent stacks. */
export const referenceComparison: Comparison = {
  name: 'reference',
  title: 'the reference server’s GET /api/me',
  description:
    '`GET /api/me` of the reference server itself (examples/reference-server, what `npm ' +
    'start` runs): its own `loadConfig` and `createApp`, served as its main.ts serves them, ' +
    'in production mode behind a TLS proxy (`NODE_ENV=production`, `TRUST_PROXY=1`; every ' +
    'request carries `X-Forwarded-Proto: https` and `X-Forwarded-For`), in-memory stores, ' +
    '`RATE_LIMIT=1000000000` (its default, 100 per minute, would refuse the run; this counts ' +
    'every request and never triggers), `LOG_LEVEL=silent` (no access-log line per request: ' +
    'the other stacks write none). So each request runs its whole chain: request id, ' +
    'security headers, the `/api` rate-limit report, the Host check, the https check, CORS, ' +
    'authentication (bearer, then API key, session, Basic) with the credential guard, the ' +
    'route match, the per-caller rate limit, and the route answering the principal’s ' +
    '`{ sub, name, role, scopes, method }`. Rows: node:http writing byte for byte the ' +
    'reference server’s answer to the API key (its header lines, in their order and case, ' +
    'with a fresh request id; the same body) in one raw `writeHead`, the floor every ratio ' +
    'is taken against; bare node:http answering the same body with two headers; the ' +
    'reference server with `X-API-Key` (the demo key, `DEMO_API_KEY`, owned by alice: ' +
    'SHA-256 and an in-memory lookup every request), silent and with its default access log ' +
    '(`LOG_LEVEL=info`, one pino line per request on stdout, a pipe); with ' +
    '`Authorization: Bearer` and an RS256 access token its own `/token` issued to the demo ' +
    'client `demo-service` (`client_credentials`), verified with the verified-token cache ' +
    '(the server’s default) and with that cache off (`cache: false`: an RSA signature check ' +
    'every request); Express 5 with helmet, cors, express-rate-limit and an API-key check ' +
    '(SHA-256 of `X-API-Key` looked up in a `Map`; passport-headerapikey is not installed); ' +
    'and Fastify 5 with @fastify/helmet, @fastify/cors, @fastify/rate-limit and @fastify/jwt ' +
    'verifying the same bearer token (RS256, `iss`, `aud`) in an `onRequest` hook. Targets: ' +
    'the reference server’s CPU per request at most 1.6 × the floor’s with the API key and ' +
    '1.8 × with the bearer token (cached), 0.50 and 0.45 of the floor’s req/s, and the ' +
    'access log at most 5 µs of CPU per request.',
  baseline: 'reference-api-key-bytes',
  secondaryBaseline: 'bare',
  servers: [
    {
      name: 'bare',
      label: 'bare node:http (no credential check)',
      entry: 'bench/reference/bare.ts',
      requestHeaders: apiKey,
    },
    sameBytesFloor(
      'reference-api-key',
      'node:http writing the same bytes as the reference server (the floor)',
    ),
    {
      name: 'reference-api-key',
      label: 'reference server, X-API-Key',
      entry: 'bench/reference/reference.ts',
      requestHeaders: apiKey,
      expectHeaders: REFERENCE_HEADERS,
      refuses: refusedApiKey,
    },
    {
      name: 'reference-api-key-logged',
      label: 'reference server, X-API-Key, its access log on (`LOG_LEVEL=info`)',
      entry: 'bench/reference/reference-logged.ts',
      requestHeaders: apiKey,
      expectHeaders: REFERENCE_HEADERS,
      refuses: refusedApiKey,
    },
    {
      name: 'reference-bearer',
      label: 'reference server, bearer RS256, verified-token cache',
      entry: 'bench/reference/reference.ts',
      requestHeaders: bearer,
      expectBody: BEARER_BODY,
      expectHeaders: REFERENCE_HEADERS,
      refuses: refusedBearer,
    },
    {
      name: 'reference-bearer-nocache',
      label: 'reference server, bearer RS256, `cache: false`',
      entry: 'bench/reference/reference-nocache.ts',
      requestHeaders: bearer,
      expectBody: BEARER_BODY,
      expectHeaders: REFERENCE_HEADERS,
      refuses: refusedBearer,
    },
    {
      name: 'express',
      label: 'Express 5 + helmet + cors + express-rate-limit + API-key check',
      entry: 'bench/reference/express.ts',
      requestHeaders: apiKey,
      expectHeaders: STACK_HEADERS,
      refuses: refusedApiKey,
    },
    {
      name: 'fastify',
      label: 'Fastify 5 + helmet + cors + rate-limit + @fastify/jwt',
      entry: 'bench/reference/fastify.ts',
      requestHeaders: bearer,
      expectBody: BEARER_BODY,
      expectHeaders: STACK_HEADERS,
      refuses: refusedBearer,
    },
  ],
  request: {
    method: 'GET',
    path: '/api/me',
    headers: { 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.7' },
  },
  expect: { status: 200, body: API_KEY_BODY },
  profile: [
    'reference-api-key-bytes',
    'reference-api-key',
    'reference-api-key-logged',
    'reference-bearer',
  ],
  inProcess: 'bench/reference/in-process.ts',
  setup: referenceFixture,
  teardown: referenceTeardown,
  notes: [
    'The reference rows run the reference server’s own modules (`createApp`, `loadConfig`) ' +
      'with portico from its tsup build in `dist/` (what `npm install portico` gives), built ' +
      'by `npm run bench` before measuring (every server under test runs under tsx with ' +
      '[`bench/tsconfig.dist.json`](bench/tsconfig.dist.json), which drops the `paths` that ' +
      'map `portico` to its sources for the tests); only the listening (127.0.0.1, port 0, ' +
      'the port printed for the harness) is the bench’s ([`bench/reference/reference-app.ts`]' +
      '(bench/reference/reference-app.ts)).',
    'The floor is captured, not written by hand: just before measuring, the harness sends ' +
      'the API-key row’s request once and hands its answer (status, header lines but ' +
      '`Date`, `Connection` and `Keep-Alive`, which node writes itself, body) to ' +
      '[`bench/lib/same-bytes.ts`](bench/lib/same-bytes.ts), which writes it on every ' +
      'request with a fresh `X-Request-ID` and the body serialised again, with nothing set ' +
      'before its one `writeHead(200, rawArray)`: node’s fast path.',
    'Where the rest goes, from `perf record` of the API-key row under the same load (80 µs ' +
      'of server CPU per request then): the kernel’s share is about 24 µs against 7 µs for ' +
      'bare node:http, and half of it is the send waking the load generator ' +
      '(`sock_def_readable`): on loopback the sender runs the receiver’s side of TCP, and a ' +
      'server slower than its load generator finds it asleep at every answer, where bare ' +
      'node:http rarely does. In user space no function stands out: V8’s property and string ' +
      'lookups, node’s header validation and the chain’s own steps, each a few percent; ' +
      'garbage collection is a few percent too (about 2 % of what is allocated survives a ' +
      'scavenge). The `server CPU` column counts both; the missed targets above give each ' +
      'row’s kernel part.',
    'The reference server has no setting for its bearer token cache (its `oauth.bearer` is ' +
      '`createAuthorizationServer`’s own, always cached), so the `cache: false` row resolves ' +
      '`portico`, for the reference server’s modules only, to a module that re-exports the ' +
      'package with `createAuthorizationServer` returning `bearer: ownAccessTokens(context, ' +
      '{ cache: false })` ([`bench/reference/portico-jwt-nocache.ts`]' +
      '(bench/reference/portico-jwt-nocache.ts)); nothing else differs.',
    'Every request carries the same token, the best case for a cache: the cached row is the ' +
      'cost of a token seen before (its SHA-256 and a map lookup; the check before measuring ' +
      'fills the cache), `cache: false` the cost of a new one. Both also check that the ' +
      'token’s grant is not revoked (an in-memory lookup of its `jti`).',
    'The setup ([`bench/reference/fixture.ts`](bench/reference/fixture.ts)) makes an RSA-2048 ' +
      'signing key (the reference server’s `SIGNING_KEY`, in a temporary file) and the demo ' +
      'API key (`DEMO_API_KEY`, portico `generateApiKey`), starts `npm start`’s entry once ' +
      'with them and a fixed `BASE_URL` (the tokens’ `iss` and `aud`), and asks its `POST ' +
      '/token` for a `client_credentials` token for `demo-service` (scope `read:messages`, ' +
      '15 min). Every reference process shares the key and `BASE_URL`, as processes of one ' +
      'service do, so each verifies that token. `$BENCH_REFERENCE_…` below stand for these ' +
      'values; they are not stored.',
    'Before measuring, each authenticating server is checked to answer 401 without a ' +
      'credential and to a bad one (a well-formed API key in no store; the same token header ' +
      'and claims signed by another key); those refusals count against the reference ' +
      'server’s credential guard (limit `RATE_LIMIT` too), far from its limit.',
    'The bodies: the API-key rows (and bare node:http) answer alice’s ' +
      '`{"sub":"alice","name":"Alice Example","role":"admin","scopes":[…],"method":"api_key"}`, ' +
      'the bearer rows demo-service’s `{"sub":"demo-service","name":"demo-service","role":' +
      '"service","scopes":["read:messages"],"method":"bearer"}`: a few bytes apart.',
    'The reference server counts the rate limit per API key, else user, else client IP (from ' +
      '`X-Forwarded-For`, `TRUST_PROXY=1`), and sends some fifteen headers (security ' +
      'headers, `X-Request-ID`, `X-RateLimit-*`, `Vary`, `Cache-Control: no-store`); ' +
      'express-rate-limit (`legacyHeaders: true, standardHeaders: false`) and ' +
      '@fastify/rate-limit count per client IP (`trust proxy` 1 and `trustProxy: 1`). helmet ' +
      '8 and @fastify/helmet run their defaults (another header set than portico’s ' +
      '`securityHeaders()`). Express keeps its default weak `ETag`; Fastify’s logger is off.',
    '`@fastify/jwt` 10 (fast-jwt 6, its cache off by default) checks the RSA signature on ' +
      'every request, `iss`, `aud` and RS256, but neither `typ` nor a revocation list: compare ' +
      'it with the `cache: false` row for the same signature work.',
    'bare node:http checks no credential and sends only Content-Type and Content-Length: ' +
      'what the fifteen header lines cost shows between it and the floor.',
  ],
};
