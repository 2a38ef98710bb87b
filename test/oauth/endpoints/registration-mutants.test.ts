// createRegistrationEndpoints() on its own, behind the router on a real socket: the writable
// store it needs, the exact answers of POST (body, headers, the stored client), the Bearer
// syntax of its tokens, the body limit, review, throttling, and GET/PUT/DELETE (RFC 7592).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyPassword } from '../../../src/auth/password.js';
import { createSessions } from '../../../src/auth/session/session.js';
import type { Middleware } from '../../../src/core/compose.js';
import { createRouter } from '../../../src/http/routing/router.js';
import { defineClient, type OAuthClient } from '../../../src/oauth/clients/client.js';
import type { RegistrationOptions } from '../../../src/oauth/clients/registration-policy.js';
import {
  clientStores,
  MemoryClientStore,
  type WritableClientStore,
} from '../../../src/oauth/clients/store.js';
import { createOAuthContext, type OAuthContext } from '../../../src/oauth/context.js';
import {
  createRegistrationEndpoints,
  type RegistrationEndpoints,
} from '../../../src/oauth/endpoints/registration.js';
import { hashToken } from '../../../src/oauth/tokens/issue.js';
import { createKeySet, type KeySet } from '../../../src/oauth/tokens/key-set.js';
import type { RateLimitStore } from '../../../src/rate-limit/store.js';
import { thrownTypeError } from '../../helpers/errors.js';
import { closeAll, json, type Listening, type Reply, request, serve } from '../../helpers/http.js';
import { captureLogger } from '../../helpers/logger.js';

const ISSUER = 'https://as.example';
const SCOPES = ['openid', 'offline_access', 'read:messages'];
const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' };
const PUBLIC = {
  redirect_uris: ['https://agent.example/cb'],
  token_endpoint_auth_method: 'none',
};
const log = captureLogger();

let keys: KeySet;

beforeAll(async () => {
  keys = await createKeySet();
});
afterAll(async () => {
  await closeAll();
});

/** A context of the issuer whose client store is `clients`, whatever it is. */
function context(clients: unknown): OAuthContext {
  const ctx = createOAuthContext({
    issuer: ISSUER,
    clients: new MemoryClientStore([]),
    keys,
    users: { verify: () => undefined, get: () => undefined },
    sessions: createSessions({ allowedOrigins: [ISSUER] }),
  });
  return { ...ctx, clients: clients as OAuthContext['clients'] };
}

interface Site {
  app: Listening;
  store: WritableClientStore;
  endpoints: RegistrationEndpoints;
}

/** The endpoints over `store` (a configured client `web` first), mounted at /register. */
async function start(
  policy: RegistrationOptions = {},
  options: { registrationUri?: string; store?: WritableClientStore; before?: Middleware } = {},
): Promise<Site> {
  const store = options.store ?? new MemoryClientStore([], { maxClients: 50 });
  const web = await defineClient({
    clientId: 'web',
    secret: 'web-secret-123',
    grantTypes: ['authorization_code'],
    redirectUris: ['https://app.example.com/cb'],
    scopes: ['openid'],
  });
  const endpoints = createRegistrationEndpoints(context(clientStores([web], store)), {
    policy: { limit: 100, ...policy },
    registrationUri: options.registrationUri ?? `${ISSUER}/register`,
    scopes: SCOPES,
  });
  const router = createRouter({
    '/register': endpoints.register,
    '/register/:client_id': endpoints.manage,
    '/unbound': endpoints.manage,
  });
  const app = await serve(options.before ? [options.before, router] : [router], { logger: log });
  return { app, store, endpoints };
}

