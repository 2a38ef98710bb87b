// The sign-in form of the authorization server (signInFromForm, sendThrottledPage,
// signInChallenge), device user codes and the per-user budget of user-code guesses, down to
// the edges: missing fields, oversized credentials, odd users.verify answers, session errors,
// the throttled pages' wording and headers, the uniformity of generated codes, the lockout's
// Retry-After.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import type { CredentialGuard } from '../../../src/auth/credential-guard.js';
import { createSessions, type Sessions } from '../../../src/auth/session/session.js';
import { HttpError } from '../../../src/core/errors/errors.js';
import { createRouter } from '../../../src/http/routing/router.js';
import { defineClient } from '../../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../../src/oauth/clients/store.js';
import { createOAuthContext, type OAuthUsers } from '../../../src/oauth/context.js';
import {
  createDeviceAuthorizationEndpoint,
  createDeviceVerificationEndpoint,
  generateUserCode,
  normalizeUserCode,
  USER_CODE_ALPHABET,
} from '../../../src/oauth/endpoints/device-authorization.js';
import { defaultPages } from '../../../src/oauth/pages/render.js';
import { sendThrottledPage, signInFromForm } from '../../../src/oauth/pages/sign-in-form.js';
import { deviceCodes } from '../../../src/oauth/store/records.js';
import { MemoryRecordStore } from '../../../src/oauth/store/store.js';
import { createKeySet, type KeySet } from '../../../src/oauth/tokens/key-set.js';
import { hiddenInputs, sessionCookie } from '../../helpers/browser.js';
import {
  closeAll,
  json,
  type Listening,
  listen,
  type Reply,
  request,
  serve,
} from '../../helpers/http.js';

const ISSUER = 'https://auth.example.test';
const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };

afterAll(closeAll);

let keys: Promise<KeySet> | undefined;
const sharedKeys = () => {
  keys ??= createKeySet();
  return keys;
};

const alice: OAuthUsers = {
  verify: (username, password) =>
    username === 'alice' && password === 'alice-password' ? { sub: 'alice' } : undefined,
  get: (sub) => ({ sub }),
};

/** A Sessions that delegates to `base`, with some methods replaced. */
function sessionsWith(base: Sessions, over: Partial<Sessions>): Sessions {
  return {
    authenticator: base.authenticator,
    signIn: (req, res, user) => base.signIn(req, res, user),
    signOut: (req, res) => base.signOut(req, res),
    rotate: (req, res, update) => base.rotate(req, res, update),
    read: (req) => base.read(req),
    ...over,
  };
}

/** A guard that only counts its calls, throwing `fail` from check() when given. */
function spyGuard(fail?: () => Error) {
  const calls = { check: 0, refused: 0 };
  const guard: CredentialGuard = {
    async check() {
      calls.check++;
      if (fail !== undefined) throw fail();
    },
    async refused() {
      calls.refused++;
    },
    attempt: async (_req, verify) => verify(),
  };
  return { guard, calls };
}

interface Harness {
  app: Listening;
  verified: string[][];
}

/**
 * A server whose every POST is a sign-in form given to signInFromForm(); it answers the
 * outcome as JSON (200), or 500 with the error signInFromForm() threw.
 */
async function startHarness(
  options: {
    users?: OAuthUsers;
    sessions?: (base: Sessions) => Sessions;
    guard?: CredentialGuard;
  } = {},
): Promise<Harness> {
  const verified: string[][] = [];
  const users = options.users ?? alice;
  let handle: (req: IncomingMessage, res: ServerResponse) => Promise<void> = async () => {};
  const app = await listen((req, res) => {
    handle(req, res).catch((err: unknown) => {
      res.statusCode = 500;
      res.end(JSON.stringify({ thrown: err instanceof Error ? err.message : String(err) }));
    });
  });
  const base = createSessions({ allowedOrigins: [app.url], cookie: { secure: false } });
  const ctx = createOAuthContext({
    issuer: ISSUER,
    clients: new MemoryClientStore([]),
    keys: await sharedKeys(),
    users: {
      verify(username, password) {
        verified.push([username, password]);
        return users.verify(username, password);
      },
      get: users.get,
    },
    sessions: options.sessions?.(base) ?? base,
    ...(options.guard === undefined ? {} : { guard: options.guard }),
  });
  handle = async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const outcome = await signInFromForm(ctx, req, res, new URLSearchParams(body));
    const answer: Record<string, unknown> = { ...outcome };
    if ('throttled' in outcome) answer.throttled = outcome.throttled.status;
    if (outcome.ok) answer.session = { sub: outcome.session.sub, scopes: outcome.session.scopes };
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify(answer));
  };
  return { app, verified };
}

