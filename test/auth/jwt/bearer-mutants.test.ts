// What a caller of jwtBearer() and principalFromClaims() can observe beyond jwt-bearer.test.ts
// and dpop-bearer.test.ts: the exact errors (class, code, detail, every header), option
// messages, the principal's own keys (revocation ids, expiry, no undefined fields), the header
// and query corners of reading a token, and what a DPoP verifier is asked to check.
import { createHash, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { decodeJwt } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Authenticator } from '../../../src/auth/authenticator.js';
import {
  DpopProofError,
  type DpopRequest,
  type DpopVerifier,
} from '../../../src/auth/dpop/dpop.js';
import {
  type JwtBearerOptions,
  jwtBearer,
  principalFromClaims,
} from '../../../src/auth/jwt/bearer.js';
import { HttpError } from '../../../src/core/errors/errors.js';
import type { JwtClaims } from '../../../src/core/jwt-types.js';
import { thrownTypeError } from '../../helpers/errors.js';
import { type FakeRequestInit, fakeRequest } from '../../helpers/fake-http.js';
import {
  AUDIENCE,
  ISSUER,
  makeKey,
  mint,
  now,
  startKeyServer,
  type TestKey,
} from './jwt-fixtures.js';

const ORIGIN = 'https://api.example.com';
/** The key thumbprint the stub verifier says every proof was made with. */
const JKT = 'the-proof-key-thumbprint';
const INVALID = 'The access token is not valid.';
const BEARER_INVALID = `Bearer realm="api", error="invalid_token", error_description="${INVALID}"`;
const DPOP_INVALID = `DPoP realm="api", error="invalid_token", error_description="${INVALID}", algs="ES256"`;
const BAD_REQUEST = 'Bearer realm="api", error="invalid_request"';

let key: TestKey;
beforeAll(async () => {
  key = await makeKey('k1');
});

/** jwtBearer over the test key, made in the test itself (so that its coverage is the test's). */
const make = (options: Partial<JwtBearerOptions> = {}) =>
  jwtBearer({ publicKey: key.pem, issuer: ISSUER, audience: AUDIENCE, ...options });

/** A request as node hands it over: `Host` and the given header lines. */
const requestWith = (init: FakeRequestInit = {}) =>
  fakeRequest({
    ...init,
    headers: [['Host', 'api.example.com'], ...Object.entries(init.headers ?? {})],
  });

/** The HttpError `auth` refuses `req` with (failing the test when it answers anything else). */
async function refusal(auth: Authenticator, req: IncomingMessage): Promise<HttpError> {
  const outcome = await Promise.resolve()
    .then(() => auth.authenticate(req))
    .then(
      () => undefined,
      (error: unknown) => error,
    );
  expect(outcome).toBeInstanceOf(HttpError);
  return outcome as HttpError;
}

/** A DPoP verifier that takes every proof as made by JKT (or throws `failure`), keeping what it was asked. */
function stubVerifier(failure?: unknown) {
  const asked: { proof: unknown; request: DpopRequest }[] = [];
  const verifier: DpopVerifier = {
    algorithms: ['ES256'],
    async verify(proof, request) {
      asked.push({ proof, request });
      if (failure !== undefined) throw failure;
      return { jkt: JKT, jwk: {}, jti: 'proof-1', alg: 'ES256', issuedAt: 0 };
    },
    async check(proof, request) {
      return { ...(await verifier.verify(proof, request)), remember: async () => {} };
    },
  };
  return { verifier, asked };
}

/** A request on a TLS connection whose verified client certificate is `raw` (or whose read fails). */
function overTls(req: IncomingMessage, peer: () => { raw: Buffer }): IncomingMessage {
  Object.assign(req.socket, {
    encrypted: true,
    authorized: true,
    authorizationError: null,
    getPeerCertificate: peer,
  });
  return req;
}

