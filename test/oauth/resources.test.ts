// RFC 8707 resource indicators at createAuthorizationServer(), over real sockets: configured
// resources, `resource` at /authorize, /par, /device and every grant at /token, the audience
// and scope of each token, invalid_target, and the server's own verifiers per resource.
import { randomBytes } from 'node:crypto';
import { createServer, type RequestListener } from 'node:http';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  authenticate,
  compose,
  createRouter,
  createSessions,
  getPrincipal,
  sendJson,
  toNodeListener,
} from '../../src/index.js';
import {
  type AuthorizationServer,
  type CreateAuthorizationServerOptions,
  createAuthorizationServer,
  createKeySet,
  DEVICE_CODE_GRANT,
  defineClient,
  type KeySet,
  MemoryClientStore,
  type OAuthClient,
  type UserClaims,
} from '../../src/oauth/index.js';
import { codeChallengeS256 } from '../../src/oauth/protocol/pkce.js';
import { codes, deviceCodes, refreshTokens } from '../../src/oauth/store/records.js';
import type { RecordStore } from '../../src/oauth/store/store.js';
import { hashToken } from '../../src/oauth/tokens/issue.js';
import { RedisRecordStore } from '../../src/redis/record-store.js';
import { signInAndApprove } from '../helpers/browser.js';
import { type Listening, listen } from '../helpers/http.js';
import { hasRedis, type RedisServer, startRedis } from '../helpers/redis.js';

const USERS: Record<string, UserClaims> = {
  alice: { sub: 'alice', name: 'Alice Example', email: 'alice@example.com' },
};
const REDIRECT = 'http://127.0.0.1:8080/callback';
const SCOPES = ['openid', 'profile', 'offline_access', 'read:messages', 'write:messages'];

let keys: KeySet;

async function clients(): Promise<OAuthClient[]> {
  return Promise.all([
    defineClient({
      clientId: 'web',
      secret: 'web-secret',
      grantTypes: ['authorization_code', 'refresh_token'],
      redirectUris: [REDIRECT],
      scopes: SCOPES,
    }),
    defineClient({
      clientId: 'service',
      secret: 'service-secret',
      grantTypes: ['client_credentials'],
      redirectUris: [],
      scopes: ['read:messages', 'write:messages', 'admin:messages'],
    }),
    defineClient({
      clientId: 'tv',
      grantTypes: [DEVICE_CODE_GRANT, 'refresh_token'],
      redirectUris: [],
      scopes: SCOPES,
    }),
  ]);
}

interface Running {
  auth: AuthorizationServer;
  url: string;
  api: string;
  mcp: string;
  listening: Listening;
}

/** A server whose issuer is its URL, resources the issuer and `{issuer}/mcp`, with two APIs. */
async function start(more: Partial<CreateAuthorizationServerOptions> = {}): Promise<Running> {
  let app: RequestListener = (_req, res) => res.end();
  const listening = await listen(createServer((req, res) => app(req, res)));
  const { url } = listening;
  const mcp = `${url}/mcp`;
  const auth = createAuthorizationServer({
    issuer: url,
    clients: new MemoryClientStore(await clients()),
    keys,
    users: {
      verify: (username, password) =>
        password === `${username}-password` ? USERS[username] : undefined,
      get: (sub) => USERS[sub],
    },
    sessions: createSessions({ allowedOrigins: [url] }),
    resources: [
      { identifier: url },
      { identifier: mcp, scopes: ['read:messages', 'write:messages'] },
    ],
    ...more,
  });
  const me = compose([(req, res) => sendJson(res, 200, { sub: getPrincipal(req)?.sub })]);
  app = toNodeListener([
    createRouter({
      ...auth.routes,
      '/api/me': { GET: compose([authenticate([auth.bearer]), me]) },
      '/mcp': { POST: compose([authenticate([auth.bearerFor(mcp)]), me]) },
    }),
  ]);
  return { auth, url, api: url, mcp, listening };
}

