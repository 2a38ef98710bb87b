// Hostile API keys, session ids and Basic credentials: every length and alphabet, each
// answered 401 (400 for a credential sent twice, or for bytes the HTTP parser itself
// refuses), never 200 by accident and never 500; then the HMAC key rules of RFC 8725 §3.5,
// enforced at configuration time. The JWT corpus is in hostile-tokens.test.ts and
// hostile-jwt.test.ts, client certificates in hostile-certificates.test.ts.
import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/auth/api-key/api-key.js';
import { apiKeyAuth } from '../../src/auth/api-key/authenticator.js';
import {
  type ApiKeyStore,
  createApiKey,
  MAX_API_KEY_LENGTH,
  MemoryApiKeyStore,
} from '../../src/auth/api-key/store.js';
import { authenticate } from '../../src/auth/authenticate.js';
import { basicAuth } from '../../src/auth/basic.js';
import { type JwtBearerOptions, jwtBearer } from '../../src/auth/jwt/bearer.js';
import type { JwtError } from '../../src/auth/jwt/error.js';
import { createJwtVerifier, type JwtVerifierOptions } from '../../src/auth/jwt/jwt.js';
import { createSessions } from '../../src/auth/session/session.js';
import type { Middleware } from '../../src/core/compose.js';
import { getPrincipal } from '../../src/core/principal.js';
import { sendJson, sendNoContent } from '../../src/core/send.js';
import {
  closeAll,
  type Listening,
  parseReply,
  type Reply,
  rawRequest,
  request,
  serve,
} from '../helpers/http.js';
import { captureLogger } from '../helpers/logger.js';
import { AUDIENCE, ISSUER, makeKey, mint } from './jwt/jwt-fixtures.js';

const log = captureLogger();
const failures = log.errors;
const echo: Middleware = (req, res) => sendJson(res, 200, getPrincipal(req) ?? null);
/** A header value carrying these UTF-8 bytes (node writes header strings as latin-1). */
const utf8Bytes = (text: string) => Buffer.from(text, 'utf8').toString('latin1');
/** A raw request with one header line written byte for byte. */
const rawWith = async (server: Listening, line: Buffer | string) =>
  parseReply(
    await rawRequest(
      server.port,
      Buffer.concat([
        Buffer.from('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n'),
        Buffer.from(line as string, typeof line === 'string' ? 'latin1' : undefined),
        Buffer.from('\r\n\r\n'),
      ]),
    ),
  );

function expectRefused(reply: Reply | ReturnType<typeof parseReply>, type = 'invalid-credentials') {
  expect(reply.status).toBe(type === 'invalid-request' ? 400 : 401);
  expect(reply.headers['content-type']).toBe('application/problem+json');
  expect(JSON.parse(reply.body).type).toBe(`urn:portico:problem:${type}`);
}

/** 200; 401 invalid-credentials; or 401 authentication-required (not taken as this scheme). */
type Outcome = 200 | 401 | 'required';
function expectOutcome(reply: Reply, outcome: Outcome) {
  if (outcome === 200) expect(reply.status, reply.body).toBe(200);
  else expectRefused(reply, outcome === 401 ? 'invalid-credentials' : 'authentication-required');
}

afterAll(async () => {
  await closeAll();
  expect(failures).toEqual([]);
});

