// The edges of the signing key set (which keys it loads, when it publishes and forgets
// them, when its published set is reused), of the JWKS endpoint's options, of the DPoP proof
// of the server's own endpoints, of PKCE verification and of the OAuth form reader.
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { createLocalJWKSet, exportJWK, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryReplayStore } from '../../../src/auth/replay/store.js';
import type { Middleware } from '../../../src/core/compose.js';
import { createJwksEndpoint } from '../../../src/oauth/endpoints/jwks.js';
import { createTokenEndpoint } from '../../../src/oauth/endpoints/token.js';
import { codeChallengeS256, verifyCodeVerifier } from '../../../src/oauth/protocol/pkce.js';
import {
  createKeySet,
  type KeySet,
  type SigningAlgorithm,
} from '../../../src/oauth/tokens/key-set.js';
import { closeAll, json, request, serve } from '../../helpers/http.js';
import { captureLogger } from '../../helpers/logger.js';
import {
  basic,
  expectError,
  expectTokens,
  startTokenServer,
  tokenRequest,
} from '../token-fixtures.js';

afterAll(closeAll);

const START = 1_700_000_000_000;

function clock(start = START) {
  const c = { t: start, now: () => c.t };
  return c;
}

const kids = (keys: KeySet) => keys.jwks().keys.map((k) => k.kid);

async function signAndVerify(keys: KeySet): Promise<string | undefined> {
  const key = keys.signingKey();
  const token = await new SignJWT({ sub: 'alice' })
    .setProtectedHeader({ alg: key.alg, kid: key.kid })
    .sign(key.privateKey);
  const { protectedHeader } = await jwtVerify(token, createLocalJWKSet(keys.jwks()));
  return protectedHeader.alg;
}

function refusal(alg: SigningAlgorithm) {
  return new RegExp(`^createKeySet\\(\\): every key must be a private ${alg} key$`);
}

const rsa = (modulusLength: number) => generateKeyPairSync('rsa', { modulusLength }).privateKey;
const ec = (namedCurve: string) => generateKeyPairSync('ec', { namedCurve }).privateKey;
const ed25519 = () => generateKeyPairSync('ed25519').privateKey;

