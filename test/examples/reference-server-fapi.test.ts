// The FAPI-style client of the reference server (DEMO_FAPI_JWKS), from outside: pushed
// authorization requests (RFC 9126), private_key_jwt (RFC 7523) and DPoP (RFC 9449), with
// openid-client and oauth4webapi for the happy paths and hand-made requests (fetch, jose) for
// the attacks, over real sockets to the server's own process.
import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
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

const REDIRECT_URI = 'http://127.0.0.1:8080/callback';
const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const REQUEST_URI_PREFIX = 'urn:ietf:params:oauth:request_uri:';
const ALGORITHMS = ['ES256', 'PS256', 'RS256', 'EdDSA'] as const;
type Alg = (typeof ALGORITHMS)[number];

/** A key pair as jose makes it (WebCrypto keys; the DOM's `CryptoKey` type is not in lib). */
type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;

/** A signing key of a client assertion: its private key, `kid` and `alg`. */
interface SigningKey {
  alg: string;
  kid: string;
  privateKey: KeyPair['privateKey'];
  publicJwk: JWK;
}

/** A DPoP proof key: its pair, public JWK and RFC 7638 thumbprint. */
interface ProofKey {
  privateKey: KeyPair['privateKey'];
  jwk: JWK;
  jkt: string;
}

let server: RunningServer;
let dir: string;
const clientKeys = {} as Record<Alg, SigningKey>;

async function signingKey(alg: string, kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { alg, kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg } };
}

beforeAll(async () => {
  const made = await Promise.all(ALGORITHMS.map((alg) => signingKey(alg, `fapi-${alg}`)));
  for (const key of made) clientKeys[key.alg as Alg] = key;
  dir = await mkdtemp(join(tmpdir(), 'portico-fapi-'));
  const file = join(dir, 'demo-fapi.jwks.json');
  await writeFile(file, JSON.stringify({ keys: made.map((key) => key.publicJwk) }));
  // the attack tables refuse many client credentials from 127.0.0.1: keep the guard away
  server = await startReferenceServer({ DEMO_FAPI_JWKS: file, RATE_LIMIT: '100000' });
});

afterAll(async () => {
  await server?.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

const insecure = { execute: [client.allowInsecureRequests] };
const url = (path: string) => `${server.url}${path}`;
const now = () => Math.floor(Date.now() / 1000);

/** The claims and key of an assertion: the right ones unless told otherwise. */
interface AssertionSpec {
  alg?: Alg;
  iss?: string;
  sub?: string;
  aud?: string | string[];
  /** Seconds since the epoch; a minute ahead unless given. */
  exp?: number;
  iat?: number;
  jti?: string;
  /** Signs with this key instead of the client's key of `alg`. */
  signer?: SigningKey;
}

/** A client assertion of demo-fapi (RFC 7523 §3), as the spec describes, or bent as told. */
async function assertion(spec: AssertionSpec = {}): Promise<string> {
  const key = spec.signer ?? clientKeys[spec.alg ?? 'ES256'];
  const t = now();
  return new SignJWT({ jti: spec.jti ?? randomUUID() })
    .setProtectedHeader({ alg: key.alg, kid: key.kid })
    .setIssuer(spec.iss ?? 'demo-fapi')
    .setSubject(spec.sub ?? 'demo-fapi')
    .setAudience(spec.aud ?? server.url)
    .setIssuedAt(spec.iat ?? t)
    .setExpirationTime(spec.exp ?? t + 60)
    .sign(key.privateKey);
}

const assertionParams = (jwt: string) => ({
  client_assertion_type: ASSERTION_TYPE,
  client_assertion: jwt,
});

async function proofKey(): Promise<ProofKey> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = await exportJWK(publicKey);
  return { privateKey, jwk, jkt: await calculateJwkThumbprint(jwk) };
}

/** A DPoP proof (RFC 9449 §4.2) of `key` for a POST to `path`, or a GET with a token's `ath`. */
function proof(key: ProofKey, path: string, accessToken?: string): Promise<string> {
  const claims =
    accessToken === undefined
      ? { htm: 'POST', htu: url(path), jti: randomUUID() }
      : {
          htm: 'GET',
          htu: url(path),
          jti: randomUUID(),
          ath: createHash('sha256').update(accessToken).digest('base64url'),
        };
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: key.jwk })
    .setIssuedAt()
    .sign(key.privateKey);
}

