// Beyond authenticate.test.ts, basic.test.ts and hostile-credentials.test.ts: every option
// message, the Vary and Cache-Control authenticate() leaves on a response, a guard whose
// refused() throws, the authSucceeded / authRefused messages (http and ws surfaces), the
// problems of errors.ts member by member, and parseBasicCredentials at its exact bounds.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { authenticate, requireRole, requireScopes } from '../../src/auth/authenticate.js';
import { type Authenticator, challenge, quoteParam } from '../../src/auth/authenticator.js';
import { basicAuth, parseBasicCredentials } from '../../src/auth/basic.js';
import { createIdentifier } from '../../src/auth/credential-check.js';
import { type CredentialGuard, createCredentialGuard } from '../../src/auth/credential-guard.js';
import {
  authenticationRequired,
  expiredCredentials,
  forbiddenRole,
  insufficientScope,
  invalidAuthRequest,
  invalidCredentials,
} from '../../src/auth/errors.js';
import type { Middleware } from '../../src/core/compose.js';
import { HttpError } from '../../src/core/errors/errors.js';
import { getPrincipal, type Principal, setPrincipal } from '../../src/core/principal.js';
import { channels, silentLogger } from '../../src/diagnostics/index.js';
import { MemoryRateLimitStore } from '../../src/rate-limit/memory-store.js';
import type { RateLimitStore } from '../../src/rate-limit/store.js';
import { createUpgradeHandler } from '../../src/ws/upgrade.js';
import { thrownTypeError } from '../helpers/errors.js';
import { fakeRequest, fakeResponse } from '../helpers/fake-http.js';
import { closeAll, listen, parseReply, rawRequest } from '../helpers/http.js';

const CHALLENGE = 'Basic realm="api", charset="UTF-8"';
const BAD_BASIC = 'The user name or password is not valid.';
/** An `Authorization: Basic` value for these UTF-8 bytes. */
const basicValue = (bytes: string | Buffer) => `Basic ${Buffer.from(bytes).toString('base64')}`;
const GOOD = basicValue('alice:secret');
const WRONG = basicValue('alice:wrong');

/** basicAuth knowing alice (password `secret`); `verified` lists what verify was given. */
function aliceBasic() {
  const verified: [string, string][] = [];
  const authenticator = basicAuth({
    verify(username, password) {
      verified.push([username, password]);
      return username === 'alice' && password === 'secret'
        ? { sub: 'alice', scopes: [], method: 'basic' }
        : undefined;
    },
  });
  return { authenticator, verified };
}

/** What one middleware call came to: what it threw, whether it called next, the response. */
interface Ran {
  error: unknown;
  passed: boolean;
  req: IncomingMessage;
  res: ServerResponse;
}

/** Calls `mw` with an in-memory request (and `before` run on its response first). */
async function run(
  mw: Middleware,
  req: IncomingMessage = fakeRequest(),
  before: (res: ServerResponse) => void = () => {},
): Promise<Ran> {
  const { res } = fakeResponse(req);
  before(res);
  let passed = false;
  let error: unknown;
  try {
    await mw(req, res, async () => {
      passed = true;
    });
  } catch (thrown) {
    error = thrown;
  }
  return { error, passed, req, res };
}

const withAuthorization = (value: string) => fakeRequest({ headers: { Authorization: value } });

/** The HttpError `ran` threw (failing the test when it threw nothing or something else). */
function httpError(ran: Ran): HttpError {
  expect(ran.error).toBeInstanceOf(HttpError);
  return ran.error as HttpError;
}

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
  await closeAll();
});

/** The messages published on channel `name` until the test ends. */
function published(name: string): Record<string, unknown>[] {
  const messages: Record<string, unknown>[] = [];
  const listener = (message: unknown) => messages.push(message as Record<string, unknown>);
  subscribe(name, listener);
  cleanups.push(() => unsubscribe(name, listener));
  return messages;
}

/** A memory store whose `peek` fails while `down.now` is set (Redis unreachable, say). */
function flakyStore(down: { now: boolean }, withPeek = true): RateLimitStore {
  const memory = new MemoryRateLimitStore();
  cleanups.push(() => memory.close());
  const store: RateLimitStore = { increment: (key, windowMs) => memory.increment(key, windowMs) };
  if (withPeek) {
    store.peek = (key) => {
      if (down.now) throw new Error('the store is unreachable');
      return memory.peek(key);
    };
  }
  return store;
}