function post(site: Site, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  return request(site.app, '/register', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

interface Registered {
  client_id: string;
  registration_access_token: string;
  registration_client_uri: string;
  client_secret?: string;
  [field: string]: unknown;
}

async function registered(site: Site, metadata: unknown = PUBLIC): Promise<Registered> {
  const reply = await post(site, metadata);
  expect(reply.status, reply.body).toBe(201);
  return json<Registered>(reply);
}

function manage(
  site: Site,
  reg: { client_id: string },
  token: string | undefined,
  method = 'GET',
  body?: unknown,
): Promise<Reply> {
  return request(site.app, `/register/${reg.client_id}`, {
    method,
    headers: {
      ...(token !== undefined && { Authorization: `Bearer ${token}` }),
      ...(body !== undefined && { 'Content-Type': 'application/json' }),
    },
    ...(body !== undefined && { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
}

/** Asserts an OAuth error answer exactly: status, `no-store`, JSON body. */
function expectOAuthError(reply: Reply, status: number, error: string, description: string) {
  expect(reply.status, reply.body).toBe(status);
  expect(reply.headers['cache-control']).toBe('no-store');
  expect(reply.headers['content-type']).toBe('application/json');
  expect(json(reply)).toStrictEqual({ error, error_description: description });
}

const BAD_BODY =
  'The body must be a JSON object of client metadata (application/json, at most 16 KiB).';
const REGISTRATION_TOKEN = 'The registration access token is missing or wrong.';
const INITIAL_TOKEN = 'The initial access token is missing or wrong.';

describe('the client store', () => {
  const message =
    'createAuthorizationServer(): `features.registration` needs a writable client store in `clients`: clientStores(configured, new MemoryClientStore()) or a RedisClientStore';
  const options = { registrationUri: `${ISSUER}/register`, scopes: SCOPES };
  const fn = () => undefined;

  it('refuses a store without add, replace or remove, and no store at all', () => {
    for (const clients of [
      null,
      { get: fn },
      { get: fn, replace: fn, remove: fn },
      { get: fn, add: fn, remove: fn },
      { get: fn, add: fn, replace: fn },
      { get: fn, add: 1, replace: fn, remove: fn },
    ]) {
      const error = thrownTypeError(() => createRegistrationEndpoints(context(clients), options));
      expect({ message: error.message, code: error.code }).toEqual({
        message,
        code: 'ERR_INVALID_OPTION',
      });
    }
  });

  it('takes a store with add, replace and remove: POST to register, GET, PUT and DELETE to manage', () => {
    const endpoints = createRegistrationEndpoints(
      context({ get: fn, add: fn, replace: fn, remove: fn }),
      options,
    );
    expect(Object.keys(endpoints.register)).toEqual(['POST']);
    expect(Object.keys(endpoints.manage)).toEqual(['GET', 'PUT', 'DELETE']);
    expect(typeof endpoints.register.POST).toBe('function');
    for (const handler of Object.values(endpoints.manage)) expect(typeof handler).toBe('function');
    expect(Object.isFrozen(endpoints)).toBe(true);
  });
});

describe('POST /register', () => {
  let site: Site;
  beforeAll(async () => {
    site = await start();
  });

  it('answers a public client exactly, with no secret, and stores it registered', async () => {
    const before = Math.floor(Date.now() / 1000);
    const reply = await post(site, { ...PUBLIC, grant_types: ['authorization_code'] });
    const after = Math.ceil(Date.now() / 1000);
    expect(reply.status, reply.body).toBe(201);
    expect(reply.headers).toMatchObject({ ...NO_STORE, 'content-type': 'application/json' });
    const body = json<Registered>(reply);
    const uri = `${ISSUER}/register/${body.client_id}`;
    expect(reply.headers.location).toBe(uri);
    expect(body).toStrictEqual({
      client_id: body.client_id,
      client_id_issued_at: body.client_id_issued_at,
      redirect_uris: ['https://agent.example/cb'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code'],
      response_types: ['code'],
      scope: 'openid offline_access read:messages',
      application_type: 'web',
      registration_access_token: body.registration_access_token,
      registration_client_uri: uri,
    });
    expect(body.client_id).toMatch(/^[\w-]{24}$/);
    expect(body.registration_access_token).toMatch(/^[\w-]{43}$/);
    expect(body.client_id_issued_at).toBeGreaterThanOrEqual(before);
    expect(body.client_id_issued_at).toBeLessThanOrEqual(after);
    const stored = (await site.store.get(body.client_id))!;
    expect(stored.provenance).toBe('registered');
    expect(stored.grantTypes).toEqual(['authorization_code']);
    expect(stored.redirectUris).toEqual(['https://agent.example/cb']);
    expect(stored.scopes).toEqual(SCOPES);
    expect('name' in stored).toBe(false);
    expect('jwks' in stored).toBe(false);
    expect('jwksUri' in stored).toBe(false);
    expect(stored.secretHash).toBeUndefined();
    expect(stored.registration?.issuedAt).toBe(body.client_id_issued_at);
    expect(stored.registration?.metadata).toStrictEqual({
      redirect_uris: ['https://agent.example/cb'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code'],
      response_types: ['code'],
      scope: 'openid offline_access read:messages',
      application_type: 'web',
    });
  });

  it.each(['client_secret_basic', 'client_secret_post'])(
    'gives a %s client without redirect URIs a secret that never expires, kept hashed',
    async (method) => {
      const reply = await post(site, {
        token_endpoint_auth_method: method,
        grant_types: ['client_credentials'],
        scope: '  ',
        client_name: 'Service',
      });
      expect(reply.status, reply.body).toBe(201);
      const body = json<Registered>(reply);
      expect(body.client_secret).toMatch(/^[\w-]{43}$/);
      expect(body.client_secret_expires_at).toBe(0);
      expect(body.scope).toBe('');
      expect(body.redirect_uris).toBeUndefined();
      const stored = (await site.store.get(body.client_id))!;
      expect(stored.name).toBe('Service');
      expect(stored.redirectUris).toEqual([]);
      expect(stored.scopes).toEqual([]);
      expect(stored.grantTypes).toEqual(['client_credentials']);
      expect(await verifyPassword(body.client_secret!, stored.secretHash)).toBe(true);
    },
  );

  it('keeps the jwks or the jwks_uri of a private_key_jwt client', async () => {
    const jwks = { keys: [{ ...keys.jwks().keys[0]! }] };
    const withKeys = await registered(site, {
      ...PUBLIC,
      token_endpoint_auth_method: 'private_key_jwt',
      jwks,
    });
    const keyed = (await site.store.get(withKeys.client_id))!;
    expect(keyed.jwks).toEqual(jwks);
    expect('jwksUri' in keyed).toBe(false);
    expect(withKeys.client_secret).toBeUndefined();
    const withUri = await registered(site, {
      ...PUBLIC,
      token_endpoint_auth_method: 'private_key_jwt',
      jwks_uri: 'https://agent.example/jwks.json',
    });
    const fetched = (await site.store.get(withUri.client_id))!;
    expect(fetched.jwksUri).toBe('https://agent.example/jwks.json');
    expect('jwks' in fetched).toBe(false);
  });

  it('refuses a body that is not JSON, or larger than 16 KiB, in the same words', async () => {
    expectOAuthError(
      await post(site, '{"redirect_uris": ['),
      400,
      'invalid_client_metadata',
      BAD_BODY,
    );
    const padded = (size: number) => ({ ...PUBLIC, padding: 'x'.repeat(size) });
    expect(JSON.stringify(padded(16_000)).length).toBeLessThan(16_384);
    expect((await post(site, padded(16_000))).status).toBe(201);
    expect(JSON.stringify(padded(16_400)).length).toBeGreaterThan(16_384);
    expectOAuthError(await post(site, padded(16_400)), 400, 'invalid_client_metadata', BAD_BODY);
  });

  it('answers a body another parser already read as the server failure it is', async () => {
    const consumed = await start(
      {},
      {
        before: (req, _res, next) =>
          new Promise<void>((resolve) => {
            req.resume();
            req.on('end', () => resolve(next()));
          }),
      },
    );
    const errors = log.errors.length;
    const reply = await post(consumed, PUBLIC);
    expect(reply.status).toBe(500);
    expect(log.errors.length).toBe(errors + 1);
  });

  it('refuses what the review refuses, and takes what it amends', async () => {
    const reviewed = await start({
      review: (metadata) =>
        metadata.client_name === 'Refuse me' ? false : { ...metadata, client_name: 'Amended' },
    });
    expectOAuthError(
      await post(reviewed, { ...PUBLIC, client_name: 'Refuse me' }),
      400,
      'invalid_client_metadata',
      'The server refuses this registration.',
    );
    const ok = await registered(reviewed, { ...PUBLIC, client_name: 'Other' });
    expect(ok.client_name).toBe('Amended');
  });
});

describe('the registration endpoint URI', () => {
  it('drops one trailing slash of registrationUri, and keeps the others of its path', async () => {
    const slashed = await start({}, { registrationUri: 'https://as.example/a/register/' });
    const one = await registered(slashed);
    expect(one.registration_client_uri).toBe(`https://as.example/a/register/${one.client_id}`);
    const plain = await start({}, { registrationUri: 'https://as.example/a/register' });
    const reply = await post(plain, PUBLIC);
    const two = json<Registered>(reply);
    expect(two.registration_client_uri).toBe(`https://as.example/a/register/${two.client_id}`);
    expect(reply.headers.location).toBe(two.registration_client_uri);
  });
});

describe('the initial access token', () => {
  let site: Site;
  const seen: string[] = [];
  beforeAll(async () => {
    site = await start({
      initialAccessToken: (token) => {
        seen.push(token);
        return token === 'the-token';
      },
    });
  });

  it('reads it after Bearer and one or more spaces, in any case, trailing spaces ignored', async () => {
    for (const header of ['Bearer the-token', 'bearer  the-token', 'BEARER the-token  ']) {
      const reply = await post(site, PUBLIC, { Authorization: header });
      expect(reply.status, header).toBe(201);
    }
    expect(seen.slice(-3)).toEqual(['the-token', 'the-token', 'the-token']);
  });

  it('finds none in another scheme, a prefixed scheme or a token with more after it', async () => {
    const count = seen.length;
    for (const header of [
      'Basic dGhlLXRva2Vu',
      'xBearer the-token',
      'Bearer the-token more',
      'Bearer the-token!',
      'Bearer',
    ]) {
      const reply = await post(site, PUBLIC, { Authorization: header });
      expectOAuthError(reply, 401, 'invalid_token', INITIAL_TOKEN);
      expect(reply.headers['www-authenticate'], header).toBe('Bearer realm="register"');
    }
    const missing = await post(site, PUBLIC);
    expectOAuthError(missing, 401, 'invalid_token', INITIAL_TOKEN);
    expect(missing.headers['www-authenticate']).toBe('Bearer realm="register"');
    expect(seen.length).toBe(count);
  });

  it('answers a wrong one with error="invalid_token" in the challenge', async () => {
    const reply = await post(site, PUBLIC, { Authorization: 'Bearer not-it' });
    expectOAuthError(reply, 401, 'invalid_token', INITIAL_TOKEN);
    expect(reply.headers['www-authenticate']).toBe(
      'Bearer realm="register", error="invalid_token"',
    );
  });
});

describe('throttling', () => {
  /** A rate-limit store that records its keys and answers `count` (or throws). */
  function counter(hit: (n: number) => { count: number; resetAt: number }) {
    const keysSeen: string[] = [];
    const store: RateLimitStore = {
      increment(key) {
        keysSeen.push(key);
        return hit(keysSeen.length);
      },
    } as RateLimitStore;
    return { store, keysSeen };
  }

  it('counts under register:<the client key>, and past the limit answers 429 with the seconds left', async () => {
    const { store, keysSeen } = counter((n) => ({ count: n, resetAt: Date.now() + 9_500 }));
    const site = await start({ limit: 1, store });
    expect((await post(site, PUBLIC)).status).toBe(201);
    const refused = await post(site, PUBLIC);
    expectOAuthError(
      refused,
      429,
      'temporarily_unavailable',
      'Too many registrations from this address: try again later.',
    );
    expect(refused.headers['retry-after']).toBe('10');
    expect(keysSeen).toEqual(['register:ip:127.0.0.1', 'register:ip:127.0.0.1']);
  });

  it('answers 503 when the count cannot be had', async () => {
    const { store } = counter(() => {
      throw new Error('redis down');
    });
    const site = await start({ store });
    const refused = await post(site, PUBLIC);
    expectOAuthError(
      refused,
      503,
      'temporarily_unavailable',
      'Registrations cannot be counted for now.',
    );
    expect(refused.headers['retry-after']).toBe('5');
  });
});

describe('GET, PUT, DELETE /register/:client_id (RFC 7592)', () => {
  let site: Site;
  beforeAll(async () => {
    site = await start();
  });

  it('GET answers the registration without its tokens or secret, no-store', async () => {
    const reg = await registered(site, { ...PUBLIC, client_name: 'Read me' });
    const reply = await manage(site, reg, reg.registration_access_token);
    expect(reply.status).toBe(200);
    expect(reply.headers).toMatchObject({ ...NO_STORE, 'content-type': 'application/json' });
    const { registration_access_token: _, ...rest } = reg;
    expect(json(reply)).toStrictEqual(rest);
  });

  it('refuses a missing, malformed or wrong token, and a client that was not registered', async () => {
    const reg = await registered(site);
    const missing = await manage(site, reg, undefined);
    expectOAuthError(missing, 401, 'invalid_token', REGISTRATION_TOKEN);
    expect(missing.headers['www-authenticate']).toBe('Bearer realm="register"');
    const basic = await request(site.app, `/register/${reg.client_id}`, {
      headers: { Authorization: 'Basic d2ViOndlYi1zZWNyZXQtMTIz' },
    });
    expectOAuthError(basic, 401, 'invalid_token', REGISTRATION_TOKEN);
    expect(basic.headers['www-authenticate']).toBe('Bearer realm="register"');
    const wrong = await manage(site, reg, 'not-the-token');
    expectOAuthError(wrong, 401, 'invalid_token', REGISTRATION_TOKEN);
    expect(wrong.headers['www-authenticate']).toBe(
      'Bearer realm="register", error="invalid_token"',
    );
    // a configured client has no registration to open
    const configured = await manage(site, { client_id: 'web' }, reg.registration_access_token);
    expectOAuthError(configured, 401, 'invalid_token', REGISTRATION_TOKEN);
    const unknown = await manage(site, { client_id: 'nobody' }, reg.registration_access_token);
    expectOAuthError(unknown, 401, 'invalid_token', REGISTRATION_TOKEN);
  });

  it('refuses every token for a stored registration whose token hash is not a SHA-256 one', async () => {
    const reg = await registered(site);
    const client = (await site.store.get(reg.client_id))!;
    const odd: OAuthClient = Object.freeze({
      ...client,
      registration: Object.freeze({ ...client.registration!, accessTokenHash: 'short' }),
    });
    expect(await site.store.replace(odd)).toBe(true);
    const reply = await manage(site, reg, reg.registration_access_token);
    expectOAuthError(reply, 401, 'invalid_token', REGISTRATION_TOKEN);
  });

  it('opens nothing without a token, even a registration whose hash is of the empty token', async () => {
    const reg = await registered(site);
    const client = (await site.store.get(reg.client_id))!;
    const empty: OAuthClient = Object.freeze({
      ...client,
      registration: Object.freeze({ ...client.registration!, accessTokenHash: hashToken('') }),
    });
    expect(await site.store.replace(empty)).toBe(true);
    const reply = await manage(site, reg, undefined);
    expectOAuthError(reply, 401, 'invalid_token', REGISTRATION_TOKEN);
    expect(reply.headers['www-authenticate']).toBe('Bearer realm="register"');
  });

  it('asks the store nothing when the route names no client', async () => {
    const asked: unknown[] = [];
    const inner = new MemoryClientStore([], { maxClients: 5 });
    const store = Object.assign(Object.create(inner) as WritableClientStore, {
      get: (id: string) => {
        asked.push(id);
        return inner.get(id);
      },
    });
    const unbound = await start({}, { store });
    const reply = await request(unbound.app, '/unbound', {
      headers: { Authorization: 'Bearer some-token' },
    });
    expectOAuthError(reply, 401, 'invalid_token', REGISTRATION_TOKEN);
    expect(asked).toEqual([]);
  });

  it('PUT needs the client_id of the client it replaces in a JSON object', async () => {
    const reg = await registered(site);
    const { registration_access_token: token } = reg;
    const naming = 'The body must name the client_id of the client it replaces (RFC 7592 §2.2).';
    expectOAuthError(
      await manage(site, reg, token, 'PUT', PUBLIC),
      400,
      'invalid_client_metadata',
      naming,
    );
    expectOAuthError(
      await manage(site, reg, token, 'PUT', { ...PUBLIC, client_id: 'other' }),
      400,
      'invalid_client_metadata',
      naming,
    );
    expectOAuthError(
      await manage(site, reg, token, 'PUT', 'null'),
      400,
      'invalid_client_metadata',
      naming,
    );
    expectOAuthError(
      await manage(site, reg, token, 'PUT', '{"client_id":'),
      400,
      'invalid_client_metadata',
      BAD_BODY,
    );
  });

  it('PUT keeps the secret of a client that keeps a secret method, and answers none', async () => {
    const reg = await registered(site, {
      ...PUBLIC,
      token_endpoint_auth_method: 'client_secret_basic',
    });
    const before = (await site.store.get(reg.client_id))!;
    expect(before.secretHash).toBeDefined();
    const reply = await manage(site, reg, reg.registration_access_token, 'PUT', {
      ...PUBLIC,
      client_id: reg.client_id,
      token_endpoint_auth_method: 'client_secret_post',
      client_name: 'Renamed',
    });
    expect(reply.status, reply.body).toBe(200);
    expect(reply.headers).toMatchObject({ ...NO_STORE, 'content-type': 'application/json' });
    const body = json(reply);
    expect(body).toStrictEqual({
      client_id: reg.client_id,
      client_id_issued_at: reg.client_id_issued_at,
      redirect_uris: ['https://agent.example/cb'],
      token_endpoint_auth_method: 'client_secret_post',
      grant_types: ['authorization_code'],
      response_types: ['code'],
      scope: 'openid offline_access read:messages',
      application_type: 'web',
      client_name: 'Renamed',
      registration_client_uri: reg.registration_client_uri,
    });
    const after = (await site.store.get(reg.client_id))!;
    expect(after.name).toBe('Renamed');
    expect(after.secretHash).toBe(before.secretHash);
    expect(await verifyPassword(reg.client_secret!, after.secretHash)).toBe(true);
    expect(after.registration?.accessTokenHash).toBe(before.registration?.accessTokenHash);
    expect(after.registration?.metadata.token_endpoint_auth_method).toBe('client_secret_post');
  });

  it('PUT gives a public client that takes a secret method its secret, and takes it from one that drops it', async () => {
    const reg = await registered(site);
    const reply = await manage(site, reg, reg.registration_access_token, 'PUT', {
      ...PUBLIC,
      client_id: reg.client_id,
      token_endpoint_auth_method: 'client_secret_basic',
    });
    expect(reply.status, reply.body).toBe(200);
    const body = json<Registered>(reply);
    expect(body.client_secret).toMatch(/^[\w-]{43}$/);
    expect(body.client_secret_expires_at).toBe(0);
    const confidential = (await site.store.get(reg.client_id))!;
    expect(await verifyPassword(body.client_secret!, confidential.secretHash)).toBe(true);
    const back = await manage(site, reg, reg.registration_access_token, 'PUT', {
      ...PUBLIC,
      client_id: reg.client_id,
    });
    expect(back.status, back.body).toBe(200);
    expect(json(back).client_secret).toBeUndefined();
    expect(json(back).client_secret_expires_at).toBeUndefined();
    const again = (await site.store.get(reg.client_id))!;
    expect(again.secretHash).toBeUndefined();
  });

  it('PUT answers 401 when the client went away while it was replaced', async () => {
    const inner = new MemoryClientStore([], { maxClients: 5 });
    const store: WritableClientStore = {
      get: (id) => inner.get(id),
      add: (client) => inner.add(client),
      remove: (id) => inner.remove(id),
      replace: () => false,
    };
    const gone = await start({}, { store });
    const reg = await registered(gone);
    const reply = await manage(gone, reg, reg.registration_access_token, 'PUT', {
      ...PUBLIC,
      client_id: reg.client_id,
    });
    expectOAuthError(reply, 401, 'invalid_token', REGISTRATION_TOKEN);
    expect(reply.headers['www-authenticate']).toBe(
      'Bearer realm="register", error="invalid_token"',
    );
  });

  it('DELETE removes the client: 204, no-store, and its token opens nothing after', async () => {
    const reg = await registered(site);
    const removed = await manage(site, reg, reg.registration_access_token, 'DELETE');
    expect(removed.status).toBe(204);
    expect(removed.headers).toMatchObject(NO_STORE);
    expect(removed.body).toBe('');
    expect(await site.store.get(reg.client_id)).toBeUndefined();
    expectOAuthError(
      await manage(site, reg, reg.registration_access_token),
      401,
      'invalid_token',
      REGISTRATION_TOKEN,
    );
  });
});
