// createAuthorizationServer (server.ts) and the token endpoint (token-endpoint.ts) at the
// edges the main suites leave out: every option createAuthorizationServer hands on to its
// endpoints (scopesSupported, formKey, formTtl, the device page's budget, token path aliases,
// DPoP off), the exact refusals of the token endpoint, its diagnostics channel messages, its
// unexpected failures and a response already started. Every server is built inside its test.
import { randomUUID } from 'node:crypto';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { RequestListener } from 'node:http';
import { decodeJwt, SignJWT } from 'jose';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { toNodeListener } from '../../src/adapters/node.js';
import { authenticate } from '../../src/auth/authenticate.js';
import { createSessions } from '../../src/auth/session/session.js';
import { createRouter } from '../../src/http/routing/router.js';
import { CLIENT_ASSERTION_TYPE } from '../../src/oauth/clients/assertion.js';
import { defineClient } from '../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../src/oauth/clients/store.js';
import { createTokenEndpoint } from '../../src/oauth/endpoints/token.js';
import {
  type CreateAuthorizationServerOptions,
  createAuthorizationServer,
} from '../../src/oauth/server.js';
import { createKeySet } from '../../src/oauth/tokens/key-set.js';
import type { RateLimitHit, RateLimitStore } from '../../src/rate-limit/store.js';
import { hiddenInputs, sessionCookie } from '../helpers/browser.js';
import { fakeRequest, fakeResponse } from '../helpers/fake-http.js';
import { closeAll, json, type Listening, listen, type Reply, request } from '../helpers/http.js';
import { captureLogger } from '../helpers/logger.js';
import { type Key, newKey } from './endpoints/par-fixtures.js';
import {
  expectTokenHeaders,
  ISSUER,
  pkce,
  plantCode,
  redeemWebCode,
  startTokenServer,
  tokenRequest,
} from './token-fixtures.js';

afterAll(closeAll);
afterEach(() => {
  vi.useRealTimers();
});

const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const KEYS = createKeySet();
const FORM_KEY = 'a form key shared by every process of the issuer';
const EXPIRED_FORM = 'This form has expired or was changed. Open the page again.';

/** The clients of {@link startServer}: a device and a service (hashing secrets is slow: made once). */
async function makeClients(): Promise<MemoryClientStore> {
  return new MemoryClientStore([
    await defineClient({
      clientId: 'tv',
      name: 'Living-room TV',
      grantTypes: [DEVICE_GRANT],
      redirectUris: [],
      scopes: ['openid', 'read:messages'],
    }),
    await defineClient({
      clientId: 'service',
      secret: 'service-secret-1234',
      grantTypes: ['client_credentials'],
      redirectUris: [],
      scopes: ['read:messages'],
    }),
  ]);
}
let clients: MemoryClientStore | undefined;

/** createAuthorizationServer for ISSUER behind the router on a real socket, built by the test. */
async function startServer(
  options: Partial<CreateAuthorizationServerOptions> = {},
): Promise<{ app: Listening; as: ReturnType<typeof createAuthorizationServer> }> {
  clients ??= await makeClients();
  let listener: RequestListener = (_req, res) => res.end();
  const app = await listen((req, res) => listener(req, res));
  const as = createAuthorizationServer({
    issuer: ISSUER,
    clients,
    keys: await KEYS,
    users: {
      verify: (username, password) =>
        password === `${username}-password` ? { sub: username } : undefined,
      get: (sub) => ({ sub }),
    },
    sessions: createSessions({ allowedOrigins: [ISSUER], cookie: { secure: false } }),
    logger: captureLogger(),
    ...options,
  });
  listener = toNodeListener([createRouter(as.routes)], { logger: captureLogger() });
  return { app, as };
}

const postForm = (app: Listening, path: string, fields: [string, string][], cookie?: string) =>
  request(app, path, {
    method: 'POST',
    headers: { ...FORM, ...(cookie === undefined ? {} : { Cookie: cookie }) },
    body: new URLSearchParams(fields).toString(),
  });

