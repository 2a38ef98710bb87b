// What an attacker or a caller can observe of createSessions() beyond session.test.ts: the
// CSRF problem, option messages, the cookie lines a response ends with, the session of the
// request at hand (signed in, touched, signed out in the same request), corrupt store
// records, touch throttling, revocation at sign-out, rotation's updates and the memory
// store's bounds. Requests and responses are node's own objects without a socket
// (test/helpers/fake-http.ts); the clock is injected.
import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { parseSetCookie } from 'cookie';
import { beforeEach, describe, expect, it } from 'vitest';
import { createRevocations } from '../../../src/auth/revocations.js';
import { createOriginGuard } from '../../../src/auth/session/csrf.js';
import {
  createSessions,
  type SessionOptions,
  type Sessions,
  type SessionUser,
} from '../../../src/auth/session/session.js';
import {
  MemorySessionStore,
  type SessionRecord,
  type SessionStore,
} from '../../../src/auth/session/store.js';
import { HttpError } from '../../../src/core/errors/errors.js';
import { fakeRequest, fakeResponse } from '../../helpers/fake-http.js';

const ORIGIN = 'https://app.example.com';
const EVIL = 'https://evil.example';
const START = Date.UTC(2030, 0, 1);
const USER: SessionUser = { sub: 'u-1', name: 'Alice', role: 'user', scopes: ['read:messages'] };

let clock = START;
const now = () => clock;
beforeEach(() => {
  clock = START;
});

const hash = (id: string) => createHash('sha256').update(id).digest('base64url');

function setCookieLines(res: ServerResponse): string[] {
  const value = res.getHeader('Set-Cookie');
  return value === undefined ? [] : Array.isArray(value) ? value.map(String) : [String(value)];
}

/** The session lines (`session=…`) a response carries. */
const sessionLines = (res: ServerResponse, name = 'session') =>
  setCookieLines(res).filter((line) => parseSetCookie(line).name === name);

function setup(options: Partial<SessionOptions> = {}) {
  const store = new MemorySessionStore({ now });
  const sessions = createSessions({ store, now, allowedOrigins: [ORIGIN], ...options });
  return { sessions, store };
}

/** Signs `user` in on a fresh POST and answers the id its cookie carries. */
async function signIn(sessions: Sessions, user: SessionUser = USER): Promise<string> {
  const req = fakeRequest({ method: 'POST', headers: { Origin: ORIGIN } });
  const { res } = fakeResponse(req);
  await sessions.signIn(req, res, user);
  const lines = sessionLines(res);
  expect(lines).toHaveLength(1);
  return parseSetCookie(lines[0]!).value!;
}

/** A request carrying the session cookie `id`. */
const withId = (id: string, method = 'GET', extra: Record<string, string> = {}) =>
  fakeRequest({ method, headers: { Cookie: `session=${id}`, Origin: ORIGIN, ...extra } });

/** The error a promise rejects with (fails the test when it resolves). */
async function rejection(promise: Promise<unknown> | unknown): Promise<HttpError> {
  try {
    await promise;
  } catch (error) {
    return error as HttpError;
  }
  throw new Error('expected a rejection');
}

describe('the CSRF problem', () => {
  it('is a 403 with its own code, title and detail, never naming the origin', async () => {
    const guard = createOriginGuard('test', [ORIGIN]);
    const error = await rejection(
      guard(fakeRequest({ method: 'POST', headers: { Origin: EVIL } })),
    );
    expect(error).toBeInstanceOf(HttpError);
    expect(error).toMatchObject({
      status: 403,
      code: 'ERR_CSRF_ORIGIN',
      type: 'urn:portico:problem:csrf-origin',
      title: 'Cross-site request refused',
      detail: 'This request comes from a page that may not use the session.',
    });
  });

  it('treats a request without a method as GET (a safe method)', async () => {
    const guard = createOriginGuard('test', [ORIGIN]);
    const req = fakeRequest({ headers: { Origin: EVIL, 'Sec-Fetch-Site': 'cross-site' } });
    req.method = undefined;
    await expect(guard(req)).resolves.toBeUndefined();
    // the control: the same request as a POST is refused
    req.method = 'POST';
    await expect(guard(req)).rejects.toMatchObject({ status: 403 });
  });
});

