// Client authentication (src/oauth/clients/authentication.ts) as its callers see it: the exact
// error_description of each refusal, the OAuthError's own headers (a Basic challenge only when
// HTTP authentication was tried or nothing was presented), private_key_jwt with and without an
// issuer, and the scrypt cache (shared checks, one entry per client, 10,000 entries at most).
// Each test builds its authenticator itself, so that what createClientAuthenticator sets up is
// exercised by the test that needs it.
import { randomUUID, type webcrypto } from 'node:crypto';
import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { type AddressInfo, createServer as createNetServer } from 'node:net';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import * as password from '../../../src/auth/password.js';
import { readForm } from '../../../src/http/body/body.js';
import { CLIENT_ASSERTION_TYPE } from '../../../src/oauth/clients/assertion.js';
import {
  type ClientAuthenticatorOptions,
  createClientAuthenticator,
} from '../../../src/oauth/clients/authentication.js';
import { defineClient, type OAuthClient } from '../../../src/oauth/clients/client.js';
import { type ClientStore, MemoryClientStore } from '../../../src/oauth/clients/store.js';
import { CLIENT_CHALLENGE, OAuthError } from '../../../src/oauth/protocol/errors.js';
import { singleParams } from '../../../src/oauth/protocol/parameters.js';
import { PendingIds } from '../../../src/oauth/store/one-time-ids.js';
import { closeAll, json, type Listening, type Reply, request, serve } from '../../helpers/http.js';
import { basic, ISSUER } from '../token-fixtures.js';

vi.mock('../../../src/auth/password.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../../src/auth/password.js')>();
  return { ...actual, verifyPassword: vi.fn(actual.verifyPassword) };
});

const verifyPassword = vi.mocked(password.verifyPassword);
const actualPassword = await vi.importActual<typeof import('../../../src/auth/password.js')>(
  '../../../src/auth/password.js',
);

const SECRET = 'svc-secret-123';
const OTHER_SECRET = 'svc-2-secret-456';
const SPACED_SECRET = 'open sesame 123';

type Key = { privateKey: webcrypto.CryptoKey; jwk: JWK };
let key: Key;
let clients: MemoryClientStore;

beforeAll(async () => {
  const pair = await generateKeyPair('ES256', { extractable: true });
  key = {
    privateKey: pair.privateKey,
    jwk: { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256' },
  };
  const common = {
    grantTypes: ['client_credentials' as const],
    redirectUris: [],
    scopes: ['read:messages'],
  };
  clients = new MemoryClientStore([
    await defineClient({ clientId: 'svc', secret: SECRET, ...common }),
    await defineClient({ clientId: 'svc-2', secret: OTHER_SECRET, ...common }),
    await defineClient({ clientId: 'spaced', secret: SPACED_SECRET, ...common }),
    await defineClient({ clientId: 'keyed', jwks: { keys: [key.jwk] }, ...common }),
    await defineClient({
      clientId: 'spa',
      grantTypes: ['authorization_code'],
      redirectUris: ['http://127.0.0.1:5173/callback'],
      scopes: ['read:messages'],
    }),
    await defineClient({
      clientId: 'fapi-spa',
      grantTypes: ['authorization_code'],
      redirectUris: ['http://127.0.0.1:5173/callback'],
      scopes: ['read:messages'],
    }),
  ]);
});

afterAll(closeAll);

/**
 * A server that authenticates the client of every form POST and answers its id, or the
 * OAuthError as the authenticator made it: its status, error, description and its own headers
 * only (no challenge added on the way), as a caller rendering the error itself sees it.
 */
function start(
  options: ClientAuthenticatorOptions = {},
  store: ClientStore = clients,
): Promise<Listening> {
  const authenticate = createClientAuthenticator(store, options);
  return serve(async (req, res) => {
    try {
      const client = await authenticate(req, singleParams(await readForm(req)));
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ clientId: client.clientId }));
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      res.writeHead(err.status, { ...err.headers, 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ error: err.error, error_description: err.message }));
    }
  });
}