const postForm = (app: Listening, fields: [string, string][], headers = {}) =>
  request(app, '/sign-in', {
    method: 'POST',
    headers: { ...FORM, ...headers },
    body: new URLSearchParams(fields).toString(),
  });

/** Serves sendThrottledPage() for `error` (in `language`, if given). */
async function throttledPage(error: HttpError, language?: string): Promise<Reply> {
  const app = await listen((_req, res) => {
    if (language === undefined) sendThrottledPage(res, defaultPages, error);
    else sendThrottledPage(res, defaultPages, error, language);
  });
  return request(app, '/');
}

describe('signInFromForm()', () => {
  it('asks for both fields when the password is missing, keeping the username', async () => {
    const { app, verified } = await startHarness();
    const reply = await postForm(app, [['username', 'alice']]);
    expect(reply.status).toBe(200);
    expect(json(reply)).toEqual({
      ok: false,
      status: 401,
      message: 'Enter your username and password.',
      username: 'alice',
    });
    expect(verified).toEqual([]);
  });

  it('asks for both fields when the username is missing or empty', async () => {
    const { app, verified } = await startHarness();
    for (const fields of [
      [['password', 'alice-password']],
      [
        ['username', ''],
        ['password', 'alice-password'],
      ],
    ] as [string, string][][]) {
      const reply = await postForm(app, fields);
      expect(reply.status).toBe(200);
      expect(json(reply)).toEqual({
        ok: false,
        status: 401,
        message: 'Enter your username and password.',
      });
    }
    expect(verified).toEqual([]);
  });

  it('starts a session with no scopes for a right password', async () => {
    const { app } = await startHarness();
    const reply = await postForm(app, [
      ['username', 'alice'],
      ['password', 'alice-password'],
    ]);
    expect(json(reply)).toEqual({ ok: true, session: { sub: 'alice', scopes: [] } });
    expect(sessionCookie(reply.headers)).toBeDefined();
  });

  it('checks a username of 256 characters and a password of 1024, refuses longer unchecked', async () => {
    const name = 'u'.repeat(256);
    const password = 'p'.repeat(1024);
    const { app, verified } = await startHarness({
      users: {
        verify: (u, p) => (u === name && p === password ? { sub: 'u' } : undefined),
        get: (sub) => ({ sub }),
      },
    });
    const right = await postForm(app, [
      ['username', name],
      ['password', password],
    ]);
    expect(json(right)).toMatchObject({ ok: true, session: { sub: 'u' } });
    expect(verified).toEqual([[name, password]]);
    for (const [u, p] of [
      [`${name}u`, password],
      [name, `${password}p`],
    ] as const) {
      const wrong = await postForm(app, [
        ['username', u],
        ['password', p],
      ]);
      expect(json(wrong)).toMatchObject({
        ok: false,
        status: 401,
        message: 'The username or password is wrong.',
      });
    }
    expect(verified).toHaveLength(1);
  });

  it('refuses a user that users.verify gives as null, without a sub, or with an empty or non-string sub', async () => {
    for (const user of [null, {}, { sub: '' }, { sub: 5 }]) {
      const { app } = await startHarness({
        users: { verify: () => user as never, get: (sub) => ({ sub }) },
      });
      const reply = await postForm(app, [
        ['username', 'alice'],
        ['password', 'alice-password'],
      ]);
      expect(reply.status).toBe(200);
      expect(json(reply)).toEqual({
        ok: false,
        status: 401,
        message: 'The username or password is wrong.',
        username: 'alice',
      });
      expect(sessionCookie(reply.headers)).toBeUndefined();
    }
  });

  it('counts a wrong password with the guard, not a right one', async () => {
    const { guard, calls } = spyGuard();
    const { app } = await startHarness({ guard });
    const right = await postForm(app, [
      ['username', 'alice'],
      ['password', 'alice-password'],
    ]);
    expect(json(right)).toMatchObject({ ok: true });
    expect(calls).toEqual({ check: 1, refused: 0 });
    const wrong = await postForm(app, [
      ['username', 'alice'],
      ['password', 'guess'],
    ]);
    expect(json(wrong)).toMatchObject({ ok: false, status: 401 });
    expect(calls).toEqual({ check: 2, refused: 1 });
  });

  it('answers the guard’s 429 and 503 as throttled, not ok', async () => {
    for (const status of [429, 503]) {
      const { guard } = spyGuard(() => new HttpError(status));
      const { app, verified } = await startHarness({ guard });
      const reply = await postForm(app, [
        ['username', 'alice'],
        ['password', 'alice-password'],
      ]);
      expect(json(reply)).toEqual({ ok: false, throttled: status });
      expect(verified).toEqual([]);
    }
  });

  it('lets other errors of the guard and of users.verify through', async () => {
    const failures: [string, () => Error][] = [
      ['guard 400', () => new HttpError(400, 'guard 400')],
      ['guard 500', () => new HttpError(500, 'guard 500')],
    ];
    for (const [message, fail] of failures) {
      const { guard } = spyGuard(fail);
      const { app } = await startHarness({ guard });
      const reply = await postForm(app, [
        ['username', 'alice'],
        ['password', 'alice-password'],
      ]);
      expect(reply.status).toBe(500);
      expect(json(reply)).toEqual({ thrown: message });
    }
    const { app } = await startHarness({
      users: {
        verify: () => {
          throw new Error('users down');
        },
        get: (sub) => ({ sub }),
      },
    });
    const reply = await postForm(app, [
      ['username', 'alice'],
      ['password', 'alice-password'],
    ]);
    expect(reply.status).toBe(500);
    expect(json(reply)).toEqual({ thrown: 'users down' });
  });

  it('answers a sign-in the session refuses (a foreign Origin) with its 4xx and detail', async () => {
    const { app } = await startHarness();
    const reply = await postForm(
      app,
      [
        ['username', 'alice'],
        ['password', 'alice-password'],
      ],
      { Origin: 'https://evil.example' },
    );
    expect(reply.status).toBe(200);
    expect(json(reply)).toEqual({
      ok: false,
      status: 403,
      message: 'This request comes from a page that may not use the session.',
    });
    expect(sessionCookie(reply.headers)).toBeUndefined();
  });

  it('lets a 499 of sessions.signIn answer, and throws its 500, 503 and other errors', async () => {
    const cases: [Error, number][] = [
      [new HttpError(499, 'client gone'), 200],
      [new HttpError(500, 'store broken'), 500],
      [new HttpError(503, 'store away'), 500],
      [new Error('plain'), 500],
    ];
    for (const [error, status] of cases) {
      const { app } = await startHarness({
        sessions: (base) =>
          sessionsWith(base, {
            signIn: async () => {
              throw error;
            },
          }),
      });
      const reply = await postForm(app, [
        ['username', 'alice'],
        ['password', 'alice-password'],
      ]);
      expect(reply.status).toBe(status);
      expect(json(reply)).toEqual(
        status === 200
          ? { ok: false, status: 499, message: 'client gone' }
          : { thrown: error.message },
      );
    }
  });

  it('throws when the new session cannot be read back', async () => {
    const { app } = await startHarness({
      sessions: (base) => sessionsWith(base, { read: async () => undefined }),
    });
    const reply = await postForm(app, [
      ['username', 'alice'],
      ['password', 'alice-password'],
    ]);
    expect(reply.status).toBe(500);
    expect(json(reply)).toEqual({
      thrown: 'signInFromForm(): the new session cannot be read',
    });
  });
});

