// DPoP (RFC 9449) on the reference server, from outside: openid-client and oauth4webapi for the
// happy paths, hand-made proofs (jose) for the attacks, over real sockets to its own process.
import { createHash, randomUUID } from 'node:crypto';
import {
  request as httpRequest,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
} from 'node:http';
import {
  base64url,
  calculateJwkThumbprint,
  decodeJwt,
  exportJWK,
  generateKeyPair,
  type JWK,
  SignJWT,
} from 'jose';
import * as oauth from 'oauth4webapi';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signInAndApprove as approveAt } from '../helpers/browser.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

let server: RunningServer;
let tokenEndpoint: string;

beforeAll(async () => {
  // the hostile tables refuse many credentials from 127.0.0.1: keep the guard out of the way
  server = await startReferenceServer({ RATE_LIMIT: '100000' });
  const metadata = (await (
    await fetch(`${server.url}/.well-known/openid-configuration`)
  ).json()) as { token_endpoint: string };
  tokenEndpoint = metadata.token_endpoint;
});

afterAll(async () => {
  await server?.stop();
});

const insecure = { execute: [client.allowInsecureRequests] };

async function configFor(clientId: string, secret?: string) {
  const auth = secret === undefined ? client.None() : client.ClientSecretBasic(secret);
  return client.discovery(new URL(server.url), clientId, undefined, auth, insecure);
}

const url = (path: string) => `${server.url}${path}`;

/** base64url(SHA-256(token)): a proof's `ath`. */
const athOf = (token: string) => createHash('sha256').update(token).digest('base64url');

/** The RFC 7638 thumbprint of a key pair's public key (what `cnf.jkt` must be). */
async function thumbprintOf(keyPair: { publicKey: PublicKey }): Promise<string> {
  return calculateJwkThumbprint(await exportJWK(keyPair.publicKey));
}

/** A key pair as jose makes it (WebCrypto keys; the DOM's `CryptoKey` type is not in lib). */
type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;
type PublicKey = Parameters<typeof exportJWK>[0];

/** A proof key made with jose: its pair, public JWK and thumbprint. */
interface ProofKey {
  alg: string;
  privateKey: KeyPair['privateKey'];
  publicKey: KeyPair['publicKey'];
  jwk: JWK;
  jkt: string;
}

async function proofKey(alg = 'ES256'): Promise<ProofKey> {
  const pair = await generateKeyPair(alg, { extractable: true });
  const jwk = await exportJWK(pair.publicKey);
  return { alg, ...pair, jwk, jkt: await calculateJwkThumbprint(jwk) };
}

/** What a hand-made proof says; `null` leaves a claim or header out. */
interface ProofSpec {
  htm: string;
  htu: string;
  ath?: string | null;
  /** Seconds since the epoch; now unless given. */
  iat?: number;
  jti?: string | null;
  typ?: string;
  /** The `jwk` header: the key's own public JWK unless given. */
  jwk?: JWK | null;
  /** Signs with this key instead of `key` (its `jwk` header still `key`'s unless told). */
  signer?: ProofKey;
}

const now = () => Math.floor(Date.now() / 1000);

/** A DPoP proof signed by `key` (RFC 9449 §4.2), as the spec describes, or bent as told. */
async function makeProof(key: ProofKey, spec: ProofSpec): Promise<string> {
  const payload: Record<string, unknown> = {
    htm: spec.htm,
    htu: spec.htu,
    iat: spec.iat ?? now(),
  };
  if (spec.jti !== null) payload.jti = spec.jti ?? randomUUID();
  if (spec.ath !== undefined && spec.ath !== null) payload.ath = spec.ath;
  const header: Record<string, unknown> = { alg: key.alg, typ: spec.typ ?? 'dpop+jwt' };
  if (spec.jwk !== null) header.jwk = spec.jwk ?? key.jwk;
  const signer = spec.signer ?? key;
  return new SignJWT(payload).setProtectedHeader(header as { alg: string }).sign(signer.privateKey);
}