describe('principalFromClaims', () => {
  it('maps only non-empty string claims, and falls back from an empty client_id to azp', () => {
    const payload = {
      sub: 'alice',
      name: 42,
      role: '',
      client_id: '',
      azp: 'web',
      scope: 'read:a write:a',
    };
    expect(principalFromClaims(payload)).toStrictEqual({
      sub: 'alice',
      scopes: ['read:a', 'write:a'],
      method: 'bearer',
      claims: payload,
      clientId: 'web',
    });
    const full = { sub: 'bob', name: 'Bob', role: 'admin', client_id: 'cli', azp: 'web' };
    expect(principalFromClaims(full)).toStrictEqual({
      sub: 'bob',
      scopes: [],
      method: 'bearer',
      claims: full,
      name: 'Bob',
      role: 'admin',
      clientId: 'cli',
    });
  });

  it('sets no name, role or clientId key, not even undefined, for claims without them', () => {
    const payload = { sub: 'carol' };
    const principal = principalFromClaims(payload);
    expect(principal).toStrictEqual({
      sub: 'carol',
      scopes: [],
      method: 'bearer',
      claims: payload,
    });
    expect(Object.keys(principal!)).toEqual(['sub', 'scopes', 'method', 'claims']);
  });

  it('answers undefined for claims without a non-empty string sub', () => {
    const payloads: Record<string, unknown>[] = [
      {},
      { name: 'Alice' },
      { sub: '' },
      { sub: 42 },
      { sub: null },
    ];
    for (const payload of payloads) {
      expect(principalFromClaims(payload as JwtClaims)).toBeUndefined();
    }
  });

  it('parses the scopes of a frozen payload once: every principal of it shares one frozen list', () => {
    const payload = Object.freeze({ sub: 'alice', scp: ['read:a', 'bad scope', 'write:a'] });
    const first = principalFromClaims(payload)!;
    const second = principalFromClaims(payload)!;
    expect(first.scopes).toEqual(['read:a', 'write:a']);
    expect(Object.isFrozen(first.scopes)).toBe(true);
    expect(second.scopes).toBe(first.scopes);
  });

  it('reads a payload that is not frozen afresh: its scopes follow its changes', () => {
    const payload: Record<string, unknown> = { sub: 'alice', scope: 'read:a' };
    expect(principalFromClaims(payload)!.scopes).toEqual(['read:a']);
    payload.scope = 'read:a write:a';
    expect(principalFromClaims(payload)!.scopes).toEqual(['read:a', 'write:a']);
  });
});

describe('jwtBearer: the principal of a verified token', () => {
  it("adds the token's revocation ids (grant, then jti) and its exp in milliseconds", async () => {
    const auth = make();
    const token = await mint(key, { grant_id: 'g-1', jti: 'j-1', scope: 'read:a' });
    const principal = await auth.authenticate(
      requestWith({ headers: { Authorization: `Bearer ${token}` } }),
    );
    const { claims, ...rest } = principal!;
    expect(rest).toStrictEqual({
      sub: 'alice',
      scopes: ['read:a'],
      method: 'bearer',
      credentialIds: ['grant:g-1', 'token:j-1'],
      expiresAt: decodeJwt(token).exp! * 1000,
    });
    expect(claims).toEqual(decodeJwt(token));
    const jtiOnly = await mint(key, { jti: 'j-2' });
    expect(
      (await auth.authenticate(requestWith({ headers: { Authorization: `Bearer ${jtiOnly}` } })))
        ?.credentialIds,
    ).toEqual(['token:j-2']);
    const grantOnly = await mint(key, { grant_id: 'g-3' });
    expect(
      (await auth.authenticate(requestWith({ headers: { Authorization: `Bearer ${grantOnly}` } })))
        ?.credentialIds,
    ).toEqual(['grant:g-3']);
  });

  it('sets no credentialIds for a token without grant_id or jti (or with empty ones)', async () => {
    const auth = make();
    for (const claims of [{}, { grant_id: '', jti: '' }]) {
      const token = await mint(key, claims);
      const principal = await auth.authenticate(
        requestWith({ headers: { Authorization: `Bearer ${token}` } }),
      );
      expect(principal?.sub).toBe('alice');
      expect(principal).not.toHaveProperty('credentialIds');
      expect(principal?.expiresAt).toBe(decodeJwt(token).exp! * 1000);
    }
  });

  it('keeps the revocation ids and expiry that a custom mapping set', async () => {
    const auth = make({
      toPrincipal: (payload) => ({
        sub: `svc:${payload.sub}`,
        scopes: [],
        method: 'bearer',
        credentialIds: ['api_key:k-1'],
        expiresAt: 1234,
      }),
    });
    const token = await mint(key, { grant_id: 'g-1', jti: 'j-1' });
    expect(
      await auth.authenticate(requestWith({ headers: { Authorization: `Bearer ${token}` } })),
    ).toStrictEqual({
      sub: 'svc:alice',
      scopes: [],
      method: 'bearer',
      credentialIds: ['api_key:k-1'],
      expiresAt: 1234,
    });
  });

  it('refuses what a mapping answers without a non-empty string sub', async () => {
    for (const sub of ['', 42]) {
      const auth = make({
        toPrincipal: () => ({ sub: sub as string, scopes: [], method: 'bearer' }),
      });
      const token = await mint(key);
      const error = await refusal(
        auth,
        requestWith({ headers: { Authorization: `Bearer ${token}` } }),
      );
      expect(error).toMatchObject({ status: 401, code: 'ERR_JWT_INVALID', detail: INVALID });
      expect(error.headers).toStrictEqual({ 'WWW-Authenticate': BEARER_INVALID });
    }
  });

  it('names toPrincipal when it is not a function', () => {
    const error = thrownTypeError(() => make({ toPrincipal: 'sub' as never }));
    expect(error.message).toBe('jwtBearer(): `toPrincipal` must be a function');
    expect(error.code).toBe('ERR_INVALID_OPTION');
  });
});