describe('the authenticator', () => {
  it('names the Session scheme, reads the Cookie header and challenges with the cookie name', () => {
    const { sessions } = setup({ cookieName: 'sid' });
    expect(sessions.authenticator.scheme).toBe('Session');
    expect(sessions.authenticator.headers).toEqual(['Cookie']);
    expect(sessions.authenticator.challenge).toBe('Cookie cookie-name="sid"');
  });

  it('gives a user without name or role a principal without those members', async () => {
    const { sessions } = setup();
    const id = await signIn(sessions, { sub: 'u-2', scopes: [] });
    const principal = await sessions.authenticator.authenticate(withId(id));
    expect(principal).toBeDefined();
    expect(Object.keys(principal!).sort()).toEqual(
      ['credentialIds', 'expiresAt', 'method', 'scopes', 'sub'].sort(),
    );
  });

  it('lets a request without any Cookie header go on unauthenticated', async () => {
    const { sessions } = setup();
    await signIn(sessions);
    const req = fakeRequest({ method: 'POST', headers: { Origin: ORIGIN } });
    expect(req.headers.cookie).toBeUndefined();
    await expect(sessions.authenticator.authenticate(req)).resolves.toBeUndefined();
    await expect(sessions.read(req)).resolves.toBeUndefined();
  });

  it('answers a hand-built request whose Cookie header is not a string with a 401, never a 500', async () => {
    const { sessions } = setup();
    await signIn(sessions);
    const req = fakeRequest({ headers: { Origin: ORIGIN } });
    req.headers.cookie = 42 as unknown as string;
    const error = await rejection(sessions.authenticator.authenticate(req));
    expect(error).toBeInstanceOf(HttpError);
    expect(error).toMatchObject({ status: 401, code: 'ERR_AUTH_INVALID' });
  });

  it('explains an expired and an invalid session in the problem, and clears the cookie', async () => {
    const { sessions } = setup({ idleTimeout: 60_000 });
    const id = await signIn(sessions);
    const invalid = await rejection(
      sessions.authenticator.authenticate(withId(`${'A'.repeat(42)}!`)),
    );
    expect(invalid).toMatchObject({
      status: 401,
      code: 'ERR_AUTH_INVALID',
      type: 'urn:portico:problem:invalid-credentials',
      title: 'Invalid credentials',
      detail: 'The session is not valid; sign in again.',
      headers: { 'Set-Cookie': 'session=; Max-Age=0; Path=/; HttpOnly; Secure; SameSite=Strict' },
    });
    clock += 60_000;
    const expired = await rejection(sessions.authenticator.authenticate(withId(id)));
    expect(expired).toMatchObject({
      status: 401,
      code: 'ERR_AUTH_EXPIRED',
      type: 'urn:portico:problem:credentials-expired',
      title: 'Credentials expired',
      detail: 'The session has expired; sign in again.',
      headers: { 'Set-Cookie': 'session=; Max-Age=0; Path=/; HttpOnly; Secure; SameSite=Strict' },
    });
  });
});

describe('records a store answers', () => {
  /** A store answering `record` for every hash. */
  const corrupt = (record: unknown): SessionStore => ({
    get: () => record as SessionRecord,
    set: () => {},
    delete: () => {},
  });
  const fine = {
    sub: 'u-1',
    scopes: ['a'],
    createdAt: START,
    lastSeenAt: START,
    expiresAt: START + 60_000,
  };

  it.each<[string, unknown]>([
    ['a sub that is not a string', { ...fine, sub: 42 }],
    ['scopes that are a string', { ...fine, scopes: 'admin' }],
    ['no scopes', { ...fine, scopes: undefined }],
    ['no lastSeenAt', { ...fine, lastSeenAt: undefined }],
    ['no expiresAt', { ...fine, expiresAt: 'never' }],
    ['null', null],
  ])(
    'refuses a record with %s as an invalid session (401), never a principal',
    async (_, record) => {
      const id = 'A'.repeat(43);
      const control = createSessions({ allowedOrigins: [ORIGIN], now, store: corrupt(fine) });
      await expect(control.authenticator.authenticate(withId(id))).resolves.toMatchObject({
        sub: 'u-1',
        scopes: ['a'],
      });
      const sessions = createSessions({ allowedOrigins: [ORIGIN], now, store: corrupt(record) });
      const error = await rejection(sessions.authenticator.authenticate(withId(id)));
      expect(error).toBeInstanceOf(HttpError);
      expect(error).toMatchObject({ status: 401, code: 'ERR_AUTH_INVALID' });
      await expect(sessions.read(withId(id))).resolves.toBeUndefined();
    },
  );
});