/** An unsecured JWT (`alg: none`): a header, a payload and no signature. */
function unsecuredProof(key: ProofKey, htm: string, htu: string, ath?: string): string {
  const encode = (value: unknown) => base64url.encode(JSON.stringify(value));
  const payload = { htm, htu, iat: now(), jti: randomUUID(), ...(ath !== undefined && { ath }) };
  return `${encode({ alg: 'none', typ: 'dpop+jwt', jwk: key.jwk })}.${encode(payload)}.`;
}

/** A proof signed with HMAC (HS256), its "key" in the `jwk` header as an `oct` JWK. */
async function hmacProof(htm: string, htu: string, ath?: string): Promise<string> {
  const secret = new TextEncoder().encode('a-shared-secret-of-at-least-32-bytes!');
  return (
    new SignJWT({ htm, htu, jti: randomUUID(), ...(ath !== undefined && { ath }) })
      // an `oct` JWK is no public key: jose's header type has no `k`
      .setProtectedHeader({
        alg: 'HS256',
        typ: 'dpop+jwt',
        jwk: { kty: 'oct', k: base64url.encode(secret) } as JWK,
      })
      .setIssuedAt()
      .sign(secret)
  );
}

/** What {@link send} got back; the body of an event stream is not read (it does not end). */
interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * Sends one request with `node:http` (a header given as an array goes as several lines); an
 * event stream is answered once its headers arrive, and the connection is then dropped.
 */
function send(
  path: string,
  init: { method?: string; headers?: OutgoingHttpHeaders; body?: string } = {},
): Promise<Answer> {
  const target = new URL(path, server.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: init.method ?? 'GET',
        headers: init.headers,
        agent: false,
      },
      (res) => {
        const status = res.statusCode ?? 0;
        if (String(res.headers['content-type']).startsWith('text/event-stream')) {
          resolve({ status, headers: res.headers, body: '' });
          req.destroy();
          return;
        }
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

/** A 401 whose challenge is DPoP's: `invalid_token` or `invalid_dpop_proof`, with `algs`. */
function expectDpopChallenge(answer: Answer): void {
  expect(answer.status, answer.body).toBe(401);
  const challenge = String(answer.headers['www-authenticate'] ?? '');
  expect(challenge).toMatch(/^DPoP /);
  expect(challenge).toMatch(/error="(invalid_token|invalid_dpop_proof)"/);
  expect(challenge).toMatch(/algs="[^"]+"/);
}

/**
 * A bound token sent as `Bearer` is refused: a 401 `invalid_token` (whichever scheme the
 * challenge names), never a 200 or a 500.
 */
function expectBearerDowngradeRefused(answer: Answer): void {
  expect(answer.status, answer.body).toBe(401);
  expect(String(answer.headers['www-authenticate'] ?? '')).toMatch(/error="invalid_token"/);
}

/** A client_credentials request of demo-service at /token, its proof(s) as given. */
function serviceTokenRequest(dpop: string | string[] | undefined, scope = 'read:messages') {
  const basic = Buffer.from('demo-service:demo-service-secret').toString('base64');
  return send(new URL(tokenEndpoint).pathname, {
    method: 'POST',
    headers: {
      Authorization: `Basic ${basic}`,
      'Content-Type': 'application/x-www-form-urlencoded',
      ...(dpop !== undefined && { DPoP: dpop }),
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope }).toString(),
  });
}

/** A proof for the token endpoint (POST, its URL). */
const tokenProof = (key: ProofKey, spec: Partial<ProofSpec> = {}) =>
  makeProof(key, { htm: 'POST', htu: tokenEndpoint, ...spec });

const signInAndApprove = (target: URL, user = 'alice') => approveAt(server.url, target, user);

/** The authorization code flow (PKCE S256) of a user client, up to the callback URL. */
async function authorize(clientId: 'demo-web' | 'demo-spa', scope: string) {
  const config =
    clientId === 'demo-web'
      ? await configFor('demo-web', 'demo-web-secret')
      : await configFor('demo-spa');
  const redirectUri =
    clientId === 'demo-web' ? 'http://127.0.0.1:8080/callback' : 'http://127.0.0.1:5173/callback';
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const authorizationUrl = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
  });
  const callback = new URL(await signInAndApprove(authorizationUrl));
  return { config, verifier, state, callback };
}

