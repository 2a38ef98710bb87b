// A corpus of hostile tokens: each must get exactly 401 with a problem body that reveals
// neither the token nor any key material; never 200, never 500.
import { createServer } from 'node:http';
import { CompactSign, FlattenedSign, jwtVerify, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { toNodeListener } from '../../src/adapters/node.ts';
import { authenticate } from '../../src/auth/authenticate.ts';
import { type JwtBearerOptions, jwtBearer } from '../../src/auth/jwt/bearer.ts';
import type { Middleware } from '../../src/core/compose.ts';
import { sendJson } from '../../src/core/send.ts';
import { closeAll, type Listening, listen, request } from '../helpers/http.ts';
import { captureLogger } from '../helpers/logger.ts';
import {
  AUDIENCE,
  b64,
  ISSUER,
  type KeyServer,
  makeKey,
  mint,
  now,
  startKeyServer,
  type TestKey,
} from './jwt/jwt-fixtures.ts';

vi.mock('jose', async (importOriginal) => {
  const jose = await importOriginal<typeof import('jose')>();
  return { ...jose, jwtVerify: vi.fn(jose.jwtVerify) };
});
const verifications = () => vi.mocked(jwtVerify).mock.calls.length;

let key: TestKey;
let attacker: TestKey;
let keyServer: KeyServer;
const log = captureLogger();
const failures = log.errors;
const ok: Middleware = (_req, res) => sendJson(res, 200, { ok: true });

/** Serves `authenticate([jwtBearer(options)])` with room for 100 KB headers. */
function serveBearer(options: Omit<JwtBearerOptions, 'issuer' | 'audience'>): Promise<Listening> {
  const app = [authenticate([jwtBearer({ issuer: ISSUER, audience: AUDIENCE, ...options })]), ok];
  const listener = toNodeListener(app, { logger: log });
  return listen(createServer({ maxHeaderSize: 256 * 1024 }, listener));
}

/** Signs arbitrary bytes as the HS256 secret (the key-confusion attack). */
const hmacWith = (secret: string, claims = {}) =>
  mint(new TextEncoder().encode(secret), claims, { alg: 'HS256', kid: key.kid });

const claims = () => ({ sub: 'alice', iss: ISSUER, aud: AUDIENCE, exp: now() + 600 });
/** Signs with the real key through jose's lower-level JWS API, for headers SignJWT refuses. */
const signRaw = (
  payload: object,
  header: Record<string, unknown>,
  crit: Record<string, boolean> = {},
) =>
  new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({ alg: 'RS256', kid: key.kid, ...header })
    .sign(key.privateKey, { crit });

type Case = [name: string, make: () => Promise<string> | string, expired?: boolean];
const segments = (token: string) => token.split('.');

const corpus: Case[] = [
  [
    'alg none, with the trailing dot',
    () =>
      `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ sub: 'admin', iss: ISSUER, aud: AUDIENCE, exp: now() + 60 })}.`,
  ],
  [
    'alg none, without the trailing dot',
    () =>
      `${b64({ alg: 'none' })}.${b64({ sub: 'admin', iss: ISSUER, aud: AUDIENCE, exp: now() + 60 })}`,
  ],
  [
    'alg NONE with a junk signature',
    () =>
      `${b64({ alg: 'NONE' })}.${b64({ sub: 'admin', iss: ISSUER, aud: AUDIENCE, exp: now() + 60 })}.c2ln`,
  ],
  ['HS256 signed with the RSA public key PEM', () => hmacWith(key.pem)],
  ['HS256 signed with the PEM without its last newline', () => hmacWith(key.pem.trimEnd())],
  ['HS256 signed with the public JWK as JSON', () => hmacWith(JSON.stringify(key.jwk))],
  ['HS256 signed with the modulus of the public key', () => hmacWith(String(key.jwk.n))],
  ['an unknown kid', () => mint(attacker, {}, { kid: 'no-such-kid' })],
  ['a kid with path traversal', () => mint(attacker, {}, { kid: '../../../../dev/null' })],
  [
    'a jku header pointing at the attacker keys',
    () => mint(attacker, {}, { jku: 'https://evil.test/jwks.json', kid: attacker.kid }),
  ],
  [
    'a jku header and the real kid',
    () => mint(attacker, {}, { jku: 'https://evil.test/jwks.json', kid: key.kid }),
  ],
  [
    'an x5u header pointing at the attacker',
    () => mint(attacker, {}, { x5u: 'https://evil.test/cert.pem' }),
  ],
  [
    'an embedded jwk header with the attacker key',
    () => mint(attacker, {}, { jwk: attacker.jwk, kid: key.kid }),
  ],
  [
    'a changed payload under the original signature',
    async () => {
      const [header, , signature] = segments(await mint(key));
      return `${header}.${b64({ sub: 'admin', role: 'admin', iss: ISSUER, aud: AUDIENCE, exp: now() + 600 })}.${signature}`;
    },
  ],
  [
    'a changed header under the original signature',
    async () => {
      const [, payload, signature] = segments(await mint(key));
      return `${b64({ alg: 'RS256', kid: key.kid, typ: 'at+jwt' })}.${payload}.${signature}`;
    },
  ],
  [
    'the signature of another token',
    async () => {
      const [header, payload] = segments(await mint(key, { sub: 'admin' }));
      return `${header}.${payload}.${segments(await mint(key))[2]}`;
    },
  ],
  ['an expired token', () => mint(key, { exp: now() - 60 }), true],
  ['a token not valid yet (nbf)', () => mint(key, { nbf: now() + 600 })],
  ['a token issued in the future (iat)', () => mint(key, { iat: now() + 600 })],
  ['a wrong iss', () => mint(key, { iss: 'https://evil.test' })],
  ['a wrong aud', () => mint(key, { aud: 'https://other-api.test' })],
  ['no exp', () => mint(key, { exp: undefined })],
  ['exp as a string', () => mint(key, { exp: String(now() + 600) })],
  [
    'crit with an unknown extension',
    () => signRaw(claims(), { crit: ['exp-ext'], 'exp-ext': true }, { 'exp-ext': true }),
  ],
  [
    'an unencoded payload (b64: false)',
    async () => {
      const payload = JSON.stringify(claims());
      const jws = await new FlattenedSign(new TextEncoder().encode(payload))
        .setProtectedHeader({ alg: 'RS256', kid: key.kid, b64: false, crit: ['b64'] })
        .sign(key.privateKey);
      return `${jws.protected}.${b64(payload)}.${jws.signature}`;
    },
  ],
  ['4 segments', async () => `${await mint(key)}.${b64('x')}`],
  ['5 segments (a JWE shape)', () => ['a', 'b', 'c', 'd', 'e'].map((s) => b64(s)).join('.')],
  [
    '2 segments',
    async () =>
      segments(await mint(key))
        .slice(0, 2)
        .join('.'),
  ],
  [
    'an empty signature',
    async () =>
      `${segments(await mint(key))
        .slice(0, 2)
        .join('.')}.`,
  ],
  [
    'a non-JSON header',
    async () => {
      const [, payload, signature] = segments(await mint(key));
      return `${b64('{"alg":"RS256",')}.${payload}.${signature}`;
    },
  ],
  [
    'a header that is a JSON array',
    async () =>
      `${b64([1])}.${segments(await mint(key))
        .slice(1)
        .join('.')}`,
  ],
  [
    'a non-JSON payload',
    async () =>
      `${segments(await mint(key))[0]}.${b64('sub=admin')}.${segments(await mint(key))[2]}`,
  ],
  [
    'non-base64url characters',
    async () => {
      // every - and _ as +, and one + at least (a token may have neither): node's base64url
      // decoder reads + as -, so only the alphabet check can tell
      const token = (await mint(key)).replace(/-|_/g, '+');
      return token.includes('+') ? token : `+${token.slice(1)}`;
    },
  ],
  [
    'characters outside b64token',
    async () => `${(await mint(key)).slice(0, 20)}*!${(await mint(key)).slice(22)}`,
  ],
  ['a 100 KB token', () => `${'a'.repeat(50_000)}.${'b'.repeat(50_000)}.c`],
  ['another RSA key with the same kid', () => mint(attacker, {}, { kid: key.kid })],
];

beforeAll(async () => {
  key = await makeKey('k1');
  attacker = await makeKey('attacker');
  keyServer = await startKeyServer([key.jwk]);
});
afterAll(async () => {
  await keyServer.close();
  await closeAll();
});

const sources: [string, () => Omit<JwtBearerOptions, 'issuer' | 'audience'>][] = [
  ['a PEM public key', () => ({ publicKey: key.pem })],
  ['a local JWKS', () => ({ jwks: { keys: [key.jwk] } })],
  ['a remote JWKS', () => ({ jwksUrl: keyServer.jwksUrl })],
];

describe.each(sources)('hostile tokens against %s', (_source, options) => {
  let app: Listening;
  beforeAll(async () => {
    app = await serveBearer(options());
  });

  it('accepts the genuine token (the baseline)', async () => {
    const reply = await request(app, '/', {
      headers: { authorization: `Bearer ${await mint(key)}` },
    });
    expect(reply.status).toBe(200);
  });

  it.each(corpus)('refuses %s with 401', async (_name, make, expired = false) => {
    const token = await make();
    const reply = await request(app, '/', { headers: { authorization: `Bearer ${token}` } });
    expect(reply.status).toBe(401);
    expect(reply.headers['content-type']).toBe('application/problem+json');
    const problem = JSON.parse(reply.body) as { type: string; status: number };
    expect(problem.status).toBe(401);
    expect(problem.type).toBe(
      `urn:portico:problem:${expired ? 'credentials-expired' : 'invalid-credentials'}`,
    );
    expect(reply.headers['www-authenticate']).toMatch(/^Bearer realm="api", error="invalid_token"/);
    const secrets = [
      token,
      ...segments(token).filter((s) => s.length >= 8),
      String(key.jwk.n).slice(0, 32),
      String(attacker.jwk.n).slice(0, 32),
      key.pem.split('\n')[1]!,
      key.kid,
      attacker.kid,
    ];
    for (const secret of secrets) expect(reply.body).not.toContain(secret);
    expect(JSON.stringify(reply.headers)).not.toContain(token.slice(0, 40));
    expect(failures).toEqual([]);
  });

  it('refuses a 100 KB token quickly, without parsing it', async () => {
    const token = `${'a'.repeat(50_000)}.${'b'.repeat(50_000)}.c`;
    const before = verifications();
    const started = performance.now();
    const reply = await request(app, '/', { headers: { authorization: `Bearer ${token}` } });
    expect(reply.status).toBe(401);
    expect(performance.now() - started).toBeLessThan(500);
    expect(verifications()).toBe(before);
  });
});

it('refuses an ID token offered where at+jwt access tokens are required', async () => {
  const app = await serveBearer({ publicKey: key.pem, typ: 'at+jwt' });
  const idToken = await new SignJWT({ sub: 'alice', nonce: 'n', email: 'a@example.test' })
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: key.kid })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(key.privateKey);
  const untyped = await mint(key);
  for (const token of [idToken, untyped]) {
    const reply = await request(app, '/', { headers: { authorization: `Bearer ${token}` } });
    expect(reply.status).toBe(401);
    expect(JSON.parse(reply.body).type).toMatch(/invalid-credentials$/);
  }
  const accessToken = await mint(key, {}, { typ: 'at+jwt' });
  const good = await request(app, '/', { headers: { authorization: `Bearer ${accessToken}` } });
  expect(good.status).toBe(200);
});
