// The server's own access tokens (src/oauth/tokens/verify.ts) and its token issuer
// (src/oauth/tokens/issue.ts) at the edges the main suites leave out: isAccessTokenRevoked on odd
// `jti` / `grant_id` values, the RFC 9068 claims ownAccessTokens requires, the binding
// createOwnTokenVerifier takes from the token itself (DPoP `jkt`, certificate `x5t#S256`),
// how both follow the key set (a new verifier only when the published kids change, none when
// the same set object comes back, a failed build retried), the verifier's cache bound, the
// DPoP replay store across key-set changes, the option errors, the claims ID tokens
// release and verifyOwnIdToken requires, the audiences createAnyResourceVerifier takes, a
// deleted client's and a delegated token's revocation, and the revocation ids
// (`credentialIds`) ownAccessTokens gives the principal. Each test builds its own context,
// key set and servers, so that what the factories set up is exercised by the test that needs
// it.
import { generateKeyPairSync, randomUUID, type webcrypto } from 'node:crypto';
import {
  calculateJwkThumbprint,
  decodeJwt,
  exportJWK,
  generateKeyPair,
  type JWK,
  SignJWT,
} from 'jose';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { authenticate } from '../../../src/auth/authenticate.js';
import { accessTokenHash, createDpopVerifier } from '../../../src/auth/dpop/dpop.js';
import { createSessions } from '../../../src/auth/session/session.js';
import type { Middleware } from '../../../src/core/compose.js';
import type { JwtClaims } from '../../../src/core/jwt-types.js';
import { getPrincipal } from '../../../src/core/principal.js';
import { sendJson } from '../../../src/core/send.js';
import { MemoryClientStore } from '../../../src/oauth/clients/store.js';
import { createOAuthContext, type OAuthContext } from '../../../src/oauth/context.js';
import { MemoryRecordStore } from '../../../src/oauth/store/store.js';
import { claimsForScopes, createTokenIssuer } from '../../../src/oauth/tokens/issue.js';
import { createKeySet, type KeySet, type SigningKey } from '../../../src/oauth/tokens/key-set.js';
import {
  createAnyResourceVerifier,
  createOwnTokenVerifier,
  isAccessTokenRevoked,
  type OwnAccessTokenOptions,
  ownAccessTokens,
  revokedClientKey,
  verifyOwnIdToken,
} from '../../../src/oauth/tokens/verify.js';
import { closeAll, json, type Listening, request, serve } from '../../helpers/http.js';

afterAll(closeAll);

const ISSUER = 'https://auth.example.test';
const ORIGIN = 'https://api.example.test';
const INVALID_TOKEN =
  'Bearer realm="api", error="invalid_token", error_description="The access token is not valid."';

/** A store that records which revocation keys were looked up, and says yes to all of them. */
class EverythingRevoked extends MemoryRecordStore {
  readonly asked: string[] = [];
  override isGrantRevoked(grantId: string): boolean {
    this.asked.push(grantId);
    return true;
  }
}

/** A context over `keys` (a new ES256 set unless given), built by the calling test. */
async function context(
  keys?: KeySet,
  store: MemoryRecordStore = new MemoryRecordStore(),
): Promise<OAuthContext> {
  return createOAuthContext({
    issuer: ISSUER,
    clients: new MemoryClientStore([]),
    keys: keys ?? (await createKeySet({ algorithm: 'ES256' })),
    users: { verify: () => undefined, get: () => undefined },
    sessions: createSessions({ allowedOrigins: [ISSUER] }),
    store,
  });
}

/** An access token of `ctx` as its token endpoint issues them. */
async function issue(ctx: OAuthContext, extra: { jkt?: string; grantId?: string } = {}) {
  const { token } = await ctx.tokens.accessToken({
    sub: 'alice',
    clientId: 'demo-web',
    scope: ['read:messages'],
    ...extra,
  });
  return token;
}

/** A token signed by the context's signing key with exactly these claims (`iss` added). */
async function signed(ctx: OAuthContext, claims: JwtClaims, typ = 'at+jwt'): Promise<string> {
  const key = ctx.keys.signingKey();
  return new SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ })
    .setIssuer(ISSUER)
    .sign(key.privateKey);
}