describe('jwtBearer: reading the token', () => {
  it('takes `Bearer` without a token as a credential: 401 authentication-required', async () => {
    const error = await refusal(make(), requestWith({ headers: { Authorization: 'Bearer' } }));
    expect(error).toMatchObject({
      status: 401,
      code: 'ERR_AUTH_REQUIRED',
      type: 'urn:portico:problem:authentication-required',
      detail: 'Authentication is required.',
    });
    expect(error.headers).toStrictEqual({ 'WWW-Authenticate': ['Bearer realm="api"'] });
  });

  it('counts only Authorization lines: another header of 13 characters is no second token', async () => {
    const token = await mint(key);
    const principal = await make().authenticate(
      requestWith({ headers: { 'Cache-Control': 'no-cache', Authorization: `Bearer ${token}` } }),
    );
    expect(principal?.sub).toBe('alice');
  });

  it('leaves several Authorization lines of another scheme to other authenticators', async () => {
    const req = fakeRequest({
      headers: [
        ['Authorization', 'Basic YWxpY2U6eA=='],
        ['Authorization', 'Basic Ym9iOnk='],
      ],
    });
    expect(await make().authenticate(req)).toBeUndefined();
  });

  it('refuses a Bearer line among several, spaces around it or not: 400 invalid_request', async () => {
    const token = await mint(key);
    for (const line of [`Bearer ${token}`, `  Bearer ${token}  `]) {
      const req = fakeRequest({
        headers: [
          ['Authorization', 'Basic YWxpY2U6eA=='],
          ['Authorization', line],
        ],
      });
      const error = await refusal(make(), req);
      expect(error).toMatchObject({
        status: 400,
        code: 'ERR_AUTH_INVALID_REQUEST',
        type: 'urn:portico:problem:invalid-request',
        detail: 'Send one Authorization header, not several.',
      });
      expect(error.headers).toStrictEqual({ 'WWW-Authenticate': BAD_REQUEST });
    }
  });

  it('refuses an access_token query parameter, with or without the header, however it is spelled', async () => {
    const token = await mint(key);
    const auth = make();
    const both = await refusal(
      auth,
      requestWith({
        url: `/me?access_token=${token}`,
        headers: { Authorization: `Bearer ${token}` },
      }),
    );
    expect(both).toMatchObject({
      status: 400,
      code: 'ERR_AUTH_INVALID_REQUEST',
      detail: 'Send the access token in one place only.',
    });
    expect(both.headers).toStrictEqual({ 'WWW-Authenticate': BAD_REQUEST });
    for (const url of [`/me?access_token=${token}`, `/me?page=2&%61ccess_token=${token}`]) {
      const alone = await refusal(auth, requestWith({ url }));
      expect(alone).toMatchObject({
        status: 400,
        code: 'ERR_AUTH_INVALID_REQUEST',
        detail: 'Send the access token in the Authorization header.',
      });
      expect(alone.headers).toStrictEqual({ 'WWW-Authenticate': BAD_REQUEST });
    }
  });

  it('takes no part of the path for a query parameter', async () => {
    const token = await mint(key);
    const auth = make();
    for (const url of ['/access_token', '/search&access_token=1']) {
      expect(await auth.authenticate(requestWith({ url }))).toBeUndefined();
      const principal = await auth.authenticate(
        requestWith({ url, headers: { Authorization: `Bearer ${token}` } }),
      );
      expect(principal?.sub).toBe('alice');
    }
  });

  it('reads a request that has no URL', async () => {
    const token = await mint(key);
    const req = requestWith({ headers: { Authorization: `Bearer ${token}` } });
    req.url = undefined;
    expect((await make().authenticate(req))?.sub).toBe('alice');
  });

  it('leaves the DPoP scheme to other authenticators when dpop is off', async () => {
    const token = await mint(key);
    const auth = make();
    for (const value of [`DPoP ${token}`, 'DPoP']) {
      expect(await auth.authenticate(requestWith({ headers: { Authorization: value } }))).toBe(
        undefined,
      );
    }
  });

  it('accepts a token exactly maxTokenLength long', async () => {
    const token = await mint(key);
    const principal = await make({ maxTokenLength: token.length }).authenticate(
      requestWith({ headers: { Authorization: `Bearer ${token}` } }),
    );
    expect(principal?.sub).toBe('alice');
    const longer = await refusal(
      make({ maxTokenLength: token.length - 1 }),
      requestWith({ headers: { Authorization: `Bearer ${token}` } }),
    );
    expect(longer).toMatchObject({ status: 401, code: 'ERR_JWT_INVALID', detail: INVALID });
  });
});