describe('API keys of every length and alphabet', () => {
  let server: Listening;
  let queryServer: Listening;
  let key: string;
  let lookups = 0;
  beforeAll(async () => {
    const inner = new MemoryApiKeyStore();
    const store: ApiKeyStore = {
      findByHash: async (hash) => {
        lookups++;
        return inner.findByHash(hash);
      },
      save: async (record) => inner.save(record),
      delete: async (id) => inner.delete(id),
      get: async (id) => inner.get(id),
      list: async (owner) => inner.list(owner),
    };
    ({ key } = await createApiKey(store, { owner: 'alice', name: 't' }));
    server = await serve([authenticate([apiKeyAuth({ store })]), echo], { logger: log });
    queryServer = await serve([authenticate([apiKeyAuth({ store, queryParameter: true })]), echo], {
      logger: log,
    });
  });

  // [name, value, status, store lookups] — a lookup goes by SHA-256, so only its count matters
  const cases: [string, () => string, 200 | 401, 0 | 1][] = [
    ['length 0', () => '', 401, 0],
    ['length 1', () => 'a', 401, 1],
    ['length MAX (512)', () => 'a'.repeat(MAX_API_KEY_LENGTH), 401, 1],
    ['length MAX + 1', () => 'a'.repeat(MAX_API_KEY_LENGTH + 1), 401, 0],
    ['10 KiB', () => 'a'.repeat(10 * 1024), 401, 0],
    ['10 KiB after the real key', () => key + 'a'.repeat(10 * 1024), 401, 0],
    ['unicode (UTF-8 bytes)', () => utf8Bytes('ключ-🔑'), 401, 0],
    ['the real key with a homoglyph', () => utf8Bytes(key.replace('k', 'ķ')), 401, 0],
    ['latin-1 bytes', () => '\u00e4\u00fc\u00df', 401, 0],
    ['a tab inside', () => `${key.slice(0, 10)}\t${key.slice(10)}`, 401, 0],
    ['a space inside', () => `${key.slice(0, 10)} ${key.slice(10)}`, 401, 0],
    ['%-encoded real key (never decoded)', () => `%70${key.slice(1)}`, 401, 1],
    ['%00', () => '%00', 401, 1],
    ['the real key in upper case', () => key.toUpperCase(), 401, 1],
    ['the real key truncated by one', () => key.slice(0, -1), 401, 0],
    ['the real key, comma, itself', () => `${key},${key}`, 401, 0],
    ['the real key surrounded by OWS (HTTP trims it)', () => `  ${key}\t`, 200, 1],
  ];
  it.each(cases)('%s', async (_name, make, status, expectedLookups) => {
    const before = lookups;
    const reply = await request(server, '/', { headers: { 'X-API-Key': make() } });
    if (status === 200) expect(reply.status).toBe(200);
    else expectRefused(reply);
    expect(lookups - before).toBe(expectedLookups);
  });

  it.each([
    ['NUL', '\u0000'],
    ['a bare CR', '\r'],
    ['ESC', '\u001b'],
    ['DEL', '\u007f'],
  ])('answers %s in the header value with 400 from the HTTP parser', async (_name, control) => {
    const reply = await rawWith(server, `X-API-Key: ${key.slice(0, 8)}${control}${key.slice(8)}`);
    expect(reply.status).toBe(400);
  });

  it('answers a key sent twice with 400, whatever the spelling of the second', async () => {
    for (const headers of [{ 'X-API-Key': [key, ''] }, { 'X-API-Key': ['', key] }]) {
      expectRefused(await request(server, '/', { headers }), 'invalid-request');
    }
    const lines = `X-API-Key: ${key}\r\nx-api-key: ${key}`;
    expectRefused(await rawWith(server, lines), 'invalid-request');
    expectRefused(await request(queryServer, '/?api_key=&api_key=x'), 'invalid-request');
  });

  it('decodes the query parameter once, like any URL', async () => {
    const encoded = [...key].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('');
    expect((await request(queryServer, `/?api_key=${encoded}`)).status).toBe(200);
    expectRefused(await request(queryServer, `/?api_key=${encodeURIComponent(encoded)}`));
    expectRefused(await request(queryServer, '/?api_key=%E0%A4%A'));
    expectRefused(await request(queryServer, `/?api_key=${generateApiKey()}%00`));
  });
});

