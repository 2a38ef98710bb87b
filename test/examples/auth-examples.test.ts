// The authentication examples (examples/auth/{express,koa}.ts) run in-process: each mechanism
// through each framework (the code blocks of docs/authentication.md: test/docs).

import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { OutgoingHttpHeaders } from 'node:http';
import { type JWTPayload, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as expressExample from '../../examples/auth/express.js';
import * as koaExample from '../../examples/auth/koa.js';
import { generateApiKey } from '../../src/auth/api-key/api-key.js';
import {
  closeAll,
  expectProblem,
  json,
  type Listening,
  listen,
  type Reply,
  request,
} from '../helpers/http.js';

const root = new URL('../../', import.meta.url);
const fixture = (name: string) => readFileSync(new URL(`test/fixtures/tls/${name}`, root));
const tls = { cert: fixture('server.pem'), key: fixture('server.key'), ca: fixture('ca.pem') };
const ca = tls.ca;
const clientCert = { cert: fixture('client.pem'), key: fixture('client.key') };

const { ISSUER, AUDIENCE, CLIENT_ID } = expressExample;
const provider = generateKeyPairSync('rsa', { modulusLength: 2048 });
const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 });
const apiKey = generateApiKey();
const now = () => Math.floor(Date.now() / 1000);

interface MintOptions {
  typ?: string;
  key?: KeyObject;
  audience?: string;
  iat?: number;
  exp?: number;
}

/** A JWT signed by the identity provider: an access token unless told otherwise. */
function mint(claims: JWTPayload, options: MintOptions = {}): Promise<string> {
  const iat = options.iat ?? now();
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', typ: options.typ ?? 'at+jwt' })
    .setIssuer(ISSUER)
    .setAudience(options.audience ?? AUDIENCE)
    .setIssuedAt(iat)
    .setExpirationTime(options.exp ?? iat + 15 * 60)
    .sign(options.key ?? provider.privateKey);
}

/** An ID token issued to the example app. */
const idToken = (claims: JWTPayload, options: MintOptions = {}) =>
  mint(claims, { typ: 'JWT', audience: CLIENT_ID, ...options });

const basic = (user: string, password: string) => ({
  Authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
});
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

const challenges = (reply: Reply) => String(reply.headers['www-authenticate'] ?? '');

/** The `name=value` pair of the session cookie a reply sets. */
function sessionCookie(reply: Reply): string {
  const line = (reply.headers['set-cookie'] ?? []).find((l) => l.startsWith('session='));
  expect(line).toBeDefined();
  return line!.split(';')[0]!;
}

afterAll(closeAll);