/** The message of the option error `build` throws, checking its code. */
function optionMessage(build: () => unknown): string {
  const error = thrownTypeError(build);
  expect(error.code).toBe('ERR_INVALID_OPTION');
  return error.message;
}

describe('authenticate() options', () => {
  it('names each bad option in its message', () => {
    const { authenticator } = aliceBasic();
    const cacheControl = 'authenticate(): `cacheControl` must be a Cache-Control value or false';
    const cases: [() => unknown, string][] = [
      [() => authenticate([]), 'authenticate(): give at least one authenticator'],
      [
        () => authenticate(authenticator as never),
        'authenticate(): give at least one authenticator',
      ],
      [
        () => authenticate([{} as Authenticator]),
        'authenticate(): every authenticator needs an authenticate(req) method',
      ],
      [
        () => authenticate([authenticator, null as never]),
        'authenticate(): every authenticator needs an authenticate(req) method',
      ],
      [
        () => authenticate([authenticator], { optinal: true } as never),
        'authenticate(): unknown option `optinal`. Did you mean `optional`?',
      ],
      [
        () => authenticate([authenticator], { guard: {} as never }),
        'authenticate(): `guard` must be a CredentialGuard (createCredentialGuard())',
      ],
      [() => authenticate([authenticator], { cacheControl: '' }), cacheControl],
      [() => authenticate([authenticator], { cacheControl: 42 as never }), cacheControl],
      [() => authenticate([authenticator], { cacheControl: true as never }), cacheControl],
      [
        () => authenticate([authenticator], { challenges: 'Basic' as never }),
        'authenticate(): `challenges` must be a function',
      ],
    ];
    for (const [build, message] of cases) expect(optionMessage(build)).toBe(message);
  });

  it('keeps its own copy of the authenticators', async () => {
    const { authenticator } = aliceBasic();
    const list: Authenticator[] = [authenticator];
    const auth = authenticate(list);
    list.push({
      scheme: 'Late',
      authenticate: (req) =>
        req.headers['x-user'] === undefined
          ? undefined
          : { sub: 'mallory', scopes: [], method: 'late' },
    });
    const ran = await run(auth, fakeRequest({ headers: { 'X-User': 'mallory' } }));
    expect(ran.passed).toBe(false);
    expect(httpError(ran).code).toBe('ERR_AUTH_REQUIRED');
    expect(getPrincipal(ran.req)).toBeUndefined();
  });
});

describe('Vary and Cache-Control on the response', () => {
  const quiet: Authenticator = { scheme: 'Quiet', authenticate: () => undefined };

  it('lists each header the authenticators read once in Vary, and sets none when they read none', async () => {
    const cookie: Authenticator = {
      scheme: 'Cookie',
      headers: ['Cookie'],
      authenticate: () => undefined,
    };
    const many = authenticate(
      [aliceBasic().authenticator, quiet, cookie, aliceBasic().authenticator],
      {
        optional: true,
      },
    );
    const listed = await run(many);
    expect(listed.passed).toBe(true);
    expect(listed.res.getHeader('Vary')).toBe('Authorization, Cookie');

    const none = await run(authenticate([quiet], { optional: true }));
    expect(none.passed).toBe(true);
    expect(none.res.hasHeader('Vary')).toBe(false);
  });

  it('marks the answer to a request with a credential, accepted or refused, and no other', async () => {
    const { authenticator } = aliceBasic();
    const auth = authenticate([authenticator], { cacheControl: 'private, no-cache' });
    const accepted = await run(auth, withAuthorization(GOOD));
    expect(accepted.passed).toBe(true);
    expect(accepted.res.getHeader('Cache-Control')).toBe('private, no-cache');
    const refused = await run(auth, withAuthorization(WRONG));
    expect(httpError(refused).status).toBe(401);
    expect(refused.res.getHeader('Cache-Control')).toBe('private, no-cache');

    // no credential: nothing to keep out of a shared cache, refused or let through
    const missing = await run(auth);
    expect(httpError(missing).code).toBe('ERR_AUTH_REQUIRED');
    expect(missing.res.hasHeader('Cache-Control')).toBe(false);
    const anonymous = await run(authenticate([authenticator], { optional: true }));
    expect(anonymous.passed).toBe(true);
    expect(anonymous.res.hasHeader('Cache-Control')).toBe(false);

    const untouched = await run(
      authenticate([authenticator], { cacheControl: false }),
      withAuthorization(GOOD),
    );
    expect(untouched.passed).toBe(true);
    expect(untouched.res.hasHeader('Cache-Control')).toBe(false);
  });

  it('keeps a Cache-Control set before it', async () => {
    const auth = authenticate([aliceBasic().authenticator]);
    for (const credential of [GOOD, WRONG]) {
      const ran = await run(auth, withAuthorization(credential), (res) =>
        res.setHeader('Cache-Control', 'private, max-age=60'),
      );
      expect(ran.res.getHeader('Cache-Control')).toBe('private, max-age=60');
    }
  });
});

