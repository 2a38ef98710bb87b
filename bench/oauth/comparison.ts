import { createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet, jwtVerify } from 'jose';
import type { Answer, Comparison, ServerSpec } from '../lib/types.js';
import { sameBytesFloor } from '../lib/verify.js';
import {
  ACCESS_TOKEN_TTL,
  AUDIENCE,
  basicAuthorization,
  CLIENT_ID,
  CLIENT_SECRET,
  ISSUER,
  SCOPE,
  TOKEN_REQUEST_BODY,
} from './shared.js';

/** Where each server publishes its public keys, to verify the token it issued. */
const JWKS_PATHS: Readonly<Record<string, string>> = {
  bare: '/jwks',
  'bare-jose': '/jwks',
  'oidc-provider': '/jwks',
  portico: '/.well-known/jwks.json',
};

async function fetchJwks(port: number, path: string): Promise<JSONWebKeySet> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    headers: { 'x-forwarded-proto': 'https' }, // as the token requests (oidc-provider warns without)
    signal: AbortSignal.timeout(5_000),
  });
  if (!res.ok) throw new Error(`GET ${path}: status ${res.status}`);
  return (await res.json()) as JSONWebKeySet;
}

/**
 * The token response of RFC 6749 §5.1 with an RFC 9068 access token: a JWT signed RS256
 * (checked against the server's own JWKS), with the issuer, audience, client, scope and
 * lifetime every server must give.
 */
async function checkTokenResponse(
  answer: Answer,
  { spec, port }: { spec: ServerSpec; port: number },
): Promise<string[]> {
  const problems: string[] = [];
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(answer.body) as Record<string, unknown>;
  } catch {
    return [`body ${JSON.stringify(answer.body.slice(0, 200))} is not JSON`];
  }
  if (!String(answer.headers['content-type']).startsWith('application/json')) {
    problems.push(`content-type ${String(answer.headers['content-type'])}, expected JSON`);
  }
  if (answer.headers['cache-control'] !== 'no-store') problems.push('no `Cache-Control: no-store`');
  if (String(body.token_type).toLowerCase() !== 'bearer') problems.push('token_type is not Bearer');
  if (body.expires_in !== ACCESS_TOKEN_TTL) problems.push(`expires_in ${String(body.expires_in)}`);
  if (body.scope !== SCOPE) problems.push(`scope ${JSON.stringify(body.scope)}`);
  const token = body.access_token;
  if (typeof token !== 'string') return [...problems, 'no access_token'];
  const header = decodeProtectedHeader(token);
  if (header.alg !== 'RS256') problems.push(`access token alg ${String(header.alg)}, not RS256`);
  const jwksPath = JWKS_PATHS[spec.name];
  if (jwksPath === undefined) return [...problems, `no JWKS path for ${spec.name}`];
  try {
    const { payload } = await jwtVerify(token, createLocalJWKSet(await fetchJwks(port, jwksPath)), {
      algorithms: ['RS256'],
      typ: 'at+jwt',
      issuer: ISSUER,
      audience: AUDIENCE,
      subject: CLIENT_ID,
      requiredClaims: ['jti', 'iat', 'exp', 'client_id', 'scope'],
    });
    if (payload.client_id !== CLIENT_ID) problems.push(`client_id ${String(payload.client_id)}`);
    if (payload.scope !== SCOPE) problems.push(`token scope ${String(payload.scope)}`);
    if ((payload.exp ?? 0) - (payload.iat ?? 0) !== ACCESS_TOKEN_TTL) {
      problems.push(`token lifetime ${(payload.exp ?? 0) - (payload.iat ?? 0)} s`);
    }
  } catch (err) {
    problems.push(`access token does not verify: ${err instanceof Error ? err.message : err}`);
  }
  return problems;
}