describe('touch', () => {
  /** A memory store that records the calls made to it. */
  function recording(withTouch: boolean) {
    const memory = new MemorySessionStore({ now });
    const calls: string[] = [];
    const store: SessionStore = {
      get: (h) => memory.get(h),
      set(h, record, ttl) {
        calls.push(`set ${record.lastSeenAt - START} ${ttl}`);
        memory.set(h, record, ttl);
      },
      delete(h) {
        calls.push('delete');
        memory.delete(h);
      },
    };
    if (withTouch) {
      store.touch = (h, lastSeenAt, ttl) => {
        calls.push(`touch ${lastSeenAt - START} ${ttl}`);
        memory.touch(h, lastSeenAt, ttl);
      };
    }
    return { memory, calls, store };
  }

  it('writes nothing when the clock has not moved since the last use, nor when it went back', async () => {
    const { memory, calls, store } = recording(true);
    const { sessions } = setup({ store, idleTimeout: 60_000 });
    const id = await signIn(sessions);
    expect(calls).toEqual(['set 0 120000']);
    expect(await sessions.authenticator.authenticate(withId(id))).toMatchObject({ sub: 'u-1' });
    expect(calls).toEqual(['set 0 120000']); // same millisecond: not written
    clock += 1_000;
    await sessions.authenticator.authenticate(withId(id));
    expect(calls).toEqual(['set 0 120000', 'touch 1000 120000']);
    clock -= 500; // a clock stepped back never moves lastSeenAt back
    await sessions.authenticator.authenticate(withId(id));
    expect(calls).toHaveLength(2);
    expect(memory.get(hash(id))?.lastSeenAt).toBe(START + 1_000);
  });

  it('uses the store’s touch() when it has one, never rewriting the record', async () => {
    const { calls, store } = recording(true);
    const { sessions } = setup({ store });
    const id = await signIn(sessions);
    clock += 5_000;
    await sessions.authenticator.authenticate(withId(id));
    expect(calls.slice(1)).toEqual(['touch 5000 3600000']);
  });
});

describe('the session of the request at hand', () => {
  it('is the one just signed in: read() and the authenticator see it at once', async () => {
    const { sessions } = setup();
    const req = fakeRequest({ method: 'POST', headers: { Origin: ORIGIN } });
    const { res } = fakeResponse(req);
    await sessions.signIn(req, res, USER);
    expect(await sessions.read(req)).toMatchObject({ sub: 'u-1', createdAt: START });
    expect(await sessions.authenticator.authenticate(req)).toMatchObject({ sub: 'u-1' });
  });

  it('is gone once signed out, even after it authenticated the request', async () => {
    const revocations = createRevocations();
    const { sessions, store } = setup({ revocations });
    const id = await signIn(sessions);
    const ended: string[] = [];
    revocations.watch([`session:${hash(id)}`], (credential) => ended.push(credential));

    const req = withId(id, 'POST');
    const { res } = fakeResponse(req);
    expect(await sessions.authenticator.authenticate(req)).toMatchObject({ sub: 'u-1' });
    await sessions.signOut(req, res);
    expect(store.size).toBe(0);
    expect(ended).toEqual([`session:${hash(id)}`]);
    expect(await sessions.read(req)).toBeUndefined();
    await expect(sessions.authenticator.authenticate(req)).resolves.toBeUndefined();
    expect(await sessions.read(withId(id))).toBeUndefined();
  });

  it('is gone once signed out, for a request that only carried the cookie', async () => {
    const { sessions } = setup();
    const id = await signIn(sessions);
    const req = withId(id, 'POST');
    const { res } = fakeResponse(req);
    await sessions.signOut(req, res);
    // no 401 for the cookie the request still carries: it has no session now
    await expect(sessions.authenticator.authenticate(req)).resolves.toBeUndefined();
    expect(await sessions.read(req)).toBeUndefined();
  });

  it('may sign out twice, then sign in anew, in one request', async () => {
    const { sessions, store } = setup();
    const id = await signIn(sessions);
    const req = withId(id, 'POST');
    const { res } = fakeResponse(req);
    await sessions.signOut(req, res);
    await sessions.signOut(req, res);
    expect(sessionLines(res)).toEqual([
      'session=; Max-Age=0; Path=/; HttpOnly; Secure; SameSite=Strict',
    ]);
    await sessions.signIn(req, res, { sub: 'u-9', scopes: [] });
    expect(store.size).toBe(1);
    expect(await sessions.read(req)).toMatchObject({ sub: 'u-9' });
  });

  it('signed in then signed out in one request leaves no session behind', async () => {
    const { sessions, store } = setup();
    const req = fakeRequest({ method: 'POST', headers: { Origin: ORIGIN } });
    const { res } = fakeResponse(req);
    await sessions.signIn(req, res, USER);
    expect(store.size).toBe(1);
    await sessions.signOut(req, res);
    expect(store.size).toBe(0);
    // one line for the cookie: the clearing one replaced the one sign-in set
    expect(sessionLines(res)).toEqual([
      'session=; Max-Age=0; Path=/; HttpOnly; Secure; SameSite=Strict',
    ]);
  });

  it('a sign-out without a session deletes nothing and announces nothing', async () => {
    const revocations = createRevocations();
    const heard: string[] = [];
    revocations.listen((credential) => heard.push(credential));
    const memory = new MemorySessionStore({ now });
    const deleted: unknown[] = [];
    const store: SessionStore = {
      get: (h) => memory.get(h),
      set: (h, r, ttl) => memory.set(h, r, ttl),
      delete(h) {
        deleted.push(h);
        memory.delete(h);
      },
    };
    const { sessions } = setup({ store, revocations });
    for (const cookie of [undefined, 'session=nope']) {
      const req = fakeRequest({
        method: 'POST',
        headers: cookie === undefined ? { Origin: ORIGIN } : { Origin: ORIGIN, Cookie: cookie },
      });
      await sessions.signOut(req, fakeResponse(req).res);
    }
    expect(deleted).toEqual([]);
    expect(heard).toEqual([]);
    // the control: a real session is deleted and announced
    const id = await signIn(sessions);
    const req = withId(id, 'POST');
    await sessions.signOut(req, fakeResponse(req).res);
    expect(deleted).toEqual([hash(id)]);
    expect(heard).toEqual([`session:${hash(id)}`]);
  });
});

