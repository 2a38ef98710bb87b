// jwtBearer with `dpop`: DPoP-bound tokens (RFC 9449 §7) over a real socket, and the attacks
// on them: a bound token as Bearer, without its proof, with another key's proof, with a
// proof for another token, URL or method, a proof replayed; the verified-token cache never
// lets a bound token through without its proof.
import { randomUUID, type webcrypto } from 'node:crypto';
import { createServer } from 'node:http';
import express from 'express';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expressErrorHandler, toExpress } from '../../../src/adapters/express.js';
import { authenticate } from '../../../src/auth/authenticate.js';
import { accessTokenHash } from '../../../src/auth/dpop/dpop.js';
import { jwtBearer } from '../../../src/auth/jwt/bearer.js';
import type { Middleware } from '../../../src/core/compose.js';
import { getPrincipal } from '../../../src/core/principal.js';
import { sendJson } from '../../../src/core/send.js';
import { closeAll, json, type Listening, listen, request, serve } from '../../helpers/http.js';
import { AUDIENCE, ISSUER, makeKey, mint, type TestKey } from '../jwt/jwt-fixtures.js';

type CryptoKey = webcrypto.CryptoKey;
const ORIGIN = 'https://api.example.com';
const me: Middleware = (req, res) => sendJson(res, 200, { sub: getPrincipal(req)?.sub });

let issuer: TestKey;
let client: { privateKey: CryptoKey; jwk: JWK; jkt: string };
let thief: { privateKey: CryptoKey; jwk: JWK };
let app: Listening;
let strict: Listening;

async function proofFor(
  token: string | undefined,
  {
    key = client,
    htm = 'GET',
    path = '/api/me',
  }: { key?: typeof thief; htm?: string; path?: string } = {},
): Promise<string> {
  return new SignJWT({
    jti: randomUUID(),
    htm,
    htu: `${ORIGIN}${path}`,
    iat: Math.floor(Date.now() / 1000),
    ...(token !== undefined && { ath: accessTokenHash(token) }),
  })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: key.jwk })
    .sign(key.privateKey);
}

beforeAll(async () => {
  issuer = await makeKey('k1');
  const pair = await generateKeyPair('ES256', { extractable: true });
  const jwk = await exportJWK(pair.publicKey);
  client = { privateKey: pair.privateKey, jwk, jkt: await calculateJwkThumbprint(jwk, 'sha256') };
  const other = await generateKeyPair('ES256', { extractable: true });
  thief = { privateKey: other.privateKey, jwk: await exportJWK(other.publicKey) };
  const bearer = (required = false) =>
    jwtBearer({
      publicKey: issuer.pem,
      issuer: ISSUER,
      audience: AUDIENCE,
      dpop: { origin: ORIGIN, required },
    });
  app = await serve([authenticate([bearer()]), me]);
  strict = await serve([authenticate([bearer(true)]), me]);
});
afterAll(closeAll);

const dpopCall = (
  target: Listening,
  token: string,
  proof: string | string[] | undefined,
  path = '/api/me',
) =>
  request(target, path, {
    headers: { authorization: `DPoP ${token}`, ...(proof !== undefined && { dpop: proof }) },
  });

