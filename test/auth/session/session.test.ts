import { createHash, randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { parseSetCookie, type SetCookie } from 'cookie';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { authenticate } from '../../../src/auth/authenticate.js';
import {
  createSessions,
  type SessionOptions,
  type Sessions,
} from '../../../src/auth/session/session.js';
import {
  MemorySessionStore,
  type SessionRecord,
  type SessionStore,
} from '../../../src/auth/session/store.js';
import type { Middleware } from '../../../src/core/compose.js';
import { getPrincipal } from '../../../src/core/principal.js';
import { sendJson, sendNoContent } from '../../../src/core/send.js';
import { silentLogger } from '../../../src/diagnostics/index.js';
import { closeAll, json, type Listening, request, serve } from '../../helpers/http.js';

afterEach(closeAll);

const ORIGIN = 'https://app.example.com';
const START = Date.UTC(2030, 0, 1);
const USER = { sub: 'u-1', name: 'Alice', role: 'user', scopes: ['read:messages'] };

let clock = START;
const now = () => clock;
beforeEach(() => {
  clock = START;
});

interface Setup {
  sessions: Sessions;
  store: MemorySessionStore;
  server: Listening;
}

/**
 * `/login`, `/logout` and `/read` are public; everything else goes through
 * `authenticate([sessions.authenticator])` and answers the principal (`/rotate` first makes
 * the user an admin).
 */
async function setup(options: Partial<SessionOptions> = {}): Promise<Setup> {
  const store = new MemorySessionStore({ now });
  const sessions = createSessions({ store, now, allowedOrigins: [ORIGIN], ...options });
  const publicRoutes: Middleware = async (req, res, next) => {
    if (req.url === '/login' && req.method === 'POST') {
      res.setHeader('Set-Cookie', ['theme=dark; Path=/', 'lang=en; Path=/']);
      await sessions.signIn(req, res, USER);
      return sendNoContent(res);
    }
    if (req.url === '/logout' && req.method === 'POST') {
      res.setHeader('Set-Cookie', 'theme=; Max-Age=0; Path=/');
      await sessions.signOut(req, res);
      return sendNoContent(res);
    }
    if (req.url === '/read')
      return sendJson(res, 200, { record: (await sessions.read(req)) ?? null });
    return next();
  };
  const protectedRoutes: Middleware = async (req, res) => {
    if (req.url === '/rotate') await sessions.rotate(req, res, { role: 'admin' });
    sendJson(res, 200, getPrincipal(req));
  };
  const server = await serve(
    [publicRoutes, authenticate([sessions.authenticator]), protectedRoutes],
    {
      logger: silentLogger,
    },
  );
  return { sessions, store, server };
}

function setCookies(headers: IncomingHttpHeaders): string[] {
  return headers['set-cookie'] ?? [];
}

/** The session cookie a reply set (there must be exactly one). */
function sessionCookie(headers: IncomingHttpHeaders, name = 'session'): SetCookie {
  const mine = setCookies(headers)
    .map((line) => parseSetCookie(line))
    .filter((c) => c.name === name);
  expect(mine).toHaveLength(1);
  return mine[0]!;
}

async function signIn(server: Listening, headers: Record<string, string> = {}): Promise<string> {
  const reply = await request(server, '/login', { method: 'POST', headers });
  expect(reply.status).toBe(204);
  return sessionCookie(reply.headers).value!;
}

const withCookie = (id: string, extra: Record<string, string> = {}) => ({
  headers: { Cookie: `session=${id}`, ...extra },
});
const hash = (id: string) => createHash('sha256').update(id).digest('base64url');

describe('sign-in', () => {
  it('sets exactly HttpOnly, Secure, SameSite=Strict, Path=/ and Max-Age = the absolute timeout', async () => {
    const { server } = await setup();
    const reply = await request(server, '/login', { method: 'POST' });
    expect(reply.status).toBe(204);
    const cookie = sessionCookie(reply.headers);
    expect(cookie).toEqual({
      name: 'session',
      value: cookie.value,
      httpOnly: true,
      secure: true,
      sameSite: 'strict',
      path: '/',
      maxAge: 43_200,
    });
    const line = setCookies(reply.headers).find((l) => l.startsWith('session='))!;
    expect(line).toBe(
      `session=${cookie.value}; Max-Age=43200; Path=/; HttpOnly; Secure; SameSite=Strict`,
    );
  });

  it('mints ids of 256 random bits, different at every sign-in', async () => {
    const { server } = await setup();
    const ids = new Set<string>();
    for (let i = 0; i < 5; i++) ids.add(await signIn(server));
    expect(ids.size).toBe(5);
    for (const id of ids) {
      expect(id).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(Buffer.from(id, 'base64url')).toHaveLength(32);
    }
  });

  it('keeps only the SHA-256 of the id in the store', async () => {
    const { server, store } = await setup();
    const id = await signIn(server);
    expect(store.keys()).toEqual([hash(id)]);
    const record = store.get(hash(id))!;
    expect(JSON.stringify(record)).not.toContain(id);
    expect(record).toMatchObject({
      sub: 'u-1',
      name: 'Alice',
      role: 'user',
      expiresAt: START + 43_200_000,
    });
  });

  it('keeps the Set-Cookie headers already on the response', async () => {
    const { server } = await setup();
    const reply = await request(server, '/login', { method: 'POST' });
    const names = setCookies(reply.headers).map((l) => parseSetCookie(l).name);
    expect(names).toEqual(['theme', 'lang', 'session']);
  });

  it('never reuses an id the request carried (no session fixation)', async () => {
    const { server, store } = await setup();
    const planted = randomBytes(32).toString('base64url');
    const fresh = await signIn(server, { Cookie: `session=${planted}` });
    expect(fresh).not.toBe(planted);
    expect(store.keys()).toEqual([hash(fresh)]);
    expect((await request(server, '/me', withCookie(planted))).status).toBe(401);

    // An attacker's own live session planted in a victim's browser is deleted at sign-in.
    const attackers = await signIn(server);
    const victims = await signIn(server, { Cookie: `session=${attackers}` });
    expect(victims).not.toBe(attackers);
    expect((await request(server, '/me', withCookie(attackers))).status).toBe(401);
    expect((await request(server, '/me', withCookie(victims))).status).toBe(200);
  });

  it('refuses a sign-in posted from a foreign origin (login CSRF)', async () => {
    const { server, store } = await setup();
    const reply = await request(server, '/login', {
      method: 'POST',
      headers: { Origin: 'https://evil.example' },
    });
    expect(reply.status).toBe(403);
    expect(setCookies(reply.headers).some((l) => l.startsWith('session='))).toBe(false);
    expect(store.size).toBe(0);
  });
});

describe('the authenticator', () => {
  it('authenticates the cookie as a session principal', async () => {
    const { server } = await setup();
    const id = await signIn(server);
    const reply = await request(server, '/me', withCookie(id));
    expect(reply.status).toBe(200);
    expect(json(reply)).toEqual({
      sub: 'u-1',
      name: 'Alice',
      role: 'user',
      scopes: ['read:messages'],
      method: 'session',
      // a stream opened with the session watches it (signed out: ended) and ends at its end
      credentialIds: [`session:${createHash('sha256').update(id).digest('base64url')}`],
      expiresAt: expect.any(Number),
    });
    expect(reply.headers['set-cookie']).toBeUndefined();
  });

  it('finds the cookie among others', async () => {
    const { server } = await setup();
    const id = await signIn(server);
    const reply = await request(server, '/me', { headers: { Cookie: `a=1; session=${id}; b=2` } });
    expect(json(reply).sub).toBe('u-1');
  });

  it('lets a request without the cookie go on unauthenticated', async () => {
    const { server } = await setup();
    const reply = await request(server, '/me', { headers: { Cookie: 'theme=dark' } });
    expect(reply.status).toBe(401);
    expect(json(reply)).toMatchObject({ type: 'urn:portico:problem:authentication-required' });
    expect(reply.headers['set-cookie']).toBeUndefined();
  });

  it.each([
    ['a short id', 'session=abc'],
    ['an empty value', 'session='],
    ['a bad percent escape', 'session=%E0%A4%A'],
    ['a quoted value', 'session="AAAA"'],
    ['an id with a character out of base64url', `session=${'A'.repeat(42)}!`],
    ['an oversized value', `session=${'A'.repeat(10_000)}`],
    ['an unknown id of the right shape', `session=${randomBytes(32).toString('base64url')}`],
  ])('answers %s with a 401 that clears the cookie, never a 500', async (_, cookieHeader) => {
    const { server } = await setup();
    await signIn(server);
    const reply = await request(server, '/me', { headers: { Cookie: cookieHeader } });
    expect(reply.status).toBe(401);
    expect(json(reply)).toMatchObject({
      type: 'urn:portico:problem:invalid-credentials',
      status: 401,
    });
    expect(reply.body).not.toContain(cookieHeader.slice(8, 40) || '\u0000');
    const cleared = sessionCookie(reply.headers);
    expect(cleared).toMatchObject({
      value: '',
      maxAge: 0,
      path: '/',
      httpOnly: true,
      secure: true,
    });
  });

  it('answers a tampered id (one character changed) with a 401', async () => {
    const { server } = await setup();
    const id = await signIn(server);
    const tampered = (id[0] === 'A' ? 'B' : 'A') + id.slice(1);
    const reply = await request(server, '/me', withCookie(tampered));
    expect(reply.status).toBe(401);
    expect(reply.body).not.toContain(tampered);
  });

  it('survives a Cookie header of garbage', async () => {
    const { server } = await setup();
    for (const header of [';;;==;', '=', 'session', '\t; ;session ; =x']) {
      const reply = await request(server, '/me', { headers: { Cookie: header } });
      expect(reply.status).toBe(401);
    }
  });
});

describe('expiry', () => {
  it('ends a session idle for the idle timeout, and activity keeps it alive', async () => {
    const { server, store } = await setup();
    const id = await signIn(server);
    clock += 1_799_000;
    expect((await request(server, '/me', withCookie(id))).status).toBe(200);
    expect(store.get(hash(id))?.lastSeenAt).toBe(clock);
    clock += 1_799_000;
    expect((await request(server, '/me', withCookie(id))).status).toBe(200);
    clock += 1_800_000;
    const reply = await request(server, '/me', withCookie(id));
    expect(reply.status).toBe(401);
    expect(json(reply).type).toBe('urn:portico:problem:credentials-expired');
    expect(sessionCookie(reply.headers).maxAge).toBe(0);
    expect(store.size).toBe(0);
  });

  it('ends an active session at the absolute timeout', async () => {
    const { server } = await setup();
    const id = await signIn(server);
    for (let i = 0; i < 43; i++) {
      clock += 1_000_000;
      expect((await request(server, '/me', withCookie(id))).status).toBe(200);
    }
    clock += 200_000; // 43 200 s after sign-in
    const reply = await request(server, '/me', withCookie(id));
    expect(reply.status).toBe(401);
    expect(json(reply).type).toBe('urn:portico:problem:credentials-expired');
  });

  it('honours shorter timeouts and a store without touch()', async () => {
    const memory = new MemorySessionStore({ now });
    const calls: string[] = [];
    const store: SessionStore = {
      get: (h) => memory.get(h),
      set(h, record: SessionRecord, ttl) {
        calls.push(`set ${ttl}`);
        memory.set(h, record, ttl);
      },
      delete: (h) => memory.delete(h),
    };
    const { server } = await setup({ store, idleTimeout: 60_000, absoluteTimeout: 100_000 });
    const id = await signIn(server);
    expect(calls).toEqual(['set 120000']); // 60 s idle + 60 s remembered as expired
    clock += 50_000;
    expect((await request(server, '/me', withCookie(id))).status).toBe(200);
    expect(calls).toEqual(['set 120000', 'set 110000']); // capped by the absolute expiry
    clock += 50_000;
    const reply = await request(server, '/me', withCookie(id));
    expect(json(reply)).toMatchObject({
      status: 401,
      type: 'urn:portico:problem:credentials-expired',
    });
    clock += 3_600_000; // long forgotten: an unknown session
    expect(json(await request(server, '/me', withCookie(id))).type).toBe(
      'urn:portico:problem:invalid-credentials',
    );
  });
});

describe('rotate and sign-out', () => {
  it('rotate moves the session to a new id; the old one stops working', async () => {
    const { server, store } = await setup();
    const id = await signIn(server);
    const reply = await request(server, '/rotate', withCookie(id, { Origin: ORIGIN }));
    expect(reply.status).toBe(200);
    const next = sessionCookie(reply.headers);
    expect(next.value).not.toBe(id);
    expect(next).toMatchObject({ httpOnly: true, secure: true, sameSite: 'strict', path: '/' });
    expect(store.keys()).toEqual([hash(next.value!)]);
    expect((await request(server, '/me', withCookie(id))).status).toBe(401);
    const me = await request(server, '/me', withCookie(next.value!));
    expect(json(me)).toMatchObject({ sub: 'u-1', role: 'admin' });
  });

  it('sign-out deletes the session server-side and clears the cookie', async () => {
    const { server, store } = await setup();
    const id = await signIn(server);
    const reply = await request(server, '/logout', {
      method: 'POST',
      ...withCookie(id, { Origin: ORIGIN }),
    });
    expect(reply.status).toBe(204);
    expect(store.size).toBe(0);
    const line = setCookies(reply.headers).find((l) => l.startsWith('session='));
    expect(line).toBe('session=; Max-Age=0; Path=/; HttpOnly; Secure; SameSite=Strict');
    expect(setCookies(reply.headers)[0]).toBe('theme=; Max-Age=0; Path=/');
    expect((await request(server, '/me', withCookie(id))).status).toBe(401);
  });

  it('read() answers the live record and nothing for a bad cookie', async () => {
    const { server } = await setup();
    const id = await signIn(server);
    const good = json<{ record: SessionRecord }>(await request(server, '/read', withCookie(id)));
    expect(good.record).toMatchObject({ sub: 'u-1', createdAt: START, lastSeenAt: START });
    const bad = await request(server, '/read', withCookie('nope'));
    expect(bad.status).toBe(200);
    expect(json(bad).record).toBeNull();
  });
});

describe('CSRF guard', () => {
  const post = (server: Listening, id: string, headers: Record<string, string>) =>
    request(server, '/me', { method: 'POST', ...withCookie(id, headers) });

  it('refuses a state-changing request from an origin not allowed', async () => {
    const { server } = await setup();
    const id = await signIn(server);
    const reply = await post(server, id, { Origin: 'https://evil.example' });
    expect(reply.status).toBe(403);
    expect(json(reply)).toMatchObject({ type: 'urn:portico:problem:csrf-origin', status: 403 });
    expect(reply.body).not.toContain(id);
    expect(reply.body).not.toContain('evil');
  });

  it('refuses Origin: null and a look-alike origin', async () => {
    const { server } = await setup();
    const id = await signIn(server);
    expect((await post(server, id, { Origin: 'null' })).status).toBe(403);
    for (const site of ['cross-site', 'same-site', 'none']) {
      expect((await post(server, id, { Origin: 'null', 'Sec-Fetch-Site': site })).status).toBe(403);
    }
    expect((await post(server, id, { Origin: `${ORIGIN}.evil.net` })).status).toBe(403);
    expect((await post(server, id, { Origin: ORIGIN.toUpperCase() })).status).toBe(403);
  });

  it('refuses Sec-Fetch-Site: cross-site without Origin', async () => {
    const { server } = await setup();
    const id = await signIn(server);
    expect((await post(server, id, { 'Sec-Fetch-Site': 'cross-site' })).status).toBe(403);
    expect((await post(server, id, { 'Sec-Fetch-Site': 'same-origin' })).status).toBe(200);
  });

  it('lets a form of its own origin through under Referrer-Policy: no-referrer', async () => {
    // Chromium sends `Origin: null` for a form POST from a page with that policy
    const { server } = await setup();
    const id = await signIn(server);
    const headers = { Origin: 'null', 'Sec-Fetch-Site': 'same-origin' };
    expect((await post(server, id, headers)).status).toBe(200);
  });

  it('lets an allowed origin, and a request with neither header, through', async () => {
    const { server } = await setup();
    const id = await signIn(server);
    expect((await post(server, id, { Origin: ORIGIN })).status).toBe(200);
    expect((await post(server, id, {})).status).toBe(200);
    const del = await request(server, '/me', {
      method: 'DELETE',
      ...withCookie(id, { Origin: ORIGIN }),
    });
    expect(del.status).toBe(200);
  });

  it('does not guard safe methods', async () => {
    const { server } = await setup();
    const id = await signIn(server);
    for (const method of ['GET', 'HEAD']) {
      const reply = await request(server, '/me', {
        method,
        ...withCookie(id, { Origin: 'https://evil.example' }),
      });
      expect(reply.status).toBe(200);
    }
  });

  it('does not extend a session on a refused request', async () => {
    const { server, store } = await setup();
    const id = await signIn(server);
    clock += 60_000;
    expect((await post(server, id, { Origin: 'https://evil.example' })).status).toBe(403);
    expect(store.get(hash(id))?.lastSeenAt).toBe(START);
  });
});

describe('options', () => {
  const base = { allowedOrigins: [ORIGIN] };

  it('supports a __Host- cookie name', async () => {
    const { server } = await setup({ cookieName: '__Host-session' });
    const reply = await request(server, '/login', { method: 'POST' });
    const cookie = sessionCookie(reply.headers, '__Host-session');
    expect(cookie).toMatchObject({ secure: true, path: '/' });
    expect(cookie.domain).toBeUndefined();
    const me = await request(server, '/me', {
      headers: { Cookie: `__Host-session=${cookie.value}` },
    });
    expect(me.status).toBe(200);
  });

  it('writes the attributes it is given', async () => {
    const { server } = await setup({
      cookie: { secure: false, sameSite: 'lax', path: '/app', domain: 'example.com' },
    });
    const reply = await request(server, '/login', { method: 'POST' });
    const cookie = sessionCookie(reply.headers);
    expect(cookie).toMatchObject({
      path: '/app',
      domain: 'example.com',
      sameSite: 'lax',
      httpOnly: true,
    });
    expect(cookie.secure).toBeUndefined();
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ['a typo', { ...base, idleTimout: 10_000 }, /Did you mean `idleTimeout`/],
    ['no allowedOrigins', {}, /allowedOrigins` is required/],
    ["'*'", { allowedOrigins: '*' }, /'\*' and 'null'/],
    ["'null'", { allowedOrigins: ['null'] }, /'\*' and 'null'/],
    ['an origin with a path', { allowedOrigins: ['https://a.example/'] }, /Did you mean/],
    ['httpOnly', { ...base, cookie: { httpOnly: false } }, /always on/],
    ['SameSite=None over HTTP', { ...base, cookie: { sameSite: 'none', secure: false } }, /secure/],
    [
      '__Host- without Secure',
      { ...base, cookieName: '__Host-s', cookie: { secure: false } },
      /secure/,
    ],
    ['__Host- with a path', { ...base, cookieName: '__Host-s', cookie: { path: '/a' } }, /__Host-/],
    ['a bad cookie name', { ...base, cookieName: 'a b;c' }, /not valid in a cookie/],
    [
      'a fractional timeout',
      { ...base, idleTimeout: 1_000.5 },
      /`idleTimeout` must be milliseconds/,
    ],
    ['a timeout under a second', { ...base, absoluteTimeout: 999 }, /at least 1000/],
    [
      'idle above absolute',
      { ...base, idleTimeout: 100_000, absoluteTimeout: 10_000 },
      /must not exceed/,
    ],
  ])('refuses %s', (_, options, message) => {
    expect(() => createSessions(options as unknown as SessionOptions)).toThrow(message);
  });
});