describe('session ids of every length and alphabet', () => {
  let server: Listening;
  let id: string;
  beforeAll(async () => {
    const sessions = createSessions({ allowedOrigins: ['https://app.example.test'] });
    server = await serve(
      [
        async (req, res, next) => {
          if (req.url !== '/login') return next();
          await sessions.signIn(req, res, { sub: 'alice', scopes: [] });
          sendNoContent(res);
        },
        authenticate([sessions.authenticator]),
        echo,
      ],
      { logger: log },
    );
    const login = await request(server, '/login', { method: 'POST' });
    id = /session=([^;]*)/.exec(String(login.headers['set-cookie']))![1]!;
  });
  const call = (cookie: string) => request(server, '/', { headers: { Cookie: cookie } });

  it.each<[string, () => string, Outcome]>([
    ['length 1', () => 'session=A', 401],
    ['length 42', () => `session=${'A'.repeat(42)}`, 401],
    ['length 43, unknown', () => `session=${randomBytes(32).toString('base64url')}`, 401],
    ['length 44: the real id and one more', () => `session=${id}A`, 401],
    ['the real id without its last character', () => `session=${id.slice(0, -1)}`, 401],
    ['10 KiB', () => `session=${'A'.repeat(10 * 1024)}`, 401],
    ['unicode', () => `session=${utf8Bytes('é'.repeat(43))}`, 401],
    ['43 percent-encoded unicode characters', () => `session=${'%C3%A9'.repeat(43)}`, 401],
    ['a percent-encoded NUL', () => `session=${id.slice(0, 42)}%00`, 401],
    ['a bad percent escape', () => `session=%${id.slice(1)}`, 401],
    [
      'the real id, percent-encoded (cookie values are decoded)',
      () => `session=%${id.charCodeAt(0).toString(16)}${id.slice(1)}`,
      200,
    ],
    ['the real id in quotes', () => `session="${id}"`, 401],
    ['the real id padded with spaces (trimmed)', () => `session=  ${id}  `, 200],
    ['a space inside the real id', () => `session=${id.slice(0, 20)} ${id.slice(20)}`, 401],
    ['a standard-base64 "+" for its first character', () => `session=+${id.slice(1)}`, 401],
    ['the real id under another name', () => `Session=${id}`, 'required'],
    [
      'a bogus id first, the real one second',
      () => `session=${'B'.repeat(43)}; session=${id}`,
      401,
    ],
    // the first of two wins (as cookie.parse reads them), so order cannot upgrade a bogus one
    [
      'the real id first, a bogus one second',
      () => `session=${id}; session=${'B'.repeat(43)}`,
      200,
    ],
  ])('%s', async (_name, cookie, status) => {
    const reply = await call(cookie());
    expectOutcome(reply, status);
  });

  it('answers control characters with 400 from the HTTP parser', async () => {
    for (const control of ['\u0000', '\u0001', '\u001f', '\u007f']) {
      expect((await rawWith(server, `Cookie: session=${id.slice(0, 20)}${control}`)).status).toBe(
        400,
      );
    }
  });
});