const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
const SECRETS: Record<string, string> = { web: 'web-secret', service: 'service-secret' };

/** POSTs a form to `path`, as `client` (Basic when it has a secret). */
async function post(
  server: Running,
  path: string,
  form: [string, string][],
  client?: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const body = new URLSearchParams(form);
  const headers: Record<string, string> = {
    'Content-Type': 'application/x-www-form-urlencoded',
  };
  if (client !== undefined) {
    const secret = SECRETS[client];
    if (secret === undefined) body.set('client_id', client);
    else headers.Authorization = basic(client, secret);
  }
  const res = await fetch(`${server.url}${path}`, { method: 'POST', headers, body });
  const text = await res.text();
  return { status: res.status, body: text === '' ? {} : JSON.parse(text) };
}

const resources = (...values: string[]): [string, string][] =>
  values.map((value) => ['resource', value]);

/** The user's code, through a real sign-in and consent, for an authorization request. */
async function authorize(
  server: Running,
  extra: [string, string][] = [],
  scope = SCOPES.join(' '),
) {
  const verifier = randomBytes(32).toString('base64url');
  const target = new URL(`${server.url}/authorize`);
  for (const [name, value] of [
    ['response_type', 'code'],
    ['client_id', 'web'],
    ['redirect_uri', REDIRECT],
    ['scope', scope],
    ['state', 's-1'],
    ['code_challenge', codeChallengeS256(verifier)],
    ['code_challenge_method', 'S256'],
    ...extra,
  ] as [string, string][]) {
    target.searchParams.append(name, value);
  }
  const back = new URL(await signInAndApprove(server.url, target));
  return { back, verifier };
}

async function codeTokens(
  server: Running,
  extra: [string, string][] = [],
  atToken: [string, string][] = [],
) {
  const { back, verifier } = await authorize(server, extra);
  const code = back.searchParams.get('code');
  expect(code, back.href).not.toBeNull();
  return post(
    server,
    '/token',
    [
      ['grant_type', 'authorization_code'],
      ['code', code!],
      ['redirect_uri', REDIRECT],
      ['code_verifier', verifier],
      ...atToken,
    ],
    'web',
  );
}

const claims = (token: unknown) => decodeJwt(String(token));

const call = (server: Running, path: '/api/me' | '/mcp', token: unknown) =>
  fetch(`${server.url}${path}`, {
    method: path === '/mcp' ? 'POST' : 'GET',
    headers: { Authorization: `Bearer ${String(token)}` },
  });

beforeAll(async () => {
  keys = await createKeySet();
});

describe('the resources option', () => {
  const base = async () => ({
    issuer: 'https://auth.example.test',
    clients: new MemoryClientStore(await clients()),
    keys,
    users: { verify: () => undefined, get: () => undefined },
    sessions: createSessions({ allowedOrigins: ['https://auth.example.test'] }),
  });

  it('defaults to the issuer alone, and exposes the resolved resources', async () => {
    const auth = createAuthorizationServer(await base());
    expect(auth.resources).toEqual([
      { identifier: 'https://auth.example.test', scopes: undefined, name: undefined },
    ]);
    expect(auth.context.resources).toBe(auth.resources);
    expect(auth.context.tokens.audience).toBe('https://auth.example.test');
  });

  it('refuses audience with its one-line migration, and bad resources at start', async () => {
    const options = await base();
    expect(() =>
      createAuthorizationServer({ ...options, audience: 'https://api.example.test' } as never),
    ).toThrow(/resources: \[\{ identifier: "https:\/\/api\.example\.test" \}\]/);
    for (const [resourcesOption, message] of [
      [[], /non-empty list/],
      [[{ identifier: '/relative' }], /absolute URI without a fragment/],
      [[{ identifier: 'https://api.example.test/#x' }], /absolute URI without a fragment/],
      [
        [{ identifier: 'https://API.example.test' }, { identifier: 'https://api.example.test/' }],
        /configured twice/,
      ],
      [[{ identifier: 'https://api.example.test', scopes: ['a b'] }], /scope names/],
      [[{ identifier: 'https://api.example.test', audience: 'x' }], /resources\[\]\.audience/],
      [[{ identifier: 'https://api.example.test', name: '' }], /non-empty string/],
    ] as const) {
      expect(() =>
        createAuthorizationServer({ ...options, resources: resourcesOption as never }),
      ).toThrow(message);
    }
  });

  it('gives a verifier per configured resource, and a TypeError for any other at once', async () => {
    const auth = createAuthorizationServer({
      ...(await base()),
      resources: [
        { identifier: 'https://api.example.test' },
        { identifier: 'https://mcp.example.test' },
      ],
    });
    expect(auth.bearerFor('https://api.example.test')).toBe(auth.bearer);
    expect(auth.bearerFor('https://mcp.example.test')).toBe(
      auth.bearerFor('https://mcp.example.test'),
    );
    expect(() => auth.bearerFor('https://elsewhere.example.test')).toThrow(TypeError);
  });
});