/** Every RFC 9068 claim, valid now. */
function fullClaims(): JwtClaims {
  const now = Math.floor(Date.now() / 1000);
  return {
    sub: 'alice',
    aud: ISSUER,
    client_id: 'demo-web',
    iat: now,
    exp: now + 300,
    jti: randomUUID(),
  };
}

/** `/api/me` behind ownAccessTokens(ctx, options), answering the principal. */
function api(ctx: OAuthContext, options?: OwnAccessTokenOptions): Promise<Listening> {
  const me: Middleware = (req, res) => sendJson(res, 200, { sub: getPrincipal(req)?.sub });
  return serve([authenticate([ownAccessTokens(ctx, options)]), me]);
}

/** A DPoP key pair of a client, with its thumbprint. */
async function dpopKey() {
  const pair = await generateKeyPair('ES256', { extractable: true });
  const jwk = await exportJWK(pair.publicKey);
  return { privateKey: pair.privateKey, jwk, jkt: await calculateJwkThumbprint(jwk, 'sha256') };
}

/** A DPoP proof for GET /api/me with `token`. */
function proofFor(
  key: { privateKey: webcrypto.CryptoKey; jwk: JWK },
  token: string,
): Promise<string> {
  return new SignJWT({
    jti: randomUUID(),
    htm: 'GET',
    htu: `${ORIGIN}/api/me`,
    iat: Math.floor(Date.now() / 1000),
    ath: accessTokenHash(token),
  })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: key.jwk })
    .sign(key.privateKey);
}

/** An ES256 signing key with a chosen `kid`. */
async function keyWithKid(kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = await exportJWK(publicKey);
  return {
    kid,
    alg: 'ES256',
    privateKey,
    publicJwk: { ...jwk, kid, use: 'sig', alg: 'ES256' },
    activatesAt: 0,
  };
}

/** A hand-made key set: publishes `published` (a new set object per change), signs with `signing`. */
function manualKeySet(published: SigningKey[], signing: SigningKey) {
  let value = { keys: published.map((k) => k.publicJwk) };
  let signer = signing;
  const keySet: KeySet & { set(keys: SigningKey[], signWith: SigningKey): void } = {
    signingKey: () => signer,
    jwks: () => value,
    rotate: () => Promise.reject(new Error('not here')),
    set(keys, signWith) {
      value = { keys: keys.map((k) => k.publicJwk) };
      signer = signWith;
    },
  };
  return keySet;
}

describe('isAccessTokenRevoked', () => {
  it('a token with neither grant_id nor jti is not revoked, and nothing is looked up', async () => {
    const store = new EverythingRevoked();
    const ctx = await context(undefined, store);
    expect(await isAccessTokenRevoked(ctx, { sub: 'svc' })).toBe(false);
    expect(store.asked).toEqual([]);
  });

  it('looks a grantless token up by its jti only when that is a non-empty string', async () => {
    const store = new EverythingRevoked();
    const ctx = await context(undefined, store);
    expect(await isAccessTokenRevoked(ctx, { jti: '' })).toBe(false);
    // claims as an unchecked payload may carry them (JwtClaims types `jti` as a string)
    expect(await isAccessTokenRevoked(ctx, { jti: 42 } as unknown as JwtClaims)).toBe(false);
    expect(await isAccessTokenRevoked(ctx, { jti: ['a'] } as unknown as JwtClaims)).toBe(false);
    expect(store.asked).toEqual([]);
    expect(await isAccessTokenRevoked(ctx, { jti: 'abc' })).toBe(true);
    expect(store.asked).toEqual(['jti:abc']);
  });

  it('a jti that is not revoked is live', async () => {
    const store = new MemoryRecordStore();
    const ctx = await context(undefined, store);
    store.revokeGrant('jti:other', 60_000);
    expect(await isAccessTokenRevoked(ctx, { jti: 'abc' })).toBe(false);
    store.revokeGrant('jti:abc', 60_000);
    expect(await isAccessTokenRevoked(ctx, { jti: 'abc' })).toBe(true);
  });

  it('an empty or non-string grant_id counts as revoked without a look-up', async () => {
    const store = new MemoryRecordStore();
    const ctx = await context(undefined, store);
    const lookUp = vi.spyOn(store, 'isGrantRevoked');
    expect(await isAccessTokenRevoked(ctx, { grant_id: '', jti: 'abc' })).toBe(true);
    expect(await isAccessTokenRevoked(ctx, { grant_id: 7, jti: 'abc' })).toBe(true);
    expect(lookUp).not.toHaveBeenCalled();
    expect(await isAccessTokenRevoked(ctx, { grant_id: 'g-1', jti: 'abc' })).toBe(false);
    expect(lookUp.mock.calls).toEqual([['g-1']]);
    store.revokeGrant('g-1', 60_000);
    expect(await isAccessTokenRevoked(ctx, { grant_id: 'g-1', jti: 'abc' })).toBe(true);
  });
});

