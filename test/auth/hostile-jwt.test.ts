// RFC 8725 §2–3 against the verifier, beyond the corpus of hostile-tokens.test.ts: tokens
// whose header or payload bytes are written by hand (jose refuses to sign most of them) and
// signed with the real key, so only the rule under test can refuse them. Each case names
// what it expects from each key source; anything but the expected status is a failure, and
// a 500 never is expected.

import { KeyObject } from 'node:crypto';
import { createServer } from 'node:http';
import { CompactEncrypt, importSPKI, jwtVerify, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { toNodeListener } from '../../src/adapters/node.ts';
import { authenticate } from '../../src/auth/authenticate.ts';
import { type JwtBearerOptions, jwtBearer } from '../../src/auth/jwt/bearer.ts';
import { JwtError } from '../../src/auth/jwt/error.ts';
import { createJwtVerifier } from '../../src/auth/jwt/jwt.ts';
import type { Middleware } from '../../src/core/compose.ts';
import { sendJson } from '../../src/core/send.ts';
import {
  closeAll,
  type Listening,
  listen,
  parseReply,
  rawRequest,
  request,
} from '../helpers/http.ts';
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
let attackerEc: TestKey;
let keyServer: KeyServer;
const log = captureLogger();
const failures = log.errors;

beforeAll(async () => {
  key = await makeKey('k1');
  attacker = await makeKey('attacker');
  attackerEc = await makeKey('attacker-ec', 'ES256');
  keyServer = await startKeyServer([key.jwk]);
});
afterAll(async () => {
  await keyServer.close();
  await closeAll();
});

function serveBearer(options: Omit<JwtBearerOptions, 'issuer' | 'audience'>): Promise<Listening> {
  const bearer = jwtBearer({ issuer: ISSUER, audience: AUDIENCE, ...options });
  const ok: Middleware = (_req, res) => sendJson(res, 200, {});
  const app = [authenticate([bearer]), ok];
  return listen(createServer(toNodeListener(app, { logger: log })));
}

const claims = (extra: Record<string, unknown> = {}) => ({
  sub: 'alice',
  iss: ISSUER,
  aud: AUDIENCE,
  iat: now(),
  exp: now() + 600,
  ...extra,
});
/** RS256-signs exactly these header bytes and this payload with the real key. */
async function signRaw(header: string, payload: object | string = claims()): Promise<string> {
  const body = typeof payload === 'string' ? payload : JSON.stringify(payload);
  const input = `${b64(header)}.${b64(body)}`;
  const data = new TextEncoder().encode(input);
  const signature = await crypto.subtle.sign('RSASSA-PKCS1-v1_5', key.privateKey, data);
  return `${input}.${Buffer.from(signature).toString('base64url')}`;
}
/** Signs with the real RSA key as a KeyObject, under an algorithm of our choosing. */
const signAs = (alg: string) =>
  new SignJWT(claims())
    .setProtectedHeader({ alg, kid: key.kid })
    .sign(KeyObject.from(key.privateKey));
const hmac = (secret: string | Uint8Array, alg = 'HS256') =>
  new SignJWT(claims())
    .setProtectedHeader({ alg, kid: key.kid })
    .sign(typeof secret === 'string' ? new TextEncoder().encode(secret) : secret);
const header = (extra: Record<string, unknown>) => JSON.stringify({ alg: 'RS256', ...extra });
/** Replaces segment `index` of a genuine token. */
async function patch(index: number, change: (segment: string) => string): Promise<string> {
  const parts = (await mint(key)).split('.');
  parts[index] = change(parts[index]!);
  return parts.join('.');
}
const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** The same bytes spelled differently: flips an unused low bit of the last character. */
const nonCanonical = (segment: string) =>
  segment.slice(0, -1) + B64URL[B64URL.indexOf(segment.at(-1)!) ^ 1]!;

type Outcome = 200 | 'invalid' | 'expired';
type Source = 'pem' | 'jwks' | 'remote';
/** [name, token, outcome for every source or by source] */
type Case = [string, () => Promise<string> | string, Outcome | Record<Source, Outcome>];
/** kid never selects a fixed key (PEM), and matches no key of a set. */
const KID_ONLY = { pem: 200, jwks: 'invalid', remote: 'invalid' } as const;

const corpus: Case[] = [
  // §2.1, §3.1: the algorithm is the verifier's choice, never the token's
  ['alg "None" unsigned', () => `${b64({ alg: 'None' })}.${b64(claims())}.`, 'invalid'],
  ['alg "nOnE" over a real RS256 signature', () => signRaw('{"alg":"nOnE","kid":"k1"}'), 'invalid'],
  ['alg "none" over a real RS256 signature', () => signRaw('{"alg":"none"}'), 'invalid'],
  ['alg missing', () => signRaw('{"kid":"k1"}'), 'invalid'],
  ['alg empty', () => signRaw('{"alg":""}'), 'invalid'],
  ['alg as an array', () => signRaw('{"alg":["RS256"]}'), 'invalid'],
  ['PS256 by the real RSA key (not allowed)', () => signAs('PS256'), 'invalid'],
  ['RS512 by the real RSA key (not allowed)', () => signAs('RS512'), 'invalid'],
  [
    'ES256 by an attacker EC key',
    () => mint(attackerEc.privateKey, {}, { alg: 'ES256', kid: key.kid }),
    'invalid',
  ],
  ['HS512 keyed with the PEM', () => hmac(key.pem, 'HS512'), 'invalid'],
  [
    'HS256 keyed with the SPKI DER',
    () => hmac(KeyObject.from(key.publicKey).export({ format: 'der', type: 'spki' })),
    'invalid',
  ],
  // §3.10: kid is only compared, never a path, a query or a lookup by shape
  ['kid with path traversal', () => signRaw(header({ kid: '../../../../etc/passwd' })), KID_ONLY],
  ['kid SQL-ish', () => signRaw(header({ kid: "k1' OR '1'='1" })), KID_ONLY],
  ['kid with a NUL', () => signRaw(header({ kid: 'k1\u0000' })), KID_ONLY],
  ['kid of 4000 characters', () => signRaw(header({ kid: 'k'.repeat(4000) })), KID_ONLY],
  ['kid a number', () => signRaw(header({ kid: 1 })), KID_ONLY],
  ['kid null', () => signRaw(header({ kid: null })), KID_ONLY],
  ['kid an object', () => signRaw(header({ kid: { $ne: '' } })), KID_ONLY],
  ['kid an array', () => signRaw(header({ kid: ['k1'] })), KID_ONLY],
  // header keys are ignored: the key comes from configuration only
  [
    'jwk header with the attacker key and kid',
    () => mint(attacker, {}, { jwk: attacker.jwk, kid: attacker.kid }),
    'invalid',
  ],
  [
    'x5c header with an attacker chain',
    () => mint(attacker, {}, { x5c: [b64('not a cert')], kid: key.kid }),
    'invalid',
  ],
  [
    'jku header on a genuine token (ignored)',
    () => signRaw(header({ kid: 'k1', jku: 'https://evil.test/k' })),
    200,
  ],
  // crit (RFC 7515 §4.1.11)
  ['crit empty', () => signRaw(header({ kid: 'k1', crit: [] })), 'invalid'],
  ['crit naming alg', () => signRaw(header({ kid: 'k1', crit: ['alg'] })), 'invalid'],
  ['crit a string', () => signRaw(header({ kid: 'k1', crit: 'exp', exp: 1 })), 'invalid'],
  [
    'crit with two unknown',
    () => signRaw(header({ kid: 'k1', crit: ['x', 'y'], x: 1, y: 2 })),
    'invalid',
  ],
  // nested tokens and JWE (RFC 8725 §3.11 via RFC 7519 §7.2 step 8)
  [
    'a JWE for the public key (5 segments)',
    async () =>
      new CompactEncrypt(new TextEncoder().encode(JSON.stringify(claims())))
        .setProtectedHeader({ alg: 'RSA-OAEP-256', enc: 'A256GCM', kid: key.kid })
        .encrypt(await importSPKI(key.pem, 'RSA-OAEP-256')),
    'invalid',
  ],
  [
    'a nested JWT (cty JWT, payload a JWT)',
    async () => signRaw(header({ kid: 'k1', cty: 'JWT' }), await mint(key)),
    'invalid',
  ],
  // §3.8, §3.9: issuer and audience
  ['iss with a trailing slash', () => mint(key, { iss: `${ISSUER}/` }), 'invalid'],
  ['iss in upper case', () => mint(key, { iss: ISSUER.toUpperCase() }), 'invalid'],
  ['iss as an array', () => mint(key, { iss: [ISSUER] }), 'invalid'],
  [
    'aud with an extra audience (policy: one must match)',
    () => mint(key, { aud: [AUDIENCE, 'https://evil.test'] }),
    200,
  ],
  ['aud listing only others', () => mint(key, { aud: ['https://evil.test', 'x'] }), 'invalid'],
  ['aud empty', () => mint(key, { aud: [] }), 'invalid'],
  ['aud in upper case', () => mint(key, { aud: AUDIENCE.toUpperCase() }), 'invalid'],
  ['aud a number', () => mint(key, { aud: 1 }), 'invalid'],
  // time claims, with the default 5 s tolerance
  ['exp 2 s ago (within tolerance)', () => mint(key, { exp: now() - 2 }), 200],
  ['exp 30 s ago', () => mint(key, { exp: now() - 30 }), 'expired'],
  ['exp 0', () => mint(key, { exp: 0 }), 'expired'],
  ['exp negative', () => mint(key, { exp: -1 }), 'expired'],
  ['exp fractional', () => mint(key, { exp: now() + 600.5 }), 200],
  ['nbf in 2 s (within tolerance)', () => mint(key, { nbf: now() + 2 }), 200],
  ['nbf in 30 s', () => mint(key, { nbf: now() + 30 }), 'invalid'],
  ['iat in 2 s (within tolerance)', () => mint(key, { iat: now() + 2 }), 200],
  ['iat in 30 s', () => mint(key, { iat: now() + 30 }), 'invalid'],
  // non-numeric claims
  ['exp null', () => mint(key, { exp: null }), 'invalid'],
  ['exp true', () => mint(key, { exp: true }), 'invalid'],
  ['exp an array', () => mint(key, { exp: [now() + 600] }), 'invalid'],
  ['exp an object', () => mint(key, { exp: {} }), 'invalid'],
  ['nbf a string', () => mint(key, { nbf: '0' }), 'invalid'],
  ['nbf null', () => mint(key, { nbf: null }), 'invalid'],
  ['iat null', () => mint(key, { iat: null }), 'invalid'],
  ['sub a number', () => mint(key, { sub: 42 }), 'invalid'],
  ['a payload that is a JSON array', () => signRaw(header({ kid: 'k1' }), '[1]'), 'invalid'],
  // encodings
  ['= padding on the header', () => patch(0, (s) => `${s}==`), 'invalid'],
  ['= padding on the signature', () => patch(2, (s) => `${s}==`), 'invalid'],
  ['a signature of 4n+1 characters', () => patch(2, (s) => `${s}A`), 'invalid'],
  ['a non-canonical spelling of the signature', () => patch(2, nonCanonical), 'invalid'],
  ['a non-canonical spelling of the payload', () => patch(1, nonCanonical), 'invalid'],
  [
    'the header re-encoded with spaces under the original signature',
    () => patch(0, (s) => b64(Buffer.from(s, 'base64url').toString().replace(',', ', '))),
    'invalid',
  ],
  // duplicate header members: jose keeps the lexically last one (RFC 7515 §4), consistently
  ['duplicate alg, none last', () => signRaw('{"alg":"RS256","kid":"k1","alg":"none"}'), 'invalid'],
  ['duplicate alg, HS256 first', () => signRaw('{"alg":"HS256","kid":"k1","alg":"RS256"}'), 200],
  [
    'duplicate kid, the real one last',
    () => signRaw('{"alg":"RS256","kid":"evil","kid":"k1"}'),
    200,
  ],
  [
    'duplicate kid, a foreign one last',
    () => signRaw('{"alg":"RS256","kid":"k1","kid":"evil"}'),
    KID_ONLY,
  ],
];

const sources: [Source, () => Omit<JwtBearerOptions, 'issuer' | 'audience'>][] = [
  ['pem', () => ({ publicKey: key.pem })],
  ['jwks', () => ({ jwks: { keys: [key.jwk] } })],
  ['remote', () => ({ jwksUrl: keyServer.jwksUrl })],
];

describe.each(sources)('RFC 8725 corpus against %s', (source, options) => {
  let app: Listening;
  beforeAll(async () => {
    app = await serveBearer(options());
  });

  it.each(corpus)('%s', async (_name, make, outcome) => {
    const expected = typeof outcome === 'object' ? outcome[source] : outcome;
    const token = await make();
    const reply = await request(app, '/', { headers: { authorization: `Bearer ${token}` } });
    expect(failures).toEqual([]);
    if (expected === 200) {
      expect(reply.status, reply.body).toBe(200);
      return;
    }
    expect(reply.status).toBe(401);
    expect(reply.headers['content-type']).toBe('application/problem+json');
    const type = expected === 'expired' ? 'credentials-expired' : 'invalid-credentials';
    expect(JSON.parse(reply.body).type).toBe(`urn:portico:problem:${type}`);
    expect(reply.headers['www-authenticate']).toMatch(/^Bearer realm="api", error="invalid_token"/);
    expect(reply.body).not.toContain(token.slice(0, 24));
  });
});

it('fetches the remote JWKS at most once more for a burst of unknown kids', async () => {
  const app = await serveBearer({ jwksUrl: keyServer.jwksUrl });
  expect(
    (await request(app, '/', { headers: { authorization: `Bearer ${await mint(key)}` } })).status,
  ).toBe(200);
  const before = keyServer.hits;
  for (let i = 0; i < 20; i++) {
    const token = await signRaw(header({ kid: `unknown-${i}` }));
    const reply = await request(app, '/', { headers: { authorization: `Bearer ${token}` } });
    expect(reply.status).toBe(401);
  }
  expect(keyServer.hits - before).toBeLessThanOrEqual(1);
});

describe('typ where at+jwt is required (RFC 8725 §3.11, RFC 9068 §4)', () => {
  // ownAccessTokens (src/oauth/tokens/verify.ts) configures exactly this: typ 'at+jwt'
  const cases: [string, unknown, Outcome][] = [
    ['at+jwt', 'at+jwt', 200],
    ['application/at+jwt', 'application/at+jwt', 200],
    ['AT+JWT', 'AT+JWT', 200],
    ['JWT (an ID token)', 'JWT', 'invalid'],
    ['no typ', undefined, 'invalid'],
    ['jwt', 'jwt', 'invalid'],
    ['at+jwt with a trailing space', 'at+jwt ', 'invalid'],
    ['application/at+jwt with a parameter', 'application/at+jwt; x=1', 'invalid'],
    ['secevent+jwt', 'secevent+jwt', 'invalid'],
    ['dpop+jwt', 'dpop+jwt', 'invalid'],
    ['logout+jwt', 'logout+jwt', 'invalid'],
    ['a number', 1, 'invalid'],
    ['an array', ['at+jwt'], 'invalid'],
  ];
  let app: Listening;
  beforeAll(async () => {
    app = await serveBearer({ publicKey: key.pem, typ: 'at+jwt' });
  });
  it.each(cases)('typ %s', async (_name, typ, expected) => {
    const token = await signRaw(header({ kid: 'k1', ...(typ === undefined ? {} : { typ }) }));
    const reply = await request(app, '/', { headers: { authorization: `Bearer ${token}` } });
    expect(reply.status).toBe(expected === 200 ? 200 : 401);
    if (expected !== 200) expect(JSON.parse(reply.body).type).toMatch(/invalid-credentials$/);
  });
  it('refuses duplicate typ members when the last is not at+jwt', async () => {
    const last = await signRaw('{"alg":"RS256","typ":"at+jwt","typ":"JWT"}');
    const first = await signRaw('{"alg":"RS256","typ":"JWT","typ":"at+jwt"}');
    const call = (t: string) => request(app, '/', { headers: { authorization: `Bearer ${t}` } });
    expect((await call(last)).status).toBe(401);
    expect((await call(first)).status).toBe(200);
  });
});

describe('size, whitespace and framing of the credential', () => {
  let app: Listening;
  let small: Listening;
  let atLimit: string;
  let overLimit: string;
  beforeAll(async () => {
    app = await serveBearer({ publicKey: key.pem });
    small = await serveBearer({ publicKey: key.pem, maxTokenLength: 1024 });
    // the longest genuine token of at most 1024 characters, and one just over
    for (let pad = 100; ; pad++) {
      const token = await mint(key, { pad: 'x'.repeat(pad) });
      if (token.length > 1024) {
        overLimit = token;
        break;
      }
      atLimit = token;
    }
  });
  const bearer = (server: Listening, authorization: string) =>
    request(server, '/', { headers: { authorization } });

  it('accepts a token at maxTokenLength and refuses one a few bytes over, unparsed', async () => {
    expect(atLimit.length).toBeLessThanOrEqual(1024);
    expect(overLimit.length - atLimit.length).toBeLessThanOrEqual(4);
    expect((await bearer(small, `Bearer ${atLimit}`)).status).toBe(200);
    const before = verifications();
    const reply = await bearer(small, `Bearer ${overLimit}`);
    expect(reply.status).toBe(401);
    expect(JSON.parse(reply.body).type).toMatch(/invalid-credentials$/);
    expect(verifications()).toBe(before);
  });

  it.each<[string, (t: string) => string, number, string?]>([
    ['two spaces after the scheme (1*SP)', (t) => `Bearer  ${t}`, 200],
    ['trailing whitespace (OWS, trimmed by HTTP)', (t) => `Bearer ${t}  `, 200],
    ['the scheme in lower case', (t) => `bearer ${t}`, 200],
    ['a tab after the scheme', (t) => `Bearer\t${t}`, 401, 'authentication-required'],
    [
      'a space inside the token',
      (t) => `Bearer ${t.slice(0, 30)} ${t.slice(30)}`,
      401,
      'invalid-credentials',
    ],
    [
      'a tab inside the token',
      (t) => `Bearer ${t.slice(0, 30)}\t${t.slice(30)}`,
      401,
      'invalid-credentials',
    ],
    ['a percent-encoded dot', (t) => `Bearer ${t.replace('.', '%2E')}`, 401, 'invalid-credentials'],
    ['a comma and a second token', (t) => `Bearer ${t}, Bearer ${t}`, 401, 'invalid-credentials'],
    ['the token quoted', (t) => `Bearer "${t}"`, 401, 'invalid-credentials'],
    ['the scheme alone', () => 'Bearer', 401, 'authentication-required'],
  ])('%s', async (_name, shape, status, type) => {
    const reply = await bearer(app, shape(await mint(key)));
    expect(reply.status).toBe(status);
    if (type !== undefined) expect(JSON.parse(reply.body).type).toBe(`urn:portico:problem:${type}`);
  });

  it('never gets a token folded over two lines (the HTTP parser answers 400)', async () => {
    const token = await mint(key);
    const raw = `GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token.slice(0, 40)}\r\n ${token.slice(40)}\r\nConnection: close\r\n\r\n`;
    expect(parseReply(await rawRequest(app.port, raw)).status).toBe(400);
  });

  it.each<[string, (t: string) => string]>([
    ['a trailing newline', (t) => `${t}\n`],
    ['a leading space', (t) => ` ${t}`],
    ['a CRLF between segments', (t) => t.replace('.', '.\r\n')],
    ['a NUL at the end', (t) => `${t}\u0000`],
    ['a full-width dot', (t) => t.replace('.', '\uff0e')],
  ])('the verifier refuses a token with %s', async (_name, shape) => {
    const verifier = createJwtVerifier({ issuer: ISSUER, audience: AUDIENCE, publicKey: key.pem });
    const good = await mint(key);
    expect((await verifier.verify(good)).payload.sub).toBe('alice');
    const error = await verifier.verify(shape(good)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JwtError);
    expect((error as JwtError).code).toBe('ERR_JWT_INVALID');
  });
});
