import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSessions } from '../../../src/auth/session/session.js';
import { silentLogger } from '../../../src/diagnostics/index.js';
import { createRouter } from '../../../src/http/routing/router.js';
import { defineClient } from '../../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../../src/oauth/clients/store.js';
import { createOAuthContext } from '../../../src/oauth/context.js';
import {
  createDeviceAuthorizationEndpoint,
  createDeviceVerificationEndpoint,
  formatUserCode,
  generateUserCode,
  normalizeUserCode,
  USER_CODE_ALPHABET,
} from '../../../src/oauth/endpoints/device-authorization.js';
import { deviceCodes } from '../../../src/oauth/store/records.js';
import { MemoryRecordStore } from '../../../src/oauth/store/store.js';
import { hashToken } from '../../../src/oauth/tokens/issue.js';
import { createKeySet } from '../../../src/oauth/tokens/key-set.js';
import { hiddenInputs, sessionCookie } from '../../helpers/browser.js';
import { closeAll, json, type Listening, type Reply, request, serve } from '../../helpers/http.js';

const ISSUER = 'https://auth.example.test';
const CODE_SHAPE = /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/;
const USERS: Record<string, string> = {
  alice: 'alice-password',
  bob: 'bob-password',
  carol: 'carol-password',
  dave: 'dave-password',
  frank: 'frank-password',
  grace: 'grace-password',
  erin: 'erin-password',
};

let server: Listening;
let store: MemoryRecordStore;

beforeAll(async () => {
  const scopes = ['openid', 'profile', 'offline_access', 'read:messages'];
  const clients = new MemoryClientStore([
    await defineClient({
      clientId: 'tv',
      name: 'Living-room TV',
      grantTypes: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
      redirectUris: [],
      scopes,
    }),
    await defineClient({
      clientId: 'console',
      secret: 'console-secret-1',
      grantTypes: ['urn:ietf:params:oauth:grant-type:device_code'],
      redirectUris: [],
      scopes,
      defaultScopes: ['read:messages'],
    }),
    await defineClient({
      clientId: 'web',
      secret: 'web-secret-1234',
      grantTypes: ['authorization_code'],
      redirectUris: ['https://app.example.com/cb'],
      scopes,
    }),
  ]);
  store = new MemoryRecordStore();
  const ctx = createOAuthContext({
    issuer: ISSUER,
    clients,
    keys: await createKeySet(),
    store,
    users: {
      verify: (username, password) =>
        USERS[username] === password ? { sub: username, name: `${username} example` } : undefined,
      get: (sub) => (USERS[sub] ? { sub } : undefined),
    },
    sessions: createSessions({ allowedOrigins: [ISSUER], cookie: { secure: false } }),
  });
  server = await serve(
    createRouter({
      '/device': createDeviceAuthorizationEndpoint(ctx),
      '/device/verify': createDeviceVerificationEndpoint(ctx),
    }),
    { logger: silentLogger },
  );
});

afterAll(closeAll);

const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };

const startDevice = (body: string, headers: Record<string, string> = {}) =>
  request(server, '/device', { method: 'POST', headers: { ...FORM, ...headers }, body });

const verifyPost = (fields: readonly (readonly [string, string])[], cookie?: string) =>
  request(server, '/device/verify', {
    method: 'POST',
    headers: { ...FORM, ...(cookie === undefined ? {} : { Cookie: cookie }) },
    body: new URLSearchParams(fields.map(([n, v]): [string, string] => [n, v])).toString(),
  });

/** Signs in through the verification page: the code form and the session cookie. */
async function signIn(user = 'alice', query = ''): Promise<{ page: Reply; cookie: string }> {
  const first = await request(server, `/device/verify${query}`);
  expect(first.status).toBe(200);
  expect(first.body).toContain('name="password"');
  const page = await verifyPost([
    ...hiddenInputs(first.body),
    ['username', user],
    ['password', USERS[user]!],
  ]);
  expect(page.status).toBe(200);
  expect(page.body).toContain('name="user_code"');
  return { page, cookie: sessionCookie(page.headers)! };
}