describe('ownAccessTokens options', () => {
  it('names itself when an option is unknown', async () => {
    const ctx = await context();
    expect(() => ownAccessTokens(ctx, { relm: 'api' } as OwnAccessTokenOptions)).toThrow(
      expect.objectContaining({
        name: 'TypeError',
        code: 'ERR_INVALID_OPTION',
        message: 'ownAccessTokens(): unknown option `relm`. Did you mean `realm`?',
      }),
    );
  });

  it('names itself and the option when toPrincipal is not a function', async () => {
    const ctx = await context();
    expect(() =>
      ownAccessTokens(ctx, { toPrincipal: 'sub' } as unknown as OwnAccessTokenOptions),
    ).toThrow(
      expect.objectContaining({
        code: 'ERR_INVALID_OPTION',
        message: 'ownAccessTokens(): `toPrincipal` must be a function',
      }),
    );
  });
});

describe('ownAccessTokens requires the RFC 9068 claims', () => {
  it('refuses a token of this server without sub, client_id, iat or jti', async () => {
    const ctx = await context();
    const server = await api(ctx);
    const whole = await request(server, '/api/me', {
      headers: { authorization: `Bearer ${await signed(ctx, fullClaims())}` },
    });
    expect({ status: whole.status, body: json(whole) }).toEqual({
      status: 200,
      body: { sub: 'alice' },
    });
    for (const claim of ['sub', 'client_id', 'iat', 'jti']) {
      const claims = fullClaims();
      delete claims[claim];
      const reply = await request(server, '/api/me', {
        headers: { authorization: `Bearer ${await signed(ctx, claims)}` },
      });
      expect({ claim, status: reply.status, challenge: reply.headers['www-authenticate'] }).toEqual(
        { claim, status: 401, challenge: INVALID_TOKEN },
      );
    }
  });
});

describe('createOwnTokenVerifier and bound tokens', () => {
  it('takes a DPoP-bound token with its own binding when no context is given', async () => {
    const ctx = await context();
    const token = await issue(ctx, { jkt: 'thumb-1' });
    const { payload } = await createOwnTokenVerifier(ctx).verify(token);
    expect(payload.cnf).toEqual({ jkt: 'thumb-1' });
  });

  it('takes a certificate-bound token with its own binding when no context is given', async () => {
    const ctx = await context();
    const token = await signed(ctx, { ...fullClaims(), cnf: { 'x5t#S256': 'cert-1' } });
    const { payload } = await createOwnTokenVerifier(ctx).verify(token);
    expect(payload.cnf).toEqual({ 'x5t#S256': 'cert-1' });
  });

  it('takes a token bound both ways with both of its bindings', async () => {
    const ctx = await context();
    const cnf = { jkt: 'thumb-2', 'x5t#S256': 'cert-2' };
    const token = await signed(ctx, { ...fullClaims(), cnf });
    const { payload } = await createOwnTokenVerifier(ctx).verify(token);
    expect(payload.cnf).toEqual(cnf);
  });

  it('checks a given context instead of the token’s own binding', async () => {
    const ctx = await context();
    const token = await issue(ctx, { jkt: 'thumb-1' });
    const verifier = createOwnTokenVerifier(ctx);
    await expect(verifier.verify(token, { dpopKeyThumbprint: 'thumb-2' })).rejects.toMatchObject({
      code: 'ERR_JWT_INVALID',
    });
    await expect(verifier.verify(token, {})).rejects.toMatchObject({ code: 'ERR_JWT_INVALID' });
    const { payload } = await verifier.verify(token, { dpopKeyThumbprint: 'thumb-1' });
    expect(payload.sub).toBe('alice');
  });
});