describe('failures of ours', () => {
  it("rethrows an authenticator's crash or 500 as it is, before touching Cache-Control", async () => {
    for (const failure of [new Error('the database is down'), new HttpError(500, 'Broken.')]) {
      const broken: Authenticator = {
        scheme: 'Broken',
        challenge: 'Broken',
        authenticate: () => {
          throw failure;
        },
      };
      const ran = await run(authenticate([broken]));
      expect(ran.error).toBe(failure);
      expect(ran.res.hasHeader('Cache-Control')).toBe(false);
    }
  });

  it('answers the guard’s 429 when a refusal spends the budget, as a refusal', async () => {
    // a store without peek: check() lets every attempt through, refused() is the one to throw
    const guard = createCredentialGuard({ limit: 1, store: flakyStore({ now: false }, false) });
    const auth = authenticate([aliceBasic().authenticator], { guard });
    const refusals = published(channels.authRefused);
    expect(httpError(await run(auth, withAuthorization(WRONG))).status).toBe(401);
    const spent = await run(auth, withAuthorization(WRONG));
    const error = httpError(spent);
    expect(error.status).toBe(429);
    expect(error.code).toBe('ERR_CREDENTIALS_THROTTLED');
    expect(error.headers['Retry-After']).toMatch(/^\d+$/);
    expect(spent.res.getHeader('Cache-Control')).toBe('no-store');
    expect(refusals.map(({ req: _req, ...rest }) => rest)).toEqual([
      { status: 401, code: 'ERR_AUTH_INVALID', mechanism: 'Basic', surface: 'http' },
      { status: 429, code: 'ERR_CREDENTIALS_THROTTLED', mechanism: 'Basic', surface: 'http' },
    ]);
  });

  it('rethrows a crash or a 500 of the guard’s refused() as it is, before touching Cache-Control', async () => {
    for (const failure of [new Error('the counter is gone'), new HttpError(500, 'Broken.')]) {
      const guard: CredentialGuard = {
        check: async () => {},
        refused: async () => {
          throw failure;
        },
        attempt: async (_req, verify) => verify(),
      };
      const ran = await run(
        authenticate([aliceBasic().authenticator], { guard }),
        withAuthorization(WRONG),
      );
      expect(ran.error).toBe(failure);
      expect(ran.res.hasHeader('Cache-Control')).toBe(false);
    }
  });
});