describe('sendThrottledPage()', () => {
  it('says “a minute” below 120 seconds of Retry-After', async () => {
    const reply = await throttledPage(
      new HttpError(429, 'x', { headers: { 'Retry-After': '119' } }),
    );
    expect(reply.status).toBe(429);
    expect(reply.headers['retry-after']).toBe('119');
    expect(reply.body).toContain('<h1>Too many attempts</h1>');
    expect(reply.body).toContain(
      'Too many failed sign-ins from your network. Try again in a minute.',
    );
  });

  it('counts whole minutes, rounded up, from 120 seconds of Retry-After', async () => {
    for (const [seconds, minutes] of [
      ['120', 2],
      ['150', 3],
      ['900', 15],
    ] as const) {
      const reply = await throttledPage(
        new HttpError(429, 'x', { headers: { 'Retry-After': seconds } }),
      );
      expect(reply.status).toBe(429);
      expect(reply.body).toContain(
        `Too many failed sign-ins from your network. Try again in ${minutes} minutes.`,
      );
    }
  });

  it('says “a minute” for a 429 without Retry-After', async () => {
    const reply = await throttledPage(new HttpError(429));
    expect(reply.status).toBe(429);
    expect(reply.headers['retry-after']).toBeUndefined();
    expect(reply.body).toContain('Try again in a minute.');
  });

  it('answers a 503 with its own page, and English when no language is given', async () => {
    const reply = await throttledPage(new HttpError(503, 'x', { headers: { 'Retry-After': '5' } }));
    expect(reply.status).toBe(503);
    expect(reply.headers['retry-after']).toBe('5');
    expect(reply.headers['content-language']).toBe('en');
    expect(reply.headers['cache-control']).toBe('no-store');
    expect(reply.body).toContain('<html lang="en">');
    expect(reply.body).toContain('<title>Try again later</title>');
    expect(reply.body).toContain('<h1>Try again later</h1>');
    expect(reply.body).toContain('<p role="alert">Sign-in is unavailable for a moment.</p>');
    expect(reply.body).not.toContain('Too many');
  });

  it('writes the page in the language given', async () => {
    const reply = await throttledPage(
      new HttpError(429, 'x', { headers: { 'Retry-After': '600' } }),
      'fr',
    );
    expect(reply.headers['content-language']).toBe('fr');
    expect(reply.body).toContain('<h1>Trop de tentatives</h1>');
    expect(reply.body).toContain('10');
  });
});