/** The sign-in form of /device/verify, filled in for alice. */
async function filledSignIn(app: Listening): Promise<[string, string][]> {
  const page = await request(app, '/device/verify');
  expect(page.status).toBe(200);
  return [...hiddenInputs(page.body), ['username', 'alice'], ['password', 'alice-password']];
}

/** A failure store that keeps the key and window of every increment. */
class RecordingStore implements RateLimitStore {
  readonly calls: [string, number][] = [];
  readonly #counts = new Map<string, RateLimitHit>();
  increment(key: string, windowMs: number): RateLimitHit {
    this.calls.push([key, windowMs]);
    const previous = this.#counts.get(key);
    const hit = { count: (previous?.count ?? 0) + 1, resetAt: Date.now() + windowMs };
    this.#counts.set(key, hit);
    return hit;
  }
}

/** The messages published on a diagnostics channel while `run` runs. */
async function published<T>(name: string, run: () => Promise<void>): Promise<T[]> {
  const messages: T[] = [];
  const listener = (message: unknown) => messages.push(message as T);
  subscribe(name, listener);
  try {
    await run();
  } finally {
    unsubscribe(name, listener);
  }
  return messages;
}

/** An OAuth error answer of the token endpoint, exactly. */
function expectOAuthError(reply: Reply, status: number, error: string, description: string) {
  expect({ status: reply.status, body: json(reply) }).toEqual({
    status,
    body: { error, error_description: description },
  });
  expectTokenHeaders(reply);
}