/**
 * The code flow of a user client with a DPoP key (`key`, else a new ES256 pair) through
 * openid-client: the tokens, the handle and the key's thumbprint.
 */
async function boundCodeFlow(
  clientId: 'demo-web' | 'demo-spa',
  scope: string,
  key?: client.CryptoKeyPair,
) {
  const { config, verifier, state, callback } = await authorize(clientId, scope);
  const keyPair = key ?? (await client.randomDPoPKeyPair('ES256'));
  const DPoP = client.getDPoPHandle(config, keyPair);
  const tokens = await client.authorizationCodeGrant(
    config,
    callback,
    { pkceCodeVerifier: verifier, expectedState: state, idTokenExpected: scope.includes('openid') },
    undefined,
    { DPoP },
  );
  return { config, DPoP, tokens, jkt: await thumbprintOf(keyPair) };
}

describe('DPoP discovery', () => {
  it('lists the proof algorithms: asymmetric ones only', async () => {
    const config = await configFor('demo-service', 'demo-service-secret');
    const algs = config.serverMetadata().dpop_signing_alg_values_supported;
    expect(algs).toEqual(expect.arrayContaining(['ES256', 'RS256', 'PS256', 'EdDSA']));
    for (const alg of algs ?? []) expect(alg).not.toMatch(/^(none|HS\d+)$/i);
  });
});