describe('jwtBearer with dpop', () => {
  it('accepts a bound token with its proof, and a plain bearer token as Bearer', async () => {
    const bound = await mint(issuer, { cnf: { jkt: client.jkt } });
    const reply = await dpopCall(app, bound, await proofFor(bound));
    expect(reply.status, reply.body).toBe(200);
    expect(json(reply)).toEqual({ sub: 'alice' });
    const plain = await mint(issuer);
    expect(
      (await request(app, '/api/me', { headers: { authorization: `Bearer ${plain}` } })).status,
    ).toBe(200);
  });

  it('offers both schemes, with the proof algorithms, when no credential comes', async () => {
    const reply = await request(app, '/api/me');
    expect(reply.status).toBe(401);
    expect(reply.headers['www-authenticate']).toBe(
      'Bearer realm="api", DPoP realm="api", algs="ES256 EdDSA PS256 RS256"',
    );
  });

  it('checks the proof on every request: the cache never lets a bound token through alone', async () => {
    const bound = await mint(issuer, { cnf: { jkt: client.jkt } });
    expect((await dpopCall(app, bound, await proofFor(bound))).status).toBe(200); // now cached
    const without = await dpopCall(app, bound, undefined);
    expect(without.status).toBe(401);
    expect(without.headers['www-authenticate']).toContain(
      'DPoP realm="api", error="invalid_dpop_proof"',
    );
    const asBearer = await request(app, '/api/me', {
      headers: { authorization: `Bearer ${bound}` },
    });
    expect(asBearer.status).toBe(401);
    // the refusal offers the scheme the bound token needs (RFC 9449 §7.1)
    expect(asBearer.headers['www-authenticate']).toMatch(
      /^DPoP realm="api", error="invalid_token", .*algs="ES256 EdDSA PS256 RS256"$/,
    );
    // an unbound bad token sent as Bearer is still answered in Bearer
    const forged = await request(app, '/api/me', {
      headers: { authorization: `Bearer ${bound.slice(0, -4)}AAAA` },
    });
    expect(forged.headers['www-authenticate']).toMatch(/^DPoP realm="api", error="invalid_token"/);
    const junk = await request(app, '/api/me', { headers: { authorization: 'Bearer a.b.c' } });
    expect(junk.headers['www-authenticate']).toMatch(/^Bearer realm="api", error="invalid_token"/);
  });

  it.each([
    ['a proof by another key', async (t: string) => proofFor(t, { key: thief })],
    ['a proof for another token', async () => proofFor('another.token.value')],
    ['a proof without ath', async () => proofFor(undefined)],
    ['a proof for another path', async (t: string) => proofFor(t, { path: '/api/keys' })],
    ['a proof for another method', async (t: string) => proofFor(t, { htm: 'POST' })],
    ['two DPoP headers', async (t: string) => [await proofFor(t), await proofFor(t)]],
    ['a proof that is not a JWS', async () => 'not-a-proof'],
  ])('refuses a bound token with %s', async (_name, make) => {
    const bound = await mint(issuer, { cnf: { jkt: client.jkt } });
    const reply = await dpopCall(app, bound, await make(bound));
    expect(reply.status).toBe(401);
    expect(reply.headers['www-authenticate']).toMatch(
      /^DPoP realm="api", error="(invalid_dpop_proof|invalid_token)"/,
    );
    expect(reply.body).not.toContain(bound);
  });

  it('refuses a replayed proof', async () => {
    const bound = await mint(issuer, { cnf: { jkt: client.jkt } });
    const proof = await proofFor(bound);
    expect((await dpopCall(app, bound, proof)).status).toBe(200);
    const replay = await dpopCall(app, bound, proof);
    expect(replay.status).toBe(401);
    expect(replay.headers['www-authenticate']).toContain('error="invalid_dpop_proof"');
  });

  it('refuses an unbound token sent with the DPoP scheme, and a token bound to another key', async () => {
    const plain = await mint(issuer);
    const unbound = await dpopCall(app, plain, await proofFor(plain));
    expect(unbound.status).toBe(401);
    expect(unbound.headers['www-authenticate']).toContain(
      'DPoP realm="api", error="invalid_token"',
    );
    const stolen = await mint(issuer, { cnf: { jkt: 'another-key-thumbprint' } });
    expect((await dpopCall(app, stolen, await proofFor(stolen))).status).toBe(401);
  });

  it('with required: refuses Bearer altogether and offers DPoP only', async () => {
    const plain = await mint(issuer);
    const reply = await request(strict, '/api/me', {
      headers: { authorization: `Bearer ${plain}` },
    });
    expect(reply.status).toBe(401);
    expect(reply.headers['www-authenticate']).toMatch(/^DPoP realm="api", error="invalid_token"/);
    expect((await request(strict, '/api/me')).headers['www-authenticate']).toBe(
      'DPoP realm="api", algs="ES256 EdDSA PS256 RS256"',
    );
    const bound = await mint(issuer, { cnf: { jkt: client.jkt } });
    expect((await dpopCall(strict, bound, await proofFor(bound))).status).toBe(200);
  });

  it('refuses a dpop option without a proper origin', () => {
    const base = { publicKey: 'x', issuer: ISSUER, audience: AUDIENCE };
    expect(() => jwtBearer({ ...base, dpop: { origin: 'api.example.com' } })).toThrow(TypeError);
    expect(() => jwtBearer({ ...base, dpop: { origin: 'https://api.example.com/v1' } })).toThrow(
      TypeError,
    );
    expect(() => jwtBearer({ ...base, dpop: { origin: ORIGIN, algorithms: ['HS256'] } })).toThrow(
      TypeError,
    );
  });
});

describe('jwtBearer with dpop under a framework mount', () => {
  it('checks htu against the full path when Express strips its mount from req.url', async () => {
    const site = express();
    const bearer = jwtBearer({
      publicKey: issuer.pem,
      issuer: ISSUER,
      audience: AUDIENCE,
      dpop: { origin: ORIGIN },
    });
    site.use('/api', toExpress(authenticate([bearer])));
    site.get('/api/me', (req, res) => {
      res.json({ sub: getPrincipal(req)?.sub, url: req.url });
    });
    site.use(expressErrorHandler());
    const mounted = await listen(createServer(site));
    const bound = await mint(issuer, { cnf: { jkt: client.jkt } });
    const reply = await dpopCall(mounted, bound, await proofFor(bound));
    expect(reply.status, reply.body).toBe(200);
    expect(json(reply)).toEqual({ sub: 'alice', url: '/api/me' });
    // a proof for the path Express leaves in req.url is one for another URL
    const stripped = await dpopCall(mounted, bound, await proofFor(bound, { path: '/me' }));
    expect(stripped.status).toBe(401);
  });
});