describe('diagnostics channels', () => {
  it('publishes who authenticated over http', async () => {
    const successes = published(channels.authSucceeded);
    const ran = await run(authenticate([aliceBasic().authenticator]), withAuthorization(GOOD));
    expect(ran.passed).toBe(true);
    expect(successes).toEqual([
      { req: ran.req, mechanism: 'basic', sub: 'alice', surface: 'http' },
    ]);
  });

  it('publishes a refused credential and a missing one (from `required`) over http', async () => {
    const refusals = published(channels.authRefused);
    const auth = authenticate([aliceBasic().authenticator], { optional: true });
    const refused = await run(auth, withAuthorization(WRONG));
    expect(httpError(refused).status).toBe(401);
    const anonymous = await run(auth);
    expect(anonymous.passed).toBe(true);
    // an optional authenticate() lets the anonymous request through unannounced
    expect(refusals).toHaveLength(1);
    const missing = await run(auth.required, anonymous.req);
    expect(httpError(missing).code).toBe('ERR_AUTH_REQUIRED');
    expect(refusals).toEqual([
      {
        req: refused.req,
        status: 401,
        code: 'ERR_AUTH_INVALID',
        mechanism: 'Basic',
        surface: 'http',
      },
      {
        req: anonymous.req,
        status: 401,
        code: 'ERR_AUTH_REQUIRED',
        mechanism: undefined,
        surface: 'http',
      },
    ]);
  });

  it('publishes refused upgrades over ws, the guard’s 503 included, never a failure of ours', async () => {
    const down = { now: false };
    const probe: Authenticator = {
      scheme: 'Probe',
      challenge: 'Probe',
      authenticate(req) {
        const fail = req.headers['x-fail'];
        if (fail === '401') throw invalidCredentials('Probe', 'The probe is not valid.');
        if (fail === '500') throw new HttpError(500, 'Broken.');
        if (fail === 'crash') throw new Error('boom');
        return undefined;
      },
    };
    const server = createServer((_req, res) => res.end());
    server.on(
      'upgrade',
      createUpgradeHandler({
        path: '/ws',
        authenticators: [probe],
        guard: createCredentialGuard({ store: flakyStore(down) }),
        logger: silentLogger,
        onConnection: (ws) => ws.close(),
      }),
    );
    const { port } = await listen(server);
    const upgrade = async (fail: string) =>
      parseReply(
        await rawRequest(
          port,
          'GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
            'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n' +
            `X-Fail: ${fail}\r\n\r\n`,
        ),
      ).status;
    const refusals = published(channels.authRefused);
    expect(await upgrade('401')).toBe(401);
    expect(await upgrade('500')).toBe(500);
    expect(await upgrade('crash')).toBe(500);
    down.now = true;
    expect(await upgrade('none')).toBe(503);
    expect(refusals.map(({ req: _req, ...rest }) => rest)).toEqual([
      { status: 401, code: 'ERR_AUTH_INVALID', mechanism: 'Probe', surface: 'ws' },
      { status: 503, code: 'ERR_UNAVAILABLE', mechanism: undefined, surface: 'ws' },
    ]);
  });

  // the guard's 503 (its store down) is published, as on the WebSocket path
  it('publishes the guard’s 503 over http too', async () => {
    const guard = createCredentialGuard({ store: flakyStore({ now: true }) });
    const refusals = published(channels.authRefused);
    const ran = await run(
      authenticate([aliceBasic().authenticator], { guard }),
      withAuthorization(GOOD),
    );
    expect(httpError(ran).status).toBe(503);
    expect(refusals).toEqual([
      { req: ran.req, status: 503, code: 'ERR_UNAVAILABLE', mechanism: undefined, surface: 'http' },
    ]);
  });

  it('publishes nothing for another failure of the guard: a 500, or an error that is no HttpError', async () => {
    const failing = (error: unknown) => ({
      check: () => Promise.reject(error),
      refused: () => Promise.resolve(),
      attempt: <T>(_req: unknown, run: () => T) => run(),
    });
    const crash = Object.assign(new TypeError('a bug in the guard'), { status: 503 });
    const internal = new HttpError(500, 'The guard broke.');
    for (const error of [crash, internal]) {
      const refusals = published(channels.authRefused);
      const ran = await run(
        authenticate([aliceBasic().authenticator], { guard: failing(error) as never }),
        withAuthorization(GOOD),
      );
      expect(ran.error).toBe(error);
      expect(refusals).toEqual([]);
    }
  });
});