describe('following the key set', () => {
  it('a verifier whose first build failed (the key store was down) builds again', async () => {
    const real = await createKeySet({ algorithm: 'ES256' });
    let down = false;
    const keys: KeySet = {
      signingKey() {
        if (down) throw new Error('the key store is down');
        return real.signingKey();
      },
      jwks: () => real.jwks(),
      rotate: (options) => real.rotate(options),
    };
    const ctx = await context(keys);
    const token = await issue(ctx);
    const verifier = createOwnTokenVerifier(ctx);
    down = true;
    // (thrown synchronously by verify(): the build runs before any promise is made)
    await expect(async () => verifier.verify(token)).rejects.toThrow('the key store is down');
    down = false;
    const { payload } = await verifier.verify(token);
    expect(payload.sub).toBe('alice');
  });

  it('an unchanged key set (the same object) is not walked again', async () => {
    const real = await createKeySet({ algorithm: 'ES256' });
    const list = real.jwks().keys;
    let reads = 0;
    const published = {
      get keys() {
        reads++;
        return list;
      },
    };
    const keys: KeySet = {
      signingKey: () => real.signingKey(),
      jwks: () => published,
      rotate: (options) => real.rotate(options),
    };
    const ctx = await context(keys);
    const verifier = createOwnTokenVerifier(ctx);
    await verifier.verify(await issue(ctx));
    const afterFirst = reads;
    for (let i = 0; i < 3; i++) await verifier.verify(await issue(ctx));
    expect(reads).toBe(afterFirst);
  });

  it('follows a set that swapped its only key for another', async () => {
    const a = await keyWithKid('key-a');
    const b = await keyWithKid('key-b');
    const keys = manualKeySet([a], a);
    const ctx = await context(keys);
    const verifier = createOwnTokenVerifier(ctx);
    const byA = await issue(ctx);
    expect((await verifier.verify(byA)).protectedHeader.kid).toBe('key-a');
    keys.set([b], b);
    const byB = await issue(ctx);
    expect((await verifier.verify(byB)).protectedHeader.kid).toBe('key-b');
    await expect(verifier.verify(await issue(ctx))).resolves.toBeDefined();
    // a fresh token of a key no longer published is refused
    keys.set([a], a);
    await expect(verifier.verify(byB)).rejects.toMatchObject({ code: 'ERR_JWT_INVALID' });
  });

  it('tells kid lists apart that only differ in where one kid ends', async () => {
    const ab = await keyWithKid('ab');
    const c = await keyWithKid('c');
    const a = await keyWithKid('a');
    const bc = await keyWithKid('bc');
    const keys = manualKeySet([ab, c], ab);
    const ctx = await context(keys);
    const verifier = createOwnTokenVerifier(ctx);
    expect((await verifier.verify(await issue(ctx))).protectedHeader.kid).toBe('ab');
    keys.set([a, bc], a);
    expect((await verifier.verify(await issue(ctx))).protectedHeader.kid).toBe('a');
  });

  it('keeps its verifier, and its cache, when the set object changes but not its keys', async () => {
    let now = Date.now();
    const keys = await createKeySet({ algorithm: 'ES256', now: () => now, publishAheadMs: 1_000 });
    await keys.rotate(); // published now, signs in a second
    const ctx = await context(keys);
    const verifier = createOwnTokenVerifier(ctx);
    const token = await issue(ctx);
    const first = await verifier.verify(token);
    const before = keys.jwks();
    now += 1_000; // the new key activates: a new set object, the same kids
    expect(keys.jwks()).not.toBe(before);
    expect(keys.jwks().keys.map((k) => k.kid)).toEqual(before.keys.map((k) => k.kid));
    expect(await verifier.verify(token)).toBe(first);
  });

  it('keeps the DPoP replay store when the set object changes but not its keys', async () => {
    let now = Date.now();
    const keys = await createKeySet({ algorithm: 'ES256', now: () => now, publishAheadMs: 1_000 });
    await keys.rotate();
    const ctx = await context(keys);
    const server = await api(ctx, { dpop: { origin: ORIGIN } });
    const client = await dpopKey();
    const token = await issue(ctx, { jkt: client.jkt });
    const proof = await proofFor(client, token);
    const call = () =>
      request(server, '/api/me', { headers: { authorization: `DPoP ${token}`, dpop: proof } });
    const accepted = await call();
    expect({ status: accepted.status, body: json(accepted) }).toEqual({
      status: 200,
      body: { sub: 'alice' },
    });
    now += 1_000; // the new key activates: a new set object, the same kids
    const replayed = await call();
    expect({ status: replayed.status, challenge: replayed.headers['www-authenticate'] }).toEqual({
      status: 401,
      challenge:
        'DPoP realm="api", error="invalid_dpop_proof", error_description="The DPoP proof was used already.", algs="ES256 EdDSA PS256 RS256"',
    });
  });

  // ownAccessTokens builds a new jwtBearer whenever the published kids change: its DPoP
  // verifier (and replay store) is made once, or a proof accepted just before a key rotation
  // would be accepted once more right after it (RFC 9449 §11.1: a proof is single-use)
  it('refuses a replayed DPoP proof across a key rotation', async () => {
    const keys = await createKeySet({ algorithm: 'ES256' });
    const ctx = await context(keys);
    const server = await api(ctx, { dpop: { origin: ORIGIN } });
    const client = await dpopKey();
    const token = await issue(ctx, { jkt: client.jkt });
    const proof = await proofFor(client, token);
    const call = () =>
      request(server, '/api/me', { headers: { authorization: `DPoP ${token}`, dpop: proof } });
    expect((await call()).status).toBe(200);
    await keys.rotate(); // a new kid is published
    expect((await call()).status).toBe(401);
  });

  it('uses the DPoP verifier it is given, and refuses a dpop option that is null', async () => {
    const ctx = await context();
    const verifier = createDpopVerifier();
    const check = vi.spyOn(verifier, 'check');
    const server = await api(ctx, { dpop: { origin: ORIGIN, verifier } });
    const client = await dpopKey();
    const token = await issue(ctx, { jkt: client.jkt });
    const proof = await proofFor(client, token);
    const reply = await request(server, '/api/me', {
      headers: { authorization: `DPoP ${token}`, dpop: proof },
    });
    expect(reply.status).toBe(200);
    expect(check).toHaveBeenCalledOnce();
    // a proof the shared verifier has seen elsewhere is a replay here too
    await expect(
      verifier.verify(proof, { method: 'GET', url: `${ORIGIN}/api/me`, accessToken: token }),
    ).rejects.toThrow('The DPoP proof was used already.');
    expect(() =>
      ownAccessTokens(ctx, { dpop: null as unknown as OwnAccessTokenOptions['dpop'] }),
    ).toThrow("jwtBearer(): `dpop` must be an object with the API's `origin`");
  });
});