function post(
  server: Listening,
  form: Record<string, string> | string,
  headers: OutgoingHttpHeaders = {},
  path = '/token',
): Promise<Reply> {
  return request(server, path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
    body: typeof form === 'string' ? form : new URLSearchParams(form).toString(),
  });
}

/** Asserts an error answer with exactly this status, error and description. */
function expectRefusal(reply: Reply, status: number, error: string, description: string): void {
  expect({ status: reply.status, body: json(reply) }).toEqual({
    status,
    body: { error, error_description: description },
  });
}

const accepted = (reply: Reply, clientId: string) =>
  expect({ status: reply.status, body: json(reply) }).toEqual({ status: 200, body: { clientId } });

/** `Authorization: Basic` over raw bytes, for credentials no string can carry. */
const rawBasic = (bytes: Buffer | string) => `Basic ${Buffer.from(bytes).toString('base64')}`;

const FAILED = 'Client authentication failed.';
const REQUIRED = 'Client authentication is required.';
const MALFORMED = 'The Basic credentials are malformed.';

/** An assertion of `client` signed by the client key, `aud` the issuer unless overridden. */
function assertion(claims: Record<string, unknown> = {}, client = 'keyed'): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const payload: Record<string, unknown> = {
    iss: client,
    sub: client,
    aud: ISSUER,
    jti: randomUUID(),
    iat: now,
    exp: now + 60,
    ...claims,
  };
  for (const [name, value] of Object.entries(payload))
    if (value === undefined) delete payload[name];
  return new SignJWT(payload).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).sign(key.privateKey);
}

const withAssertion = (value: string, extra: Record<string, string> = {}) => ({
  client_assertion_type: CLIENT_ASSERTION_TYPE,
  client_assertion: value,
  ...extra,
});

describe('client-auth.ts: singleParams', () => {
  it('names the repeated parameter', async () => {
    const server = await start();
    expectRefusal(
      await post(server, 'client_id=spa&client_id=spa'),
      400,
      'invalid_request',
      'The parameter client_id is repeated.',
    );
  });
});

describe('client-auth.ts: client_secret_basic', () => {
  it('form-decodes a + in the secret as a space', async () => {
    const server = await start();
    accepted(await post(server, {}, { Authorization: basic('spaced', SPACED_SECRET) }), 'spaced');
  });

  it('accepts several spaces between Basic and the credentials', async () => {
    const server = await start();
    const credentials = Buffer.from(`svc:${SECRET}`).toString('base64');
    accepted(await post(server, {}, { Authorization: `Basic    ${credentials}` }), 'svc');
  });

  it('refuses a credential part that is not form-encoded', async () => {
    const server = await start();
    expectRefusal(
      await post(server, {}, { Authorization: rawBasic('svc:100%zz') }),
      400,
      'invalid_request',
      'The client credentials are not properly encoded.',
    );
  });

  it('refuses two Authorization lines', async () => {
    const server = await start();
    const right = basic('svc', SECRET);
    expectRefusal(
      await post(server, {}, { Authorization: [right, right] }),
      400,
      'invalid_request',
      'Send one Authorization header.',
    );
  });

  it('refuses Basic credentials followed by anything but spaces', async () => {
    const server = await start();
    for (const junk of ['!!', '=!', ' x!']) {
      expectRefusal(
        await post(server, {}, { Authorization: `${basic('svc', SECRET)}${junk}` }),
        400,
        'invalid_request',
        MALFORMED,
      );
    }
    expectRefusal(
      await post(server, {}, { Authorization: 'Basic !!!' }),
      400,
      'invalid_request',
      MALFORMED,
    );
  });

  it('refuses decoded credentials without a colon', async () => {
    const server = await start();
    expectRefusal(
      await post(server, {}, { Authorization: rawBasic('svc') }),
      400,
      'invalid_request',
      MALFORMED,
    );
  });

  it('refuses decoded credentials that are not UTF-8', async () => {
    const server = await start();
    const bytes = Buffer.concat([Buffer.from('svc:'), Buffer.from([0xff, 0xfe])]);
    expectRefusal(
      await post(server, {}, { Authorization: rawBasic(bytes) }),
      400,
      'invalid_request',
      'The Basic credentials are not UTF-8.',
    );
  });

  it('reads Basic only as the scheme at the start of the header, ignoring other schemes', async () => {
    const server = await start();
    const credentials = Buffer.from(`svc:${SECRET}`).toString('base64');
    // another scheme that merely contains the word: no Basic credentials at all
    expectRefusal(
      await post(server, {}, { Authorization: `NotBasic ${credentials}` }),
      401,
      'invalid_client',
      REQUIRED,
    );
    // a bearer token next to a public client's client_id is not client authentication
    accepted(await post(server, { client_id: 'spa' }, { Authorization: 'Bearer abc.def' }), 'spa');
    accepted(
      await post(server, { client_id: 'spa' }, { Authorization: 'Digest Basic="x"' }),
      'spa',
    );
  });
});