/** What a form POST got back: status, headers and the JSON body (or the text). */
interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

async function post(
  path: string,
  form: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const res = await fetch(url(path), {
    method: 'POST',
    redirect: 'manual',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form),
  });
  const text = await res.text();
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = { text };
  }
  return { status: res.status, headers: res.headers, body };
}

/** The parameters of an authorization request of demo-fapi, with PKCE. */
async function authorizationParams(scope = 'openid read:messages') {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const params = {
    response_type: 'code',
    client_id: 'demo-fapi',
    redirect_uri: REDIRECT_URI,
    scope,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
  };
  return { verifier, state, params };
}

/** Pushes an authorization request of demo-fapi, authenticated by an ES256 assertion. */
async function pushFapi(params: Record<string, string>, headers: Record<string, string> = {}) {
  return post('/par', { ...params, ...assertionParams(await assertion()) }, headers);
}

/** The `/authorize` URL of a pushed request. */
function authorizeUrl(clientId: string, requestUri: string): URL {
  const target = new URL(url('/authorize'));
  target.searchParams.set('client_id', clientId);
  target.searchParams.set('request_uri', requestUri);
  return target;
}

const signInAndApprove = (target: URL, user = 'alice') => approveAt(server.url, target, user);

/** A code of demo-fapi, by hand: pushed (with a DPoP proof of `parKey`, if given), approved. */
async function handMadeCode(parKey?: ProofKey) {
  const { verifier, state, params } = await authorizationParams();
  const pushed = await pushFapi(params, parKey ? { DPoP: await proof(parKey, '/par') } : {});
  expect(pushed.status, JSON.stringify(pushed.body)).toBe(201);
  const callback = new URL(
    await signInAndApprove(authorizeUrl('demo-fapi', pushed.body.request_uri as string)),
  );
  expect(`${callback.origin}${callback.pathname}`).toBe(REDIRECT_URI);
  expect(callback.searchParams.get('state')).toBe(state);
  expect(callback.searchParams.get('iss')).toBe(server.url);
  const code = callback.searchParams.get('code');
  expect(code).toBeTypeOf('string');
  return { code: code!, verifier };
}

/** Redeems a code of demo-fapi by hand, with a DPoP proof of `key` unless none is given. */
async function redeem(code: string, verifier: string, key?: ProofKey): Promise<Answer> {
  return post(
    '/token',
    {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
      ...assertionParams(await assertion()),
    },
    key ? { DPoP: await proof(key, '/token') } : {},
  );
}

describe('discovery', () => {
  it('announces PAR, private_key_jwt with its algorithms, DPoP and the iss parameter', async () => {
    const res = await fetch(url('/.well-known/openid-configuration'));
    expect(res.status).toBe(200);
    const metadata = (await res.json()) as Record<string, unknown>;
    expect(metadata).toMatchObject({
      issuer: server.url,
      pushed_authorization_request_endpoint: url('/par'),
      require_pushed_authorization_requests: false,
      authorization_response_iss_parameter_supported: true,
    });
    expect(metadata.dpop_signing_alg_values_supported).toEqual(expect.arrayContaining(['ES256']));
    for (const field of [
      'token_endpoint_auth_methods_supported',
      'revocation_endpoint_auth_methods_supported',
      'introspection_endpoint_auth_methods_supported',
    ]) {
      expect(metadata[field], field).toContain('private_key_jwt');
    }
    expect(metadata.token_endpoint_auth_signing_alg_values_supported).toEqual(
      expect.arrayContaining(['ES256', 'PS256', 'RS256', 'EdDSA']),
    );
    // and openid-client reads the same document
    const config = await client.discovery(
      new URL(server.url),
      'demo-fapi',
      undefined,
      client.PrivateKeyJwt({ key: clientKeys.ES256.privateKey, kid: clientKeys.ES256.kid }),
      insecure,
    );
    expect(config.serverMetadata().pushed_authorization_request_endpoint).toBe(url('/par'));
  });
});

