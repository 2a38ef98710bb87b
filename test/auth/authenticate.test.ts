import type { IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { quoteParam } from '../../src/auth/authenticator.js';
import { createCredentialGuard } from '../../src/auth/credential-guard.js';
import {
  type Authenticator,
  authenticate,
  challenge,
  getPrincipal,
  invalidCredentials,
  isValidScope,
  JwtError,
  type Principal,
  parseScopes,
  requirePrincipal,
  requireRole,
  requireScopes,
  scopesFromClaim,
} from '../../src/auth/index.js';
import { HttpError, sendJson } from '../../src/core/index.js';
import { rateLimit } from '../../src/rate-limit/index.js';
import { MemoryRateLimitStore } from '../../src/rate-limit/memory-store.js';
import { closeAll, json, request, serve } from '../helpers/http.js';

afterEach(closeAll);

/** A test mechanism: header `x-test-<scheme>` holds a user name, `bad` is a bad credential. */
function fake(scheme: string, extra: Partial<Principal> = {}, withChallenge = true): Authenticator {
  const header = `x-test-${scheme.toLowerCase()}`;
  const ch = withChallenge ? challenge(scheme, { realm: 'api' }) : undefined;
  return {
    scheme,
    challenge: ch,
    authenticate(req: IncomingMessage) {
      const value = req.headers[header];
      if (value === undefined) return undefined;
      if (value === 'bad') throw invalidCredentials(ch ?? scheme);
      return Promise.resolve({
        sub: String(value),
        scopes: [],
        method: scheme.toLowerCase(),
        ...extra,
      });
    },
  };
}

const echo = (req: IncomingMessage, res: Parameters<typeof sendJson>[0]) =>
  sendJson(res, 200, getPrincipal(req) ?? null);

describe('authenticate()', () => {
  it('uses the first mechanism whose credential is present and stores the principal', async () => {
    const server = await serve([authenticate([fake('Alpha'), fake('Beta')]), echo]);
    const reply = await request(server, '/', {
      headers: { 'x-test-beta': 'bob', 'x-test-alpha': 'alice' },
    });
    expect(reply.status).toBe(200);
    expect(json(reply)).toMatchObject({ sub: 'alice', method: 'alpha' });
    const beta = await request(server, '/', { headers: { 'x-test-beta': 'bob' } });
    expect(json(beta)).toMatchObject({ sub: 'bob', method: 'beta' });
  });

  it('answers 401 listing every configured scheme when no credential is present', async () => {
    const server = await serve([
      authenticate([fake('Alpha'), fake('Beta'), fake('Quiet', {}, false)]),
      echo,
    ]);
    const reply = await request(server, '/');
    expect(reply.status).toBe(401);
    expect(reply.headers['www-authenticate']).toBe('Alpha realm="api", Beta realm="api"');
    const problem = json(reply);
    expect(problem).toMatchObject({ status: 401, title: 'Authentication required' });
    expect(String(problem.type)).toMatch(/authentication-required$/);
  });

  it('stops at a bad credential with 401 instead of trying the next mechanism', async () => {
    const server = await serve([authenticate([fake('Alpha'), fake('Beta')]), echo]);
    const reply = await request(server, '/', {
      headers: { 'x-test-alpha': 'bad', 'x-test-beta': 'bob' },
    });
    expect(reply.status).toBe(401);
    expect(reply.headers['www-authenticate']).toBe('Alpha realm="api"');
    expect(String(json(reply).type)).toMatch(/invalid-credentials$/);
  });

  it('lets anonymous requests through when optional, still refusing bad credentials', async () => {
    const server = await serve([authenticate([fake('Alpha')], { optional: true }), echo]);
    expect(json(await request(server, '/'))).toBeNull();
    expect((await request(server, '/', { headers: { 'x-test-alpha': 'bad' } })).status).toBe(401);
    const guarded = await serve([
      authenticate([fake('Alpha')], { optional: true }),
      (req, res) => sendJson(res, 200, requirePrincipal(req).sub),
    ]);
    expect((await request(guarded, '/')).status).toBe(401);
  });

  it('adds every challenge to a 401 from a mechanism that has none of its own', async () => {
    const silent: Authenticator = {
      scheme: 'Silent',
      authenticate: (req) => {
        if (req.headers['x-cert'] === undefined) return undefined;
        throw invalidCredentials([], 'The certificate is not trusted.');
      },
    };
    const server = await serve([authenticate([silent, fake('Alpha')]), echo]);
    const reply = await request(server, '/', { headers: { 'x-cert': 'forged' } });
    expect(reply.status).toBe(401);
    expect(reply.headers['www-authenticate']).toBe('Alpha realm="api"');
    expect(json(reply)).toMatchObject({ detail: 'The certificate is not trusted.' });
  });

  it('answers a JwtError thrown by a handler as 401 expired or invalid, or 503', async () => {
    const server = await serve((req) => {
      throw new JwtError(
        String(req.url).slice(1) as 'expired' | 'invalid' | 'unavailable',
        'The ID token says no.',
      );
    });
    const expired = await request(server, '/expired');
    expect(expired.status).toBe(401);
    expect(expired.headers['www-authenticate']).toBe('Bearer');
    expect(String(json(expired).type)).toMatch(/credentials-expired$/);
    expect(String(json(await request(server, '/invalid')).type)).toMatch(/invalid-credentials$/);
    const unavailable = await request(server, '/unavailable');
    expect(unavailable.status).toBe(503);
    expect(unavailable.headers['retry-after']).toBe('30');
  });

  it('gives `required`, which answers a missing credential later with the chosen challenges', async () => {
    const auth = authenticate([fake('Alpha'), fake('Basic')], {
      optional: true,
      // no Basic for a page's script: its browser would show a password dialog
      challenges: (req, all) =>
        req.headers['sec-fetch-mode'] === 'cors' ? all.filter((c) => !c.startsWith('Basic')) : all,
    });
    const seen: string[] = [];
    const server = await serve([
      auth,
      (req, _res, next) => {
        seen.push(req.method ?? '');
        return next();
      },
      auth.required,
      echo,
    ]);
    const navigation = await request(server, '/');
    expect(navigation.status).toBe(401);
    expect(navigation.headers['www-authenticate']).toBe('Alpha realm="api", Basic realm="api"');
    const script = await request(server, '/', { headers: { 'Sec-Fetch-Mode': 'cors' } });
    expect(script.status).toBe(401);
    expect(script.headers['www-authenticate']).toBe('Alpha realm="api"');
    // what ran between the two steps saw the anonymous requests: the 401 came at `required`
    expect(seen).toEqual(['GET', 'GET']);
    // OPTIONS asks what a path supports: it passes
    expect((await request(server, '/', { method: 'OPTIONS' })).status).toBe(200);
    const signedIn = await request(server, '/', { headers: { 'x-test-alpha': 'alice' } });
    expect(json(signedIn)).toMatchObject({ sub: 'alice' });
    // the non-optional form picks its challenges the same way
    const strict = await serve([
      authenticate([fake('Alpha'), fake('Basic')], { challenges: (_req, all) => all.slice(1) }),
      echo,
    ]);
    expect((await request(strict, '/')).headers['www-authenticate']).toBe('Basic realm="api"');
    // @ts-expect-error: not a function
    expect(() => authenticate([fake('Alpha')], { challenges: 'Basic' })).toThrow(/challenges/);
  });

  it('refuses a bad configuration when built', () => {
    expect(() => authenticate([])).toThrow(TypeError);
    expect(() => authenticate([{} as Authenticator])).toThrow(TypeError);
    // the rate limit is a middleware of its own after authenticate(), no option of it
    expect(() => authenticate([fake('Alpha')], { rateLimit: rateLimit() } as never)).toThrow(
      /unknown option `rateLimit`/,
    );
    expect(() => authenticate([fake('Alpha')], { guard: {} as never })).toThrow(TypeError);
    expect(() => authenticate([fake('Alpha')], { optinal: true } as never)).toThrow(
      /Did you mean `optional`\?/,
    );
  });
});

describe('requireScopes() and requireRole()', () => {
  const scoped = (scopes: string[], method = 'bearer') =>
    fake('Alpha', { scopes, method, role: 'user' });

  it('passes with every scope and answers 403 with the bearer challenge otherwise', async () => {
    const server = await serve([
      authenticate([scoped(['read:messages'])]),
      requireScopes(['read:messages', 'write:messages'], { realm: 'api' }),
      echo,
    ]);
    const reply = await request(server, '/', { headers: { 'x-test-alpha': 'alice' } });
    expect(reply.status).toBe(403);
    expect(reply.headers['www-authenticate']).toBe(
      'Bearer realm="api", error="insufficient_scope", error_description="The access token lacks a required scope.", scope="read:messages write:messages"',
    );
    expect(json(reply)).toMatchObject({
      status: 403,
      title: 'Insufficient scope',
      requiredScopes: ['write:messages'],
    });

    const ok = await serve([
      authenticate([scoped(['read:messages', 'write:messages'])]),
      requireScopes(['write:messages']),
      echo,
    ]);
    expect((await request(ok, '/', { headers: { 'x-test-alpha': 'alice' } })).status).toBe(200);
  });

  it('sends no bearer challenge to other methods, and can be limited to some methods', async () => {
    const server = await serve([
      authenticate([scoped([], 'session')]),
      requireScopes(['read:messages']),
      echo,
    ]);
    const reply = await request(server, '/', { headers: { 'x-test-alpha': 'alice' } });
    expect(reply.status).toBe(403);
    expect(reply.headers['www-authenticate']).toBeUndefined();
    const bearerOnly = await serve([
      authenticate([scoped([], 'session')]),
      requireScopes(['read:messages'], { methods: ['bearer'] }),
      echo,
    ]);
    expect((await request(bearerOnly, '/', { headers: { 'x-test-alpha': 'alice' } })).status).toBe(
      200,
    );
  });

  it('answers 401 without a principal and 403 for another role', async () => {
    const noAuth = await serve([requireScopes(['read:messages']), echo]);
    expect((await request(noAuth, '/')).status).toBe(401);
    const admins = await serve([authenticate([scoped([])]), requireRole(['admin']), echo]);
    const reply = await request(admins, '/', { headers: { 'x-test-alpha': 'bob' } });
    expect(reply.status).toBe(403);
    expect(String(json(reply).type)).toMatch(/forbidden-role$/);
    const users = await serve([authenticate([scoped([])]), requireRole(['admin', 'user']), echo]);
    expect((await request(users, '/', { headers: { 'x-test-alpha': 'bob' } })).status).toBe(200);
  });

  it('refuses malformed scopes and empty roles in code', () => {
    expect(() => requireScopes(['read messages'])).toThrow(TypeError);
    expect(() => requireScopes([])).toThrow(TypeError);
    expect(() => requireRole([])).toThrow(TypeError);
    expect(() => requireRole([''])).toThrow(TypeError);
  });
});

describe('scopes', () => {
  it('accepts <action>:<object> and OpenID scopes only', () => {
    for (const ok of [
      'read:messages',
      'write:messages',
      'admin:keys.*',
      'openid',
      'offline_access',
    ]) {
      expect(isValidScope(ok), ok).toBe(true);
    }
    for (const bad of [
      '',
      'read',
      'Read:messages',
      'read:',
      ':messages',
      'read messages',
      'read:msg\n',
      'a'.repeat(300),
    ]) {
      expect(isValidScope(bad), JSON.stringify(bad)).toBe(false);
    }
  });

  it('parses strictly into a 400 problem, never a crash', () => {
    expect(parseScopes('read:messages  write:messages read:messages')).toEqual([
      'read:messages',
      'write:messages',
    ]);
    expect(parseScopes(['openid', 'email'])).toEqual(['openid', 'email']);
    for (const bad of [
      'read messages',
      42,
      null,
      { a: 1 },
      ['read:messages', 7],
      Array(65)
        .fill('read:x')
        .map((s, i) => `${s}${i}`)
        .join(' '),
    ]) {
      try {
        parseScopes(bad);
        expect.unreachable(`accepted ${JSON.stringify(bad)}`);
      } catch (err) {
        expect(err).toBeInstanceOf(HttpError);
        expect((err as HttpError).status).toBe(400);
      }
    }
  });

  it('reads token claims leniently', () => {
    expect(scopesFromClaim('read:messages write:messages')).toEqual([
      'read:messages',
      'write:messages',
    ]);
    expect(scopesFromClaim(['a', 'b c', 5])).toEqual(['a']);
    expect(scopesFromClaim(undefined)).toEqual([]);
    expect(scopesFromClaim('x"y')).toEqual([]);
  });

  it('quotes challenge parameters and refuses control characters', () => {
    expect(challenge('Bearer', { realm: 'a "b" \\c' })).toBe('Bearer realm="a \\"b\\" \\\\c"');
    expect(challenge('Negotiate')).toBe('Negotiate');
    expect(() => quoteParam('x\r\nSet-Cookie: a=b')).toThrow(TypeError);
  });
});

describe('rate limits per principal', () => {
  it('counts an API key, a user and an anonymous client separately', async () => {
    const keyed: Authenticator = {
      scheme: 'Key',
      authenticate: (req) =>
        req.headers['x-key']
          ? { sub: 'alice', scopes: [], method: 'api_key', keyId: String(req.headers['x-key']) }
          : undefined,
    };
    const server = await serve([
      authenticate([keyed, fake('User')], { optional: true }),
      rateLimit({ limit: 2, windowMs: 60_000 }),
      echo,
    ]);
    const statuses = async (headers: Record<string, string>) => {
      const out: number[] = [];
      for (let i = 0; i < 3; i++) out.push((await request(server, '/', { headers })).status);
      return out;
    };
    expect(await statuses({ 'x-key': 'k1' })).toEqual([200, 200, 429]);
    expect(await statuses({ 'x-key': 'k2' })).toEqual([200, 200, 429]);
    expect(await statuses({ 'x-test-user': 'alice' })).toEqual([200, 200, 429]);
    expect(await statuses({})).toEqual([200, 200, 429]);
  });

  it('with `guard`, counts refused credentials by IP before answering them', async () => {
    const store = new MemoryRateLimitStore();
    const guard = createCredentialGuard({ limit: 3, windowMs: 60_000, store });
    const server = await serve([authenticate([fake('Alpha')], { guard }), echo]);
    const refusedSoFar = () => store.peek('refused:ip:127.0.0.1')?.count ?? 0;
    const bad = await request(server, '/', { headers: { 'x-test-alpha': 'bad' } });
    expect(bad.status).toBe(401);
    expect(bad.headers['www-authenticate']).toBe('Alpha realm="api"');
    // the refusal was counted before it was answered
    expect(refusedSoFar()).toBe(1);
    // a missing credential is no guess: answered, not counted
    expect((await request(server, '/')).status).toBe(401);
    expect(refusedSoFar()).toBe(1);
    expect((await request(server, '/', { headers: { 'x-test-alpha': 'bad' } })).status).toBe(401);
    // the third refusal spends the guesser's budget: no more verdicts on its guesses
    expect((await request(server, '/', { headers: { 'x-test-alpha': 'bad' } })).status).toBe(401);
    expect(refusedSoFar()).toBe(3);
    const spent = await request(server, '/', { headers: { 'x-test-alpha': 'bad' } });
    expect(spent.status).toBe(429);
    expect(spent.headers['retry-after']).toMatch(/^\d+$/);
    expect(spent.headers['www-authenticate']).toBeUndefined();
    // a right credential from the same address is refused too, until the window ends
    const alice = await request(server, '/', { headers: { 'x-test-alpha': 'alice' } });
    expect(alice.status).toBe(429);
    store.close();
  });

  it('with `guard` and `optional`, lets anonymous calls through uncounted; 5xx are not counted', async () => {
    const failing: Authenticator = {
      scheme: 'Broken',
      authenticate: (req) => {
        if (req.headers['x-broken'] === undefined) return undefined;
        throw new HttpError(503, 'The key set is unavailable.', {
          headers: { 'Retry-After': '5' },
        });
      },
    };
    const store = new MemoryRateLimitStore();
    const guard = createCredentialGuard({ limit: 10, store });
    const counted = () => store.peek('refused:ip:127.0.0.1')?.count ?? 0;
    const server = await serve([
      authenticate([failing, fake('Alpha')], { optional: true, guard }),
      echo,
    ]);
    const anonymous = await request(server, '/');
    expect(anonymous.status).toBe(200);
    expect(json(anonymous)).toBeNull();
    expect(counted()).toBe(0);
    expect((await request(server, '/', { headers: { 'x-test-alpha': 'bad' } })).status).toBe(401);
    expect(counted()).toBe(1);
    const broken = await request(server, '/', { headers: { 'x-broken': '1' } });
    expect(broken.status).toBe(503);
    expect(counted()).toBe(1);
    store.close();
  });
});