/** A device verification page (and device endpoint) over `store`, with these sessions. */
async function startDevice(
  options: {
    store?: MemoryRecordStore;
    sessions?: (base: Sessions) => Sessions;
    maxFailures?: number;
  } = {},
) {
  const base = createSessions({ allowedOrigins: [ISSUER], cookie: { secure: false } });
  const ctx = createOAuthContext({
    issuer: ISSUER,
    clients: new MemoryClientStore([
      await defineClient({
        clientId: 'tv',
        name: 'Living-room TV',
        grantTypes: ['urn:ietf:params:oauth:grant-type:device_code'],
        redirectUris: [],
        scopes: ['openid'],
      }),
    ]),
    keys: await sharedKeys(),
    store: options.store ?? new MemoryRecordStore(),
    users: alice,
    sessions: options.sessions?.(base) ?? base,
  });
  return serve(
    createRouter({
      '/device': createDeviceAuthorizationEndpoint(ctx),
      '/device/verify': createDeviceVerificationEndpoint(ctx, {
        formKey: 'a form key of at least thirty-two characters',
        failureWindow: 60_000,
        ...(options.maxFailures === undefined ? {} : { maxFailures: options.maxFailures }),
      }),
    }),
  );
}

const postVerify = (app: Listening, fields: [string, string][], cookie?: string) =>
  request(app, '/device/verify', {
    method: 'POST',
    headers: { ...FORM, ...(cookie === undefined ? {} : { Cookie: cookie }) },
    body: new URLSearchParams(fields).toString(),
  });

describe('the device sign-in form', () => {
  it('shows the sign-in form again, 401 with the cookie challenge, when the password is missing', async () => {
    const app = await startDevice();
    const first = await request(app, '/device/verify');
    const reply = await postVerify(app, [...hiddenInputs(first.body), ['username', 'alice']]);
    expect(reply.status).toBe(401);
    expect(reply.body).toContain('Enter your username and password.');
    expect(reply.body).toContain('name="password"');
    expect(reply.body).toContain('value="alice"');
    expect(reply.headers['www-authenticate']).toBe('Cookie cookie-name="session"');
    expect(sessionCookie(reply.headers)).toBeUndefined();
  });

  it('answers a wrong password without WWW-Authenticate when the session authenticator has no challenge', async () => {
    const app = await startDevice({
      sessions: (base) =>
        sessionsWith(base, {
          authenticator: { ...base.authenticator, challenge: undefined },
        }),
    });
    const first = await request(app, '/device/verify');
    const reply = await postVerify(app, [
      ...hiddenInputs(first.body),
      ['username', 'alice'],
      ['password', 'guess'],
    ]);
    expect(reply.status).toBe(401);
    expect(reply.headers['www-authenticate']).toBeUndefined();
    expect(reply.body).toContain('The username or password is wrong.');
  });
});