describe('resource indicators at the authorization server (RFC 8707)', () => {
  let server: Running;

  beforeAll(async () => {
    server = await start();
  });
  afterAll(async () => {
    await server?.listening.close();
  });

  it('without any resource, keeps the default audience and every granted scope', async () => {
    const { status, body } = await codeTokens(server);
    expect(status).toBe(200);
    expect(claims(body.access_token).aud).toBe(server.api);
    expect(body.scope).toBe(SCOPES.join(' '));
    expect((await call(server, '/api/me', body.access_token)).status).toBe(200);
    // the default resource's token is refused at /mcp
    const refused = await call(server, '/mcp', body.access_token);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
  });

  it('limits a grant to the one resource of /authorize: aud, scope cut to what it understands', async () => {
    const { status, body } = await codeTokens(server, resources(server.mcp));
    expect(status).toBe(200);
    const token = claims(body.access_token);
    expect(token.aud).toBe(server.mcp);
    expect(body.scope).toBe('read:messages write:messages');
    expect(token.scope).toBe('read:messages write:messages');
    // the ID token is the client's: still issued for the grant's openid
    expect(typeof body.id_token).toBe('string');
    expect((await call(server, '/mcp', body.access_token)).status).toBe(200);
    // the attack: a token minted for /mcp presented at the API
    const atApi = await call(server, '/api/me', body.access_token);
    expect(atApi.status).toBe(401);
    expect(atApi.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
    // and at UserInfo, which takes the default resource's tokens
    const info = await fetch(`${server.url}/userinfo`, {
      headers: { Authorization: `Bearer ${String(body.access_token)}` },
    });
    expect(info.status).toBe(401);
  });

  it('with several at /authorize: aud every one, or the one a token request names', async () => {
    const both = resources(server.api, server.mcp);
    const all = await codeTokens(server, both);
    expect(claims(all.body.access_token).aud).toEqual([server.api, server.mcp]);
    expect(all.body.scope).toBe(SCOPES.join(' '));
    expect((await call(server, '/api/me', all.body.access_token)).status).toBe(200);
    expect((await call(server, '/mcp', all.body.access_token)).status).toBe(200);
    const one = await codeTokens(server, both, resources(server.mcp));
    expect(claims(one.body.access_token).aud).toBe(server.mcp);
  });

  it('refuses at /token a resource the grant does not cover, or that is not configured', async () => {
    const notGranted = await codeTokens(server, resources(server.mcp), resources(server.api));
    expect(notGranted).toMatchObject({ status: 400, body: { error: 'invalid_target' } });
    const unknown = await codeTokens(server, [], resources('https://elsewhere.example.test'));
    expect(unknown).toMatchObject({ status: 400, body: { error: 'invalid_target' } });
    const fragment = await codeTokens(server, [], resources(`${server.mcp}#x`));
    expect(fragment).toMatchObject({ status: 400, body: { error: 'invalid_target' } });
    // a grant without resources may have its token for any configured resource
    const named = await codeTokens(server, [], resources(server.mcp));
    expect(claims(named.body.access_token).aud).toBe(server.mcp);
  });

  it('answers an unknown or malformed resource at /authorize with an error redirect', async () => {
    for (const bad of ['https://elsewhere.example.test', 'not a uri', `${server.mcp}#frag`]) {
      const target = new URL(`${server.url}/authorize`);
      target.search = new URLSearchParams([
        ['response_type', 'code'],
        ['client_id', 'web'],
        ['redirect_uri', REDIRECT],
        ['scope', 'openid'],
        ['state', 'st-9'],
        ['code_challenge', codeChallengeS256(randomBytes(32).toString('base64url'))],
        ['code_challenge_method', 'S256'],
        ['resource', bad],
      ]).toString();
      const res = await fetch(target, { redirect: 'manual' });
      expect(res.status).toBe(303);
      const back = new URL(res.headers.get('location')!);
      expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
      expect(back.searchParams.get('error')).toBe('invalid_target');
      expect(back.searchParams.get('state')).toBe('st-9');
      expect(back.searchParams.get('iss')).toBe(server.url);
    }
  });

  it('refresh keeps the grant resources, may narrow to one, never widens', async () => {
    const first = await codeTokens(server, resources(server.api, server.mcp));
    const refreshToken = String(first.body.refresh_token);
    const record = await refreshTokens(server.auth.context.store).get(hashToken(refreshToken));
    expect(record?.resources).toEqual([server.api, server.mcp]);
    const narrowed = await post(
      server,
      '/token',
      [['grant_type', 'refresh_token'], ['refresh_token', refreshToken], ...resources(server.mcp)],
      'web',
    );
    expect(narrowed.status).toBe(200);
    expect(claims(narrowed.body.access_token).aud).toBe(server.mcp);
    expect(narrowed.body.scope).toBe('read:messages write:messages');
    // the successor still holds both: the next refresh without resource gets both again
    const again = await post(
      server,
      '/token',
      [
        ['grant_type', 'refresh_token'],
        ['refresh_token', String(narrowed.body.refresh_token)],
      ],
      'web',
    );
    expect(claims(again.body.access_token).aud).toEqual([server.api, server.mcp]);
    // a grant for /mcp alone never widens to the API, and the refusal spends nothing
    const mcpOnly = await codeTokens(server, resources(server.mcp));
    const widened = await post(
      server,
      '/token',
      [
        ['grant_type', 'refresh_token'],
        ['refresh_token', String(mcpOnly.body.refresh_token)],
        ...resources(server.api),
      ],
      'web',
    );
    expect(widened).toMatchObject({ status: 400, body: { error: 'invalid_target' } });
    const kept = await post(
      server,
      '/token',
      [
        ['grant_type', 'refresh_token'],
        ['refresh_token', String(mcpOnly.body.refresh_token)],
      ],
      'web',
    );
    expect(kept.status).toBe(200);
    expect(claims(kept.body.access_token).aud).toBe(server.mcp);
  });

  it('carries resource through a pushed request (PAR), repeated, and refuses an unknown one there', async () => {
    const verifier = randomBytes(32).toString('base64url');
    const request: [string, string][] = [
      ['response_type', 'code'],
      ['redirect_uri', REDIRECT],
      ['scope', 'openid read:messages'],
      ['code_challenge', codeChallengeS256(verifier)],
      ['code_challenge_method', 'S256'],
    ];
    const refused = await post(
      server,
      '/par',
      [...request, ...resources('https://x.example.test')],
      'web',
    );
    expect(refused).toMatchObject({ status: 400, body: { error: 'invalid_target' } });
    const pushed = await post(
      server,
      '/par',
      [...request, ...resources(server.api, server.mcp)],
      'web',
    );
    expect(pushed.status).toBe(201);
    const target = new URL(`${server.url}/authorize`);
    target.searchParams.set('client_id', 'web');
    target.searchParams.set('request_uri', String(pushed.body.request_uri));
    const back = new URL(await signInAndApprove(server.url, target));
    const code = back.searchParams.get('code')!;
    const record = await codes(server.auth.context.store).get(hashToken(code));
    expect(record?.resources).toEqual([server.api, server.mcp]);
    const tokens = await post(
      server,
      '/token',
      [
        ['grant_type', 'authorization_code'],
        ['code', code],
        ['redirect_uri', REDIRECT],
        ['code_verifier', verifier],
        ...resources(server.mcp),
      ],
      'web',
    );
    expect(claims(tokens.body.access_token).aud).toBe(server.mcp);
  });

  it('client_credentials: one, several, none, unknown', async () => {
    const grant = (extra: [string, string][]) =>
      post(server, '/token', [['grant_type', 'client_credentials'], ...extra], 'service');
    const none = await grant([]);
    expect(claims(none.body.access_token).aud).toBe(server.api);
    expect(none.body.scope).toBe('read:messages write:messages admin:messages');
    const mcp = await grant(resources(server.mcp));
    expect(claims(mcp.body.access_token).aud).toBe(server.mcp);
    expect(mcp.body.scope).toBe('read:messages write:messages');
    const both = await grant(resources(server.api, server.mcp));
    expect(claims(both.body.access_token).aud).toEqual([server.api, server.mcp]);
    expect(await grant(resources('https://elsewhere.example.test'))).toMatchObject({
      status: 400,
      body: { error: 'invalid_target' },
    });
  });

  it('the device flow: resource at /device limits the grant, the poll may name one of them', async () => {
    const unknown = await post(
      server,
      '/device',
      [['scope', 'openid'], ...resources('urn:x:y')],
      'tv',
    );
    expect(unknown).toMatchObject({ status: 400, body: { error: 'invalid_target' } });
    const started = await post(
      server,
      '/device',
      [['scope', 'openid read:messages offline_access'], ...resources(server.mcp)],
      'tv',
    );
    expect(started.status).toBe(200);
    const hash = hashToken(String(started.body.device_code));
    const store = server.auth.context.store;
    const pending = await deviceCodes(store).get(hash);
    expect(pending?.resources).toEqual([server.mcp]);
    await deviceCodes(store).replace(hash, { ...pending!, status: 'approved', sub: 'alice' });
    const poll = (extra: [string, string][]) =>
      post(
        server,
        '/token',
        [
          ['grant_type', DEVICE_CODE_GRANT],
          ['device_code', String(started.body.device_code)],
          ...extra,
        ],
        'tv',
      );
    expect(await poll(resources(server.api))).toMatchObject({
      status: 400,
      body: { error: 'invalid_target' },
    });
    const tokens = await poll([]);
    expect(tokens.status).toBe(200);
    expect(claims(tokens.body.access_token).aud).toBe(server.mcp);
    expect(tokens.body.scope).toBe('read:messages');
  });

  it('introspection reads tokens of every resource active, with their aud', async () => {
    const mcp = await post(
      server,
      '/token',
      [['grant_type', 'client_credentials'], ...resources(server.mcp)],
      'service',
    );
    const both = await post(
      server,
      '/token',
      [['grant_type', 'client_credentials'], ...resources(server.api, server.mcp)],
      'service',
    );
    const introspect = (token: unknown) =>
      post(server, '/introspect', [['token', String(token)]], 'service');
    expect((await introspect(mcp.body.access_token)).body).toMatchObject({
      active: true,
      aud: server.mcp,
    });
    expect((await introspect(both.body.access_token)).body).toMatchObject({
      active: true,
      aud: [server.api, server.mcp],
    });
  });

  it('token exchange targets default to the configured resources', async () => {
    const { tokenExchangeGrant, defaultGrants, TOKEN_EXCHANGE_GRANT } = await import(
      '../../src/oauth/index.js'
    );
    const exchanger = await defineClient({
      clientId: 'exchanger',
      secret: 'exchanger-secret',
      grantTypes: [TOKEN_EXCHANGE_GRANT],
      redirectUris: [],
      scopes: ['read:messages', 'write:messages', 'openid'],
    });
    const running = await start({
      clients: new MemoryClientStore([...(await clients()), exchanger]),
      grants: [...defaultGrants, tokenExchangeGrant()],
    });
    SECRETS.exchanger = 'exchanger-secret';
    try {
      const subject = await codeTokens(running);
      const exchange = (extra: [string, string][]) =>
        post(
          running,
          '/token',
          [
            ['grant_type', TOKEN_EXCHANGE_GRANT],
            ['subject_token', String(subject.body.access_token)],
            ['subject_token_type', 'urn:ietf:params:oauth:token-type:access_token'],
            ...extra,
          ],
          'exchanger',
        );
      const forMcp = await exchange([...resources(running.mcp), ['scope', 'openid read:messages']]);
      expect(forMcp.status).toBe(200);
      expect(claims(forMcp.body.access_token).aud).toBe(running.mcp);
      expect(forMcp.body.scope).toBe('read:messages');
      const byDefault = await exchange([]);
      expect(claims(byDefault.body.access_token).aud).toBe(running.api);
      expect(await exchange(resources(running.api, running.mcp))).toMatchObject({
        status: 400,
        body: { error: 'invalid_target' },
      });
      // the exchanged /mcp token reads active at the server's introspection
      const seen = await post(
        running,
        '/introspect',
        [['token', String(forMcp.body.access_token)]],
        'exchanger',
      );
      expect(seen.body).toMatchObject({ active: true, aud: running.mcp });
    } finally {
      await running.listening.close();
    }
  });
});

describe.skipIf(!hasRedis)('resources in the Redis record store (real redis-server)', () => {
  let redis: RedisServer;
  let server: Running;

  beforeAll(async () => {
    redis = await startRedis();
    server = await start({
      store: new RedisRecordStore({ client: redis.client(), prefix: 'ri:' }),
    });
  });
  afterAll(async () => {
    await server?.listening.close();
    await redis?.stop();
  });

  it('round-trips the resources of codes, refresh tokens and device codes', async () => {
    const store: RecordStore = server.auth.context.store;
    const grantId = 'g-redis';
    await codes(store).save(
      'c1',
      {
        clientId: 'web',
        redirectUri: REDIRECT,
        sub: 'alice',
        scope: ['openid'],
        codeChallenge: codeChallengeS256('v'.repeat(43)),
        authTime: 1,
        grantId,
        resources: [server.mcp],
      },
      60_000,
    );
    expect((await codes(store).get('c1'))?.resources).toEqual([server.mcp]);
    await deviceCodes(store).save(
      'd1',
      {
        clientId: 'tv',
        scope: ['openid'],
        userCode: 'BCDFGHJK',
        status: 'pending',
        interval: 5_000,
        grantId,
        resources: [server.api, server.mcp],
      },
      60_000,
    );
    expect((await deviceCodes(store).get('d1'))?.resources).toEqual([server.api, server.mcp]);
    // a full flow through Redis: the refresh token keeps the grant's resources
    const first = await codeTokens(server, resources(server.mcp));
    expect(claims(first.body.access_token).aud).toBe(server.mcp);
    const rt = await refreshTokens(store).get(hashToken(String(first.body.refresh_token)));
    expect(rt?.resources).toEqual([server.mcp]);
    const refreshed = await post(
      server,
      '/token',
      [
        ['grant_type', 'refresh_token'],
        ['refresh_token', String(first.body.refresh_token)],
        ...resources(server.api),
      ],
      'web',
    );
    expect(refreshed).toMatchObject({ status: 400, body: { error: 'invalid_target' } });
  });
});