describe('the verified-token cache of createOwnTokenVerifier', () => {
  it('holds 1000 tokens: the 1001st pushes the oldest out', async () => {
    const ctx = await context();
    const verifier = createOwnTokenVerifier(ctx);
    const oldest = await issue(ctx);
    const first = await verifier.verify(oldest);
    expect(await verifier.verify(oldest)).toBe(first); // served from the cache
    const others = await Promise.all(Array.from({ length: 999 }, () => issue(ctx)));
    const second = await verifier.verify(others[0]!);
    for (const token of others.slice(1)) await verifier.verify(token);
    expect(await verifier.verify(oldest)).toBe(first); // 1000 tokens: all there
    // `oldest` was used last: one more token pushes out the least recently used, others[0]
    await verifier.verify(await issue(ctx));
    expect(await verifier.verify(oldest)).toBe(first);
    const again = await verifier.verify(others[0]!);
    expect(again).not.toBe(second);
    expect(again).toEqual(second);
  });
});

describe('the claims of the token issuer', () => {
  const alice = {
    sub: 'alice',
    name: 'Alice',
    picture: 'https://example.test/a.png',
    email: 'a@example.test',
    email_verified: true,
    role: 'admin',
  };

  it('profile releases name and picture, email releases email and email_verified', () => {
    expect(claimsForScopes(alice, ['openid'])).toStrictEqual({ sub: 'alice' });
    expect(claimsForScopes(alice, ['openid', 'profile'])).toStrictEqual({
      sub: 'alice',
      name: 'Alice',
      picture: 'https://example.test/a.png',
    });
    expect(claimsForScopes(alice, ['email'])).toStrictEqual({
      sub: 'alice',
      email: 'a@example.test',
      email_verified: true,
    });
  });

  it('releases no claim the user does not have, not even as undefined', () => {
    const claims = claimsForScopes({ sub: 'bob' }, ['openid', 'profile', 'email']);
    expect(claims).toStrictEqual({ sub: 'bob' });
    expect(Object.keys(claims)).toEqual(['sub']);
  });

  it("idTokenClaims 'all' releases every standard claim whatever the scope", async () => {
    const keys = await createKeySet({ algorithm: 'ES256' });
    const tokens = createTokenIssuer({ issuer: ISSUER, keys, idTokenClaims: 'all' });
    const token = await tokens.idToken({ clientId: 'demo-web', user: alice, scope: ['openid'] });
    const payload = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8'));
    expect(payload).toMatchObject({
      sub: 'alice',
      name: 'Alice',
      picture: 'https://example.test/a.png',
      email: 'a@example.test',
      email_verified: true,
      aud: 'demo-web',
    });
    expect(payload.role).toBeUndefined();
  });

  it('names accessTokenTtl when it is not a duration', async () => {
    const keys = await createKeySet({ algorithm: 'ES256' });
    expect(() => createTokenIssuer({ issuer: ISSUER, keys, accessTokenTtl: 1.5 })).toThrow(
      expect.objectContaining({
        code: 'ERR_INVALID_OPTION',
        message: 'createTokenIssuer(): `accessTokenTtl` must be milliseconds, at least 0',
      }),
    );
  });

  it('signs before anything else has loaded jose', async () => {
    const keys = await createKeySet({ algorithm: 'ES256' });
    vi.resetModules();
    const fresh = await import('../../../src/oauth/tokens/issue.js');
    const lazy = await import('../../../src/internal/lazy.js');
    expect(lazy.loadedJose()).toBeUndefined();
    const tokens = fresh.createTokenIssuer({ issuer: ISSUER, keys });
    const { token } = await tokens.accessToken({ sub: 'svc', clientId: 'svc', scope: [] });
    expect(token.split('.')).toHaveLength(3);
    expect(lazy.loadedJose()).toBeDefined();
  });
});