describe('the FAPI client with openid-client: PAR, private_key_jwt and DPoP', () => {
  it('runs the code flow, /api/me, UserInfo, refresh, introspection and revocation', async () => {
    const key = clientKeys.ES256;
    const config = await client.discovery(
      new URL(server.url),
      'demo-fapi',
      { token_endpoint_auth_method: 'private_key_jwt' },
      client.PrivateKeyJwt({ key: key.privateKey, kid: key.kid }),
      insecure,
    );
    const keyPair = await client.randomDPoPKeyPair('ES256');
    const DPoP = client.getDPoPHandle(config, keyPair);
    const jkt = await calculateJwkThumbprint(
      await exportJWK(keyPair.publicKey as KeyPair['publicKey']),
    );
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const authorization = await client.buildAuthorizationUrlWithPAR(
      config,
      {
        redirect_uri: REDIRECT_URI,
        scope: 'openid profile email offline_access read:messages',
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
        nonce,
      },
      { DPoP },
    );
    // the browser carries only the client id and the request_uri (RFC 9126 §4)
    expect([...authorization.searchParams.keys()].sort()).toEqual(['client_id', 'request_uri']);
    expect(authorization.searchParams.get('request_uri')!.startsWith(REQUEST_URI_PREFIX)).toBe(
      true,
    );
    const callback = new URL(await signInAndApprove(authorization));
    expect(callback.searchParams.get('iss')).toBe(server.url);

    const tokens = await client.authorizationCodeGrant(
      config,
      callback,
      {
        pkceCodeVerifier: verifier,
        expectedState: state,
        expectedNonce: nonce,
        idTokenExpected: true,
      },
      undefined,
      { DPoP },
    );
    expect(tokens.token_type).toBe('dpop'); // openid-client lowers the case
    expect(decodeJwt(tokens.access_token)).toMatchObject({
      sub: 'alice',
      client_id: 'demo-fapi',
      cnf: { jkt },
    });
    expect(tokens.claims()).toMatchObject({ sub: 'alice', aud: 'demo-fapi', nonce });
    expect(tokens.refresh_token).toBeTypeOf('string');

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
    expect(await me.json()).toMatchObject({ sub: 'alice', method: 'dpop' });
    // a bound token sent as a bearer token is worth nothing
    const asBearer = await fetch(url('/api/me'), {
      headers: { Authorization: `Bearer ${tokens.access_token}` },
    });
    expect(asBearer.status).toBe(401);

    const info = await client.fetchUserInfo(config, tokens.access_token, 'alice', { DPoP });
    expect(info).toMatchObject({ sub: 'alice', email: 'alice@example.com', name: 'Alice Example' });

    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!, undefined, {
      DPoP,
    });
    expect(refreshed.token_type).toBe('dpop');
    expect(decodeJwt(refreshed.access_token).cnf).toEqual({ jkt });
    const refreshToken = refreshed.refresh_token!;
    expect(refreshToken).toBeTypeOf('string');

    // introspection and revocation, authenticated by private_key_jwt too (the introspection
    // of the DPoP-bound access token is a known gap: see the DPoP tests below)
    expect(await client.tokenIntrospection(config, refreshToken)).toMatchObject({
      active: true,
      sub: 'alice',
      client_id: 'demo-fapi',
      token_type: 'refresh_token',
    });
    await client.tokenRevocation(config, refreshToken);
    expect(await client.tokenIntrospection(config, refreshToken)).toEqual({ active: false });
    await expect(
      client.refreshTokenGrant(config, refreshToken, undefined, { DPoP }),
    ).rejects.toMatchObject({ error: 'invalid_grant' });
    // revoking the refresh token revoked its grant: the access token stops working too
    const afterRevocation = await client
      .fetchProtectedResource(
        config,
        refreshed.access_token,
        new URL(url('/api/me')),
        'GET',
        undefined,
        undefined,
        { DPoP },
      )
      .catch((error: unknown) => error);
    expect(afterRevocation).toBeInstanceOf(client.WWWAuthenticateChallengeError);
    const challenged = afterRevocation as client.WWWAuthenticateChallengeError;
    expect(challenged.status).toBe(401);
    expect(challenged.cause[0]).toMatchObject({
      scheme: 'dpop',
      parameters: { error: 'invalid_token' },
    });
  });

  it('runs PAR with client_secret_basic for demo-web', async () => {
    const config = await client.discovery(
      new URL(server.url),
      'demo-web',
      undefined,
      client.ClientSecretBasic('demo-web-secret'),
      insecure,
    );
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const authorization = await client.buildAuthorizationUrlWithPAR(config, {
      redirect_uri: REDIRECT_URI,
      scope: 'openid read:messages',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    expect(authorization.searchParams.get('client_id')).toBe('demo-web');
    const tokens = await client.authorizationCodeGrant(
      config,
      new URL(await signInAndApprove(authorization, 'bob')),
      { pkceCodeVerifier: verifier, expectedState: state, idTokenExpected: true },
    );
    expect(tokens.token_type).toBe('bearer');
    expect(decodeJwt(tokens.access_token)).toMatchObject({ sub: 'bob', client_id: 'demo-web' });
  });
});

describe('the FAPI client with oauth4webapi: PAR and private_key_jwt', () => {
  it('pushes, signs in, redeems with DPoP and reads /api/me', async () => {
    const issuer = new URL(server.url);
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, {
        algorithm: 'oidc',
        [oauth.allowInsecureRequests]: true,
      }),
    );
    const fapi: oauth.Client = { client_id: 'demo-fapi' };
    const key = clientKeys.PS256;
    const auth = oauth.PrivateKeyJwt({ key: key.privateKey, kid: key.kid });
    const DPoP = oauth.DPoP(fapi, await oauth.generateKeyPair('ES256'));
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const pushed = await oauth.processPushedAuthorizationResponse(
      as,
      fapi,
      await oauth.pushedAuthorizationRequest(
        as,
        fapi,
        auth,
        {
          response_type: 'code',
          redirect_uri: REDIRECT_URI,
          scope: 'openid read:messages',
          code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
          code_challenge_method: 'S256',
          state,
        },
        { DPoP, [oauth.allowInsecureRequests]: true },
      ),
    );
    expect(pushed.request_uri.startsWith(REQUEST_URI_PREFIX)).toBe(true);
    expect(pushed.expires_in).toBeGreaterThan(0);
    expect(pushed.expires_in).toBeLessThanOrEqual(600);

    const callback = new URL(await signInAndApprove(authorizeUrl('demo-fapi', pushed.request_uri)));
    const params = oauth.validateAuthResponse(as, fapi, callback, state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      fapi,
      await oauth.authorizationCodeGrantRequest(as, fapi, auth, params, REDIRECT_URI, verifier, {
        DPoP,
        [oauth.allowInsecureRequests]: true,
      }),
      { requireIdToken: true },
    );
    expect(tokens.token_type).toBe('dpop');
    expect(oauth.getValidatedIdTokenClaims(tokens)).toMatchObject({
      sub: 'alice',
      aud: 'demo-fapi',
    });
    const me = await oauth.protectedResourceRequest(
      tokens.access_token,
      'GET',
      new URL(url('/api/me')),
      undefined,
      undefined,
      { DPoP, [oauth.allowInsecureRequests]: true },
    );
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ sub: 'alice', method: 'dpop' });
  });
});