describe('the challenges of a 401 from a mechanism', () => {
  const throwing = (error: unknown): Authenticator => ({
    scheme: 'Cert',
    authenticate: (req) => {
      if (req.headers['x-cert'] === undefined) return undefined;
      throw error;
    },
  });
  const withCert = () => fakeRequest({ headers: { 'X-Cert': 'forged' } });

  it('leaves a 401 as it is when no mechanism has a challenge', async () => {
    const refusal = invalidCredentials([], 'The certificate is not trusted.');
    const ran = await run(authenticate([throwing(refusal)]), withCert());
    expect(ran.error).toBe(refusal);
    expect(refusal.headers).toStrictEqual({});
    const { identify, challenges } = createIdentifier('mine()', [throwing(refusal)]);
    expect(challenges).toEqual([]);
    // synchronous, as the mechanism is: the refusal is thrown, not a rejected promise
    let thrown: unknown;
    try {
      identify(withCert());
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBe(refusal);
  });

  it('adds every challenge to a 401 carrying other headers, keeping each member', async () => {
    const cause = new Error('nonce store');
    const refusal = new HttpError(401, 'Use the nonce.', {
      code: 'ERR_DPOP_NONCE',
      type: 'urn:example:nonce',
      title: 'Nonce required',
      errors: [{ field: 'DPoP', message: 'stale' }],
      extensions: { hint: 'retry' },
      cause,
      headers: { 'DPoP-Nonce': 'n-1' },
    });
    const ran = await run(
      authenticate([throwing(refusal), aliceBasic().authenticator]),
      withCert(),
    );
    const error = httpError(ran);
    expect(error).not.toBe(refusal);
    expect(error).toMatchObject({
      status: 401,
      detail: 'Use the nonce.',
      code: 'ERR_DPOP_NONCE',
      type: 'urn:example:nonce',
      title: 'Nonce required',
      errors: [{ field: 'DPoP', message: 'stale' }],
      extensions: { hint: 'retry' },
      cause,
    });
    expect(error.headers).toStrictEqual({ 'DPoP-Nonce': 'n-1', 'WWW-Authenticate': [CHALLENGE] });
  });

  it('keeps a challenge of its own, whatever the case of its name', async () => {
    const refusal = new HttpError(401, 'No.', { headers: { 'www-authenticate': 'Cert' } });
    const ran = await run(
      authenticate([throwing(refusal), aliceBasic().authenticator]),
      withCert(),
    );
    expect(ran.error).toBe(refusal);
  });
});

describe('requireScopes() and requireRole()', () => {
  const as = (principal: Principal) => {
    const req = fakeRequest();
    setPrincipal(req, principal);
    return req;
  };

  it('names each bad argument in its message', () => {
    const scopes = 'requireScopes(): give at least one scope';
    const roles = 'requireRole(): give at least one role name';
    expect(optionMessage(() => requireScopes([]))).toBe(scopes);
    expect(optionMessage(() => requireScopes('read:messages' as never))).toBe(scopes);
    expect(optionMessage(() => requireScopes(['read messages']))).toBe(
      'requireScopes(): `read messages` is not a valid scope',
    );
    expect(optionMessage(() => requireRole([]))).toBe(roles);
    expect(optionMessage(() => requireRole('admin' as never))).toBe(roles);
    expect(optionMessage(() => requireRole(['admin', '']))).toBe(roles);
    expect(optionMessage(() => requireRole(['admin', 7 as never]))).toBe(roles);
  });

  it('answers a request without a principal 401, with no challenge to offer', async () => {
    for (const mw of [requireScopes(['read:messages']), requireRole(['admin'])]) {
      const ran = await run(mw);
      const error = httpError(ran);
      expect(error).toMatchObject({
        status: 401,
        code: 'ERR_AUTH_REQUIRED',
        title: 'Authentication required',
        type: 'urn:portico:problem:authentication-required',
        detail: 'Authentication is required.',
      });
      expect(error.headers).toStrictEqual({});
    }
  });

  it('names the missing scopes, with the challenge of a DPoP token', async () => {
    const mw = requireScopes(['read:messages', 'write:messages'], { realm: 'api' });
    const none = httpError(await run(mw, as({ sub: 'a', scopes: [], method: 'dpop' })));
    expect(none).toMatchObject({
      status: 403,
      code: 'ERR_INSUFFICIENT_SCOPE',
      title: 'Insufficient scope',
      type: 'urn:portico:problem:insufficient-scope',
      detail: 'This needs the scopes read:messages write:messages.',
      extensions: { requiredScopes: ['read:messages', 'write:messages'] },
    });
    expect(none.headers).toStrictEqual({
      'WWW-Authenticate':
        'DPoP realm="api", error="insufficient_scope", error_description="The access token lacks a required scope.", scope="read:messages write:messages"',
    });
    const one = httpError(
      await run(mw, as({ sub: 'a', scopes: ['read:messages'], method: 'bearer' })),
    );
    expect(one.detail).toBe('This needs the scope write:messages.');
    expect(one.extensions).toEqual({ requiredScopes: ['write:messages'] });
    const session = httpError(await run(mw, as({ sub: 'a', scopes: [], method: 'session' })));
    expect(session.headers).toStrictEqual({});
  });

  it('keeps its own copy of the scopes', async () => {
    const scopes = ['read:messages'];
    const mw = requireScopes(scopes);
    scopes.push('write:messages');
    const ran = await run(mw, as({ sub: 'a', scopes: ['read:messages'], method: 'bearer' }));
    expect(ran.error).toBeUndefined();
    expect(ran.passed).toBe(true);
  });

  it('names the roles allowed, from its own copy of them', async () => {
    const roles = ['admin', 'owner'];
    const mw = requireRole(roles);
    roles.push('user');
    for (const principal of [
      { sub: 'a', scopes: [], method: 'session', role: 'user' },
      { sub: 'a', scopes: [], method: 'session' },
    ]) {
      const error = httpError(await run(mw, as(principal)));
      expect(error).toMatchObject({
        status: 403,
        code: 'ERR_FORBIDDEN_ROLE',
        title: 'Forbidden',
        type: 'urn:portico:problem:forbidden-role',
        detail: 'This needs the role admin or owner.',
      });
      expect(error.headers).toStrictEqual({});
    }
    expect(
      (await run(mw, as({ sub: 'a', scopes: [], method: 'session', role: 'owner' }))).passed,
    ).toBe(true);
  });
});

describe('the problems of errors.ts', () => {
  it('fills each member of the 401 problems by default', () => {
    expect(invalidCredentials('Basic realm="api"')).toMatchObject({
      status: 401,
      detail: 'The credentials are not valid.',
      code: 'ERR_AUTH_INVALID',
      title: 'Invalid credentials',
      type: 'urn:portico:problem:invalid-credentials',
      headers: { 'WWW-Authenticate': 'Basic realm="api"' },
    });
    const expired = expiredCredentials('ApiKey realm="api"');
    expect(expired).toMatchObject({
      status: 401,
      detail: 'The credentials have expired.',
      code: 'ERR_AUTH_EXPIRED',
      title: 'Credentials expired',
      type: 'urn:portico:problem:credentials-expired',
    });
    expect(expired.headers).toStrictEqual({ 'WWW-Authenticate': 'ApiKey realm="api"' });
    expect(authenticationRequired([]).headers).toStrictEqual({});
  });

  it('gives invalid requests and forbidden answers only the headers asked for', () => {
    const plain = invalidAuthRequest('Send the access token in one place only.');
    expect(plain).toMatchObject({
      status: 400,
      code: 'ERR_AUTH_INVALID_REQUEST',
      title: 'Invalid request',
      type: 'urn:portico:problem:invalid-request',
      detail: 'Send the access token in one place only.',
    });
    expect(plain.headers).toStrictEqual({});
    expect(invalidAuthRequest('Once.', 'Bearer error="invalid_request"').headers).toStrictEqual({
      'WWW-Authenticate': 'Bearer error="invalid_request"',
    });
    expect(insufficientScope(['write:messages']).headers).toStrictEqual({});
    expect(forbiddenRole(['admin']).detail).toBe('This needs the role admin.');
  });
});

describe('challenge() and quoteParam() messages', () => {
  it('says what is wrong with a scheme, a parameter name or a value', () => {
    expect(() => quoteParam('x\r\nSet-Cookie: a=b')).toThrow(
      new TypeError(
        'A challenge parameter may hold tab, space, visible ASCII and Latin-1 characters only',
      ),
    );
    expect(() => challenge('Not a token')).toThrow(
      new TypeError('The auth scheme must be a token, not "Not a token"'),
    );
    expect(() => challenge('Basic', { 'real m': 'api' })).toThrow(
      new TypeError('A challenge parameter name must be a token, not "real m"'),
    );
  });
});

describe('basicAuth()', () => {
  it('names each bad option in its message', () => {
    const verify = () => undefined;
    const verifyMessage = 'basicAuth(): `verify` must be a function of (username, password, req)';
    expect(optionMessage(() => basicAuth({ verfy: verify } as never))).toBe(
      'basicAuth(): unknown option `verfy`. Did you mean `verify`?',
    );
    expect(optionMessage(() => basicAuth({} as never))).toBe(verifyMessage);
    expect(optionMessage(() => basicAuth(undefined as never))).toBe(verifyMessage);
    expect(optionMessage(() => basicAuth({ verify, realm: 42 as never }))).toBe(
      'basicAuth(): `realm` must be a string',
    );
  });

  it('refuses wrong and malformed credentials with its own detail and challenge', async () => {
    const { authenticator, verified } = aliceBasic();
    for (const value of [WRONG, 'Basic !!!!']) {
      const error = await Promise.resolve(
        authenticator.authenticate(withAuthorization(value)),
      ).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(HttpError);
      expect(error).toMatchObject({
        status: 401,
        code: 'ERR_AUTH_INVALID',
        detail: BAD_BASIC,
        headers: { 'WWW-Authenticate': CHALLENGE },
      });
    }
    expect(verified).toEqual([['alice', 'wrong']]);
  });

  it('refuses a verify that answers null as one that answers undefined', async () => {
    const basic = basicAuth({ verify: () => null as never });
    await expect(basic.authenticate(withAuthorization(GOOD))).rejects.toMatchObject({
      status: 401,
      detail: BAD_BASIC,
    });
  });

  it('answers two Authorization lines 400 with its detail and challenge, verifying neither', async () => {
    const { authenticator, verified } = aliceBasic();
    const req = fakeRequest({
      headers: [
        ['Authorization', GOOD],
        ['Authorization', GOOD],
      ],
    });
    const error = await Promise.resolve(authenticator.authenticate(req)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HttpError);
    expect(error).toMatchObject({
      status: 400,
      code: 'ERR_AUTH_INVALID_REQUEST',
      title: 'Invalid request',
      type: 'urn:portico:problem:invalid-request',
      detail: 'Send one Authorization header.',
    });
    expect((error as HttpError).headers).toStrictEqual({ 'WWW-Authenticate': CHALLENGE });
    expect(verified).toEqual([]);
  });

  it('takes only a header that starts with its scheme', async () => {
    const { authenticator, verified } = aliceBasic();
    for (const value of ['Custom basic', 'Token x basic', `Custom ${GOOD}`]) {
      expect(await authenticator.authenticate(withAuthorization(value))).toBeUndefined();
    }
    expect(verified).toEqual([]);
  });

  it('keeps a byte order mark as part of the user-id', async () => {
    const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('alice:secret')]);
    expect(parseBasicCredentials(basicValue(bom))).toEqual({
      username: '\ufeffalice',
      password: 'secret',
    });
    const { authenticator, verified } = aliceBasic();
    await expect(
      authenticator.authenticate(withAuthorization(basicValue(bom))),
    ).rejects.toMatchObject({
      status: 401,
    });
    expect(verified).toEqual([['\ufeffalice', 'secret']]);
  });
});