describe('DPoP at the token endpoint', () => {
  it.each(['ES256', 'RS256', 'PS256', 'EdDSA'])(
    'binds a client_credentials token to a %s proof key: token_type DPoP, cnf.jkt its thumbprint',
    async (alg) => {
      const key = await proofKey(alg);
      const answer = await serviceTokenRequest(await tokenProof(key));
      expect(answer.status, answer.body).toBe(200);
      const body = JSON.parse(answer.body) as Record<string, unknown>;
      expect(body.token_type).toBe('DPoP');
      const token = body.access_token as string;
      expect(decodeJwt(token).cnf).toEqual({ jkt: key.jkt });
      // and the resource server takes it with a proof of that key
      const me = await send('/api/me', {
        headers: {
          Authorization: `DPoP ${token}`,
          DPoP: await makeProof(key, { htm: 'GET', htu: url('/api/me'), ath: athOf(token) }),
        },
      });
      expect(me.status, me.body).toBe(200);
      expect(JSON.parse(me.body)).toMatchObject({ sub: 'demo-service', method: 'dpop' });
    },
  );

  it('binds the tokens of openid-client (client_credentials) to its DPoP key', async () => {
    const config = await configFor('demo-service', 'demo-service-secret');
    const keyPair = await client.randomDPoPKeyPair('ES256');
    const DPoP = client.getDPoPHandle(config, keyPair);
    const tokens = await client.clientCredentialsGrant(
      config,
      { scope: 'read:messages' },
      { DPoP },
    );
    expect(tokens.token_type).toBe('dpop'); // openid-client lowers the case
    expect(decodeJwt(tokens.access_token).cnf).toEqual({ jkt: await thumbprintOf(keyPair) });
    const me = await client.fetchProtectedResource(
      config,
      tokens.access_token,
      new URL(url('/api/me')),
      'GET',
      undefined,
      undefined,
      { DPoP },
    );
    expect(me.status).toBe(200);
    expect(await me.json()).toEqual({
      sub: 'demo-service',
      name: 'demo-service',
      role: 'service',
      method: 'dpop',
      scopes: ['read:messages'],
    });
  });

  it('runs a whole DPoP flow with oauth4webapi: discovery, client_credentials, /api/me, /events', async () => {
    const issuer = new URL(server.url);
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, {
        algorithm: 'oidc',
        [oauth.allowInsecureRequests]: true,
      }),
    );
    expect(as.dpop_signing_alg_values_supported).toContain('ES256');
    const serviceClient: oauth.Client = { client_id: 'demo-service' };
    const keyPair = await oauth.generateKeyPair('ES256');
    const DPoP = oauth.DPoP(serviceClient, keyPair);
    const response = await oauth.clientCredentialsGrantRequest(
      as,
      serviceClient,
      oauth.ClientSecretBasic('demo-service-secret'),
      { scope: 'read:messages write:messages' },
      { DPoP, [oauth.allowInsecureRequests]: true },
    );
    const tokens = await oauth.processClientCredentialsResponse(as, serviceClient, response);
    expect(tokens.token_type).toBe('dpop');
    expect(decodeJwt(tokens.access_token).cnf).toEqual({ jkt: await thumbprintOf(keyPair) });

    const me = await oauth.protectedResourceRequest(
      tokens.access_token,
      'GET',
      new URL(url('/api/me')),
      undefined,
      undefined,
      { DPoP, [oauth.allowInsecureRequests]: true },
    );
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ sub: 'demo-service', method: 'dpop' });

    const aborter = new AbortController();
    const events = await oauth.protectedResourceRequest(
      tokens.access_token,
      'GET',
      new URL(url('/events')),
      new Headers({ Accept: 'text/event-stream' }),
      undefined,
      { DPoP, signal: aborter.signal, [oauth.allowInsecureRequests]: true },
    );
    expect(events.status).toBe(200);
    expect(events.headers.get('content-type')).toMatch(/^text\/event-stream/);
    aborter.abort();
    await events.body?.cancel().catch(() => {});

    // another key's handle: oauth4webapi reports the resource server's DPoP challenge
    const thief = oauth.DPoP(serviceClient, await oauth.generateKeyPair('ES256'));
    const refused = await oauth
      .protectedResourceRequest(
        tokens.access_token,
        'GET',
        new URL(url('/api/me')),
        undefined,
        undefined,
        {
          DPoP: thief,
          [oauth.allowInsecureRequests]: true,
        },
      )
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
    const [challenge] = (refused as oauth.WWWAuthenticateChallengeError).cause;
    expect(challenge?.scheme).toBe('dpop');
    expect(challenge?.parameters.error).toMatch(/^(invalid_token|invalid_dpop_proof)$/);
  });

  it('binds the tokens of the confidential demo-web code flow; UserInfo, /api/me and refresh with the key', async () => {
    const { config, DPoP, tokens, jkt } = await boundCodeFlow(
      'demo-web',
      'openid profile email offline_access read:messages',
    );
    expect(tokens.token_type).toBe('dpop');
    expect(decodeJwt(tokens.access_token)).toMatchObject({
      sub: 'alice',
      client_id: 'demo-web',
      cnf: { jkt },
    });
    expect(tokens.refresh_token).toBeTypeOf('string');

    const info = await client.fetchUserInfo(config, tokens.access_token, 'alice', { DPoP });
    expect(info).toMatchObject({ sub: 'alice', email: 'alice@example.com', name: 'Alice Example' });
    const me = await client.fetchProtectedResource(
      config,
      tokens.access_token,
      new URL(url('/api/me')),
      'GET',
      undefined,
      undefined,
      { DPoP },
    );
    expect(await me.json()).toMatchObject({ sub: 'alice', method: 'dpop' });

    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!, undefined, {
      DPoP,
    });
    expect(refreshed.token_type).toBe('dpop');
    expect(decodeJwt(refreshed.access_token).cnf).toEqual({ jkt });
  });

  it('binds the public demo-spa refresh token to its key: another key or none is refused', async () => {
    const { config, DPoP, tokens, jkt } = await boundCodeFlow(
      'demo-spa',
      'openid profile email offline_access read:messages',
    );
    expect(tokens.token_type).toBe('dpop');
    expect(decodeJwt(tokens.access_token).cnf).toEqual({ jkt });
    const refreshToken = tokens.refresh_token!;
    expect(refreshToken).toBeTypeOf('string');

    const info = await client.fetchUserInfo(config, tokens.access_token, 'alice', { DPoP });
    expect(info).toMatchObject({ sub: 'alice' });

    // a thief with the refresh token and a key of its own, or none at all, gets nothing
    const thief = client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256'));
    const refusals = [
      await client
        .refreshTokenGrant(config, refreshToken, undefined, { DPoP: thief })
        .catch((e: unknown) => e),
      await client.refreshTokenGrant(config, refreshToken).catch((e: unknown) => e),
    ];
    for (const refused of refusals) {
      expect(refused).toBeInstanceOf(client.ResponseBodyError);
      expect((refused as client.ResponseBodyError).status).toBe(400);
      expect((refused as client.ResponseBodyError).error).toMatch(
        /^(invalid_grant|invalid_dpop_proof)$/,
      );
    }
    // raw, without a proof: the same 400
    const raw = await send(new URL(tokenEndpoint).pathname, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: refreshToken,
        client_id: 'demo-spa',
      }).toString(),
    });
    expect(raw.status, raw.body).toBe(400);
    expect(JSON.parse(raw.body).error).toMatch(/^(invalid_grant|invalid_dpop_proof)$/);

    // the refusals did not consume it: with the client's own key it works, and stays bound
    const refreshed = await client.refreshTokenGrant(config, refreshToken, undefined, { DPoP });
    expect(refreshed.token_type).toBe('dpop');
    expect(decodeJwt(refreshed.access_token).cnf).toEqual({ jkt });
    const next = refreshed.refresh_token!;
    expect(next).toBeTypeOf('string');
    await expect(client.refreshTokenGrant(config, next)).rejects.toMatchObject({ status: 400 });
    const again = await client.refreshTokenGrant(config, next, undefined, { DPoP });
    expect(decodeJwt(again.access_token).cnf).toEqual({ jkt });
  });

  it('accepts a proof made 30 s ago (maxAge is 60 s)', async () => {
    const key = await proofKey();
    const answer = await serviceTokenRequest(await tokenProof(key, { iat: now() - 30 }));
    expect(answer.status, answer.body).toBe(200);
    expect(JSON.parse(answer.body).token_type).toBe('DPoP');
  });

  describe('refuses a bad proof with 400 invalid_dpop_proof', () => {
    const cases: [string, () => Promise<string | string[]>][] = [
      ['alg none', async () => unsecuredProof(await proofKey(), 'POST', tokenEndpoint)],
      ['HS256', () => hmacProof('POST', tokenEndpoint)],
      ['typ JWT', async () => tokenProof(await proofKey(), { typ: 'JWT' })],
      ['no jwk header', async () => tokenProof(await proofKey(), { jwk: null })],
      [
        'a private key in jwk',
        async () => {
          const key = await proofKey();
          return tokenProof(key, { jwk: await exportJWK(key.privateKey) });
        },
      ],
      [
        'signed by a key other than its jwk',
        async () => tokenProof(await proofKey(), { signer: await proofKey() }),
      ],
      ['htm GET', async () => tokenProof(await proofKey(), { htm: 'GET' })],
      ['htu of another path', async () => tokenProof(await proofKey(), { htu: url('/other') })],
      ['iat 90 s old', async () => tokenProof(await proofKey(), { iat: now() - 90 })],
      ['iat 2 min in the future', async () => tokenProof(await proofKey(), { iat: now() + 120 })],
      ['no jti', async () => tokenProof(await proofKey(), { jti: null })],
      [
        'a replayed jti',
        async () => {
          const key = await proofKey();
          const jti = randomUUID();
          const first = await serviceTokenRequest(await tokenProof(key, { jti }));
          expect(first.status, first.body).toBe(200);
          return tokenProof(key, { jti, iat: now() - 1 });
        },
      ],
      [
        'two DPoP headers',
        async () => {
          const key = await proofKey();
          return [await tokenProof(key), await tokenProof(key)];
        },
      ],
      ['not a JWS', async () => 'not.a-proof'],
    ];
    it.each(cases)('%s', async (_name, build) => {
      const answer = await serviceTokenRequest(await build());
      expect(answer.status, answer.body).toBe(400);
      expect(JSON.parse(answer.body)).toMatchObject({ error: 'invalid_dpop_proof' });
    });
  });
});

