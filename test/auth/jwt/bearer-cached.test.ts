// jwtBearer() answering a token its cache holds without a promise (issue 42): the first
// presentation is verified with the keys (a promise), the next ones are answered at once with
// the same principal; a binding, a mapping and a refusal keep their meaning on that path.
import { describe, expect, it } from 'vitest';
import { authenticate } from '../../../src/auth/authenticate.ts';
import { createCredentialGuard } from '../../../src/auth/credential-guard.ts';
import { jwtBearer, principalFromClaims } from '../../../src/auth/jwt/bearer.ts';
import { HttpError } from '../../../src/core/errors/errors.ts';
import { getPrincipal } from '../../../src/core/principal.ts';
import { MemoryRateLimitStore } from '../../../src/rate-limit/memory-store.ts';
import { fakeRequest, fakeResponse } from '../../helpers/fake-http.ts';
import { AUDIENCE, ISSUER, makeKey, mint, now } from './jwt-fixtures.ts';

const key = await makeKey('k1');
const request = (token: string) => fakeRequest({ headers: [['Authorization', `Bearer ${token}`]] });
const isPromise = (value: unknown) => value instanceof Promise;

/** What authenticate() threw without a promise (failing if it did not throw). */
function thrown(run: () => unknown): HttpError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(HttpError);
    return error as HttpError;
  }
  throw new Error('authenticate() did not throw');
}

