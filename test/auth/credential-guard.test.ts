import { afterEach, describe, expect, it } from 'vitest';
import {
  apiKeyAuth,
  authenticate,
  basicAuth,
  createApiKey,
  createCredentialGuard,
  MemoryApiKeyStore,
  requirePrincipal,
} from '../../src/auth/index.js';
import { sendJson, unauthorized } from '../../src/core/index.js';
import { MemoryRateLimitStore } from '../../src/rate-limit/index.js';
import type { RateLimitStore } from '../../src/rate-limit/store.js';
import { closeAll, expectProblem, json, request, serve } from '../helpers/http.js';

afterEach(closeAll);

const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** Basic auth over a counted verify: alice / right is the one good pair. */
function countedBasic() {
  const calls = { verify: 0 };
  const authenticator = basicAuth({
    verify(username, password) {
      calls.verify++;
      return username === 'alice' && password === 'right'
        ? { sub: 'alice', scopes: [], method: 'basic' }
        : undefined;
    },
  });
  return { authenticator, calls };
}

const echo = (req: Parameters<typeof requirePrincipal>[0], res: Parameters<typeof sendJson>[0]) =>
  sendJson(res, 200, { sub: requirePrincipal(req).sub });

describe('createCredentialGuard()', () => {
  it('answers 429 once an address has spent its refusals, a right password included, without verifying it', async () => {
    const guard = createCredentialGuard({ limit: 3, windowMs: 60_000 });
    const { authenticator, calls } = countedBasic();
    const server = await serve([authenticate([authenticator], { guard }), echo]);
    for (let i = 0; i < 3; i++) {
      const reply = await request(server, '/', {
        headers: { Authorization: basic('alice', `guess-${i}`) },
      });
      expectProblem(reply, 401);
    }
    // the 4th refusal of the window: its verdict is not told
    const fourth = await request(server, '/', { headers: { Authorization: basic('alice', 'x') } });
    const problem = expectProblem(fourth, 429);
    expect(problem.detail).toMatch(/Too many refused credentials/);
    expect(Number(fourth.headers['retry-after'])).toBeGreaterThan(0);
    const verifiedBefore = calls.verify;
    const right = await request(server, '/', {
      headers: { Authorization: basic('alice', 'right') },
    });
    expectProblem(right, 429);
    // spent: the password was not even checked (no scrypt for a guesser)
    expect(calls.verify).toBe(verifiedBefore);
  });

  it('is one budget across surfaces: refusals on one route throttle another', async () => {
    const guard = createCredentialGuard({ limit: 2 });
    const store = new MemoryApiKeyStore();
    const { key } = await createApiKey(store, { owner: 'alice' });
    const login = async (
      req: Parameters<typeof requirePrincipal>[0],
      res: Parameters<typeof sendJson>[0],
    ) => {
      const user = await guard.attempt(req, async () =>
        req.headers['x-password'] === 'right' ? 'alice' : undefined,
      );
      if (user === undefined) throw unauthorized('Wrong password.');
      sendJson(res, 200, { user });
    };
    const loginServer = await serve(login);
    const api = await serve([authenticate([apiKeyAuth({ store })], { guard }), echo]);
    expectProblem(await request(loginServer, '/', { headers: { 'X-Password': 'a' } }), 401);
    expectProblem(await request(loginServer, '/', { headers: { 'X-Password': 'b' } }), 401);
    // the API key is right, but this address spent its refusals at the sign-in
    expectProblem(await request(api, '/', { headers: { 'X-API-Key': key } }), 429);
    expectProblem(await request(loginServer, '/', { headers: { 'X-Password': 'right' } }), 429);
  });

  it('counts by client address: another client through a trusted proxy is not locked out', async () => {
    const guard = createCredentialGuard({ limit: 1, trustProxy: '127.0.0.1' });
    const { authenticator } = countedBasic();
    const server = await serve([authenticate([authenticator], { guard }), echo]);
    const from = (ip: string, password: string) =>
      request(server, '/', {
        headers: { Authorization: basic('alice', password), 'X-Forwarded-For': ip },
      });
    expectProblem(await from('203.0.113.7', 'wrong'), 401);
    expectProblem(await from('203.0.113.7', 'right'), 429);
    // the user is not locked out: from their own address the right password works
    const own = await from('198.51.100.1', 'right');
    expect(own.status).toBe(200);
    expect(json(own)).toEqual({ sub: 'alice' });
  });

  it('lets a concurrent burst have at most `limit` verdicts', async () => {
    const guard = createCredentialGuard({ limit: 5 });
    const { authenticator } = countedBasic();
    const server = await serve([authenticate([authenticator], { guard }), echo]);
    const replies = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        request(server, '/', { headers: { Authorization: basic('alice', `g${i}`) } }),
      ),
    );
    expect(replies.filter((r) => r.status === 401)).toHaveLength(5);
    expect(replies.filter((r) => r.status === 429)).toHaveLength(25);
  });

  it('fails closed: an unreachable store refuses credentials with 503', async () => {
    const broken: RateLimitStore = {
      increment: () => Promise.reject(new Error('down')),
      peek: () => Promise.reject(new Error('down')),
    };
    const guard = createCredentialGuard({ store: broken });
    const { authenticator } = countedBasic();
    const server = await serve([authenticate([authenticator], { guard }), echo]);
    const reply = await request(server, '/', {
      headers: { Authorization: basic('alice', 'right') },
    });
    expectProblem(reply, 503);
    expect(reply.headers['retry-after']).toBe('5');
  });

  it('starts again when the window ends', async () => {
    let now = 1_000_000;
    const realNow = Date.now;
    const store = new MemoryRateLimitStore({ now: () => now });
    const guard = createCredentialGuard({ limit: 1, windowMs: 1000, store });
    const { authenticator } = countedBasic();
    const server = await serve([authenticate([authenticator], { guard }), echo]);
    try {
      Date.now = () => now;
      expectProblem(
        await request(server, '/', { headers: { Authorization: basic('alice', 'x') } }),
        401,
      );
      expectProblem(
        await request(server, '/', { headers: { Authorization: basic('alice', 'right') } }),
        429,
      );
      now += 1001;
      const after = await request(server, '/', {
        headers: { Authorization: basic('alice', 'right') },
      });
      expect(after.status).toBe(200);
    } finally {
      Date.now = realNow;
      store.close();
    }
  });

  it('validates its options', () => {
    expect(() => createCredentialGuard({ limit: 0 })).toThrow(/limit/);
    expect(() => createCredentialGuard({ windowMs: 1.5 })).toThrow(/windowMs/);
    expect(() => createCredentialGuard({ store: {} as RateLimitStore })).toThrow(/store/);
    // @ts-expect-error: an unknown option
    expect(() => createCredentialGuard({ limt: 3 })).toThrow(/limt/);
    // @ts-expect-error: not a guard
    expect(() => authenticate([countedBasic().authenticator], { guard: {} })).toThrow(/guard/);
  });
});