describe('pushed authorization requests (RFC 9126)', () => {
  it('answers 201 with a request_uri and expires_in, Cache-Control: no-store', async () => {
    const { params } = await authorizationParams();
    const pushed = await pushFapi(params);
    expect(pushed.status, JSON.stringify(pushed.body)).toBe(201);
    expect(pushed.headers.get('cache-control')).toMatch(/no-store/);
    expect(pushed.body).toEqual({
      request_uri: expect.stringMatching(/^urn:ietf:params:oauth:request_uri:[A-Za-z0-9_-]+$/),
      expires_in: expect.any(Number),
    });
    expect(pushed.body.expires_in).toBeGreaterThan(0);
    expect(pushed.body.expires_in).toBeLessThanOrEqual(600);
  });

  it('refuses a push without client authentication (401 invalid_client)', async () => {
    const { params } = await authorizationParams();
    const refused = await post('/par', params);
    expect(refused.status).toBe(401);
    expect(refused.body.error).toBe('invalid_client');
  });

  it('takes a request_uri once: a second use is a 400 error page, never a redirect', async () => {
    const { params } = await authorizationParams();
    const pushed = await pushFapi(params);
    expect(pushed.status).toBe(201);
    const target = authorizeUrl('demo-fapi', pushed.body.request_uri as string);
    const first = await fetch(target, { redirect: 'manual' });
    expect(first.status).toBe(200);
    expect(await first.text()).toMatch(/<form/i);
    const second = await fetch(target, { redirect: 'manual' });
    expect(second.status).toBe(400);
    expect(second.headers.get('location')).toBeNull();
    expect(second.headers.get('content-type')).toMatch(/^text\/html/);
  });

  it('binds a request_uri to its client: demo-web cannot use one of demo-fapi', async () => {
    const { params } = await authorizationParams();
    const pushed = await pushFapi(params);
    expect(pushed.status).toBe(201);
    const stolen = await fetch(authorizeUrl('demo-web', pushed.body.request_uri as string), {
      redirect: 'manual',
    });
    expect(stolen.status).toBe(400);
    expect(stolen.headers.get('location')).toBeNull();
    expect(stolen.headers.get('content-type')).toMatch(/^text\/html/);
  });

  it('refuses an unknown request_uri with a 400 error page', async () => {
    const res = await fetch(authorizeUrl('demo-fapi', `${REQUEST_URI_PREFIX}not-issued-here`), {
      redirect: 'manual',
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
  });

  it('redirects demo-fapi with invalid_request when it sends its request straight to /authorize', async () => {
    const { state, params } = await authorizationParams();
    const target = new URL(url('/authorize'));
    for (const [name, value] of Object.entries(params)) target.searchParams.set(name, value);
    const res = await fetch(target, { redirect: 'manual' });
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get('location')!);
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT_URI);
    expect(location.searchParams.get('error')).toBe('invalid_request');
    expect(location.searchParams.get('state')).toBe(state);
    expect(location.searchParams.get('iss')).toBe(server.url);
    expect(location.searchParams.get('code')).toBeNull();
  });

  it('accepts a push from demo-web with client_secret_basic, by hand', async () => {
    const verifier = client.randomPKCECodeVerifier();
    const pushed = await post(
      '/par',
      {
        response_type: 'code',
        redirect_uri: REDIRECT_URI,
        scope: 'openid',
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      },
      { Authorization: `Basic ${Buffer.from('demo-web:demo-web-secret').toString('base64')}` },
    );
    expect(pushed.status, JSON.stringify(pushed.body)).toBe(201);
    expect(pushed.body.request_uri).toMatch(/^urn:ietf:params:oauth:request_uri:/);
    const wrong = await post(
      '/par',
      { response_type: 'code', redirect_uri: REDIRECT_URI, scope: 'openid' },
      { Authorization: `Basic ${Buffer.from('demo-web:wrong-secret').toString('base64')}` },
    );
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe('invalid_client');
  });
});