describe('Basic credentials, malformed every way', () => {
  const CHALLENGE = 'Basic realm="api", charset="UTF-8"';
  const seen: [string, string][] = [];
  let server: Listening;
  beforeAll(async () => {
    const verify = (username: string, password: string) => {
      seen.push([username, password]);
      return username === 'Zoë' && password === 'pw:1'
        ? { sub: username, scopes: [], method: 'basic' }
        : undefined;
    };
    server = await serve([authenticate([basicAuth({ verify })]), echo], { logger: log });
  });
  const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

  it.each<[string, string, Outcome, [string, string]?]>([
    ['the good credentials', `Basic ${b64('Zoë:pw:1')}`, 200, ['Zoë', 'pw:1']],
    ['the user-id in NFD', `Basic ${b64('Zoë:pw:1'.normalize('NFD'))}`, 200, ['Zoë', 'pw:1']],
    ['two spaces after the scheme', `Basic  ${b64('Zoë:pw:1')}`, 200, ['Zoë', 'pw:1']],
    ['an empty password', `Basic ${b64('Zoë:')}`, 401, ['Zoë', '']],
    [
      'a percent-encoded password (never decoded)',
      `Basic ${b64('Zoë:pw%3A1')}`,
      401,
      ['Zoë', 'pw%3A1'],
    ],
    ['a full-width colon', `Basic ${b64('Zoë\uff1apw')}`, 401],
    ['an empty user-id and password', `Basic ${b64(':')}`, 401],
    ['one = too many', `Basic ${b64('Zoë:pw:1')}=`, 401],
    ['padding alone', 'Basic ====', 401],
    ['padding in the middle', 'Basic dXN=lcjpwdw==', 401],
    [
      'the base64url alphabet',
      `Basic ${b64('a?>:~~~?>')!.replace(/\+/g, '-').replace(/\//g, '_')}`,
      401,
    ],
    ['a tab after the scheme', `Basic\t${b64('Zoë:pw:1')}`, 'required'],
    ['a comma and a second credential', `Basic ${b64('Zoë:pw:1')}, Basic eDp5`, 401],
    ['unicode in the base64', `Basic ${utf8Bytes('ZoëZoë==')}`, 401],
    ['just under 4 KiB', `Basic ${b64(`Zoë:${'x'.repeat(3061)}`)}`, 401, ['Zoë', 'x'.repeat(3061)]],
    ['just over 4 KiB', `Basic ${b64(`Zoë:${'x'.repeat(3064)}`)}`, 401],
  ])('%s', async (_name, authorization, status, verified) => {
    seen.length = 0;
    const reply = await request(server, '/', { headers: { authorization } });
    expectOutcome(reply, status);
    if (status !== 200) expect(reply.headers['www-authenticate']).toBe(CHALLENGE);
    expect(seen).toEqual(verified === undefined ? [] : [verified]);
  });
});

describe('HMAC keys (RFC 8725 §3.5)', () => {
  const base = { issuer: ISSUER, audience: AUDIENCE };
  const bytes = (n: number) => new Uint8Array(n).fill(7);
  const hmac = (secret: string | Uint8Array, alg = 'HS256') =>
    new SignJWT({ sub: 'alice', iss: ISSUER, aud: AUDIENCE })
      .setProtectedHeader({ alg })
      .setExpirationTime('5m')
      .sign(typeof secret === 'string' ? new TextEncoder().encode(secret) : secret);
  it.each<[string, Partial<JwtVerifierOptions>]>([
    ['an empty secret', { secret: '' }],
    ['a 31-byte secret', { secret: 's'.repeat(31) }],
    ['31 bytes as a Uint8Array', { secret: bytes(31) }],
    ['15 two-byte characters (30 bytes)', { secret: 'é'.repeat(15) }],
    ['HS384 with 47 bytes', { secret: bytes(47), algorithms: ['HS384'] }],
    ['HS512 with 63 bytes', { secret: bytes(63), algorithms: ['HS512'] }],
    ['HS256 and HS512 with 32 bytes', { secret: bytes(32), algorithms: ['HS256', 'HS512'] }],
    ['a number', { secret: 12345 as unknown as string }],
  ])('refuses %s at configuration time', (_name, options) => {
    for (const build of [
      () => createJwtVerifier({ ...base, ...options } as JwtVerifierOptions),
      () => jwtBearer({ ...base, ...options } as JwtBearerOptions),
    ]) {
      expect(build).toThrow(TypeError);
      expect(build).toThrow(expect.objectContaining({ code: 'ERR_INVALID_OPTION' }));
    }
  });

  it('takes 32 bytes (counted as UTF-8) and refuses other algorithms and keys', async () => {
    const secret = 'é'.repeat(16);
    const verifier = createJwtVerifier({ ...base, secret });
    expect((await verifier.verify(await hmac(secret))).payload.sub).toBe('alice');
    const wide = createJwtVerifier({ ...base, secret: bytes(64), algorithms: ['HS512'] });
    for (const [v, token] of [
      [verifier, await hmac(secret, 'HS384')],
      [verifier, await mint(await makeKey('rsa'))],
      [wide, await hmac(bytes(64))],
      [verifier, await hmac(`${secret}x`)],
    ] as const) {
      const error = await v.verify(token).catch((e: unknown) => e);
      expect((error as JwtError).code).toBe('ERR_JWT_INVALID');
    }
  });
});
