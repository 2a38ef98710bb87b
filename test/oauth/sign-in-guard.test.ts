// Password guessing at the sign-in forms of /authorize and /device/verify, with a credential
// guard given to createAuthorizationServer: once the client's refusals are spent, a 429 page
// answers before users.verify (the password hash) runs, a right password included, and the
// budget is one across the forms (and whatever else the guard is given to).
import type { RequestListener } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { toNodeListener } from '../../src/adapters/node.js';
import { createCredentialGuard } from '../../src/auth/credential-guard.js';
import { createSessions } from '../../src/auth/session/session.js';
import { createRouter } from '../../src/http/routing/router.js';
import { defineClient } from '../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../src/oauth/clients/store.js';
import { createAuthorizationServer } from '../../src/oauth/server.js';
import { createKeySet } from '../../src/oauth/tokens/key-set.js';
import type { RateLimitStore } from '../../src/rate-limit/store.js';
import { hiddenInputs, sessionCookie } from '../helpers/browser.js';
import { closeAll, type Listening, listen, type Reply, request } from '../helpers/http.js';
import { pkce } from './token-fixtures.js';

const WEB = 'https://app.example.com/cb';
const LIMIT = 3;

afterAll(closeAll);

/** An authorization server with a guard of LIMIT refusals, counting users.verify calls. */
async function start(store?: RateLimitStore) {
  let listener: RequestListener = (_req, res) => res.end();
  const app = await listen((req, res) => listener(req, res));
  const calls = { verify: 0 };
  const server = createAuthorizationServer({
    issuer: app.url,
    clients: new MemoryClientStore([
      await defineClient({
        clientId: 'web',
        secret: 'web-secret-123',
        grantTypes: ['authorization_code'],
        redirectUris: [WEB],
        scopes: ['openid'],
      }),
    ]),
    keys: await createKeySet(),
    users: {
      verify(username, password) {
        calls.verify++; // the 32 MiB scrypt of a real app
        return username === 'alice' && password === 'alice-password' ? { sub: 'alice' } : undefined;
      },
      get: (sub) => ({ sub }),
    },
    sessions: createSessions({ allowedOrigins: [app.url], cookie: { secure: false } }),
    guard: createCredentialGuard({ limit: LIMIT, windowMs: 60_000, store }),
  });
  listener = toNodeListener([createRouter(server.routes)]);
  return { app, calls };
}

const authorizePath = () =>
  `/authorize?${new URLSearchParams({
    response_type: 'code',
    client_id: 'web',
    redirect_uri: WEB,
    state: 's',
    code_challenge: pkce().challenge,
    code_challenge_method: 'S256',
  })}`;

/** Opens the sign-in form at `path` and posts `password` for alice with it. */
async function signIn(app: Listening, path: string, password: string): Promise<Reply> {
  const form = await request(app, path);
  expect(form.body).toContain('name="password"');
  return request(app, path.split('?')[0]!, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams([
      ...hiddenInputs(form.body),
      ['username', 'alice'],
      ['password', password],
    ]).toString(),
  });
}

function expectThrottledPage(reply: Reply) {
  expect(reply.status).toBe(429);
  expect(Number(reply.headers['retry-after'])).toBeGreaterThan(0);
  expect(Number(reply.headers['retry-after'])).toBeLessThanOrEqual(60);
  expect(reply.headers['cache-control']).toBe('no-store');
  expect(reply.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(reply.headers['content-security-policy']).toContain("default-src 'none'");
  expect(reply.body).toContain('<h1>Too many attempts</h1>');
  expect(reply.body).toMatch(/Try again in/);
  expect(reply.body).not.toContain('name="password"');
  expect(sessionCookie(reply.headers)).toBeUndefined();
}

describe('the sign-in forms with a credential guard', () => {
  for (const [form, path] of [
    ['/authorize', authorizePath],
    ['/device/verify', () => '/device/verify'],
  ] as const) {
    it(`${form}: after ${LIMIT} wrong passwords, a 429 page and no password checked, a right one included`, async () => {
      const { app, calls } = await start();
      for (let i = 0; i < LIMIT; i++) {
        const wrong = await signIn(app, path(), `guess-${i}`);
        expect(wrong.status).toBe(401);
        expect(wrong.body).toContain('name="password"');
      }
      expect(calls.verify).toBe(LIMIT);
      expectThrottledPage(await signIn(app, path(), 'another-guess'));
      expectThrottledPage(await signIn(app, path(), 'alice-password'));
      expect(calls.verify).toBe(LIMIT);
    });
  }

  it('makes one budget of both forms: guesses at /authorize lock /device/verify', async () => {
    const { app, calls } = await start();
    for (let i = 0; i < LIMIT; i++) {
      expect((await signIn(app, authorizePath(), `guess-${i}`)).status).toBe(401);
    }
    expectThrottledPage(await signIn(app, '/device/verify', 'alice-password'));
    expect(calls.verify).toBe(LIMIT);
  });

  it('lets a right password in before the budget is spent', async () => {
    const { app } = await start();
    expect((await signIn(app, authorizePath(), 'guess')).status).toBe(401);
    const consent = await signIn(app, authorizePath(), 'alice-password');
    expect(consent.status).toBe(200);
    expect(consent.body).toContain('name="decision" value="approve"');
  });

  it('fails closed with a 503 page while the guard cannot count, checking no password', async () => {
    const down = () => Promise.reject(new Error('ECONNREFUSED'));
    const { app, calls } = await start({ increment: down, peek: down });
    for (const path of [authorizePath(), '/device/verify']) {
      const reply = await signIn(app, path, 'alice-password');
      expect(reply.status).toBe(503);
      expect(reply.headers['retry-after']).toMatch(/^\d+$/);
      expect(reply.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(reply.body).not.toContain('ECONNREFUSED');
      expect(sessionCookie(reply.headers)).toBeUndefined();
    }
    expect(calls.verify).toBe(0);
  });
});