/** `client_credentials` access tokens (JWT, RS256) per second: portico against oidc-provider. */
export const oauthComparison: Comparison = {
  name: 'oauth',
  title: 'client_credentials access tokens (JWT, RS256)',
  description:
    '`POST /token` with `grant_type=client_credentials&scope=read:messages`, the client ' +
    'authenticating with `client_secret_basic`; every answer is `200` JSON with a new ' +
    'RFC 9068 access token (`typ: at+jwt`, `iss`, `aud`, `sub` = `client_id`, `jti`, ' +
    '`scope`, 15 min lifetime) signed RS256 with a 2048-bit key each server made at start. ' +
    'portico runs `createAuthorizationServer({ issuer, audience, clients: new ' +
    'MemoryClientStore([defineClient(…)]), keys: await createKeySet(), users, sessions })` ' +
    'with `toNodeListener([createRouter(server.routes)])`; oidc-provider 8 runs its Koa app ' +
    '(`provider.callback()`) with the `clientCredentials` and `resourceIndicators` features, ' +
    "the resource server’s `accessTokenFormat: 'jwt'` signed RS256. Two floors, bare " +
    'node:http with no library: one signing with `crypto.sign`, one with `jose` 6 `SignJWT` ' +
    '(the key imported once as a `CryptoKey`), what portico signs with. Target: portico at 3× ' +
    'oidc-provider or more, and at 95 % or more of the `jose` floor.',
  baseline: 'oidc-provider',
  secondaryBaseline: 'bare',
  unit: { rate: 'tokens/s', each: 'token' },
  servers: [
    {
      name: 'bare',
      label: 'bare node:http + crypto.sign (floor)',
      entry: 'bench/oauth/bare.ts',
      refuses: [{ authorization: basicAuthorization(CLIENT_ID, 'wrong-secret-0123456789') }],
    },
    {
      name: 'bare-jose',
      label: 'bare node:http + jose SignJWT (floor with portico’s signer)',
      entry: 'bench/oauth/bare-jose.ts',
      refuses: [{ authorization: basicAuthorization(CLIENT_ID, 'wrong-secret-0123456789') }],
    },
    {
      name: 'oidc-provider',
      label: 'oidc-provider 8 (Koa)',
      entry: 'bench/oauth/oidc-provider.ts',
      refuses: [{ authorization: basicAuthorization(CLIENT_ID, 'wrong-secret-0123456789') }],
    },
    sameBytesFloor('portico'),
    {
      name: 'portico',
      label: 'portico createAuthorizationServer',
      entry: 'bench/oauth/portico.ts',
      refuses: [{ authorization: basicAuthorization(CLIENT_ID, 'wrong-secret-0123456789') }],
    },
  ],
  profile: ['bare-jose', 'portico'],
  request: {
    method: 'POST',
    path: '/token',
    headers: {
      authorization: basicAuthorization(CLIENT_ID, CLIENT_SECRET),
      'content-type': 'application/x-www-form-urlencoded',
      'x-forwarded-proto': 'https',
    },
    body: TOKEN_REQUEST_BODY,
  },
  expect: { status: 200, check: checkTokenResponse },
  notes: [
    'Every token costs one RSA-2048 signature, the floor every server here pays: about ' +
      '0.8–0.9 ms of CPU each on this machine, on the libuv threadpool (`node --import tsx ' +
      'bench/oauth/sign-floor.ts` measures it in-process: signatures per second and CPU per ' +
      'signature for `crypto.sign`, `crypto.subtle.sign`, `jose` 6 (portico) and `jose` 5 ' +
      '(oidc-provider 8), and portico’s token issuer and grant without HTTP). bare node:http ' +
      'with `crypto.sign` is that floor plus HTTP: no server signing RS256 per request can ' +
      'beat it here, so it bounds any ratio to oidc-provider. The `jose` floor is the same ' +
      'server signing with `jose` 6 `SignJWT` (WebCrypto) instead: portico over it is ' +
      'portico’s own cost above the signer it uses.',
    'Per request, portico parses the form (`readForm`, each parameter once), authenticates the ' +
      'client (Basic decoding, then a SHA-256 of the secret compared with the digest cached ' +
      'when the scrypt hash first verified: the check before measuring fills that cache), ' +
      'checks grant and scope, and signs with `jose` 6 `SignJWT` (WebCrypto). oidc-provider ' +
      'runs its Koa stack (error handler, CORS, body parser, parameter and client-auth ' +
      'middleware: a constant-time compare with the secret it keeps in clear), resolves the ' +
      'resource server, and signs with `jose` 5 `CompactSign` (`crypto.sign`). Neither stores ' +
      'the token: oidc-provider runs with a storage adapter that fails any write.',
    "oidc-provider’s opaque format (`accessTokenFormat: 'opaque'`, stored in its " +
      'development in-memory adapter) skips the signature: measured apart, about 2.5× its JWT ' +
      'rate. portico issues JWT access tokens only, so the comparison is JWT against JWT.',
    'oidc-provider 9 is newer but warns “Unsupported runtime” below Node 22; oidc-provider 8 ' +
      '(8.8.1) is the newest major that supports Node 20, portico’s floor. It runs ' +
      '`proxy = true` and is sent `X-Forwarded-Proto: https`, as behind a TLS-terminating ' +
      'proxy (the issuer is https); portico ignores that header.',
    'Each server is checked before measuring: `200` JSON with `Cache-Control: no-store`, ' +
      '`token_type` Bearer, `expires_in` 900, the scope, and an access token whose header says ' +
      'RS256 and that verifies against the server’s own JWKS with the expected `typ`, `iss`, ' +
      '`aud`, `sub`, `client_id`, `scope` and lifetime; and `401` to a wrong secret.',
    'The CPU profiles (the second table, issue 42) sample main threads only: the signature, ' +
      'on the threadpool, is not in them; they show the work around it (HTTP, the form, the ' +
      'client’s authentication, the claims, the answer), where portico’s own functions take ' +
      'about 30 µs per token.',
    'portico runs from its tsup build in `dist/` (what `npm install portico` gives), built by ' +
      '`npm run bench` before measuring.',
  ],
};