describe('createAuthorizationServer (server.ts)', () => {
  it('advertises the scopesSupported it is given, in the metadata documents and metadata()', async () => {
    const scopes = ['openid', 'read:messages'];
    const { app, as } = await startServer({ scopesSupported: scopes });
    for (const path of [
      '/.well-known/openid-configuration',
      '/.well-known/oauth-authorization-server',
    ]) {
      const reply = await request(app, path);
      expect(reply.status).toBe(200);
      expect(json(reply).scopes_supported).toEqual(scopes);
    }
    expect(as.metadata().scopes_supported).toEqual(scopes);
    // without the option: the default list
    const { as: plain } = await startServer();
    expect(plain.metadata().scopes_supported).toEqual([
      'openid',
      'profile',
      'email',
      'offline_access',
    ]);
  });

  it('accepts a form rendered by another server given the same formKey, at the device page', async () => {
    const { app: first } = await startServer({ formKey: FORM_KEY });
    const { app: second } = await startServer({ formKey: FORM_KEY });
    const { app: stranger } = await startServer({ formKey: `${FORM_KEY}, but another` });
    const fields = await filledSignIn(first);
    const signedIn = await postForm(second, '/device/verify', fields);
    expect(signedIn.status).toBe(200);
    expect(sessionCookie(signedIn.headers)).toBeDefined();
    expect(signedIn.body).not.toContain(EXPIRED_FORM);
    const refused = await postForm(stranger, '/device/verify', fields);
    expect(refused.status).toBe(400);
    expect(refused.body).toContain(EXPIRED_FORM);
    expect(sessionCookie(refused.headers)).toBeUndefined();
  });

  it('gives the device page the formTtl it is given: a form older than that is refused', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    const { app } = await startServer({ formTtl: 1_000 });
    const { app: lasting } = await startServer();
    const stale = await filledSignIn(app);
    const kept = await filledSignIn(lasting);
    vi.setSystemTime(Date.now() + 5_000);
    const refused = await postForm(app, '/device/verify', stale);
    expect(refused.status).toBe(400);
    expect(refused.body).toContain(EXPIRED_FORM);
    // the default lifetime (15 minutes) keeps a form of 5 seconds
    const accepted = await postForm(lasting, '/device/verify', kept);
    expect(accepted.status).toBe(200);
    expect(sessionCookie(accepted.headers)).toBeDefined();
  });

  it('gives the device page deviceMaxFailures, deviceFailureWindow and deviceFailureStore', async () => {
    const store = new RecordingStore();
    const { app } = await startServer({
      deviceMaxFailures: 2,
      deviceFailureWindow: 120_000,
      deviceFailureStore: store,
    });
    const signedIn = await postForm(app, '/device/verify', await filledSignIn(app));
    const cookie = sessionCookie(signedIn.headers)!;
    const attempt = () =>
      request(app, '/device/verify?user_code=BBBB-BBBB', { headers: { Cookie: cookie } });
    const wrong = await attempt();
    expect(wrong.status).toBe(200);
    expect(wrong.body).toContain(
      'That code is not valid or has expired. Check the code your device shows.',
    );
    // the second code spends the budget of 2
    const spent = await attempt();
    expect(spent.status).toBe(429);
    const seconds = Number(spent.headers['retry-after']);
    expect(seconds).toBeGreaterThan(100);
    expect(seconds).toBeLessThanOrEqual(120);
    expect(store.calls).toEqual([
      ['device-user-code:alice', 120_000],
      ['device-user-code:alice', 120_000],
    ]);
  });

  it('names the device page at the issuer in verification_uri, one slash after an issuer ending in one', async () => {
    const issuer = `${ISSUER}/tenant/`;
    const { app } = await startServer({
      issuer,
      paths: { deviceVerify: '/activate' },
      sessions: createSessions({ allowedOrigins: [ISSUER], cookie: { secure: false } }),
    });
    const reply = await postForm(app, '/tenant/device', [
      ['client_id', 'tv'],
      ['scope', 'read:messages'],
    ]);
    expect(reply.status).toBe(200);
    const body = json(reply);
    expect(body.verification_uri).toBe(`${ISSUER}/tenant/activate`);
    expect(body.verification_uri_complete).toBe(
      `${ISSUER}/tenant/activate?user_code=${body.user_code}`,
    );
  });

  it('serves the token endpoint itself at each of the tokenPathAliases', async () => {
    const { app } = await startServer({ tokenPathAliases: ['/oauth/token'] });
    const reply = await postForm(app, '/oauth/token', [
      ['grant_type', 'client_credentials'],
      ['client_id', 'service'],
      ['client_secret', 'service-secret-1234'],
    ]);
    expect(reply.status).toBe(200);
    expectTokenHeaders(reply);
    expect(json(reply)).toMatchObject({ token_type: 'Bearer', scope: 'read:messages' });
  });

  it('makes a bearer authenticator without DPoP when the server has DPoP off', async () => {
    const { as } = await startServer({ dpop: false });
    expect(as.bearer.challenge).toBe('Bearer realm="api"');
    expect(as.bearer.headers).toEqual(['Authorization']);
    const api = await listen(
      toNodeListener(
        [
          authenticate([as.bearer]),
          (_req, res) => {
            res.end('in');
          },
        ],
        {
          logger: captureLogger(),
        },
      ),
    );
    const reply = await request(api, '/');
    expect(reply.status).toBe(401);
    expect(reply.headers['www-authenticate']).toBe('Bearer realm="api"');
    // with DPoP on (the default) the DPoP scheme is offered too
    const { as: withDpop } = await startServer();
    expect(withDpop.bearer.challenge).toMatch(/^Bearer realm="api", DPoP realm="api", algs="/);
  });
});