describe('jwtBearer: refusals', () => {
  it('answers a bad token with 401 invalid-credentials, ERR_JWT_INVALID and invalid_token', async () => {
    const auth = make();
    for (const token of ['not.a.token', 'abc!def', (await mint(key)).slice(0, -4)]) {
      const error = await refusal(
        auth,
        requestWith({ headers: { Authorization: `Bearer ${token}` } }),
      );
      expect(error).toMatchObject({
        status: 401,
        code: 'ERR_JWT_INVALID',
        type: 'urn:portico:problem:invalid-credentials',
        title: 'Invalid credentials',
        detail: INVALID,
      });
      expect(error.headers).toStrictEqual({ 'WWW-Authenticate': BEARER_INVALID });
    }
  });

  it('answers an expired token with 401 credentials-expired and ERR_JWT_EXPIRED', async () => {
    const token = await mint(key, { exp: now() - 60 });
    const error = await refusal(
      make(),
      requestWith({ headers: { Authorization: `Bearer ${token}` } }),
    );
    expect(error).toMatchObject({
      status: 401,
      code: 'ERR_JWT_EXPIRED',
      type: 'urn:portico:problem:credentials-expired',
      detail: 'The access token expired.',
    });
    expect(error.headers).toStrictEqual({
      'WWW-Authenticate':
        'Bearer realm="api", error="invalid_token", error_description="The access token expired."',
    });
  });

  it('answers 503 with its own detail when the remote key set was never reachable', async () => {
    const keys = await startKeyServer([key.jwk]);
    keys.down = true;
    try {
      const token = await mint(key);
      const error = await refusal(
        jwtBearer({ jwksUrl: keys.jwksUrl, issuer: ISSUER, audience: AUDIENCE }),
        requestWith({ headers: { Authorization: `Bearer ${token}` } }),
      );
      expect(error).toMatchObject({
        status: 503,
        code: 'ERR_JWT_KEYS_UNAVAILABLE',
        detail: 'The access token cannot be verified now.',
      });
      expect(error.headers).toStrictEqual({ 'Retry-After': '30' });
      expect((error.cause as { code?: string }).code).toBe('ERR_JWT_KEYS_UNAVAILABLE');
    } finally {
      await keys.close();
    }
  });

  it('answers a DPoP-bound token sent as Bearer in Bearer when dpop is off', async () => {
    const token = await mint(key, { cnf: { jkt: JKT } });
    const error = await refusal(
      make(),
      requestWith({ headers: { Authorization: `Bearer ${token}` } }),
    );
    expect(error).toMatchObject({ status: 401, code: 'ERR_JWT_INVALID', detail: INVALID });
    expect(error.headers).toStrictEqual({ 'WWW-Authenticate': BEARER_INVALID });
  });

  it('lets through a failure that is not about the token (reading the client certificate)', async () => {
    const failure = new Error('the TLS session is gone');
    const token = await mint(key, { cnf: { 'x5t#S256': 'some-thumbprint' } });
    const req = overTls(requestWith({ headers: { Authorization: `Bearer ${token}` } }), () => {
      throw failure;
    });
    await expect(make().authenticate(req)).rejects.toBe(failure);
  });

  it('quotes its realm in every challenge, and refuses a realm that is not a non-empty string', async () => {
    const auth = make({ realm: 'ops' });
    expect(auth.challenge).toBe('Bearer realm="ops"');
    const error = await refusal(auth, requestWith({ headers: { Authorization: 'Bearer a.b.c' } }));
    expect(error.headers).toStrictEqual({
      'WWW-Authenticate': `Bearer realm="ops", error="invalid_token", error_description="${INVALID}"`,
    });
    for (const realm of ['', 42]) {
      const refused = thrownTypeError(() => make({ realm: realm as string }));
      expect(refused.message).toBe('jwtBearer(): `realm` must be a non-empty string');
      expect(refused.code).toBe('ERR_INVALID_OPTION');
    }
  });
});