describe('client-auth.ts: presented credentials', () => {
  it('refuses two methods at once', async () => {
    const server = await start();
    expectRefusal(
      await post(server, { client_secret: SECRET }, { Authorization: basic('svc', SECRET) }),
      400,
      'invalid_request',
      'Use one client authentication method, not two.',
    );
  });

  it('takes a client_id next to Basic only when it names the same client', async () => {
    const server = await start();
    accepted(
      await post(server, { client_id: 'svc' }, { Authorization: basic('svc', SECRET) }),
      'svc',
    );
    expectRefusal(
      await post(server, { client_id: 'svc-2' }, { Authorization: basic('svc', SECRET) }),
      400,
      'invalid_request',
      'client_id does not match the Basic credentials.',
    );
  });

  it('asks for client authentication, with a Basic challenge, when none or an empty client_id is presented', async () => {
    const server = await start();
    for (const form of ['', 'client_id=', 'client_secret=x']) {
      const reply = await post(server, form);
      expectRefusal(reply, 401, 'invalid_client', REQUIRED);
      expect(reply.headers['www-authenticate']).toBe(CLIENT_CHALLENGE);
    }
  });

  it('challenges with Basic only after a failed Basic attempt', async () => {
    const server = await start();
    const byBasic = await post(server, {}, { Authorization: basic('svc', 'not-the-secret') });
    expectRefusal(byBasic, 401, 'invalid_client', FAILED);
    expect(byBasic.headers['www-authenticate']).toBe(CLIENT_CHALLENGE);
    for (const form of [
      { client_id: 'svc', client_secret: 'not-the-secret' },
      { client_id: 'svc' },
      { client_id: 'spa', client_secret: 'a-guess' },
      { client_id: 'nobody' },
    ] as Record<string, string>[]) {
      const reply = await post(server, form);
      expectRefusal(reply, 401, 'invalid_client', FAILED);
      expect(reply.headers['www-authenticate']).toBeUndefined();
    }
  });
});