/** A store that records which revocation keys were looked up, and says yes to `jti:` keys only. */
class TokensRevoked extends MemoryRecordStore {
  readonly asked: string[] = [];
  override isGrantRevoked(grantId: string): boolean {
    this.asked.push(grantId);
    return grantId.startsWith('jti:');
  }
}

describe('isAccessTokenRevoked: deleted clients and delegated tokens', () => {
  it('a token of a deleted client is revoked, whatever its grant', async () => {
    const store = new MemoryRecordStore();
    const ctx = await context(undefined, store);
    expect(revokedClientKey('demo-web')).toBe('client:demo-web');
    store.revokeGrant('client:demo-web', 60_000);
    expect(await isAccessTokenRevoked(ctx, { client_id: 'demo-web', grant_id: 'g-1' })).toBe(true);
    expect(await isAccessTokenRevoked(ctx, { client_id: 'demo-web', jti: 'abc' })).toBe(true);
    expect(await isAccessTokenRevoked(ctx, { client_id: 'other', grant_id: 'g-1' })).toBe(false);
  });

  it('a delegated token (act) is looked up by its jti only when that is a non-empty string', async () => {
    const store = new TokensRevoked();
    const ctx = await context(undefined, store);
    const act = { sub: 'svc' };
    expect(await isAccessTokenRevoked(ctx, { grant_id: 'g-1', act, jti: '' })).toBe(false);
    expect(
      await isAccessTokenRevoked(ctx, { grant_id: 'g-1', act, jti: 42 } as unknown as JwtClaims),
    ).toBe(false);
    expect(await isAccessTokenRevoked(ctx, { grant_id: 'g-1', act })).toBe(false);
    expect(store.asked).toEqual(['g-1', 'g-1', 'g-1']);
    expect(await isAccessTokenRevoked(ctx, { grant_id: 'g-1', act, jti: 'abc' })).toBe(true);
    expect(store.asked.slice(3)).toEqual(['g-1', 'jti:abc']);
    // a token that is not delegated ends with its grant only
    expect(await isAccessTokenRevoked(ctx, { grant_id: 'g-1', jti: 'abc' })).toBe(false);
  });
});