describe('createTokenEndpoint (token-endpoint.ts)', () => {
  it('answers a GET with 405, Allow: POST and its description', async () => {
    const { server } = await startTokenServer();
    const reply = await request(server, '/token');
    expect(reply.headers.allow).toBe('POST');
    expectOAuthError(reply, 405, 'invalid_request', 'The token endpoint takes POST requests only.');
  });

  it('says grant_type is required when it is missing or empty', async () => {
    const { server } = await startTokenServer();
    for (const params of [{}, { grant_type: '' }] as Record<string, string>[]) {
      const reply = await tokenRequest(server, params, { client: 'demo-service' });
      expectOAuthError(reply, 400, 'invalid_request', 'The parameter grant_type is required.');
    }
  });

  it('says a grant type it does not know is not supported', async () => {
    const { server } = await startTokenServer();
    const reply = await tokenRequest(
      server,
      { grant_type: 'password', username: 'alice', password: 'x' },
      { client: 'demo-service' },
    );
    expectOAuthError(reply, 400, 'unsupported_grant_type', 'This grant type is not supported.');
  });

  it('says a client may not use a grant type it was not given', async () => {
    const { server } = await startTokenServer();
    const reply = await tokenRequest(
      server,
      { grant_type: 'client_credentials' },
      { client: 'demo-web' },
    );
    expectOAuthError(reply, 400, 'unauthorized_client', 'This client may not use this grant type.');
  });

  it('tells a client whose tokens must be DPoP-bound to send a proof', async () => {
    const clients = new MemoryClientStore([
      await defineClient({
        clientId: 'bound',
        secret: 'bound-secret-1234',
        grantTypes: ['client_credentials'],
        redirectUris: [],
        scopes: ['read:messages'],
        dpopBoundAccessTokens: true,
      }),
    ]);
    const { server } = await startTokenServer({ clients });
    const reply = await tokenRequest(server, {
      grant_type: 'client_credentials',
      client_id: 'bound',
      client_secret: 'bound-secret-1234',
    });
    expectOAuthError(reply, 400, 'invalid_dpop_proof', 'This client must send a DPoP proof.');
  });

  it('tells a client held to FAPI 2.0 to sign its DPoP proof with PS256, ES256 or EdDSA', async () => {
    const assertionKey = await newKey('ES256');
    const rsa = await newKey('RS256');
    const ec = await newKey('ES256');
    const clients = new MemoryClientStore([
      await defineClient({
        clientId: 'bank',
        jwks: { keys: [assertionKey.jwk] },
        grantTypes: ['client_credentials'],
        redirectUris: [],
        scopes: ['read:messages'],
      }),
      await defineClient({
        clientId: 'plain',
        secret: 'plain-secret-1234',
        grantTypes: ['client_credentials'],
        redirectUris: [],
        scopes: ['read:messages'],
      }),
    ]);
    const { server } = await startTokenServer({
      clients,
      keys: await createKeySet({ algorithm: 'ES256' }),
      fapi2: ['bank'],
    });
    const now = () => Math.floor(Date.now() / 1000);
    const proof = (key: Key) =>
      new SignJWT({ jti: randomUUID(), htm: 'POST', htu: `${ISSUER}/token`, iat: now() })
        .setProtectedHeader({ alg: key.alg, typ: 'dpop+jwt', jwk: key.jwk })
        .sign(key.privateKey);
    const bank = async (key: Key) => {
      const assertion = await new SignJWT({
        iss: 'bank',
        sub: 'bank',
        aud: ISSUER,
        jti: randomUUID(),
        exp: now() + 60,
      })
        .setProtectedHeader({ alg: 'ES256' })
        .sign(assertionKey.privateKey);
      const params = {
        grant_type: 'client_credentials',
        client_assertion_type: CLIENT_ASSERTION_TYPE,
        client_assertion: assertion,
      };
      return tokenRequest(server, params, { headers: { DPoP: await proof(key) } });
    };
    expectOAuthError(
      await bank(rsa),
      400,
      'invalid_dpop_proof',
      'Sign the DPoP proof with PS256, ES256 or EdDSA.',
    );
    // an ES256 proof binds bank's token to its key
    const bound = await bank(ec);
    expect(bound.status).toBe(200);
    expect(json(bound).token_type).toBe('DPoP');
    expect(decodeJwt(json(bound).access_token as string).cnf).toEqual({ jkt: ec.jkt });
    // a client not held to the profile may prove with RS256
    const plain = await tokenRequest(
      server,
      { grant_type: 'client_credentials', client_id: 'plain', client_secret: 'plain-secret-1234' },
      { headers: { DPoP: await proof(rsa) } },
    );
    expect(plain.status).toBe(200);
    expect(json(plain).token_type).toBe('DPoP');
    expect(decodeJwt(json(plain).access_token as string).cnf).toEqual({ jkt: rsa.jkt });
  });

  it('publishes each issue on portico:oauth:token-issued, saying whether a refresh token came', async () => {
    const { ctx, server } = await startTokenServer();
    const { verifier, challenge } = pkce();
    const { code } = await plantCode(ctx, { codeChallenge: challenge });
    const replies: Reply[] = [];
    const messages = await published<Record<string, unknown>>(
      'portico:oauth:token-issued',
      async () => {
        replies.push(
          await tokenRequest(
            server,
            { grant_type: 'client_credentials' },
            { client: 'demo-service' },
          ),
        );
        replies.push(await redeemWebCode(server, code, verifier));
      },
    );
    expect(replies.map((reply) => reply.status)).toEqual([200, 200]);
    expect(json(replies[1]!).refresh_token).toEqual(expect.any(String));
    expect(messages.map(({ req: _req, ...rest }) => rest)).toEqual([
      {
        grantType: 'client_credentials',
        clientId: 'demo-service',
        scope: 'read:messages write:messages',
        refreshToken: false,
      },
      {
        grantType: 'authorization_code',
        clientId: 'demo-web',
        scope: 'openid profile email offline_access read:messages',
        refreshToken: true,
      },
    ]);
    for (const message of messages) expect(message.req).toMatchObject({ method: 'POST' });
  });

  it('publishes each refusal on portico:oauth:token-refused, naming only grant types it knows', async () => {
    const { server } = await startTokenServer();
    const messages = await published<Record<string, unknown>>(
      'portico:oauth:token-refused',
      async () => {
        await tokenRequest(server, {}, { client: 'demo-service' });
        await tokenRequest(server, { grant_type: 'password' }, { client: 'demo-service' });
        await tokenRequest(server, { grant_type: 'client_credentials' }, { client: 'demo-web' });
        await tokenRequest(server, {
          grant_type: 'client_credentials',
          client_id: 'demo-service',
          client_secret: 'not-the-secret',
        });
      },
    );
    expect(messages.map(({ req: _req, ...rest }) => rest)).toEqual([
      { grantType: undefined, clientId: 'demo-service', error: 'invalid_request', status: 400 },
      {
        grantType: undefined,
        clientId: 'demo-service',
        error: 'unsupported_grant_type',
        status: 400,
      },
      {
        grantType: 'client_credentials',
        clientId: 'demo-web',
        error: 'unauthorized_client',
        status: 400,
      },
      {
        grantType: 'client_credentials',
        clientId: undefined,
        error: 'invalid_client',
        status: 401,
      },
    ]);
    for (const message of messages) expect(message.req).toMatchObject({ method: 'POST' });
  });

  it('logs an unexpected failure and answers server_error with its description', async () => {
    const logger = captureLogger();
    const { ctx, server } = await startTokenServer({ logger });
    const { verifier, challenge } = pkce();
    const { code } = await plantCode(ctx, { sub: 'explode', codeChallenge: challenge });
    const reply = await redeemWebCode(server, code, verifier);
    expectOAuthError(reply, 500, 'server_error', 'The authorization server failed unexpectedly.');
    const errors = logger.lines.filter((line) => line.level === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      message: 'the token endpoint failed unexpectedly',
      fields: { component: 'oauth', event: 'token.failed' },
    });
    expect(String(errors[0]!.fields.err)).toContain('the user database is down');
  });

  it('drops the connection when it fails after the response was started, writing nothing more', async () => {
    const { ctx } = await startTokenServer();
    const endpoint = createTokenEndpoint(ctx);
    const req = fakeRequest({ method: 'GET', url: '/token' });
    const { res, body } = fakeResponse(req);
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    await expect(endpoint(req, res, async () => {})).resolves.toBeUndefined();
    expect(res.destroyed).toBe(true);
    expect(res.statusCode).toBe(200);
    expect(body()).toBeUndefined();
  });
});