describe('the Set-Cookie lines', () => {
  it('a session cookie set twice in one response appears once, the last one', async () => {
    const { sessions } = setup();
    const req = fakeRequest({ method: 'POST', headers: { Origin: ORIGIN } });
    const { res } = fakeResponse(req);
    res.setHeader('Set-Cookie', 'theme=dark; Path=/');
    await sessions.signIn(req, res, USER);
    await sessions.rotate(req, res, { role: 'admin' });
    const lines = sessionLines(res);
    expect(lines).toHaveLength(1);
    const id = parseSetCookie(lines[0]!).value!;
    expect(await sessions.read(withId(id))).toMatchObject({ role: 'admin' });
    expect(setCookieLines(res)[0]).toBe('theme=dark; Path=/');
  });

  it('keeps a cookie of the same name for another path or domain', async () => {
    const { sessions } = setup();
    const req = fakeRequest({ method: 'POST', headers: { Origin: ORIGIN } });
    const { res } = fakeResponse(req);
    const others = ['session=old; Path=/legacy', 'session=old; Path=/; Domain=example.com'];
    res.setHeader('Set-Cookie', others);
    await sessions.signIn(req, res, USER);
    const lines = setCookieLines(res);
    expect(lines).toHaveLength(3);
    expect(lines.slice(0, 2)).toEqual(others);
    expect(parseSetCookie(lines[2]!)).toMatchObject({ name: 'session', path: '/', httpOnly: true });
  });
});