describe('verifyOwnIdToken', () => {
  /** ID token claims for `demo-web`, valid now. */
  const idClaims = (): JwtClaims => {
    const now = Math.floor(Date.now() / 1000);
    return { sub: 'alice', aud: 'demo-web', iat: now, exp: now + 300 };
  };

  it('takes an ID token of this server for the client', async () => {
    const ctx = await context();
    const token = await ctx.tokens.idToken({
      clientId: 'demo-web',
      user: { sub: 'alice' },
      scope: ['openid'],
    });
    expect((await verifyOwnIdToken(ctx, token, 'demo-web')).payload.sub).toBe('alice');
    expect(
      (await verifyOwnIdToken(ctx, await signed(ctx, idClaims(), 'JWT'), 'demo-web')).payload,
    ).toMatchObject({ sub: 'alice', aud: 'demo-web' });
  });

  it('refuses an ID token without sub or iat (OpenID Connect Core §2)', async () => {
    const ctx = await context();
    for (const claim of ['sub', 'iat']) {
      const claims = idClaims();
      delete claims[claim];
      await expect(
        verifyOwnIdToken(ctx, await signed(ctx, claims, 'JWT'), 'demo-web'),
        claim,
      ).rejects.toMatchObject({ name: 'JwtError' });
    }
  });
});

describe('createAnyResourceVerifier', () => {
  it('takes tokens for the resources and the audiences in `more`, and no other', async () => {
    const ctx = await context();
    const token = (aud: string) => signed(ctx, { ...fullClaims(), aud });
    const resources = createAnyResourceVerifier(ctx);
    expect((await resources.verify(await token(ISSUER))).payload.aud).toBe(ISSUER);
    // no audience beyond the resources without `more`: not a URI, nor a name of a
    // token-exchange target (with spaces, the one StrykerJS's `more` default mutant adds)
    for (const aud of ['https://other.example.test', 'billing', 'Stryker was here']) {
      await expect(resources.verify(await token(aud)), aud).rejects.toMatchObject({
        name: 'JwtError',
      });
    }
    const more = createAnyResourceVerifier(ctx, ['billing']);
    expect((await more.verify(await token('billing'))).payload.aud).toBe('billing');
    expect((await more.verify(await token(ISSUER))).payload.aud).toBe(ISSUER);
  });
});

describe('ownAccessTokens resource option', () => {
  it('refuses a resource that is not a non-empty string, naming itself', async () => {
    const ctx = await context();
    for (const resource of ['', 42, null]) {
      expect(
        () => ownAccessTokens(ctx, { resource } as unknown as OwnAccessTokenOptions),
        String(resource),
      ).toThrow(
        expect.objectContaining({
          code: 'ERR_INVALID_OPTION',
          message: 'ownAccessTokens(): `resource` must be a resource identifier',
        }),
      );
    }
    expect(() => ownAccessTokens(ctx, { resource: 'https://api.example.test' })).not.toThrow();
  });
});