describe('jwtBearer: what it announces', () => {
  it('without dpop: the Bearer scheme, its bare challenge, and the Authorization header', () => {
    const auth = make();
    expect(auth.scheme).toBe('Bearer');
    expect(auth.challenge).toBe('Bearer realm="api"');
    expect(auth.headers).toEqual(['Authorization']);
  });

  it('with dpop: both challenges, the DPoP one with the proof algorithms, and both headers', () => {
    const { verifier } = stubVerifier();
    const auth = make({ dpop: { origin: ORIGIN, verifier } });
    expect(auth.scheme).toBe('Bearer');
    expect(auth.challenge).toBe('Bearer realm="api", DPoP realm="api", algs="ES256"');
    expect(auth.headers).toEqual(['Authorization', 'DPoP']);
    const strict = make({ dpop: { origin: ORIGIN, verifier, required: true } });
    expect(strict.challenge).toBe('DPoP realm="api", algs="ES256"');
    expect(strict.headers).toEqual(['Authorization', 'DPoP']);
  });
});

describe('jwtBearer: dpop', () => {
  it('refuses dpop options that are not an object with an http(s) origin, a boolean required and a verifier', () => {
    const noPath = '`dpop.origin` must be an origin (scheme, host, port), no path';
    const cases: [unknown, string][] = [
      [ORIGIN, "`dpop` must be an object with the API's `origin`"],
      [null, "`dpop` must be an object with the API's `origin`"],
      [{ origin: 'api.example.com' }, "`dpop.origin` must be the API's absolute origin"],
      [{}, "`dpop.origin` must be the API's absolute origin"],
      [{ origin: `${ORIGIN}/v1` }, noPath],
      [{ origin: 'ftp://api.example.com' }, noPath],
      [{ origin: 'ws://api.example.com' }, noPath],
      [{ origin: ORIGIN, required: 'yes' }, '`dpop.required` must be a boolean'],
      [
        { origin: ORIGIN, verifier: {} },
        '`dpop.verifier` must be a DPoP verifier (createDpopVerifier)',
      ],
      [
        { origin: ORIGIN, verifier: null },
        '`dpop.verifier` must be a DPoP verifier (createDpopVerifier)',
      ],
    ];
    for (const [dpop, message] of cases) {
      const error = thrownTypeError(() => make({ dpop: dpop as never }));
      expect(error.message).toBe(`jwtBearer(): ${message}`);
      expect(error.code).toBe('ERR_INVALID_OPTION');
    }
  });

  it("checks the one proof against the method, the origin and the request's path, and the token", async () => {
    const { verifier, asked } = stubVerifier();
    // a trailing slash on the origin is allowed, and dropped
    const auth = make({ dpop: { origin: `${ORIGIN}/`, verifier } });
    const token = await mint(key, { cnf: { jkt: JKT } });
    const req = requestWith({
      method: 'POST',
      url: '/things?page=2',
      headers: { Authorization: `DPoP ${token}`, DPoP: 'the-proof' },
    });
    const principal = await auth.authenticate(req);
    expect(principal).toMatchObject({ sub: 'alice', method: 'dpop' });
    expect(asked).toEqual([
      {
        proof: 'the-proof',
        request: { method: 'POST', url: `${ORIGIN}/things`, accessToken: token },
      },
    ]);
  });

  it('takes an http origin too (a service reached without TLS, on localhost say)', async () => {
    const { verifier, asked } = stubVerifier();
    const auth = make({ dpop: { origin: 'http://localhost:8080', verifier } });
    const token = await mint(key, { cnf: { jkt: JKT } });
    const req = requestWith({
      url: '/things',
      headers: { Authorization: `DPoP ${token}`, DPoP: 'the-proof' },
    });
    expect((await auth.authenticate(req))?.method).toBe('dpop');
    expect(asked.map((a) => a.request.url)).toEqual(['http://localhost:8080/things']);
  });

  it("checks a request without method or URL as a GET of the origin's root", async () => {
    const { verifier, asked } = stubVerifier();
    const auth = make({ dpop: { origin: ORIGIN, verifier } });
    const token = await mint(key, { cnf: { jkt: JKT } });
    const req = requestWith({ headers: { Authorization: `DPoP ${token}`, DPoP: 'the-proof' } });
    req.method = undefined;
    req.url = undefined;
    expect((await auth.authenticate(req))?.method).toBe('dpop');
    expect(asked.map((a) => a.request)).toEqual([
      { method: 'GET', url: `${ORIGIN}/`, accessToken: token },
    ]);
  });

  it('keeps the method a custom mapping gives a DPoP-bound principal', async () => {
    const { verifier } = stubVerifier();
    const auth = make({
      dpop: { origin: ORIGIN, verifier },
      toPrincipal: (payload) => ({ sub: String(payload.sub), scopes: [], method: 'service' }),
    });
    const token = await mint(key, { cnf: { jkt: JKT } });
    const req = requestWith({ headers: { Authorization: `DPoP ${token}`, DPoP: 'the-proof' } });
    expect((await auth.authenticate(req))?.method).toBe('service');
  });

  it('answers a refused proof with 401 invalid_dpop_proof, its description, and no other header', async () => {
    const refused = new DpopProofError('invalid_dpop_proof', 'The DPoP proof is too old.');
    const { verifier } = stubVerifier(refused);
    const token = await mint(key, { cnf: { jkt: JKT } });
    const error = await refusal(
      make({ dpop: { origin: ORIGIN, verifier } }),
      requestWith({ headers: { Authorization: `DPoP ${token}`, DPoP: 'the-proof' } }),
    );
    expect(error).toMatchObject({
      status: 401,
      code: 'ERR_DPOP_INVALID',
      type: 'urn:portico:problem:invalid-credentials',
      detail: 'The DPoP proof is too old.',
    });
    expect(error.headers).toStrictEqual({
      'WWW-Authenticate':
        'DPoP realm="api", error="invalid_dpop_proof", error_description="The DPoP proof is too old.", algs="ES256"',
    });
  });

  it('answers use_dpop_nonce with the nonce to retry with', async () => {
    const refused = new DpopProofError('use_dpop_nonce', 'Use the nonce.', { nonce: 'n-1' });
    const { verifier } = stubVerifier(refused);
    const token = await mint(key, { cnf: { jkt: JKT } });
    const error = await refusal(
      make({ dpop: { origin: ORIGIN, verifier } }),
      requestWith({ headers: { Authorization: `DPoP ${token}`, DPoP: 'the-proof' } }),
    );
    expect(error).toMatchObject({ status: 401, code: 'ERR_DPOP_NONCE', detail: 'Use the nonce.' });
    expect(error.headers).toStrictEqual({
      'DPoP-Nonce': 'n-1',
      'WWW-Authenticate':
        'DPoP realm="api", error="use_dpop_nonce", error_description="Use the nonce.", algs="ES256"',
    });
  });

  it("lets through a verifier's failure that is not a refused proof", async () => {
    const failure = new Error('the replay store is unreachable');
    const { verifier } = stubVerifier(failure);
    const token = await mint(key, { cnf: { jkt: JKT } });
    const req = requestWith({ headers: { Authorization: `DPoP ${token}`, DPoP: 'the-proof' } });
    await expect(make({ dpop: { origin: ORIGIN, verifier } }).authenticate(req)).rejects.toBe(
      failure,
    );
  });

  it('refuses a malformed or oversized DPoP token as invalid_token before looking for its proof', async () => {
    const cases: [Partial<JwtBearerOptions>, string][] = [
      [{}, 'abc!def'],
      [{}, 'A'.repeat(8193)],
      [{ maxTokenLength: 100 }, 'A'.repeat(101)],
    ];
    for (const [options, token] of cases) {
      // the real verifier: without a DPoP header it would answer invalid_dpop_proof
      const auth = make({ ...options, dpop: { origin: ORIGIN } });
      const error = await refusal(
        auth,
        requestWith({ headers: { Authorization: `DPoP ${token}` } }),
      );
      expect(error).toMatchObject({ status: 401, code: 'ERR_JWT_INVALID', detail: INVALID });
      expect(error.headers).toStrictEqual({
        'WWW-Authenticate': `DPoP realm="api", error="invalid_token", error_description="${INVALID}", algs="ES256 EdDSA PS256 RS256"`,
      });
    }
  });

  it('with required: refuses a well-formed Bearer token as not DPoP-bound, a malformed one as invalid', async () => {
    const { verifier } = stubVerifier();
    const auth = make({ dpop: { origin: ORIGIN, verifier, required: true } });
    const plain = await mint(key);
    const unbound = await refusal(
      auth,
      requestWith({ headers: { Authorization: `Bearer ${plain}` } }),
    );
    expect(unbound).toMatchObject({
      status: 401,
      code: 'ERR_AUTH_INVALID',
      detail: 'Send a DPoP-bound token.',
    });
    expect(unbound.headers).toStrictEqual({ 'WWW-Authenticate': DPOP_INVALID });
    for (const token of ['abc!def', 'A'.repeat(8193)]) {
      const malformed = await refusal(
        auth,
        requestWith({ headers: { Authorization: `Bearer ${token}` } }),
      );
      expect(malformed).toMatchObject({ status: 401, code: 'ERR_JWT_INVALID', detail: INVALID });
      expect(malformed.headers).toStrictEqual({ 'WWW-Authenticate': BEARER_INVALID });
    }
  });

  it('refuses a certificate-bound token sent with the DPoP scheme, even with its certificate and a proof', async () => {
    const pem = readFileSync(new URL('../../fixtures/tls/client.pem', import.meta.url));
    const raw = new X509Certificate(pem).raw;
    const token = await mint(key, {
      cnf: { 'x5t#S256': createHash('sha256').update(raw).digest('base64url') },
    });
    const { verifier, asked } = stubVerifier();
    const auth = make({ dpop: { origin: ORIGIN, verifier } });
    // as Bearer over that connection, the certificate binding holds
    const asBearer = overTls(
      requestWith({ headers: { Authorization: `Bearer ${token}` } }),
      () => ({
        raw,
      }),
    );
    expect((await auth.authenticate(asBearer))?.sub).toBe('alice');
    const asDpop = overTls(
      requestWith({ headers: { Authorization: `DPoP ${token}`, DPoP: 'the-proof' } }),
      () => ({ raw }),
    );
    const error = await refusal(auth, asDpop);
    expect(asked).toHaveLength(1);
    expect(error).toMatchObject({ status: 401, code: 'ERR_JWT_INVALID', detail: INVALID });
    expect(error.headers).toStrictEqual({ 'WWW-Authenticate': DPOP_INVALID });
  });
});