describe('client-auth.ts: client assertions', () => {
  it('requires the jwt-bearer assertion type with an assertion', async () => {
    const server = await start({ issuer: ISSUER });
    const description = `client_assertion_type must be ${CLIENT_ASSERTION_TYPE} with a client_assertion.`;
    const value = await assertion();
    for (const form of [
      { client_assertion_type: 'urn:example:other', client_assertion: value },
      { client_assertion: value },
    ] as Record<string, string>[]) {
      expectRefusal(await post(server, form), 400, 'invalid_request', description);
    }
  });

  it('requires a non-empty client_assertion with its type', async () => {
    const server = await start({ issuer: ISSUER });
    for (const form of [
      { client_assertion_type: CLIENT_ASSERTION_TYPE, client_id: 'svc' },
      withAssertion('', { client_id: 'svc' }),
    ]) {
      expectRefusal(
        await post(server, form),
        400,
        'invalid_request',
        'client_assertion is required with its type.',
      );
    }
  });

  it('accepts an assertion for the issuer or the endpoint, once, and refuses a replay without a Basic challenge', async () => {
    const server = await start({ issuer: `${ISSUER}/` });
    accepted(await post(server, withAssertion(await assertion({ aud: `${ISSUER}/` }))), 'keyed');
    accepted(
      await post(
        server,
        withAssertion(await assertion({ aud: `${ISSUER}/oauth/token` })),
        {},
        '/oauth/token?x=1',
      ),
      'keyed',
    );
    const once = await assertion({ aud: `${ISSUER}/` });
    accepted(await post(server, withAssertion(once, { client_id: 'keyed' })), 'keyed');
    const replayed = await post(server, withAssertion(once));
    expectRefusal(replayed, 401, 'invalid_client', FAILED);
    expect(replayed.headers['www-authenticate']).toBeUndefined();
  });

  it('remembers accepted assertions in the replay store it is given', async () => {
    const remembered: string[] = [];
    const server = await start({
      issuer: ISSUER,
      replay: {
        remember: async (id: string) => {
          if (remembered.includes(id)) return false;
          remembered.push(id);
          return true;
        },
      },
    });
    const jti = randomUUID();
    const value = await assertion({ jti });
    accepted(await post(server, withAssertion(value)), 'keyed');
    expect(remembered).toEqual([`client-assertion:keyed:${jti}`]);
    expectRefusal(await post(server, withAssertion(value)), 401, 'invalid_client', FAILED);
  });

  it('refuses a known assertion at authentication when its jti is to be recorded later', async () => {
    const ids = new Set<string>();
    const remembered: string[] = [];
    const authenticate = createClientAuthenticator(clients, {
      issuer: ISSUER,
      replay: {
        seen: (id: string) => ids.has(id),
        remember: async (id: string) => {
          remembered.push(id);
          if (ids.has(id)) return false;
          ids.add(id);
          return true;
        },
      },
    });
    // answers where a refusal came from: the authentication, or the commit of the ids after it
    const server = await serve(async (req, res) => {
      const pending = new PendingIds();
      let stage = 'authentication';
      try {
        const client = await authenticate(req, singleParams(await readForm(req)), pending);
        stage = 'commit';
        await pending.commit();
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ clientId: client.clientId }));
      } catch (err) {
        if (!(err instanceof OAuthError)) throw err;
        res.writeHead(err.status, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ stage, error: err.error, error_description: err.message }));
      }
    });
    const jti = randomUUID();
    const once = await assertion({ jti });
    accepted(await post(server, withAssertion(once)), 'keyed');
    expect(remembered).toEqual([`client-assertion:keyed:${jti}`]);
    const replayed = await post(server, withAssertion(once));
    expect({ status: replayed.status, body: json(replayed) }).toEqual({
      status: 401,
      body: { stage: 'authentication', error: 'invalid_client', error_description: FAILED },
    });
    // refused before anything was to be recorded: the store is not asked again
    expect(remembered).toEqual([`client-assertion:keyed:${jti}`]);
  });

  it('refuses an assertion whose client_id names another client', async () => {
    const server = await start({ issuer: ISSUER });
    const reply = await post(server, withAssertion(await assertion(), { client_id: 'svc' }));
    expectRefusal(reply, 401, 'invalid_client', FAILED);
    expect(reply.headers['www-authenticate']).toBeUndefined();
  });

  it('refuses every assertion when no issuer is configured', async () => {
    const server = await start({ fapi2: (client) => client.clientId === 'keyed' });
    for (const value of [
      await assertion(),
      await assertion({ aud: `${ISSUER}/token` }),
      // what the endpoint URL would read without an issuer origin
      await assertion({ aud: 'undefined/token' }),
      // FAPI 2.0 compares aud with the issuer, which is absent here
      await assertion({ aud: undefined }),
    ]) {
      expectRefusal(await post(server, withAssertion(value)), 401, 'invalid_client', FAILED);
    }
  });

  it('refuses an assertion from a client without keys, and none from a client held to FAPI 2.0', async () => {
    const server = await start({
      issuer: ISSUER,
      fapi2: (client) => client.clientId === 'fapi-spa',
    });
    for (const client of ['spa', 'svc']) {
      const value = await assertion({}, client);
      expectRefusal(await post(server, withAssertion(value)), 401, 'invalid_client', FAILED);
    }
    expectRefusal(await post(server, { client_id: 'fapi-spa' }), 401, 'invalid_client', FAILED);
    accepted(await post(server, { client_id: 'spa' }), 'spa');
  });

  it('takes the root of the issuer origin as the endpoint of a request without a target', async () => {
    const authenticate = createClientAuthenticator(clients, { issuer: ISSUER });
    const value = await assertion({ aud: `${ISSUER}/` });
    const params = new Map(Object.entries(withAssertion(value)));
    const client = await authenticate({ headers: {} } as IncomingMessage, params);
    expect(client.clientId).toBe('keyed');
  });

  it('fetches the keys of a self-described client from a private address only when allowed', async () => {
    // a loopback "https" host that only counts the connections it is offered
    const offered: number[] = [];
    const host = createNetServer((socket) => {
      offered.push(1);
      socket.destroy();
    });
    await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = host.address() as AddressInfo;
      const store = new MemoryClientStore([
        await defineClient({
          clientId: 'self-keyed',
          jwksUri: `https://127.0.0.1:${port}/jwks.json`,
          grantTypes: ['client_credentials'],
          redirectUris: [],
          scopes: ['read:messages'],
          provenance: 'registered',
        }),
      ]);
      const value = () => assertion({}, 'self-keyed');
      // by default: refused without a connection (SSRF)
      const guarded = await start({ issuer: ISSUER }, store);
      expectRefusal(
        await post(guarded, withAssertion(await value())),
        401,
        'invalid_client',
        FAILED,
      );
      expect(offered).toEqual([]);
      // allowed (a private deployment): the keys are asked for there (this host has none)
      const open = await start({ issuer: ISSUER, allowPrivateClientKeys: true }, store);
      expectRefusal(await post(open, withAssertion(await value())), 401, 'invalid_client', FAILED);
      expect(offered.length).toBeGreaterThan(0);
    } finally {
      await new Promise((resolve) => host.close(resolve));
    }
  });

  it('refuses options it does not know and a replay store without remember()', () => {
    expect(() => createClientAuthenticator(clients, { replay: {} as never })).toThrow(
      expect.objectContaining({
        name: 'TypeError',
        code: 'ERR_INVALID_OPTION',
        message: 'createClientAuthenticator(): `replay` must have a remember(id, ttlMs) method',
      }),
    );
    expect(() =>
      createClientAuthenticator(clients, { replay: { remember: 'yes' } as never }),
    ).toThrow(/^createClientAuthenticator\(\): `replay` must have a remember/);
    expect(() => createClientAuthenticator(clients, { isuser: ISSUER } as never)).toThrow(
      /^createClientAuthenticator\(\): /,
    );
  });
});