describe('the revocation ids ownAccessTokens gives the principal', () => {
  /** `/api/me` behind ownAccessTokens(ctx, options), answering the principal's revocation ids. */
  function idsApi(ctx: OAuthContext, options?: OwnAccessTokenOptions): Promise<Listening> {
    const me: Middleware = (req, res) => {
      const principal = getPrincipal(req);
      sendJson(res, 200, {
        sub: principal?.sub,
        has: principal !== undefined && 'credentialIds' in principal,
        ids: principal?.credentialIds ?? null,
      });
    };
    return serve([authenticate([ownAccessTokens(ctx, options)]), me]);
  }

  const idsOf = async (server: Listening, token: string) => {
    const reply = await request(server, '/api/me', {
      headers: { authorization: `Bearer ${token}` },
    });
    return { status: reply.status, body: json(reply) };
  };

  it('names the grant, the token and the client, in that order', async () => {
    const ctx = await context();
    const server = await idsApi(ctx);
    const { token, jti } = await ctx.tokens.accessToken({
      sub: 'alice',
      clientId: 'demo-web',
      scope: ['read:messages'],
      grantId: 'g-1',
    });
    expect(await idsOf(server, token)).toEqual({
      status: 200,
      body: { sub: 'alice', has: true, ids: ['grant:g-1', `token:${jti}`, 'client:demo-web'] },
    });
  });

  it('names no grant for a token without one', async () => {
    const ctx = await context();
    const server = await idsApi(ctx);
    const { token, jti } = await ctx.tokens.accessToken({
      sub: 'svc',
      clientId: 'demo-service',
      scope: [],
    });
    expect(await idsOf(server, token)).toEqual({
      status: 200,
      body: { sub: 'svc', has: true, ids: [`token:${jti}`, 'client:demo-service'] },
    });
  });

  it('leaves out a jti or client_id that is empty or not a string', async () => {
    const ctx = await context();
    const server = await idsApi(ctx);
    const cases: [JwtClaims, string[]][] = [
      [{ jti: '' }, ['client:demo-web']],
      [{ jti: 42 } as unknown as JwtClaims, ['client:demo-web']],
      [{ jti: 'j-1', client_id: '' }, ['token:j-1']],
      [{ jti: 'j-1', client_id: 7 } as unknown as JwtClaims, ['token:j-1']],
    ];
    for (const [claims, ids] of cases) {
      const token = await signed(ctx, { ...fullClaims(), ...claims });
      expect({ claims, ...(await idsOf(server, token)) }).toEqual({
        claims,
        status: 200,
        body: { sub: 'alice', has: true, ids },
      });
    }
  });

  it('adds no revocation ids to a token that names none', async () => {
    const ctx = await context();
    const server = await idsApi(ctx);
    const token = await signed(ctx, { ...fullClaims(), jti: '', client_id: '' });
    expect(await idsOf(server, token)).toEqual({
      status: 200,
      body: { sub: 'alice', has: false, ids: null },
    });
  });

  it('keeps the revocation ids its mapping set', async () => {
    const ctx = await context();
    const server = await idsApi(ctx, {
      toPrincipal: (payload) => ({
        sub: String(payload.sub),
        scopes: [],
        method: 'bearer',
        credentialIds: ['custom:1'],
      }),
    });
    const token = await issue(ctx, { grantId: 'g-1' });
    expect(await idsOf(server, token)).toEqual({
      status: 200,
      body: { sub: 'alice', has: true, ids: ['custom:1'] },
    });
  });

  it('gives the principal of its mapping the token’s end with the ids, and keeps an end it set', async () => {
    const ctx = await context();
    const ends: (number | undefined)[] = [];
    const me: Middleware = (req, res) => {
      ends.push(getPrincipal(req)?.expiresAt);
      sendJson(res, 200, { ids: getPrincipal(req)?.credentialIds ?? null });
    };
    const mapped = (expiresAt?: number): OwnAccessTokenOptions => ({
      toPrincipal: (payload) => ({
        sub: String(payload.sub),
        scopes: [],
        method: 'bearer',
        ...(expiresAt !== undefined && { expiresAt }),
      }),
    });
    const token = await issue(ctx, { grantId: 'g-1' });
    const exp = decodeJwt(token).exp! * 1000;
    for (const options of [mapped(), mapped(5_000)]) {
      const server = await serve([authenticate([ownAccessTokens(ctx, options)]), me]);
      const reply = await request(server, '/api/me', {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(json(reply)).toEqual({ ids: expect.arrayContaining(['grant:g-1']) });
    }
    expect(ends).toEqual([exp, 5_000]);
  });

  it('refuses the token, 401, when its mapping answers undefined', async () => {
    const ctx = await context();
    const server = await idsApi(ctx, { toPrincipal: () => undefined });
    const reply = await request(server, '/api/me', {
      headers: { authorization: `Bearer ${await issue(ctx, { grantId: 'g-1' })}` },
    });
    expect({ status: reply.status, challenge: reply.headers['www-authenticate'] }).toEqual({
      status: 401,
      challenge: INVALID_TOKEN,
    });
  });
});