describe('private_key_jwt (RFC 7523)', () => {
  /** A request each endpoint answers once the client is authenticated, and that answer. */
  const ENDPOINTS = {
    '/token': {
      // the client is through: the grant itself fails on the made-up refresh token
      form: async () => ({ grant_type: 'refresh_token', refresh_token: 'not-a-refresh-token' }),
      headers: async () => ({ DPoP: await proof(await proofKey(), '/token') }),
      accepted: (answer: Answer) => {
        expect(answer.status, JSON.stringify(answer.body)).toBe(400);
        expect(answer.body.error).toBe('invalid_grant');
      },
    },
    '/par': {
      form: async () => (await authorizationParams()).params,
      headers: async () => ({}),
      accepted: (answer: Answer) => {
        expect(answer.status, JSON.stringify(answer.body)).toBe(201);
        expect(answer.body.request_uri).toMatch(/^urn:ietf:params:oauth:request_uri:/);
      },
    },
    '/revoke': {
      form: async () => ({ token: 'not-a-token' }),
      headers: async () => ({}),
      accepted: (answer: Answer) => {
        expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      },
    },
    '/introspect': {
      form: async () => ({ token: 'not-a-token' }),
      headers: async () => ({}),
      accepted: (answer: Answer) => {
        expect(answer.status, JSON.stringify(answer.body)).toBe(200);
        expect(answer.body).toEqual({ active: false });
      },
    },
  } as const;
  type Endpoint = keyof typeof ENDPOINTS;
  const PATHS = Object.keys(ENDPOINTS) as Endpoint[];

  async function send(path: Endpoint, credentials: Record<string, string>): Promise<Answer> {
    const endpoint = ENDPOINTS[path];
    return post(path, { ...(await endpoint.form()), ...credentials }, await endpoint.headers());
  }

  function refused(answer: Answer, what: string) {
    expect(answer.status, `${what}: ${JSON.stringify(answer.body)}`).toBe(401);
    expect(answer.body.error, what).toBe('invalid_client');
    expect(answer.headers.get('www-authenticate'), what).not.toBeNull();
  }

  it.each(PATHS)(
    'is accepted at %s with every algorithm, aud the issuer or the endpoint',
    async (path) => {
      for (const alg of ALGORITHMS) {
        for (const aud of [server.url, url(path)]) {
          const answer = await send(path, {
            client_id: 'demo-fapi',
            ...assertionParams(await assertion({ alg, aud })),
          });
          ENDPOINTS[path].accepted(answer);
        }
      }
      // client_id may be left out: the assertion names the client
      ENDPOINTS[path].accepted(
        await send(path, assertionParams(await assertion({ alg: 'EdDSA' }))),
      );
    },
  );

  it.each(PATHS)('refuses a replayed assertion at %s (401 invalid_client)', async (path) => {
    const once = await assertion();
    // at /token, only a grant that holds spends the assertion (a refused one records nothing)
    const first = path === '/token' ? '/revoke' : path;
    ENDPOINTS[first].accepted(await send(first, assertionParams(once)));
    for (const again of PATHS)
      refused(await send(again, assertionParams(once)), `replay at ${again}`);
  });

  it('records nothing for an assertion whose grant is refused at /token', async () => {
    const once = await assertion();
    ENDPOINTS['/token'].accepted(await send('/token', assertionParams(once)));
    ENDPOINTS['/introspect'].accepted(await send('/introspect', assertionParams(once)));
    refused(await send('/token', assertionParams(once)), 'replay at /token');
  });

  it.each(PATHS)(
    'refuses bent assertions and a client_secret at %s (401 invalid_client)',
    async (path) => {
      const stranger = await signingKey('ES256', 'stranger');
      const impostor = await signingKey('ES256', clientKeys.ES256.kid);
      const t = now();
      const attacks: [string, Record<string, string>][] = [
        ['unknown key', assertionParams(await assertion({ signer: stranger }))],
        ['unknown key under a known kid', assertionParams(await assertion({ signer: impostor }))],
        [
          'aud of another server',
          assertionParams(await assertion({ aud: 'https://other.example' })),
        ],
        [
          'aud of another server, at the same path',
          assertionParams(await assertion({ aud: `https://other.example${path}` })),
        ],
        ['exp 1 hour ahead', assertionParams(await assertion({ exp: t + 3600 }))],
        ['expired', assertionParams(await assertion({ iat: t - 600, exp: t - 300 }))],
        ['iss ≠ sub', assertionParams(await assertion({ sub: 'demo-web' }))],
        [
          'iss of another client',
          assertionParams(await assertion({ iss: 'demo-web', sub: 'demo-web' })),
        ],
        ['client_secret instead', { client_id: 'demo-fapi', client_secret: 'demo-web-secret' }],
      ];
      for (const [what, credentials] of attacks) refused(await send(path, credentials), what);
      // a secret sent with HTTP Basic is refused the same way
      const basic = await post(path, await ENDPOINTS[path].form(), {
        ...(await ENDPOINTS[path].headers()),
        Authorization: `Basic ${Buffer.from('demo-fapi:demo-fapi-secret').toString('base64')}`,
      });
      refused(basic, 'client_secret_basic');
    },
  );
});