describe('client-auth.ts: secret checks', () => {
  it('does not let the secret verified for one client open another', async () => {
    const server = await start();
    accepted(await post(server, { client_id: 'svc', client_secret: SECRET }), 'svc');
    expectRefusal(
      await post(server, { client_id: 'svc-2', client_secret: SECRET }),
      401,
      'invalid_client',
      FAILED,
    );
    accepted(await post(server, { client_id: 'svc-2', client_secret: OTHER_SECRET }), 'svc-2');
  });

  it('checks a right and a wrong secret presented at the same time separately', async () => {
    // the store answers once both requests asked: their scrypt checks overlap
    let waiting: (() => void)[] = [];
    const gated: ClientStore = {
      get: async (clientId) => {
        await new Promise<void>((resolve) => {
          waiting.push(resolve);
          if (waiting.length === 2) {
            for (const release of waiting) release();
            waiting = [];
          }
        });
        return clients.get(clientId);
      },
    };
    const server = await start({}, gated);
    const [right, wrong] = await Promise.all([
      post(server, { client_id: 'svc', client_secret: SECRET }),
      post(server, { client_id: 'svc', client_secret: 'not-the-secret' }),
    ]);
    accepted(right, 'svc');
    expectRefusal(wrong, 401, 'invalid_client', FAILED);
    const [wrongFirst, rightSecond] = await Promise.all([
      post(server, { client_id: 'svc-2', client_secret: 'not-the-secret' }),
      post(server, { client_id: 'svc-2', client_secret: OTHER_SECRET }),
    ]);
    expectRefusal(wrongFirst, 401, 'invalid_client', FAILED);
    accepted(rightSecond, 'svc-2');
  });

  it('runs scrypt again for each attempt with a refused secret', async () => {
    const server = await start();
    verifyPassword.mockClear();
    for (let i = 0; i < 2; i++) {
      expectRefusal(
        await post(server, { client_id: 'svc', client_secret: 'not-the-secret' }),
        401,
        'invalid_client',
        FAILED,
      );
    }
    expect(verifyPassword).toHaveBeenCalledTimes(2);
  });

  it('runs scrypt for the secret of an unknown client, as for a known one', async () => {
    const server = await start();
    verifyPassword.mockClear();
    expectRefusal(
      await post(server, { client_id: 'nobody', client_secret: 'some-secret' }),
      401,
      'invalid_client',
      FAILED,
    );
    expect(verifyPassword).toHaveBeenCalledTimes(1);
    expect(verifyPassword).toHaveBeenCalledWith('some-secret', undefined);
  });

  it('keeps the verified secrets of several clients', async () => {
    const server = await start();
    verifyPassword.mockClear();
    for (const [clientId, secret] of [
      ['svc', SECRET],
      ['svc-2', OTHER_SECRET],
      ['svc', SECRET],
      ['svc-2', OTHER_SECRET],
    ] as const) {
      accepted(await post(server, { client_id: clientId, client_secret: secret }), clientId);
    }
    expect(verifyPassword).toHaveBeenCalledTimes(2);
  });

  it('forgets the oldest verified secret once 10,000 are kept', async () => {
    // 10,001 clients sharing one stand-in hash that verifies at once: the cache, not scrypt, is tested
    const HASH = 'stand-in-hash';
    const many: ClientStore = {
      get: (clientId): OAuthClient => ({
        clientId,
        secretHash: HASH,
        grantTypes: ['client_credentials'],
        redirectUris: [],
        scopes: ['read:messages'],
      }),
    };
    verifyPassword.mockImplementation(async (secret, hash) => hash === HASH && secret === 'bulk');
    try {
      const authenticate = createClientAuthenticator(many);
      const present = (clientId: string) =>
        authenticate(
          { headers: {} } as IncomingMessage,
          new Map([
            ['client_id', clientId],
            ['client_secret', 'bulk'],
          ]),
        );
      for (let i = 0; i <= 10_000; i++) await present(`bulk-${i}`);
      const server = await serve(async (req, res) => {
        const client = await present(new URL(req.url ?? '/', 'http://x').searchParams.get('c')!);
        res.end(client.clientId);
      });
      verifyPassword.mockClear();
      // the newest ones are still known
      for (const id of ['bulk-10000', 'bulk-2']) {
        expect((await request(server, `/?c=${id}`)).body).toBe(id);
      }
      expect(verifyPassword).toHaveBeenCalledTimes(0);
      // the first one was dropped to make room for the 10,001st: verified again
      expect((await request(server, '/?c=bulk-0')).body).toBe('bulk-0');
      expect(verifyPassword).toHaveBeenCalledTimes(1);
    } finally {
      verifyPassword.mockImplementation(actualPassword.verifyPassword);
    }
  });
});