describe.each([
  ['Express', expressExample],
  ['Koa', koaExample],
])('examples/auth with %s', (_name, example) => {
  let app: Listening;
  let secure: Listening;

  beforeAll(async () => {
    // these suites refuse many credentials from one address: a budget that they do not spend
    const maxRefusals = 1000;
    app = await listen(
      await example.createApp({ apiKey, providerKey: provider.publicKey, maxRefusals }),
    );
    secure = await listen(
      await example.createApp({ apiKey, providerKey: provider.publicKey, tls, maxRefusals }),
    );
  });

  it('throttles refused credentials per address, on /api and /login alike', async () => {
    const small = await listen(
      await example.createApp({ apiKey, providerKey: provider.publicKey, maxRefusals: 2 }),
    );
    const login = (password: string) =>
      request(small, '/login', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ username: 'alice', password }),
      });
    expectProblem(await login('guess-1'), 401);
    expectProblem(await request(small, '/api/me', { headers: { 'X-API-Key': 'ptk_wrong' } }), 401);
    // spent: a right password and a right key are refused too until the window passes
    const right = await login('alice-password');
    expectProblem(right, 429);
    expect(Number(right.headers['retry-after'])).toBeGreaterThan(0);
    expectProblem(await request(small, '/api/me', { headers: { 'X-API-Key': apiKey } }), 429);
  });

  const get = (path: string, headers: OutgoingHttpHeaders = {}) => request(app, path, { headers });
  const post = (path: string, body: unknown, headers: OutgoingHttpHeaders = {}) =>
    request(app, path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });

  describe('authenticate([...]) over /api', () => {
    it('answers no credential with a 401 problem that offers every scheme', async () => {
      const reply = await get('/api/me');
      expectProblem(reply, 401, 'authentication-required');
      // one challenge per scheme (node's client joins the header lines with ", ")
      expect(challenges(reply)).toBe(
        'Bearer realm="api", ApiKey realm="api", header="X-API-Key", Cookie cookie-name="session", Basic realm="api", charset="UTF-8"',
      );
    });

    it('leaves paths outside /api alone and answers unknown ones with a 404 problem', async () => {
      const reply = await get('/nowhere');
      expect(reply.status).toBe(404);
      expect(reply.headers['content-type']).toBe('application/problem+json');
    });
  });

  describe('API key', () => {
    it('authenticates the key, limited to its scopes', async () => {
      const me = await get('/api/me', { 'X-API-Key': apiKey });
      expect(me.status).toBe(200);
      expect(json(me)).toEqual({ sub: 'ci-bot', scopes: ['read:messages'], method: 'api_key' });
      expect((await get('/api/messages', { 'X-API-Key': apiKey })).status).toBe(200);
    });

    it('refuses an unknown or malformed key with 401 invalid-credentials', async () => {
      // the real key with its last character changed (never to itself: a key may end in x)
      const altered = `${apiKey.slice(0, -1)}${apiKey.endsWith('x') ? 'y' : 'x'}`;
      for (const key of [generateApiKey(), altered, 'short']) {
        const reply = await get('/api/me', { 'X-API-Key': key });
        const problem = expectProblem(reply, 401, 'invalid-credentials');
        expect(challenges(reply)).toBe('ApiKey realm="api", header="X-API-Key"');
        expect(JSON.stringify(problem)).not.toContain(key);
      }
    });

    it('is a 403 on a route that needs a role the key does not have', async () => {
      expectProblem(await get('/api/admin', { 'X-API-Key': apiKey }), 403, 'forbidden-role');
    });

    it('has its own rate-limit budget, apart from each user', async () => {
      const first = await get('/api/me', { 'X-API-Key': apiKey });
      const user = await get('/api/me', bearer(await mint({ sub: 'rate-limit-test' })));
      const second = await get('/api/me', { 'X-API-Key': apiKey });
      expect(first.headers['x-ratelimit-limit']).toBe('100');
      expect(user.headers['x-ratelimit-remaining']).toBe('99');
      expect(Number(second.headers['x-ratelimit-remaining'])).toBe(
        Number(first.headers['x-ratelimit-remaining']) - 1,
      );
    });
  });

  describe('Basic', () => {
    it('authenticates a user whose password matches its scrypt hash', async () => {
      const reply = await get('/api/me', basic('alice', 'alice-password'));
      expect(reply.status).toBe(200);
      expect(json(reply)).toEqual({
        sub: 'alice',
        name: 'Alice',
        role: 'admin',
        scopes: ['read:messages', 'write:messages'],
        method: 'basic',
      });
      expect((await get('/api/admin', basic('alice', 'alice-password'))).status).toBe(200);
    });

    it('refuses a wrong password or an unknown user alike', async () => {
      for (const headers of [basic('alice', 'bob-password'), basic('mallory', 'alice-password')]) {
        const reply = await get('/api/me', headers);
        expectProblem(reply, 401, 'invalid-credentials');
        expect(challenges(reply)).toBe('Basic realm="api", charset="UTF-8"');
      }
    });

    it('is a 403 for a user without the role', async () => {
      const reply = await get('/api/admin', basic('bob', 'bob-password'));
      expect(expectProblem(reply, 403, 'forbidden-role').detail).toBe('This needs the role admin.');
    });
  });

  describe('JWT bearer', () => {
    it('authenticates an access token of the provider', async () => {
      const token = await mint({
        sub: 'alice',
        name: 'Alice',
        role: 'admin',
        scope: 'read:messages',
      });
      const reply = await get('/api/me', bearer(token));
      expect(reply.status).toBe(200);
      expect(json(reply)).toEqual({
        sub: 'alice',
        name: 'Alice',
        role: 'admin',
        scopes: ['read:messages'],
        method: 'bearer',
      });
      expect((await get('/api/messages', bearer(token))).status).toBe(200);
    });

    it('is a 403 with an insufficient_scope challenge when a scope is missing', async () => {
      const token = await mint({ sub: 'alice', scope: 'write:messages' });
      const reply = await get('/api/messages', bearer(token));
      const problem = expectProblem(reply, 403, 'insufficient-scope');
      expect(problem.requiredScopes).toEqual(['read:messages']);
      expect(challenges(reply)).toContain('error="insufficient_scope"');
      expect(challenges(reply)).toContain('scope="read:messages"');
    });

    it('tells an expired token (or one older than 15 minutes) from an invalid one', async () => {
      const expired = await mint({ sub: 'alice' }, { iat: now() - 3600, exp: now() - 60 });
      const tooOld = await mint({ sub: 'alice' }, { iat: now() - 20 * 60, exp: now() + 600 });
      for (const token of [expired, tooOld]) {
        const reply = await get('/api/me', bearer(token));
        expectProblem(reply, 401, 'credentials-expired');
        expect(challenges(reply)).toContain('error="invalid_token"');
      }
      const invalid = [
        await mint({ sub: 'alice' }, { key: stranger.privateKey }), // another key
        await mint({ sub: 'alice' }, { audience: 'https://other.example.com' }),
        await idToken({ sub: 'alice' }), // an ID token is not an access token
        'not.a.token',
      ];
      for (const token of invalid) {
        const reply = await get('/api/me', bearer(token));
        const problem = expectProblem(reply, 401, 'invalid-credentials');
        expect(challenges(reply)).toContain('error="invalid_token"');
        expect(JSON.stringify(problem)).not.toContain(token.slice(-20));
      }
    });
  });

  describe('session cookie', () => {
    it('signs in, authenticates with the cookie, signs out', async () => {
      const login = await post('/login', { username: 'bob', password: 'bob-password' });
      expect(login.status).toBe(204);
      const line = login.headers['set-cookie']!.find((l) => l.startsWith('session='))!;
      expect(line).toMatch(/; HttpOnly/);
      expect(line).toMatch(/; SameSite=Strict/);
      const cookie = sessionCookie(login);

      const me = await get('/api/me', { Cookie: cookie });
      expect(me.status).toBe(200);
      expect(json(me)).toEqual({
        sub: 'bob',
        name: 'Bob',
        role: 'user',
        scopes: ['read:messages'],
        method: 'session',
      });
      expect((await get('/api/messages', { Cookie: cookie })).status).toBe(200);
      expectProblem(await get('/api/admin', { Cookie: cookie }), 403, 'forbidden-role');

      const logout = await request(app, '/logout', { method: 'POST', headers: { Cookie: cookie } });
      expect(logout.status).toBe(204);
      expect(logout.headers['set-cookie']?.[0]).toMatch(/^session=; Max-Age=0/);
      const after = await get('/api/me', { Cookie: cookie });
      expectProblem(after, 401, 'invalid-credentials');
      expect(challenges(after)).toContain('Cookie cookie-name="session"');
      expect(after.headers['set-cookie']?.[0]).toMatch(/^session=; Max-Age=0/);
    });

    it('refuses wrong credentials with a 401 and a non-prompting challenge', async () => {
      const reply = await post('/login', { username: 'alice', password: 'wrong' });
      expectProblem(reply, 401, 'invalid-credentials');
      expect(challenges(reply)).toBe('Cookie realm="api", form-action="/login"');
      expect(reply.headers['set-cookie']).toBeUndefined();
    });

    it('refuses a sign-in or a sign-out from another site (CSRF)', async () => {
      const evil = { Origin: 'https://evil.example' };
      const login = await post('/login', { username: 'alice', password: 'alice-password' }, evil);
      expectProblem(login, 403, 'csrf-origin');
      const ok = await post(
        '/login',
        { username: 'alice', password: 'alice-password' },
        { Origin: 'http://localhost:5173' },
      );
      const cookie = sessionCookie(ok);
      const logout = await request(app, '/logout', {
        method: 'POST',
        headers: { Cookie: cookie, ...evil },
      });
      expectProblem(logout, 403, 'csrf-origin');
      expect((await get('/api/me', { Cookie: cookie })).status).toBe(200);
    });
  });

  describe('OpenID Connect ID token', () => {
    it('starts a session for the subject of a valid ID token', async () => {
      const token = await idToken({ sub: 'oidc-user-1', name: 'Olga', email: 'olga@example.com' });
      const login = await post('/login/oidc', { idToken: token });
      expect(login.status).toBe(204);
      const me = await get('/api/me', { Cookie: sessionCookie(login) });
      expect(json(me)).toEqual({
        sub: 'oidc-user-1',
        name: 'Olga',
        scopes: ['read:messages'],
        method: 'session',
      });
    });

    it('answers an expired ID token and an invalid one with different problem types', async () => {
      const expired = await idToken({ sub: 'u1' }, { iat: now() - 3600, exp: now() - 60 });
      const expiredReply = await post('/login/oidc', { idToken: expired });
      expectProblem(expiredReply, 401, 'credentials-expired');
      expect(challenges(expiredReply)).toContain('Cookie realm="api"');
      const invalid = [
        await idToken({ sub: 'u1' }, { audience: 'another-app' }),
        await idToken({ sub: 'u1' }, { key: stranger.privateKey }),
        await mint({ sub: 'u1' }), // an access token is not an ID token
        'garbage',
      ];
      for (const token of invalid) {
        expectProblem(await post('/login/oidc', { idToken: token }), 401, 'invalid-credentials');
      }
    });
  });

  describe('mutual TLS (with settings.tls)', () => {
    const call = (path: string, identity?: { cert: Buffer; key: Buffer }) =>
      request(secure, path, { tls: { ca, ...identity } });

    it('authenticates a client certificate issued by the CA, named by its CN', async () => {
      const reply = await call('/api/me', clientCert);
      expect(reply.status).toBe(200);
      expect(json(reply)).toEqual({ sub: 'alice', name: 'alice', scopes: [], method: 'mtls' });
      expectProblem(await call('/api/messages', clientCert), 403, 'insufficient-scope');
    });

    it('needs another credential without a certificate', async () => {
      const reply = await call('/api/me');
      expectProblem(reply, 401, 'authentication-required');
      expect(challenges(reply)).toContain('Bearer realm="api"');
    });

    it('refuses certificates from another CA or expired ones', async () => {
      const other = { cert: fixture('client-other-ca.pem'), key: fixture('client-other-ca.key') };
      expectProblem(await call('/api/me', other), 401, 'invalid-credentials');
      const old = { cert: fixture('client-expired.pem'), key: fixture('client-expired.key') };
      expectProblem(await call('/api/me', old), 401, 'credentials-expired');
    });

    it('marks the session cookie Secure over HTTPS', async () => {
      const login = await request(secure, '/login', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ username: 'bob', password: 'bob-password' }),
        tls: { ca },
      });
      expect(login.status).toBe(204);
      expect(login.headers['set-cookie']!.find((l) => l.startsWith('session='))).toMatch(
        /; Secure/,
      );
    });
  });
});