describe('user codes', () => {
  it('are 8 characters of the consonant alphabet, every letter used, shown as XXXX-XXXX', () => {
    expect(USER_CODE_ALPHABET).toBe('BCDFGHJKLMNPQRSTVWXZ');
    const seen = new Set<string>();
    const codes = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const code = generateUserCode();
      expect(code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{8}$/);
      for (const c of code) seen.add(c);
      codes.add(code);
      expect(formatUserCode(code)).toMatch(CODE_SHAPE);
    }
    expect(seen.size).toBe(20);
    expect(codes.size).toBe(2000);
  });

  it('are normalised case-, dash- and space-insensitively', () => {
    expect(normalizeUserCode('WDJB-MJHT')).toBe('WDJBMJHT');
    expect(normalizeUserCode('wdjb-mjht')).toBe('WDJBMJHT');
    expect(normalizeUserCode(' wdjbmjht ')).toBe('WDJBMJHT');
    expect(normalizeUserCode('WD JB-MJ-HT')).toBe('WDJBMJHT');
    for (const bad of ['WDJB-MJH', 'WDJB-MJHTX', 'WDJB-MJHA', 'WDJB_MJHT', '', 'x'.repeat(100)]) {
      expect(normalizeUserCode(bad)).toBeUndefined();
    }
  });
});

describe('POST /device', () => {
  it('answers the RFC 8628 §3.2 fields and stores the device code by hash', async () => {
    const reply = await startDevice('client_id=tv&scope=openid%20read:messages');
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('application/json');
    expect(reply.headers['cache-control']).toBe('no-store');
    const body = json(reply);
    expect(Object.keys(body).sort()).toEqual([
      'device_code',
      'expires_in',
      'interval',
      'user_code',
      'verification_uri',
      'verification_uri_complete',
    ]);
    expect(body.device_code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(body.user_code).toMatch(CODE_SHAPE);
    expect(body.verification_uri).toBe(`${ISSUER}/device/verify`);
    expect(body.verification_uri_complete).toBe(
      `${ISSUER}/device/verify?user_code=${body.user_code}`,
    );
    expect(body.expires_in).toBe(600);
    expect(body.interval).toBe(5);
    expect(deviceCodes(store).get(body.device_code as string)).toBeUndefined();
    expect(deviceCodes(store).get(hashToken(body.device_code as string))).toEqual({
      clientId: 'tv',
      scope: ['openid', 'read:messages'],
      userCode: (body.user_code as string).replace('-', ''),
      status: 'pending',
      interval: 5_000,
      grantId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      expiresAt: expect.any(Number),
    });
    const { expiresAt } = deviceCodes(store).get(hashToken(body.device_code as string))!;
    expect(Math.abs(expiresAt! - (Date.now() + 600_000))).toBeLessThan(5_000);
  });

  it('authenticates confidential clients and grants their default scopes', async () => {
    const basic = `Basic ${Buffer.from('console:console-secret-1').toString('base64')}`;
    const reply = await startDevice('', { Authorization: basic });
    expect(reply.status).toBe(200);
    const code = json(reply).device_code as string;
    expect(deviceCodes(store).get(hashToken(code))?.scope).toEqual(['read:messages']);
    const wrong = await startDevice('client_id=console&client_secret=nope');
    expect(wrong.status).toBe(401);
    expect(json(wrong).error).toBe('invalid_client');
  });

  it('refuses unknown clients, clients without the grant and unknown scopes in RFC 6749 form', async () => {
    const cases: [string, number, string][] = [
      ['client_id=nobody', 401, 'invalid_client'],
      ['', 401, 'invalid_client'],
      ['client_id=web&client_secret=web-secret-1234', 400, 'unauthorized_client'],
      ['client_id=tv&scope=admin', 400, 'invalid_scope'],
      ['client_id=tv&client_id=tv', 400, 'invalid_request'],
    ];
    for (const [body, status, error] of cases) {
      const reply = await startDevice(body);
      expect(reply.status).toBe(status);
      expect(reply.headers['content-type']).toBe('application/json');
      expect(json(reply)).toEqual({ error, error_description: expect.any(String) });
    }
    const notForm = await request(server, '/device', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '{"client_id":"tv"}',
    });
    expect(notForm.status).toBe(400);
    expect(json(notForm).error).toBe('invalid_request');
    expect((await request(server, '/device')).status).toBe(405);
  });
});