describe('DPoP at the resource server', () => {
  /** The key every bound token below is bound to. */
  let key: ProofKey;
  /** A demo-service token bound to `key`, and a second one (for `ath` of another token). */
  let serviceToken: string;
  let otherServiceToken: string;
  /** A demo-web token (openid, read:messages) bound to `key`. */
  let userToken: string;

  const bound = async () => {
    const answer = await serviceTokenRequest(await tokenProof(key));
    expect(answer.status, answer.body).toBe(200);
    return JSON.parse(answer.body).access_token as string;
  };

  beforeAll(async () => {
    key = await proofKey();
    serviceToken = await bound();
    otherServiceToken = await bound();
    // the same key through openid-client: a handle on the jose key pair
    const { config, verifier, state, callback } = await authorize(
      'demo-web',
      'openid profile email read:messages',
    );
    const DPoP = client.getDPoPHandle(config, key);
    const tokens = await client.authorizationCodeGrant(
      config,
      callback,
      { pkceCodeVerifier: verifier, expectedState: state },
      undefined,
      { DPoP },
    );
    userToken = tokens.access_token;
    expect(decodeJwt(userToken).cnf).toEqual({ jkt: key.jkt });
  });

  /** A good proof of `key` for `path` and `token`. */
  const proofFor = (path: string, token: string, spec: Partial<ProofSpec> = {}) =>
    makeProof(key, { htm: 'GET', htu: url(path), ath: athOf(token), ...spec });

  it('answers /api/me with method dpop', async () => {
    const me = await send('/api/me', {
      headers: {
        Authorization: `DPoP ${userToken}`,
        DPoP: await proofFor('/api/me', userToken),
      },
    });
    expect(me.status, me.body).toBe(200);
    expect(me.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(me.body)).toMatchObject({ sub: 'alice', method: 'dpop' });
  });

  it("answers /userinfo with the user's claims", async () => {
    const info = await send('/userinfo', {
      headers: {
        Authorization: `DPoP ${userToken}`,
        DPoP: await proofFor('/userinfo', userToken),
      },
    });
    expect(info.status, info.body).toBe(200);
    expect(JSON.parse(info.body)).toMatchObject({
      sub: 'alice',
      name: 'Alice Example',
      email: 'alice@example.com',
    });
  });

  it('opens /events (text/event-stream) for a bound token with read:messages', async () => {
    for (const token of [userToken, serviceToken]) {
      const events = await send('/events', {
        headers: {
          Accept: 'text/event-stream',
          Authorization: `DPoP ${token}`,
          DPoP: await proofFor('/events', token),
        },
      });
      expect(events.status, events.body).toBe(200);
      expect(events.headers['content-type']).toMatch(/^text\/event-stream/);
    }
  });

  describe('refuses a bad proof or scheme at /api/me with 401 and a DPoP challenge', () => {
    const port = () => Number(new URL(server.url).port);
    const cases: [string, () => Promise<OutgoingHttpHeaders>][] = [
      [
        'alg none',
        async () => ({
          Authorization: `DPoP ${serviceToken}`,
          DPoP: unsecuredProof(key, 'GET', url('/api/me'), athOf(serviceToken)),
        }),
      ],
      [
        'HS256',
        async () => ({
          Authorization: `DPoP ${serviceToken}`,
          DPoP: await hmacProof('GET', url('/api/me'), athOf(serviceToken)),
        }),
      ],
      [
        'typ JWT',
        async () => ({
          Authorization: `DPoP ${serviceToken}`,
          DPoP: await proofFor('/api/me', serviceToken, { typ: 'JWT' }),
        }),
      ],
      [
        'typ application/dpop+jwt',
        async () => ({
          Authorization: `DPoP ${serviceToken}`,
          DPoP: await proofFor('/api/me', serviceToken, { typ: 'application/dpop+jwt' }),
        }),
      ],
      [
        'no jwk header',
        async () => ({
          Authorization: `DPoP ${serviceToken}`,
          DPoP: await proofFor('/api/me', serviceToken, { jwk: null }),
        }),
      ],
      [
        'a private key in jwk',
        async () => ({
          Authorization: `DPoP ${serviceToken}`,
          DPoP: await proofFor('/api/me', serviceToken, { jwk: await exportJWK(key.privateKey) }),
        }),
      ],
      [
        'signed by a key other than its jwk',
        async () => ({
          Authorization: `DPoP ${serviceToken}`,
          DPoP: await proofFor('/api/me', serviceToken, { signer: await proofKey() }),
        }),
      ],
      [
        'a proof of another key',
        async () => ({
          Authorization: `DPoP ${serviceToken}`,
          DPoP: await makeProof(await proofKey(), {
            htm: 'GET',
            htu: url('/api/me'),
            ath: athOf(serviceToken),
          }),
        }),
      ],
      ['no proof', async () => ({ Authorization: `DPoP ${serviceToken}` })],
      [
        'htm POST',
        async () => ({
          Authorization: `DPoP ${serviceToken}`,
          DPoP: await proofFor('/api/me', serviceToken, { htm: 'POST' }),
        }),
      ],
      [
        'htm get (lower case)',
        async () => ({
          Authorization: `DPoP ${serviceToken}`,
          DPoP: await proofFor('/api/me', serviceToken, { htm: 'get' }),
        }),
      ],
      [
        'htu of another path',
        async () => ({
          Authorization: `DPoP ${serviceToken}`,
          DPoP: await proofFor('/api/me', serviceToken, { htu: url('/api/messages') }),
        }),
      ],
      [
        'htu with another port',
        async () => ({
          Authorization: `DPoP ${serviceToken}`,
          DPoP: await proofFor('/api/me', serviceToken, {
            htu: `http://127.0.0.1:${port() + 1}/api/me`,
          }),
        }),
      ],
      [
        'htu with another host (localhost)',
        async () => ({
          Authorization: `DPoP ${serviceToken}`,
          DPoP: await proofFor('/api/me', serviceToken, {
            htu: `http://localhost:${port()}/api/me`,
          }),
        }),
      ],
      [
        'htu with https',
        async () => ({
          Authorization: `DPoP ${serviceToken}`,
          DPoP: await proofFor('/api/me', serviceToken, {
            htu: `https://127.0.0.1:${port()}/api/me`,
          }),
        }),
      ],
      [
        'iat 2 min old',
        async () => ({
          Authorization: `DPoP ${serviceToken}`,
          DPoP: await proofFor('/api/me', serviceToken, { iat: now() - 120 }),
        }),
      ],
      [
        'iat 2 min in the future',
        async () => ({
          Authorization: `DPoP ${serviceToken}`,
          DPoP: await proofFor('/api/me', serviceToken, { iat: now() + 120 }),
        }),
      ],
      [
        'no jti',
        async () => ({
          Authorization: `DPoP ${serviceToken}`,
          DPoP: await proofFor('/api/me', serviceToken, { jti: null }),
        }),
      ],
      [
        'a replayed proof',
        async () => {
          const headers = {
            Authorization: `DPoP ${serviceToken}`,
            DPoP: await proofFor('/api/me', serviceToken),
          };
          const first = await send('/api/me', { headers });
          expect(first.status, first.body).toBe(200);
          return headers;
        },
      ],
      [
        'a replayed jti in a new proof',
        async () => {
          const jti = randomUUID();
          const first = await send('/api/me', {
            headers: {
              Authorization: `DPoP ${serviceToken}`,
              DPoP: await proofFor('/api/me', serviceToken, { jti }),
            },
          });
          expect(first.status, first.body).toBe(200);
          return {
            Authorization: `DPoP ${serviceToken}`,
            DPoP: await proofFor('/api/me', serviceToken, { jti, iat: now() - 1 }),
          };
        },
      ],
      [
        'ath of another token',
        async () => ({
          Authorization: `DPoP ${serviceToken}`,
          DPoP: await proofFor('/api/me', otherServiceToken),
        }),
      ],
      [
        'no ath',
        async () => ({
          Authorization: `DPoP ${serviceToken}`,
          DPoP: await proofFor('/api/me', serviceToken, { ath: null }),
        }),
      ],
      [
        'two DPoP headers',
        async () => ({
          Authorization: `DPoP ${serviceToken}`,
          DPoP: [await proofFor('/api/me', serviceToken), await proofFor('/api/me', serviceToken)],
        }),
      ],
      ['not a JWS', async () => ({ Authorization: `DPoP ${serviceToken}`, DPoP: 'not.a-proof' })],
    ];
    it.each(cases)('%s', async (_name, build) => {
      expectDpopChallenge(await send('/api/me', { headers: await build() }));
    });

    const asBearer: [string, () => Promise<OutgoingHttpHeaders>][] = [
      [
        'the bound token as Bearer, with a good proof',
        async () => ({
          Authorization: `Bearer ${serviceToken}`,
          DPoP: await proofFor('/api/me', serviceToken),
        }),
      ],
      [
        'the bound token as Bearer, without a proof',
        async () => ({ Authorization: `Bearer ${serviceToken}` }),
      ],
    ];
    it.each(asBearer)('%s: refused (401 invalid_token)', async (_name, build) => {
      expectBearerDowngradeRefused(await send('/api/me', { headers: await build() }));
    });
    // RFC 9449 §7.1: the refusal offers the scheme the token needs
    it.each(asBearer)('%s: with a DPoP challenge', async (_name, build) => {
      expectDpopChallenge(await send('/api/me', { headers: await build() }));
    });

    it('still takes the token with a good proof afterwards', async () => {
      const me = await send('/api/me', {
        headers: {
          Authorization: `DPoP ${serviceToken}`,
          DPoP: await proofFor('/api/me', serviceToken),
        },
      });
      expect(me.status, me.body).toBe(200);
      expect(JSON.parse(me.body)).toMatchObject({ sub: 'demo-service', method: 'dpop' });
    });
  });

  describe.each(['/userinfo', '/events'])('refuses a misused bound token at %s', (path) => {
    const cases: [string, () => Promise<OutgoingHttpHeaders>][] = [
      ['without a proof', async () => ({ Authorization: `DPoP ${userToken}` })],
      [
        'with a proof of another key',
        async () => ({
          Authorization: `DPoP ${userToken}`,
          DPoP: await makeProof(await proofKey(), {
            htm: 'GET',
            htu: url(path),
            ath: athOf(userToken),
          }),
        }),
      ],
      [
        'with a replayed proof',
        async () => {
          const headers = {
            Accept: 'text/event-stream',
            Authorization: `DPoP ${userToken}`,
            DPoP: await proofFor(path, userToken),
          };
          const first = await send(path, { headers });
          expect(first.status, first.body).toBe(200);
          return headers;
        },
      ],
      [
        'with a proof for POST',
        async () => ({
          Authorization: `DPoP ${userToken}`,
          DPoP: await proofFor(path, userToken, { htm: 'POST' }),
        }),
      ],
      [
        'with a proof for /api/me',
        async () => ({
          Authorization: `DPoP ${userToken}`,
          DPoP: await proofFor('/api/me', userToken),
        }),
      ],
      [
        'with the ath of another token',
        async () => ({
          Authorization: `DPoP ${userToken}`,
          DPoP: await proofFor(path, serviceToken),
        }),
      ],
    ];
    it.each(cases)('%s', async (_name, build) => {
      expectDpopChallenge(await send(path, { headers: await build() }));
    });

    const asBearer = async () =>
      send(path, {
        headers: { Accept: 'text/event-stream', Authorization: `Bearer ${userToken}` },
      });
    it('as Bearer: refused (401 invalid_token)', async () => {
      expectBearerDowngradeRefused(await asBearer());
    });
    it('as Bearer: with a DPoP challenge', async () => {
      expectDpopChallenge(await asBearer());
    });
  });

  it('refuses an unbound (Bearer) token sent with the DPoP scheme', async () => {
    const config = await configFor('demo-service', 'demo-service-secret');
    const plain = await client.clientCredentialsGrant(config, { scope: 'read:messages' });
    expect(plain.token_type).toBe('bearer');
    expect(decodeJwt(plain.access_token).cnf).toBeUndefined();
    expectDpopChallenge(
      await send('/api/me', {
        headers: {
          Authorization: `DPoP ${plain.access_token}`,
          DPoP: await proofFor('/api/me', plain.access_token),
        },
      }),
    );
  });
});