describe('DPoP for demo-fapi (RFC 9449)', () => {
  it('refuses a token request without a proof; with one the tokens are bound', async () => {
    const { code, verifier } = await handMadeCode();
    const bare = await redeem(code, verifier);
    expect(bare.status, JSON.stringify(bare.body)).toBe(400);
    expect(['invalid_dpop_proof', 'invalid_request']).toContain(bare.body.error);

    const key = await proofKey();
    const bound = await redeem(code, verifier, key);
    expect(bound.status, JSON.stringify(bound.body)).toBe(200);
    expect(bound.body.token_type).toBe('DPoP');
    expect(decodeJwt(bound.body.access_token as string).cnf).toEqual({ jkt: key.jkt });

    // a refresh without a proof is refused too; with one, the new token is bound
    const refresh = {
      grant_type: 'refresh_token',
      refresh_token: bound.body.refresh_token as string,
    };
    const bareRefresh = await post('/token', {
      ...refresh,
      ...assertionParams(await assertion()),
    });
    expect(bareRefresh.status).toBe(400);
    expect(['invalid_dpop_proof', 'invalid_request']).toContain(bareRefresh.body.error);
    const refreshed = await post(
      '/token',
      { ...refresh, ...assertionParams(await assertion()) },
      { DPoP: await proof(key, '/token') },
    );
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    expect(refreshed.body.token_type).toBe('DPoP');
    expect(decodeJwt(refreshed.body.access_token as string).cnf).toEqual({ jkt: key.jkt });
  });

  it('binds the code to the key of the proof sent to /par (dpop_jkt)', async () => {
    const key = await proofKey();
    const { code, verifier } = await handMadeCode(key);
    const thief = await redeem(code, verifier, await proofKey());
    expect(thief.status, JSON.stringify(thief.body)).toBe(400);
    expect(thief.body.error).toBe('invalid_grant');
    // the refusal did not burn the code: its key still redeems it
    const owner = await redeem(code, verifier, key);
    expect(owner.status, JSON.stringify(owner.body)).toBe(200);
    expect(owner.body.token_type).toBe('DPoP');
    expect(decodeJwt(owner.body.access_token as string).cnf).toEqual({ jkt: key.jkt });
  });

  it('refuses a push whose dpop_jkt is not the key of its proof', async () => {
    const { params } = await authorizationParams();
    const other = await proofKey();
    const pushed = await pushFapi(
      { ...params, dpop_jkt: other.jkt },
      { DPoP: await proof(await proofKey(), '/par') },
    );
    expect(pushed.status).toBe(400);
    expect(pushed.body.error).toBe('invalid_dpop_proof');
  });

  /** A live DPoP-bound access token of demo-fapi for alice, and its key, made by hand. */
  async function boundAccessToken() {
    const key = await proofKey();
    const { code, verifier } = await handMadeCode(key);
    const tokens = await redeem(code, verifier, key);
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    expect(tokens.body.token_type).toBe('DPoP');
    const accessToken = tokens.body.access_token as string;
    const me = async () =>
      fetch(url('/api/me'), {
        headers: {
          Authorization: `DPoP ${accessToken}`,
          DPoP: await proof(key, '/api/me', accessToken),
        },
      });
    const live = await me();
    expect(live.status).toBe(200);
    expect(await live.json()).toMatchObject({ sub: 'alice', method: 'dpop' });
    return { accessToken, key, me };
  }

  // RFC 7662 §2.2 and RFC 9449 §6.2: active, DPoP, with the binding for the resource to check
  it('introspects a live DPoP-bound access token as active to its own client', async () => {
    const { accessToken, key } = await boundAccessToken();
    const answer = await post('/introspect', {
      token: accessToken,
      ...assertionParams(await assertion()),
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      active: true,
      sub: 'alice',
      client_id: 'demo-fapi',
      token_type: 'DPoP',
      cnf: { jkt: key.jkt },
    });
  });

  // RFC 7009 §2.1: a bound access token is revoked like any other, with its grant
  it('revokes a DPoP-bound access token at /revoke', async () => {
    const { accessToken, me } = await boundAccessToken();
    const revoked = await post('/revoke', {
      token: accessToken,
      token_type_hint: 'access_token',
      ...assertionParams(await assertion()),
    });
    expect(revoked.status).toBe(200);
    expect((await me()).status).toBe(401);
  });
});