describe('/device/verify', () => {
  async function start(): Promise<{ deviceCode: string; userCode: string }> {
    const body = json(await startDevice('client_id=tv&scope=read:messages'));
    return { deviceCode: body.device_code as string, userCode: body.user_code as string };
  }

  it('signs in, shows the code prefilled from verification_uri_complete, and approves', async () => {
    const { deviceCode, userCode } = await start();
    const first = await request(server, `/device/verify?user_code=${userCode}`);
    expect(first.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(first.headers['content-security-policy']).toContain("form-action 'self';");
    expect(first.body).toContain('<form method="post">');
    const { page, cookie } = await signIn('alice', `?user_code=${userCode}`);
    expect(page.body).toContain(`value="${userCode}"`);
    expect(page.body).toContain('Living-room TV');
    expect(page.body).toContain('<code>read:messages</code>');
    expect(page.body).toContain('name="decision" value="approve"');
    const done = await verifyPost(
      [...hiddenInputs(page.body), ['user_code', userCode], ['decision', 'approve']],
      cookie,
    );
    expect(done.status).toBe(200);
    expect(done.body).toContain('Device connected');
    expect(deviceCodes(store).get(hashToken(deviceCode))).toMatchObject({
      status: 'approved',
      sub: 'alice',
      authTime: expect.any(Number),
    });
  });

  it('accepts the code in lower case, without the dash or with spaces', async () => {
    const { cookie, page } = await signIn('bob');
    for (const typed of [
      (c: string) => c.toLowerCase(),
      (c: string) => c.replace('-', ''),
      (c: string) => ` ${c.slice(0, 2)} ${c.slice(2).toLowerCase()} `,
    ]) {
      const { deviceCode, userCode } = await start();
      const fields = (body: string): [string, string][] => [
        ...hiddenInputs(body),
        ['user_code', typed(userCode)],
        ['decision', 'approve'],
      ];
      const confirm = await verifyPost(fields(page.body), cookie);
      expect(confirm.status).toBe(200);
      expect(confirm.body).toContain('Living-room TV');
      const done = await verifyPost(fields(confirm.body), cookie);
      expect(done.status).toBe(200);
      expect(done.body).toContain('Device connected');
      expect(deviceCodes(store).get(hashToken(deviceCode))).toMatchObject({
        status: 'approved',
        sub: 'bob',
      });
    }
  });

  it('denies', async () => {
    const { deviceCode, userCode } = await start();
    const { page, cookie } = await signIn('alice');
    const done = await verifyPost(
      [...hiddenInputs(page.body), ['user_code', userCode], ['decision', 'deny']],
      cookie,
    );
    expect(done.status).toBe(200);
    expect(done.body).toContain('Device refused');
    const record = deviceCodes(store).get(hashToken(deviceCode));
    expect(record?.status).toBe('denied');
    expect(record?.sub).toBeUndefined();
  });

  it('refuses a decision without the form token or a signed-in session', async () => {
    const { deviceCode, userCode } = await start();
    const { page, cookie } = await signIn('alice');
    const noToken = await verifyPost(
      [
        ['user_code', userCode],
        ['decision', 'approve'],
      ],
      cookie,
    );
    expect(noToken.status).toBe(400);
    const signedOut = await verifyPost([
      ...hiddenInputs(page.body),
      ['user_code', userCode],
      ['decision', 'approve'],
    ]);
    expect(signedOut.status).toBe(401);
    expect(signedOut.body).toContain('name="password"');
    const other = await signIn('bob');
    const crossed = await verifyPost(
      [...hiddenInputs(page.body), ['user_code', userCode], ['decision', 'approve']],
      other.cookie,
    );
    expect(crossed.status).toBe(400);
    expect(deviceCodes(store).get(hashToken(deviceCode))?.status).toBe('pending');
  });

  it('stays on the sign-in page after a wrong password', async () => {
    const first = await request(server, '/device/verify');
    const reply = await verifyPost([
      ...hiddenInputs(first.body),
      ['username', 'alice'],
      ['password', 'wrong'],
    ]);
    expect(reply.status).toBe(401);
    expect(sessionCookie(reply.headers)).toBeUndefined();
    expect(reply.body).toContain('role="alert"');
  });

  it('refuses a code used already', async () => {
    const { userCode } = await start();
    const { page, cookie } = await signIn('erin', `?user_code=${userCode}`);
    const fields = [...hiddenInputs(page.body), ['user_code', userCode]] as [string, string][];
    const done = await verifyPost([...fields, ['decision', 'approve']], cookie);
    expect(done.body).toContain('Device connected');
    // the same confirmed form, and a blank one
    const again = await verifyPost([...fields, ['decision', 'deny']], cookie);
    expect(again.status).toBe(400);
    expect(again.body).toContain('not valid or has expired');
    const blank = await request(server, '/device/verify', { headers: { Cookie: cookie } });
    const typed = await verifyPost(
      [...hiddenInputs(blank.body), ['user_code', userCode], ['decision', 'approve']],
      cookie,
    );
    expect(typed.status).toBe(400);
    expect(typed.body).toContain('not valid or has expired');
  });

  it('refuses a code past its expiry that the store still keeps, on the form and on approval', async () => {
    const { deviceCode, userCode } = await start();
    const hash = hashToken(deviceCode);
    deviceCodes(store).replace(hash, {
      ...deviceCodes(store).get(hash)!,
      expiresAt: Date.now() - 1,
    });
    const { page, cookie } = await signIn('dave', `?user_code=${userCode}`);
    expect(page.body).toContain('not valid or has expired');
    expect(page.body).not.toContain('Living-room TV');
    const done = await verifyPost(
      [...hiddenInputs(page.body), ['user_code', userCode], ['decision', 'approve']],
      cookie,
    );
    expect(done.status).toBe(400);
    expect(done.body).toContain('not valid or has expired');
    expect(deviceCodes(store).get(hash)?.status).toBe('pending');
  });

  it('limits wrong codes per user: 429 with Retry-After, even for a right code then', async () => {
    const { deviceCode, userCode } = await start();
    const { page, cookie } = await signIn('carol');
    const attempt = (code: string) =>
      verifyPost(
        [...hiddenInputs(page.body), ['user_code', code], ['decision', 'approve']],
        cookie,
      );
    const wrong = ['BBBB-BBBB', 'nonsense', 'CCCC-CCCC', ''];
    for (const code of wrong) {
      const reply = await attempt(code);
      expect(reply.status).toBe(400);
      expect(reply.body).toContain('role="alert"');
    }
    const fifth = await attempt('DDDD-DDDD');
    expect(fifth.status).toBe(429);
    expect(Number(fifth.headers['retry-after'])).toBeGreaterThan(800);
    const right = await attempt(userCode);
    expect(right.status).toBe(429);
    expect(right.headers['retry-after']).toBeDefined();
    expect(deviceCodes(store).get(hashToken(deviceCode))?.status).toBe('pending');
    // a prefilled code is no way around the limit
    const prefilled = await request(server, `/device/verify?user_code=${userCode}`, {
      headers: { Cookie: cookie },
    });
    expect(prefilled.status).toBe(429);
    // another user is not affected
    const bob = await signIn('bob');
    const ok = await verifyPost(
      [...hiddenInputs(bob.page.body), ['user_code', userCode], ['decision', 'approve']],
      bob.cookie,
    );
    expect(ok.status).toBe(200);
    expect(ok.body).toContain('Living-room TV');
  });
});

describe('/device/verify shows what is approved (RFC 8628 §5.4)', () => {
  async function start(scope = 'openid read:messages') {
    const body = json(await startDevice(`client_id=tv&scope=${encodeURIComponent(scope)}`));
    return { deviceCode: body.device_code as string, userCode: body.user_code as string };
  }
  const statusOf = (deviceCode: string) => deviceCodes(store).get(hashToken(deviceCode))?.status;
  const expectConfirmation = (page: Reply, userCode: string) => {
    expect(page.status).toBe(200);
    expect(page.body).toContain('Living-room TV');
    expect(page.body).toContain('(<code>tv</code>)');
    expect(page.body).toContain('(<code>openid</code>)');
    expect(page.body).toContain('<code>read:messages</code>');
    expect(page.body).toContain(`name="user_code" value="${userCode}"`);
    expect(page.body).toContain('name="decision" value="approve"');
    expect(page.body).toContain('name="decision" value="deny"');
  };

  it('answers an Allow of a typed code with the confirmation page; its Allow approves', async () => {
    const { deviceCode, userCode } = await start();
    const { page, cookie } = await signIn('frank');
    expect(page.body).not.toContain('Living-room TV');
    const typed = userCode.toLowerCase().replace('-', '');
    const confirm = await verifyPost(
      [...hiddenInputs(page.body), ['user_code', typed], ['decision', 'approve']],
      cookie,
    );
    expectConfirmation(confirm, userCode);
    expect(statusOf(deviceCode)).toBe('pending');
    const done = await verifyPost(
      [...hiddenInputs(confirm.body), ['user_code', userCode], ['decision', 'approve']],
      cookie,
    );
    expect(done.body).toContain('Device connected');
    expect(deviceCodes(store).get(hashToken(deviceCode))).toMatchObject({
      status: 'approved',
      sub: 'frank',
    });
  });

  it('shows the device of a code given in the URL, and approves it at once', async () => {
    const { deviceCode, userCode } = await start();
    const { cookie } = await signIn('grace');
    const page = await request(server, `/device/verify?user_code=${userCode}`, {
      headers: { Cookie: cookie },
    });
    expectConfirmation(page, userCode);
    const done = await verifyPost(
      [...hiddenInputs(page.body), ['user_code', userCode], ['decision', 'approve']],
      cookie,
    );
    expect(done.body).toContain('Device connected');
    expect(statusOf(deviceCode)).toBe('approved');
  });

  it('never lets a form that showed one device approve another', async () => {
    const shown = await start();
    const other = await start();
    const { cookie } = await signIn('grace');
    const page = await request(server, `/device/verify?user_code=${shown.userCode}`, {
      headers: { Cookie: cookie },
    });
    // the code swapped in the visible input: the other device is shown, not approved
    const swapped = await verifyPost(
      [...hiddenInputs(page.body), ['user_code', other.userCode], ['decision', 'approve']],
      cookie,
    );
    expectConfirmation(swapped, other.userCode);
    expect(statusOf(other.deviceCode)).toBe('pending');
    // the hidden input changed to the other code: the form token no longer matches
    const forged = hiddenInputs(page.body).map(([n, v]): [string, string] => [
      n,
      n === 'shown_user_code' ? other.userCode.replace('-', '') : v,
    ]);
    const refused = await verifyPost(
      [...forged, ['user_code', other.userCode], ['decision', 'approve']],
      cookie,
    );
    expect(refused.status).toBe(400);
    expect(statusOf(other.deviceCode)).toBe('pending');
    expect(statusOf(shown.deviceCode)).toBe('pending');
  });
});