describe('parseBasicCredentials()', () => {
  it('reads a header of exactly 4096 characters and refuses one of 4097', () => {
    // 3066 bytes are 4088 base64 characters; 'Basic' and 3 spaces make 4096
    const encoded = Buffer.from(`u:${'x'.repeat(3064)}`).toString('base64');
    const atLimit = `Basic   ${encoded}`;
    expect(atLimit).toHaveLength(4096);
    expect(parseBasicCredentials(atLimit)).toEqual({ username: 'u', password: 'x'.repeat(3064) });
    expect(parseBasicCredentials(`Basic    ${encoded}`)).toBeUndefined();
  });

  it('refuses what follows the credential and what is not a string, throwing nothing', () => {
    expect(parseBasicCredentials(`${basicValue('u:p')} more`)).toBeUndefined();
    expect(parseBasicCredentials(`${basicValue('u:p')} `)).toBeUndefined();
    expect(parseBasicCredentials(basicValue('u:p'))).toEqual({ username: 'u', password: 'p' });
    expect(parseBasicCredentials(undefined as never)).toBeUndefined();
    expect(parseBasicCredentials(null as never)).toBeUndefined();
  });
});

describe('the synchronous path of authenticate() (issue 42)', () => {
  /** Calls `mw` and says what had happened when the call returned, before any await. */
  function callNow(mw: Middleware, req: IncomingMessage) {
    const { res } = fakeResponse(req);
    let passed = false;
    let thrown: unknown;
    let result: unknown;
    try {
      result = mw(req, res, () => {
        passed = true;
        return Promise.resolve();
      });
    } catch (error) {
      thrown = error;
    }
    return {
      get passed() {
        return passed;
      },
      thrown,
      result,
      req,
      res,
    };
  }

  /** A mechanism that answers synchronously, as apiKeyAuth over a memory store does. */
  const aliceNow: Authenticator = {
    scheme: 'Basic',
    challenge: CHALLENGE,
    authenticate(req) {
      const value = req.headers.authorization;
      if (value === undefined) return undefined;
      if (value === GOOD) return { sub: 'alice', scopes: [], method: 'basic' };
      throw new HttpError(401, BAD_BASIC);
    },
  };

  it('reaches next() within the call when the guard’s store and the mechanism are synchronous', () => {
    const store = new MemoryRateLimitStore();
    cleanups.push(() => store.close());
    const guard = createCredentialGuard({ store });
    const ran = callNow(authenticate([aliceNow], { guard }), withAuthorization(GOOD));
    expect(ran.passed).toBe(true);
    expect(getPrincipal(ran.req)?.sub).toBe('alice');
    expect(ran.res.getHeader('Cache-Control')).toBe('no-store');
  });

  it('throws the refusal within the call, counted by the guard, and then its 429', () => {
    const store = new MemoryRateLimitStore();
    cleanups.push(() => store.close());
    const guard = createCredentialGuard({ store, limit: 1 });
    const auth = authenticate([aliceNow], { guard });
    const first = callNow(auth, withAuthorization(WRONG));
    // counting is the guard's refused(), a promise: the verdict follows it
    expect(first.thrown).toBeUndefined();
    return (first.result as Promise<void>).then(
      () => expect.unreachable('the wrong password passed'),
      async (error: unknown) => {
        expect((error as HttpError).status).toBe(401);
        // spent: the guard's check refuses within the call, without verifying
        const spent = callNow(auth, withAuthorization(GOOD));
        expect(spent.passed).toBe(false);
        expect((spent.thrown as HttpError).status).toBe(429);
        expect(spent.res.getHeader('Cache-Control')).toBe('no-store');
      },
    );
  });

  it('waits for a mechanism that answers with a promise, and for the next one after it', async () => {
    const later: Authenticator = { scheme: 'Later', authenticate: async () => undefined };
    const ran = callNow(authenticate([later, aliceBasic().authenticator]), withAuthorization(GOOD));
    expect(ran.passed).toBe(false);
    await ran.result;
    expect(ran.passed).toBe(true);
    expect(getPrincipal(ran.req)?.sub).toBe('alice');
  });

  it('waits for a guard whose store answers with a promise', async () => {
    const store: RateLimitStore = {
      increment: () => ({ count: 1, resetAt: Date.now() + 1000 }),
      peek: async () => undefined,
    };
    const guard = createCredentialGuard({ store });
    const ran = callNow(
      authenticate([aliceBasic().authenticator], { guard }),
      withAuthorization(GOOD),
    );
    expect(ran.passed).toBe(false);
    await ran.result;
    expect(ran.passed).toBe(true);
  });

  it('answers a refusal from behind it with the resource’s challenges, thrown or rejected', async () => {
    const auth = authenticate([aliceBasic().authenticator], { scopes: () => ['read'] });
    const refusal = () =>
      new HttpError(401, 'Not you.', { headers: { 'WWW-Authenticate': 'Bearer' } });
    for (const next of [
      () => {
        throw refusal();
      },
      () => Promise.reject(refusal()),
    ]) {
      const req = withAuthorization(GOOD);
      const { res } = fakeResponse(req);
      const error = await Promise.resolve()
        .then(() => auth(req, res, next))
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect((error as HttpError).headers['WWW-Authenticate']).toEqual(['Bearer scope="read"']);
    }
  });
});