describe('authenticate(): answers that carried a credential', () => {
  it('are not stored by shared caches, and Vary names the credential headers', async () => {
    const store = new MemoryApiKeyStore();
    const { key } = await createApiKey(store, { owner: 'alice' });
    const { authenticator } = countedBasic();
    const server = await serve([
      authenticate([apiKeyAuth({ store }), authenticator], { optional: true }),
      (_req, res) => sendJson(res, 200, { ok: true }),
    ]);
    const withKey = await request(server, '/', { headers: { 'X-API-Key': key } });
    expect(withKey.status).toBe(200);
    expect(withKey.headers['cache-control']).toBe('no-store');
    expect(withKey.headers.vary).toBe('X-API-Key, Authorization');
    const refused = await request(server, '/', { headers: { Authorization: basic('a', 'b') } });
    expect(refused.status).toBe(401);
    expect(refused.headers['cache-control']).toBe('no-store');
    // no credential: nothing private in the answer, but it still depends on those headers
    const anonymous = await request(server, '/');
    expect(anonymous.headers['cache-control']).toBeUndefined();
    expect(anonymous.headers.vary).toBe('X-API-Key, Authorization');
  });

  it('keeps the route’s own Cache-Control, and can be turned off', async () => {
    const store = new MemoryApiKeyStore();
    const { key } = await createApiKey(store, { owner: 'alice' });
    const own = await serve([
      authenticate([apiKeyAuth({ store })]),
      (_req, res) => sendJson(res, 200, {}, { 'Cache-Control': 'private, max-age=60' }),
    ]);
    const reply = await request(own, '/', { headers: { 'X-API-Key': key } });
    expect(reply.headers['cache-control']).toBe('private, max-age=60');
    const off = await serve([
      authenticate([apiKeyAuth({ store })], { cacheControl: false }),
      (_req, res) => sendJson(res, 200, {}),
    ]);
    const plain = await request(off, '/', { headers: { 'X-API-Key': key } });
    expect(plain.status).toBe(200);
    expect(plain.headers['cache-control']).toBeUndefined();
  });
});