describe('rotate', () => {
  it('without a session is authentication-required, without clearing anything', async () => {
    const { sessions } = setup();
    const req = fakeRequest({ method: 'POST', headers: { Origin: ORIGIN } });
    const { res } = fakeResponse(req);
    const error = await rejection(sessions.rotate(req, res));
    expect(error).toMatchObject({
      status: 401,
      code: 'ERR_AUTH_REQUIRED',
      type: 'urn:portico:problem:authentication-required',
    });
    expect(error.headers['WWW-Authenticate']).toBeUndefined();
    expect(setCookieLines(res)).toEqual([]);
  });

  it('with an ended or bad session is a 401 that clears the cookie on the response, and issues nothing', async () => {
    const { sessions, store } = setup({ idleTimeout: 60_000 });
    const id = await signIn(sessions);
    clock += 60_000;
    for (const [cookieId, code] of [
      [id, 'ERR_AUTH_EXPIRED'],
      ['short', 'ERR_AUTH_INVALID'],
    ] as const) {
      const req = withId(cookieId, 'POST');
      const { res } = fakeResponse(req);
      const error = await rejection(sessions.rotate(req, res, { role: 'admin' }));
      expect(error).toMatchObject({ status: 401, code });
      // written on the response, so not a second time by the error
      expect(error.headers['Set-Cookie']).toBeUndefined();
      expect(sessionLines(res)).toEqual([
        'session=; Max-Age=0; Path=/; HttpOnly; Secure; SameSite=Strict',
      ]);
    }
    expect(store.size).toBe(0);
  });

  it('applies name, role, scopes and data, and keeps what the update leaves out', async () => {
    const { sessions } = setup();
    const data = { theme: 'dark' };
    const id = await signIn(sessions, { ...USER, data });
    const req = withId(id, 'POST');
    const { res } = fakeResponse(req);
    const update = { name: 'Alicia', scopes: ['admin'], data: { theme: 'light' } };
    await sessions.rotate(req, res, update);
    update.scopes.push('root');
    update.data.theme = 'changed';
    const next = parseSetCookie(sessionLines(res)[0]!).value!;
    expect(await sessions.read(withId(next))).toEqual({
      sub: 'u-1',
      name: 'Alicia',
      role: 'user',
      scopes: ['admin'],
      data: { theme: 'light' },
      createdAt: START,
      lastSeenAt: START,
      expiresAt: START + 43_200_000,
    });

    clock += 1_000;
    const again = withId(next, 'POST');
    const out = fakeResponse(again);
    await sessions.rotate(again, out.res);
    const last = parseSetCookie(sessionLines(out.res)[0]!).value!;
    expect(await sessions.read(withId(last))).toEqual({
      sub: 'u-1',
      name: 'Alicia',
      role: 'user',
      scopes: ['admin'],
      data: { theme: 'light' },
      createdAt: START,
      lastSeenAt: START + 1_000,
      expiresAt: START + 43_200_000,
    });
  });

  it('a role alone changes only the role', async () => {
    const { sessions } = setup();
    const id = await signIn(sessions, { sub: 'u-3', scopes: ['a'] });
    const req = withId(id, 'POST');
    const { res } = fakeResponse(req);
    await sessions.rotate(req, res, { role: 'admin' });
    const next = parseSetCookie(sessionLines(res)[0]!).value!;
    const record = await sessions.read(withId(next));
    expect(Object.keys(record!).sort()).toEqual(
      ['createdAt', 'expiresAt', 'lastSeenAt', 'role', 'scopes', 'sub'].sort(),
    );
    expect(record).toMatchObject({ role: 'admin', scopes: ['a'] });
  });
});