describe('jwtBearer(): a cached token', () => {
  it('is verified with a promise once, then answered without one, the same principal each time', async () => {
    const bearer = jwtBearer({ publicKey: key.pem, issuer: ISSUER, audience: AUDIENCE });
    const token = await mint(key, { scope: 'read' });
    const first = bearer.authenticate(request(token));
    expect(isPromise(first)).toBe(true);
    const verified = await first;
    const again = bearer.authenticate(request(token));
    expect(isPromise(again)).toBe(false);
    expect(again).toEqual(verified);
    expect(again).toMatchObject({ sub: 'alice', scopes: ['read'], method: 'bearer' });
    // a principal of its own per request: changing one changes no other
    expect(again).not.toBe(verified);
  });

  it('keeps every token with a promise when the cache is off', async () => {
    const bearer = jwtBearer({
      publicKey: key.pem,
      issuer: ISSUER,
      audience: AUDIENCE,
      cache: false,
    });
    const token = await mint(key);
    await bearer.authenticate(request(token));
    expect(isPromise(bearer.authenticate(request(token)))).toBe(true);
  });

  it('answers with a promise when the mapping does', async () => {
    const bearer = jwtBearer({
      publicKey: key.pem,
      issuer: ISSUER,
      audience: AUDIENCE,
      toPrincipal: async (payload) => ({
        sub: `mapped:${payload.sub}`,
        scopes: [],
        method: 'bearer',
      }),
    });
    const token = await mint(key);
    await bearer.authenticate(request(token));
    const again = bearer.authenticate(request(token));
    expect(isPromise(again)).toBe(true);
    expect(await again).toMatchObject({ sub: 'mapped:alice' });
  });

  it('refuses at once a cached token whose mapping gives no subject', async () => {
    let calls = 0;
    const bearer = jwtBearer({
      publicKey: key.pem,
      issuer: ISSUER,
      audience: AUDIENCE,
      toPrincipal: (payload) =>
        ++calls === 1 ? { sub: String(payload.sub), scopes: [], method: 'bearer' } : undefined,
    });
    const token = await mint(key);
    await bearer.authenticate(request(token));
    const error = thrown(() => bearer.authenticate(request(token)));
    expect(error.status).toBe(401);
    expect(error.headers['WWW-Authenticate']).toBe(
      'Bearer realm="api", error="invalid_token", error_description="The access token is not valid."',
    );
  });

  it('refuses at once a cached DPoP-bound token sent as a bearer token', async () => {
    const bearer = jwtBearer({ publicKey: key.pem, issuer: ISSUER, audience: AUDIENCE });
    const token = await mint(key, { cnf: { jkt: 'A'.repeat(43) } });
    // verified with the keys (and kept), then refused: it came without its proof
    await expect(bearer.authenticate(request(token))).rejects.toMatchObject({ status: 401 });
    const error = thrown(() => bearer.authenticate(request(token)));
    expect(error.status).toBe(401);
    expect(error.headers['WWW-Authenticate']).toBe(
      'Bearer realm="api", error="invalid_token", error_description="The access token is not valid."',
    );
  });

  it('verifies a token of one of several issuers from the cache of that issuer', async () => {
    const other = await makeKey('k2');
    const bearer = jwtBearer({
      issuers: [
        { issuer: ISSUER, audience: AUDIENCE, publicKey: key.pem },
        { issuer: 'https://other.example.test', audience: AUDIENCE, publicKey: other.pem },
      ],
    });
    const token = await mint(other, { iss: 'https://other.example.test', sub: 'bob' });
    await bearer.authenticate(request(token));
    const again = bearer.authenticate(request(token));
    expect(isPromise(again)).toBe(false);
    expect(again).toMatchObject({ sub: 'bob' });
    // an issuer not listed is still refused (with a promise: nothing of it is cached)
    const stranger = await mint(other, { iss: 'https://stranger.example.test' });
    await expect(bearer.authenticate(request(stranger))).rejects.toMatchObject({ status: 401 });
  });

  it('stops answering from the cache at the token expiry', async () => {
    const bearer = jwtBearer({
      publicKey: key.pem,
      issuer: ISSUER,
      audience: AUDIENCE,
      clockTolerance: 0,
    });
    const token = await mint(key, { exp: now() + 1 });
    await bearer.authenticate(request(token));
    expect(isPromise(bearer.authenticate(request(token)))).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    const late = bearer.authenticate(request(token));
    expect(isPromise(late)).toBe(true);
    await expect(late).rejects.toMatchObject({ status: 401, code: 'ERR_JWT_EXPIRED' });
  });

  it('takes authenticate() to next() within the call, its guard over a memory store', async () => {
    const store = new MemoryRateLimitStore();
    try {
      const door = authenticate(
        [jwtBearer({ publicKey: key.pem, issuer: ISSUER, audience: AUDIENCE })],
        { guard: createCredentialGuard({ store }) },
      );
      const token = await mint(key, { sub: 'carol' });
      const pass = (req: ReturnType<typeof request>) => {
        let passed = false;
        const result = door(req, fakeResponse(req).res, () => {
          passed = true;
          return Promise.resolve();
        });
        return { passed, result };
      };
      const first = pass(request(token));
      expect(first.passed).toBe(false);
      await first.result;
      const req = request(token);
      expect(pass(req).passed).toBe(true);
      expect(getPrincipal(req)?.sub).toBe('carol');
    } finally {
      store.close();
    }
  });

  it('maps a token with its revocation ids and expiry in its default mapping', async () => {
    const bearer = jwtBearer({ publicKey: key.pem, issuer: ISSUER, audience: AUDIENCE });
    const exp = now() + 600;
    const token = await mint(key, { exp, jti: 't-1', grant_id: 'g-1' });
    const principal = await bearer.authenticate(request(token));
    expect(principal).toMatchObject({
      credentialIds: ['grant:g-1', 'token:t-1'],
      expiresAt: exp * 1000,
    });
    // the keys in the order they always had (JSON answers show them)
    expect(Object.keys(principal!)).toEqual([
      'sub',
      'scopes',
      'method',
      'claims',
      'credentialIds',
      'expiresAt',
    ]);
    // each request's own list: changing one changes no other
    const again = bearer.authenticate(request(token)) as unknown as { credentialIds: string[] };
    again.credentialIds.push('x');
    expect(
      (bearer.authenticate(request(token)) as unknown as typeof again).credentialIds,
    ).toHaveLength(2);
  });

  it('never changes the principal a mapping gives: a copy carries what is added', async () => {
    const shared = Object.freeze({ sub: 'svc', scopes: Object.freeze(['read']), method: 'bearer' });
    const bearer = jwtBearer({
      publicKey: key.pem,
      issuer: ISSUER,
      audience: AUDIENCE,
      toPrincipal: () => shared,
    });
    const exp = now() + 600;
    const token = await mint(key, { exp, jti: 't-2' });
    const principal = await bearer.authenticate(request(token));
    expect(principal).not.toBe(shared);
    expect(principal).toEqual({ ...shared, credentialIds: ['token:t-2'], expiresAt: exp * 1000 });
    expect(shared).toEqual({ sub: 'svc', scopes: ['read'], method: 'bearer' });
  });

  it("hands over a mapping's principal that carries its own ids and expiry as it is", async () => {
    const own = { sub: 'svc', scopes: [], method: 'bearer', credentialIds: [], expiresAt: 1 };
    const bearer = jwtBearer({
      publicKey: key.pem,
      issuer: ISSUER,
      audience: AUDIENCE,
      toPrincipal: () => own,
    });
    const token = await mint(key, { jti: 't-3' });
    expect(await bearer.authenticate(request(token))).toBe(own);
  });

  it('leaves principalFromClaims() as it was: no revocation ids, no expiry', () => {
    const principal = principalFromClaims({ sub: 'dan', jti: 't-4', exp: now() + 60 });
    expect(principal).toEqual({
      sub: 'dan',
      scopes: [],
      method: 'bearer',
      claims: expect.any(Object),
    });
  });
});
