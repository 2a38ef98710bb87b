// examples/migration/server.ts, the "after" of docs/migration.md, over a real socket: what
// helmet, cors, express-jwt / passport and express-rate-limit did, done by portico on Express 5.
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AUDIENCE,
  DEMO_API_KEY,
  DEMO_JWT_SECRET,
  ISSUER,
  ORIGIN,
} from '../../examples/frameworks/shared.js';
import { createApp } from '../../examples/migration/server.js';
import { expectProblem, json, type Listening, listen, request } from '../helpers/http.js';

const mintToken = (sub: string, scope: string, secret = DEMO_JWT_SECRET) =>
  new SignJWT({ scope })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(sub)
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(new TextEncoder().encode(secret));

describe('the migration example (examples/migration/server.ts)', () => {
  let app: Awaited<ReturnType<typeof createApp>>;
  let listening: Listening;

  beforeAll(async () => {
    app = await createApp();
    listening = await listen(app.server);
  });
  afterAll(async () => {
    if (app.server.listening) await app.close();
  });

  it('answers a request without a credential 401 with WWW-Authenticate, as a problem', async () => {
    const reply = await request(listening, '/api/me');
    const problem = expectProblem(reply, 401);
    expect(problem.type).toBe('urn:portico:problem:authentication-required');
    const challenges = String(reply.headers['www-authenticate']);
    expect(challenges).toMatch(/Bearer realm="api"/);
    expect(challenges).toMatch(/ApiKey realm="api", header="X-API-Key"/);
  });

  it('refuses a token signed with another secret: 401 invalid_token', async () => {
    const token = await mintToken('alice', 'read:messages', 'another-secret-0123456789abcdef-xyz');
    const reply = await request(listening, '/api/me', {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(expectProblem(reply, 401).type).toBe('urn:portico:problem:invalid-credentials');
    expect(reply.headers['www-authenticate']).toMatch(/error="invalid_token"/);
  });

  it('lets a valid bearer token through (200) and an API key too', async () => {
    const token = await mintToken('alice', 'read:messages write:messages');
    const reply = await request(listening, '/api/me', {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(reply.status, reply.body).toBe(200);
    expect(json(reply)).toEqual({
      sub: 'alice',
      scopes: ['read:messages', 'write:messages'],
      method: 'bearer',
    });
    const byKey = await request(listening, '/api/messages', {
      headers: { 'x-api-key': DEMO_API_KEY },
    });
    expect(byKey.status, byKey.body).toBe(200);
    expect(json<unknown[]>(byKey)).toEqual([{ id: 1, text: 'hello' }]);
  });

  it('answers a missing scope 403, with the bearer insufficient_scope challenge', async () => {
    const token = await mintToken('alice', 'read:messages');
    const reply = await request(listening, '/api/messages', {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'hi' }),
    });
    const problem = expectProblem(reply, 403);
    expect(problem.type).toBe('urn:portico:problem:insufficient-scope');
    expect(reply.headers['www-authenticate']).toMatch(
      /Bearer error="insufficient_scope".*scope="write:messages"/,
    );
    // the read-only API key is refused the same way, without a bearer challenge
    const byKey = await request(listening, '/api/messages', {
      method: 'POST',
      headers: { 'x-api-key': DEMO_API_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'hi' }),
    });
    expectProblem(byKey, 403);
    // with the scope, the same request is created
    const writer = await mintToken('alice', 'write:messages');
    const created = await request(listening, '/api/messages', {
      method: 'POST',
      headers: { authorization: `Bearer ${writer}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'hi' }),
    });
    expect(created.status, created.body).toBe(201);
    expect(json(created)).toEqual({ from: 'alice', text: 'hi' });
  });

  it('sends the helmet-like security headers, and no X-Powered-By', async () => {
    const reply = await request(listening, '/api/me', { headers: { 'x-api-key': DEMO_API_KEY } });
    expect(reply.status).toBe(200);
    expect(reply.headers['content-security-policy']).toBe(
      "default-src 'none'; frame-ancestors 'none'",
    );
    expect(reply.headers['x-content-type-options']).toBe('nosniff');
    expect(reply.headers['x-frame-options']).toBe('DENY');
    expect(reply.headers['referrer-policy']).toBe('no-referrer');
    expect(reply.headers['permissions-policy']).toBe(
      'camera=(), microphone=(), geolocation=(), payment=(), usb=()',
    );
    expect(reply.headers['x-powered-by']).toBeUndefined();
    // HSTS only over HTTPS (RFC 6797 §7.2): this plain-HTTP answer has none
    expect(reply.headers['strict-transport-security']).toBeUndefined();
    // error answers carry them too
    const refused = await request(listening, '/api/me');
    expect(refused.headers['x-content-type-options']).toBe('nosniff');
    expect(refused.headers['content-security-policy']).toBeDefined();
  });

  it('answers a preflight from the allowed origin only', async () => {
    const preflight = (origin: string) =>
      request(listening, '/api/messages', {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization, content-type',
        },
      });
    const allowed = await preflight(ORIGIN);
    expect(allowed.status).toBe(204);
    expect(allowed.headers['access-control-allow-origin']).toBe(ORIGIN);
    expect(String(allowed.headers['access-control-allow-methods'])).toMatch(/POST/);
    expect(String(allowed.headers['access-control-allow-headers'])).toMatch(/Authorization/);
    expect(allowed.headers['access-control-max-age']).toBe('86400');
    expect(String(allowed.headers.vary)).toMatch(/Origin/);

    const other = await preflight('https://evil.example');
    expect(other.status).toBe(204);
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
    expect(other.headers['access-control-allow-methods']).toBeUndefined();

    // a real request from the allowed origin can read the answer, and its error answers
    const refused = await request(listening, '/api/me', { headers: { origin: ORIGIN } });
    expectProblem(refused, 401);
    expect(refused.headers['access-control-allow-origin']).toBe(ORIGIN);
    expect(String(refused.headers['access-control-expose-headers'])).toMatch(/WWW-Authenticate/);
  });

  it('answers an unknown path with a 404 problem', async () => {
    expectProblem(await request(listening, '/nowhere'), 404);
  });

  it('counts per credential and answers 429 with Retry-After past the limit', async () => {
    const limited = await createApp({ limit: 3 });
    const server = await listen(limited.server);
    try {
      const alice = await mintToken('alice', 'read:messages');
      const bob = await mintToken('bob', 'read:messages');
      const get = (token: string) =>
        request(server, '/api/me', { headers: { authorization: `Bearer ${token}` } });
      for (let i = 3; i > 0; i--) {
        const ok = await get(alice);
        expect(ok.status, ok.body).toBe(200);
        expect(ok.headers['x-ratelimit-limit']).toBe('3');
        expect(ok.headers['x-ratelimit-remaining']).toBe(String(i - 1));
      }
      const over = await get(alice);
      const problem = expectProblem(over, 429);
      expect(problem.detail).toBe('Rate limit exceeded: at most 3 requests per 60 seconds.');
      const retryAfter = Number(over.headers['retry-after']);
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      // another user has a budget of their own
      expect((await get(bob)).status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});