describe('signIn', () => {
  it('keeps name, role and data only when given, and a copy of data', async () => {
    const { sessions } = setup();
    const bare = await signIn(sessions, { sub: 'u-2', scopes: ['a'] });
    const record = await sessions.read(withId(bare));
    expect(Object.keys(record!).sort()).toEqual(
      ['createdAt', 'expiresAt', 'lastSeenAt', 'scopes', 'sub'].sort(),
    );
    const data = { cart: 3 };
    const full = await signIn(sessions, { ...USER, data });
    data.cart = 99;
    expect(await sessions.read(withId(full))).toMatchObject({
      name: 'Alice',
      role: 'user',
      data: { cart: 3 },
    });
  });

  it.each<[string, unknown]>([
    ['null', null],
    ['a string', 'u-1'],
    ['a function carrying sub and scopes', Object.assign(() => {}, { sub: 'u', scopes: [] })],
    ['no sub', { scopes: [] }],
    ['a numeric sub', { sub: 1, scopes: [] }],
    ['an empty sub', { sub: '', scopes: [] }],
    ['no scopes', { sub: 'u' }],
    ['scopes as a string', { sub: 'u', scopes: 'admin' }],
    ['a scope that is not a string', { sub: 'u', scopes: ['a', 1] }],
    ['a numeric name', { sub: 'u', scopes: [], name: 1 }],
    ['a numeric role', { sub: 'u', scopes: [], role: 1 }],
    ['null data', { sub: 'u', scopes: [], data: null }],
    ['string data', { sub: 'u', scopes: [], data: 'x' }],
  ])('refuses a user with %s, before touching the response or the store', async (_, user) => {
    const { sessions, store } = setup();
    const req = fakeRequest({ method: 'POST', headers: { Origin: ORIGIN } });
    const { res } = fakeResponse(req);
    const error = await rejection(sessions.signIn(req, res, user as SessionUser));
    expect(error).toBeInstanceOf(TypeError);
    expect(error).toMatchObject({
      code: 'ERR_INVALID_OPTION',
      message: 'signIn(): `user` needs a non-empty `sub` and a `scopes` array of strings',
    });
    expect(store.size).toBe(0);
    expect(setCookieLines(res)).toEqual([]);
  });

  it.each<[string, SessionUser]>([
    ['the least', { sub: 'u', scopes: [] }],
    ['everything', { sub: 'u', scopes: ['a', 'b'], name: 'n', role: 'r', data: { a: 1 } }],
  ])('accepts a user with %s', async (_, user) => {
    const { sessions, store } = setup();
    await signIn(sessions, user);
    expect(store.size).toBe(1);
  });

  it.each(['signIn', 'signOut', 'rotate'] as const)(
    '%s() after the headers were sent throws ERR_HEADERS_SENT and changes nothing',
    async (method) => {
      const { sessions, store } = setup();
      const id = await signIn(sessions);
      const req = withId(id, 'POST');
      const { res } = fakeResponse(req);
      res.writeHead(200);
      const call =
        method === 'signIn'
          ? sessions.signIn(req, res, USER)
          : method === 'signOut'
            ? sessions.signOut(req, res)
            : sessions.rotate(req, res);
      const error = await rejection(call);
      expect(error).toMatchObject({
        name: 'PorticoError',
        code: 'ERR_HEADERS_SENT',
        message: `${method}(): the response headers have already been sent`,
      });
      expect(store.keys()).toEqual([hash(id)]);
    },
  );
});

describe('options', () => {
  const base = { allowedOrigins: [ORIGIN] };
  const refuse = (options: unknown) => {
    try {
      createSessions(options as SessionOptions);
    } catch (error) {
      expect(error).toBeInstanceOf(TypeError);
      expect(error).toMatchObject({ code: 'ERR_INVALID_OPTION' });
      return (error as Error).message;
    }
    throw new Error('expected createSessions() to throw');
  };

  it.each<[string, unknown, string]>([
    ['no options', undefined, 'createSessions(): options with `allowedOrigins` are required'],
    ['null options', null, 'createSessions(): options with `allowedOrigins` are required'],
    [
      'a store without get',
      { ...base, store: { set() {}, delete() {} } },
      'createSessions(): `store` needs get, set and delete methods',
    ],
    [
      'a store without set',
      { ...base, store: { get() {}, delete() {} } },
      'createSessions(): `store` needs get, set and delete methods',
    ],
    [
      'a store without delete',
      { ...base, store: { get() {}, set() {} } },
      'createSessions(): `store` needs get, set and delete methods',
    ],
    [
      'a clock that is not a function',
      { ...base, now: 5 },
      'createSessions(): `now` must be a function',
    ],
    [
      'a short absolute timeout',
      { ...base, absoluteTimeout: 999 },
      'createSessions(): `absoluteTimeout` must be milliseconds, at least 1000',
    ],
    [
      'an unknown cookie attribute',
      { ...base, cookie: { sameSit: 'lax' } },
      'createSessions(): `cookie`: unknown option `sameSit`. Did you mean `sameSite`?',
    ],
    [
      'a Secure that is not a boolean',
      { ...base, cookie: { secure: 'yes' } },
      'createSessions(): `cookie.secure` must be a boolean',
    ],
    [
      'an unknown SameSite',
      { ...base, cookie: { sameSite: 'bogus' } },
      "createSessions(): `cookie.sameSite` must be 'strict', 'lax' or 'none'",
    ],
    [
      'a relative path',
      { ...base, cookie: { path: 'app' } },
      "createSessions(): `cookie.path` must start with '/'",
    ],
    [
      'a path that is not a string',
      { ...base, cookie: { path: 5 } },
      "createSessions(): `cookie.path` must start with '/'",
    ],
    [
      'a cookie name that is not a string',
      { ...base, cookieName: 5 },
      'createSessions(): `cookieName` must be a string',
    ],
    [
      'a __Host- name over HTTP',
      { ...base, cookieName: '__Host-sid', cookie: { secure: false } },
      'createSessions(): a cookie named __Host-… needs `cookie.secure`; use a plain name for development over HTTP',
    ],
    [
      'a __Secure- name over HTTP',
      { ...base, cookieName: '__secure-sid', cookie: { secure: false } },
      'createSessions(): a cookie named __secure-… needs `cookie.secure`; use a plain name for development over HTTP',
    ],
    [
      'a __Host- name with a domain',
      { ...base, cookieName: '__Host-sid', cookie: { domain: 'example.com' } },
      "createSessions(): a __Host- cookie needs `path: '/'` and no `domain`",
    ],
  ])('refuses %s with its message', (_, options, message) => {
    expect(refuse(options)).toBe(message);
  });

  it('accepts an idle timeout equal to the absolute one, a null cookie, and a plain name over HTTP', async () => {
    const { sessions } = setup({ idleTimeout: 60_000, absoluteTimeout: 60_000 });
    const id = await signIn(sessions);
    expect(await sessions.read(withId(id))).toMatchObject({ expiresAt: START + 60_000 });
    expect(() => createSessions({ ...base, cookie: null as unknown as undefined })).not.toThrow();
    const plain = createSessions({ ...base, now, cookieName: 'dev', cookie: { secure: false } });
    const req = fakeRequest({ method: 'POST' });
    const { res } = fakeResponse(req);
    await plain.signIn(req, res, USER);
    expect(sessionLines(res, 'dev')[0]).toMatch(
      /^dev=[\w-]{43}; Max-Age=43200; Path=\/; HttpOnly; SameSite=Strict$/,
    );
  });
});