describe('user codes', () => {
  it('draws every letter of the alphabet equally often', () => {
    const counts = new Map<string, number>();
    const codes = 125_000;
    for (let i = 0; i < codes; i++) {
      for (const letter of generateUserCode()) counts.set(letter, (counts.get(letter) ?? 0) + 1);
    }
    expect([...counts.keys()].sort().join('')).toBe(USER_CODE_ALPHABET);
    // chi-square with 19 degrees of freedom: above 100 has a probability below 1e-11
    const expected = (codes * 8) / USER_CODE_ALPHABET.length;
    let chi2 = 0;
    for (const count of counts.values()) chi2 += (count - expected) ** 2 / expected;
    expect(chi2).toBeLessThan(100);
  });

  it('reads a typed code of up to 64 characters, refuses longer ones and non-strings', () => {
    const padded = (length: number) => `wdjb-mjht${' '.repeat(length - 9)}`;
    expect(normalizeUserCode(padded(64))).toBe('WDJBMJHT');
    expect(normalizeUserCode(padded(65))).toBeUndefined();
    expect(normalizeUserCode(`${'-'.repeat(56)}WDJBMJHT`)).toBe('WDJBMJHT');
    expect(normalizeUserCode(`${'-'.repeat(57)}WDJBMJHT`)).toBeUndefined();
    for (const input of [42, null, undefined, ['WDJBMJHT'], { length: 8 }]) {
      expect(normalizeUserCode(input as never)).toBeUndefined();
    }
  });

  it('refuses what is not eight letters of the alphabet', () => {
    for (const input of ['', 'abc', 'WDJBMJH', 'WDJBMJHTX', 'WDJBMJHA', '12345678']) {
      expect(normalizeUserCode(input)).toBeUndefined();
    }
  });
});

/** A memory OAuth store that records the user codes looked up. */
class CountingStore extends MemoryRecordStore {
  readonly lookups: unknown[] = [];
  override findByKey(kind: string, key: string): ReturnType<MemoryRecordStore['findByKey']> {
    if (kind === deviceCodes.kind) this.lookups.push(key);
    return super.findByKey(kind, key);
  }
}

describe('the user-code budget', () => {
  async function signedIn(app: Listening) {
    const first = await request(app, '/device/verify');
    const page = await postVerify(app, [
      ...hiddenInputs(first.body),
      ['username', 'alice'],
      ['password', 'alice-password'],
    ]);
    expect(page.body).toContain('name="user_code"');
    return { page, cookie: sessionCookie(page.headers)! };
  }

  it('counts a code that cannot be one without looking it up', async () => {
    const store = new CountingStore();
    const app = await startDevice({ store });
    const { page, cookie } = await signedIn(app);
    const reply = await postVerify(
      app,
      [...hiddenInputs(page.body), ['user_code', 'not-a-code'], ['decision', 'approve']],
      cookie,
    );
    expect(reply.status).toBe(400);
    expect(store.lookups).toEqual([]);
    const good = await postVerify(
      app,
      [...hiddenInputs(page.body), ['user_code', 'BCDF-GHJK'], ['decision', 'approve']],
      cookie,
    );
    expect(good.status).toBe(400);
    expect(store.lookups).toEqual(['BCDFGHJK']);
  });

  it('locks for the rest of the window: Retry-After within the 60 s failure window', async () => {
    const app = await startDevice({ maxFailures: 1 });
    const { page, cookie } = await signedIn(app);
    const attempt = () =>
      postVerify(
        app,
        [...hiddenInputs(page.body), ['user_code', 'BCDF-GHJK'], ['decision', 'approve']],
        cookie,
      );
    for (const reply of [await attempt(), await attempt()]) {
      expect(reply.status).toBe(429);
      const seconds = Number(reply.headers['retry-after']);
      expect(seconds).toBeGreaterThanOrEqual(59);
      expect(seconds).toBeLessThanOrEqual(60);
      expect(reply.body).toContain('Wait 1 minute(s)');
    }
  });
});