describe('createKeySet (key-set.ts)', () => {
  it('loads a P-256 key for ES256 and refuses other curves and key types', async () => {
    const p256 = ec('P-256');
    const keys = await createKeySet({ algorithm: 'ES256', keys: [p256] });
    expect(keys.signingKey().privateKey).toBe(p256);
    expect(keys.jwks().keys[0]).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256' });
    expect(await signAndVerify(keys)).toBe('ES256');
    const others: KeyObject[] = [ec('P-384'), rsa(2048), ed25519()];
    for (const key of others) {
      await expect(createKeySet({ algorithm: 'ES256', keys: [key] })).rejects.toThrow(
        refusal('ES256'),
      );
    }
  });

  it('loads an Ed25519 key for EdDSA and refuses other key types', async () => {
    const own = ed25519();
    const keys = await createKeySet({ algorithm: 'EdDSA', keys: [own] });
    expect(keys.signingKey().privateKey).toBe(own);
    expect(keys.jwks().keys[0]).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA' });
    expect(await signAndVerify(keys)).toBe('EdDSA');
    const others: KeyObject[] = [generateKeyPairSync('ed448').privateKey, ec('P-256'), rsa(2048)];
    for (const key of others) {
      await expect(createKeySet({ algorithm: 'EdDSA', keys: [key] })).rejects.toThrow(
        refusal('EdDSA'),
      );
    }
  });

  it('refuses RS256 keys under 2048 bits and RSA-PSS keys', async () => {
    await expect(createKeySet({ keys: [rsa(1024)] })).rejects.toThrow(refusal('RS256'));
    const pss = generateKeyPairSync('rsa-pss', { modulusLength: 2048 }).privateKey;
    await expect(createKeySet({ keys: [pss] })).rejects.toThrow(refusal('RS256'));
    const big = rsa(3072);
    expect((await createKeySet({ keys: [big] })).signingKey().privateKey).toBe(big);
  });

  it('names itself and the faulty option in its errors', async () => {
    await expect(createKeySet({ retain: 1 } as never)).rejects.toThrow(
      /^createKeySet\(\): unknown option `retain`/,
    );
    await expect(createKeySet({ algorithm: 'HS256' as never })).rejects.toThrow(
      'createKeySet(): unsupported algorithm `HS256`',
    );
    await expect(createKeySet({ publishAheadMs: -1 })).rejects.toThrow(
      /^createKeySet\(\): `publishAheadMs` must be milliseconds/,
    );
    await expect(createKeySet({ retainMs: 1.5 })).rejects.toThrow(
      /^createKeySet\(\): `retainMs` must be milliseconds/,
    );
  });

  it('signs with the last loaded key from the start and publishes the older one for retainMs', async () => {
    const c = clock();
    const [older, newer] = [ed25519(), ed25519()];
    const keys = await createKeySet({
      algorithm: 'EdDSA',
      keys: [older, newer],
      now: c.now,
      retainMs: 1_000,
    });
    const signing = keys.signingKey();
    expect(signing.privateKey).toBe(newer);
    expect(signing.activatesAt).toBe(START);
    const [first] = kids(keys);
    c.t = START + 999;
    expect(kids(keys)).toEqual([first, signing.kid]);
    c.t = START + 1_000;
    expect(kids(keys)).toEqual([signing.kid]);
    expect(keys.signingKey().kid).toBe(signing.kid);
  });

  it('answers the same published set until it changes', async () => {
    const c = clock();
    const keys = await createKeySet({
      algorithm: 'EdDSA',
      keys: [ed25519(), ed25519()],
      now: c.now,
      retainMs: 1_000,
    });
    const set = keys.jwks();
    expect(set.keys).toHaveLength(2);
    expect(Object.isFrozen(set)).toBe(true);
    expect(keys.jwks()).toBe(set);
    c.t = START + 1;
    expect(keys.jwks()).toBe(set);
    c.t = START + 998;
    expect(keys.jwks()).toBe(set);
  });

  it('answers the set of the instant again when the clock steps back', async () => {
    const c = clock();
    const keys = await createKeySet({ algorithm: 'EdDSA', now: c.now, retainMs: 1_000 });
    const a = keys.signingKey();
    c.t = START + 10;
    const b = await keys.rotate({ immediately: true });
    c.t = START + 1_010;
    expect(kids(keys)).toEqual([b.kid]);
    c.t = START + 500;
    expect(kids(keys)).toEqual([a.kid, b.kid]);
  });

  it('forgets a retired key for good, even when the clock steps back', async () => {
    const c = clock();
    const keys = await createKeySet({ algorithm: 'EdDSA', now: c.now, retainMs: 1_000 });
    const a = keys.signingKey();
    const b = await keys.rotate({ immediately: true });
    c.t = START + 2_000;
    const d = await keys.rotate({ immediately: true });
    expect(kids(keys)).toEqual([b.kid, d.kid]);
    c.t = START + 500;
    expect(kids(keys)).not.toContain(a.kid);
    expect(kids(keys)).toEqual([b.kid, d.kid]);
  });

  it('with retainMs 0, an immediate rotation retires the old key at once', async () => {
    const c = clock();
    const keys = await createKeySet({ algorithm: 'EdDSA', now: c.now, retainMs: 0 });
    c.t = START + 10;
    const b = await keys.rotate({ immediately: true });
    expect(kids(keys)).toEqual([b.kid]);
    expect(keys.signingKey().kid).toBe(b.kid);
  });

  it('an immediate rotation overtaking a pending one retires the old key retainMs after it', async () => {
    const c = clock();
    const keys = await createKeySet({
      algorithm: 'EdDSA',
      now: c.now,
      publishAheadMs: 1_000,
      retainMs: '5ms',
    });
    const a = keys.signingKey();
    const pending = await keys.rotate();
    expect(kids(keys)).toEqual([a.kid, pending.kid]);
    c.t = START + 10;
    const urgent = await keys.rotate({ immediately: true });
    expect(keys.signingKey().kid).toBe(urgent.kid);
    c.t = START + 14;
    expect(kids(keys)).toContain(a.kid);
    c.t = START + 15;
    expect(kids(keys)).not.toContain(a.kid);
    expect(kids(keys)).toContain(urgent.kid);
    expect(keys.signingKey().kid).toBe(urgent.kid);
  });
});