describe('MemorySessionStore', () => {
  const record = (sub: string): SessionRecord => ({
    sub,
    scopes: ['a'],
    createdAt: START,
    lastSeenAt: START,
    expiresAt: START + 60_000,
  });

  it('keeps copies: of data too, and adds no data a record had not', () => {
    const store = new MemorySessionStore({ now });
    const withData = { ...record('u'), data: { n: 1 } };
    store.set('h1', withData, 1_000);
    withData.data.n = 2;
    const read = store.get('h1')!;
    expect(read.data).toEqual({ n: 1 });
    (read.data as { n: number }).n = 3;
    expect(store.get('h1')!.data).toEqual({ n: 1 });
    store.set('h2', record('v'), 1_000);
    expect('data' in store.get('h2')!).toBe(false);
  });

  it('evicts the session used least recently beyond maxSessions', () => {
    const store = new MemorySessionStore({ now, maxSessions: 2 });
    store.set('a', record('a'), 10_000);
    store.set('b', record('b'), 10_000);
    store.touch('a', START + 1, 10_000);
    store.set('c', record('c'), 10_000);
    expect(store.keys()).toEqual(['a', 'c']);
    expect(store.get('b')).toBeUndefined();
  });

  it('names itself and maxSessions in its messages', () => {
    expect(() => new MemorySessionStore({ maxSession: 5 } as never)).toThrow(
      'new MemorySessionStore(): unknown option `maxSession`. Did you mean `maxSessions`?',
    );
    expect(() => new MemorySessionStore({ maxSessions: 0 })).toThrow(
      'new MemorySessionStore(): `maxSessions` must be an integer, at least 1',
    );
  });

  it('forgets a record set with no time left', () => {
    const store = new MemorySessionStore({ now });
    store.set('h', record('u'), 1_000);
    store.set('h', record('u'), 0);
    expect(store.size).toBe(0);
    store.set('h', record('u'), -5);
    expect(store.size).toBe(0);
    expect(store.get('h')).toBeUndefined();
  });

  it('touch() of an unknown hash does nothing', () => {
    const store = new MemorySessionStore({ now });
    expect(() => store.touch('nope', START, 1_000)).not.toThrow();
    expect(store.size).toBe(0);
  });

  it('sweep() drops the expired sessions, clear() every one', () => {
    const store = new MemorySessionStore({ now, sweepIntervalMs: 3_600_000 });
    store.set('short', record('s'), 1_000);
    store.set('long', record('l'), 10_000);
    clock += 5_000;
    expect(store.size).toBe(2);
    store.sweep();
    expect(store.keys()).toEqual(['long']);
    store.clear();
    expect(store.size).toBe(0);
  });
});