describe('createJwksEndpoint (jwks-endpoint.ts)', () => {
  it('names maxAge when it is not a duration, and serves the set with the max-age given', async () => {
    const { ctx } = await startTokenServer();
    expect(() => createJwksEndpoint(ctx, { maxAge: -1 })).toThrow(
      /^createJwksEndpoint\(\): `maxAge` must be milliseconds/,
    );
    const server = await serve(createJwksEndpoint(ctx, { maxAge: 60_999 }));
    const reply = await request(server, '/');
    expect(reply.status).toBe(200);
    expect(reply.headers['cache-control']).toBe('public, max-age=60');
    expect(json(reply)).toEqual(ctx.keys.jwks());
  });
});

describe('createEndpointProofs (endpoint-proof.ts)', () => {
  const credentials =
    (server: Awaited<ReturnType<typeof startTokenServer>>['server']) =>
    (headers: Record<string, string | string[]>) =>
      tokenRequest(
        server,
        { grant_type: 'client_credentials' },
        { client: 'demo-service', headers },
      );

  it('ignores a DPoP header when DPoP is off: a Bearer token', async () => {
    const { server } = await startTokenServer({ dpop: false });
    const body = expectTokens(await credentials(server)({ DPoP: 'not-a-proof' }));
    expect(body.token_type).toBe('Bearer');
  });

  it('refuses two DPoP headers, saying to send one', async () => {
    const { server } = await startTokenServer();
    const body = expectError(await credentials(server)({ DPoP: ['a', 'b'] }), 'invalid_dpop_proof');
    expect(body.error_description).toBe('Send one DPoP proof.');
  });

  it('a replay store that cannot record is temporarily_unavailable, not a refused proof', async () => {
    const pair = await generateKeyPair('ES256', { extractable: true });
    const jwk = await exportJWK(pair.publicKey);
    const proof = (jti: string) =>
      new SignJWT({
        jti,
        htm: 'POST',
        htu: 'https://auth.example.test/token',
        iat: Math.floor(Date.now() / 1000),
      })
        .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk })
        .sign(pair.privateKey);
    const { server } = await startTokenServer({
      dpop: { replay: new MemoryReplayStore({ maxEntries: 1 }) },
    });
    const call = credentials(server);
    const first = await call({ DPoP: await proof('one') });
    expect(first.status, first.body).toBe(200);
    expect(json(first).token_type).toBe('DPoP');
    expectError(await call({ DPoP: await proof('two') }), 'temporarily_unavailable', 503);
  });
});

describe('verifyCodeVerifier (pkce.ts)', () => {
  it('refuses a malformed verifier even when its S256 matches the challenge', () => {
    for (const verifier of ['too-short', `${'a'.repeat(42)}!`, 'a'.repeat(129)]) {
      expect(verifyCodeVerifier(verifier, codeChallengeS256(verifier))).toBe(false);
    }
    const good = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
    expect(verifyCodeVerifier(good, 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM')).toBe(true);
  });
});

describe('readOAuthForm (form.ts)', () => {
  it('a body another middleware already read is a server_error (500), not invalid_request', async () => {
    const logger = captureLogger();
    const { ctx } = await startTokenServer({ logger });
    const drain: Middleware = async (req, _res, next) => {
      for await (const _chunk of req) {
        // read and dropped
      }
      await next();
    };
    const server = await serve([drain, createTokenEndpoint(ctx)]);
    const reply = await request(server, '/token', {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: basic('demo-service', 'demo-service-secret'),
      },
      body: 'grant_type=client_credentials',
    });
    expectError(reply, 'server_error', 500);
    expect(logger.errors).toHaveLength(1);
    expect(logger.errors[0]).toMatchObject({ status: 500, code: 'ERR_BODY_CONSUMED' });
  });
});
