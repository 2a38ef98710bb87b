// Issue 17, contract "Every surface guarded": refused credentials count against RATE_LIMIT per
// RATE_LIMIT_WINDOW for the client IP on every surface that checks one, and wrong device user
// codes are counted before their lookup. Black-box attacks on a spawned reference server.
// Behind TRUST_PROXY=1 the client IP is the X-Forwarded-For one: each surface is attacked from
// its own address (a fresh budget), so one server serves every surface.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  asClient,
  authorizeUrl,
  basic,
  ClientBrowser,
  type DemoClient,
  deviceCodeBurst,
  expectHtml429,
  expectOAuth429,
  expectProblem429,
  expectReleasedBurstHeld,
  from,
  JSON_TYPE,
  mintToken,
  pause,
  pkcePair,
  pollDevice,
  refusedUpgrade,
  SERVICE,
  signingKeyFile,
  startDevice,
  WEB,
} from './guarded-helpers.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const DEMO_KEY = 'demo-key-of-the-guarded-refusals-suite-01';
const LIMIT = 5;
const signing = signingKeyFile();
let server: RunningServer;
/** RATE_LIMIT_WINDOW=1: the window passes within the test. */
let quick: RunningServer;

beforeAll(async () => {
  const env = { DEMO_API_KEY: DEMO_KEY, TRUST_PROXY: '1', RATE_LIMIT: String(LIMIT) };
  [server, quick] = await Promise.all([
    startReferenceServer({ ...env, RATE_LIMIT_WINDOW: '60', SIGNING_KEY: signing.path }),
    startReferenceServer({ ...env, RATE_LIMIT_WINDOW: '1' }),
  ]);
});
afterAll(async () => {
  await Promise.all([server?.stop(), quick?.stop()]);
  signing.remove();
});

const login = (base: string, ip: string, password: string) =>
  fetch(`${base}/login`, {
    method: 'POST',
    headers: { ...JSON_TYPE, ...from(ip) },
    body: JSON.stringify({ username: 'alice', password }),
  });

describe('refused credentials are counted per client IP on every surface', () => {
  it('/api/*: unknown keys, bad, expired and Basic credentials spend the budget; then the right key gets 429', async () => {
    const ip = '203.0.113.11';
    const expired = await mintToken(
      server.url,
      signing.key,
      {},
      Math.floor(Date.now() / 1000) - 60,
    );
    const wrong: Record<string, string>[] = [
      { 'X-API-Key': 'unknown-key-of-a-guesser-000000000001' },
      { 'X-API-Key': 'unknown-key-of-a-guesser-000000000002' },
      { Authorization: 'Bearer not.a.token' },
      { Authorization: `Bearer ${expired}` },
      { Authorization: basic('alice', 'wrong-password') },
    ];
    expect(wrong).toHaveLength(LIMIT);
    for (const headers of wrong) {
      const res = await fetch(`${server.url}/api/me`, { headers: { ...headers, ...from(ip) } });
      expect(res.status, JSON.stringify(headers)).toBe(401);
    }
    const right = await fetch(`${server.url}/api/me`, {
      headers: { 'X-API-Key': DEMO_KEY, ...from(ip) },
    });
    await expectProblem429(right, 'the right key after the budget is spent');
  });

  it('POST /login: 5 wrong passwords, then the right one is 429; the same client is refused on /ws, /api and /token too', async () => {
    const ip = '203.0.113.12';
    for (let i = 0; i < LIMIT; i++) {
      expect((await login(server.url, ip, `wrong-${i}`)).status).toBe(401);
    }
    const right = await login(server.url, ip, 'alice-password');
    await expectProblem429(right, 'the right password');
    expect(right.headers.get('set-cookie')).toBeNull();

    // one budget across surfaces: the same address with right credentials elsewhere
    const ws = await refusedUpgrade(server.url, {
      Authorization: basic('alice', 'alice-password'),
      ...from(ip),
    });
    expect(ws.status, ws.body).toBe(429);
    expect(Number(ws.headers['retry-after'])).toBeGreaterThan(0);
    expect(String(ws.headers['content-type'])).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(ws.body)).toMatchObject({ status: 429 });
    const api = await fetch(`${server.url}/api/me`, {
      headers: { 'X-API-Key': DEMO_KEY, ...from(ip) },
    });
    await expectProblem429(api, '/api/me from the same client');
    const token = await asClient(
      server.url,
      SERVICE,
      { grant_type: 'client_credentials' },
      { headers: from(ip) },
    );
    await expectOAuth429(token, '/token from the same client');

    // another address is not affected: the budget is the client's, not the user's
    expect((await login(server.url, '203.0.113.99', 'alice-password')).status).toBe(204);
  });

  it('/events: 5 unknown keys, then the right key is 429 (no stream)', async () => {
    const ip = '203.0.113.13';
    for (let i = 0; i < LIMIT; i++) {
      const res = await fetch(`${server.url}/events`, {
        headers: { 'X-API-Key': `unknown-events-key-${i}-0123456789abcdef`, ...from(ip) },
      });
      expect(res.status).toBe(401);
      await res.body?.cancel();
    }
    const right = await fetch(`${server.url}/events`, {
      headers: { 'X-API-Key': DEMO_KEY, ...from(ip) },
    });
    await expectProblem429(right, '/events with the right key');
  });

  it('/ws handshake: 5 wrong passwords, then the right one is 429 before any upgrade', async () => {
    const ip = '203.0.113.14';
    for (let i = 0; i < LIMIT; i++) {
      const refused = await refusedUpgrade(server.url, {
        Authorization: basic('bob', `wrong-${i}`),
        ...from(ip),
      });
      expect(refused.status).toBe(401);
    }
    const right = await refusedUpgrade(server.url, {
      Authorization: basic('bob', 'bob-password'),
      ...from(ip),
    });
    expect(right.status, right.body).toBe(429);
    expect(right.headers['retry-after']).toMatch(/^\d+$/);
    expect(Number(right.headers['retry-after'])).toBeGreaterThan(0);
    expect(String(right.headers['content-type'])).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(right.body)).toMatchObject({ status: 429 });
  });

  /** Submits `LIMIT` wrong passwords on the sign-in form of `url`, then the right one. */
  async function attackSignInForm(url: string | URL, ip: string) {
    const browser = new ClientBrowser(server.url, from(ip));
    let page = await browser.fetch(url);
    expect(page.status).toBe(200);
    for (let i = 0; i < LIMIT; i++) {
      page = await browser.submit(page, { username: 'bob', password: `wrong-${i}` }, url);
      expect(page.status, `wrong password ${i + 1}`).toBe(401);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    }
    const right = await browser.submit(page, { username: 'bob', password: 'bob-password' }, url);
    await expectHtml429(right, 'the right password on the sign-in form');
    expect(browser.cookies.has('session')).toBe(false);
  }

  it('the sign-in form of /authorize: an HTML 429 page once spent', async () => {
    const url = authorizeUrl(server.url, WEB, {
      scope: 'openid',
      state: 's',
      code_challenge: pkcePair().challenge,
      code_challenge_method: 'S256',
    });
    await attackSignInForm(url, '203.0.113.15');
  });

  it('the sign-in form of /device/verify: an HTML 429 page once spent', async () => {
    await attackSignInForm(`${server.url}/device/verify`, '203.0.113.16');
  });

  // client authentication: demo-service at the token endpoint (both paths), demo-web at the
  // endpoints that authenticate any confidential client, /par with a whole authorization request
  const pushed = {
    response_type: 'code',
    redirect_uri: 'http://127.0.0.1:8080/callback',
    scope: 'openid',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  };
  const clientSurfaces: { path: string; client: DemoClient; fields: Record<string, string> }[] = [
    { path: '/token', client: SERVICE, fields: { grant_type: 'client_credentials' } },
    { path: '/oauth/token', client: SERVICE, fields: { grant_type: 'client_credentials' } },
    { path: '/par', client: WEB, fields: pushed },
    { path: '/revoke', client: WEB, fields: { token: 'some-token-value' } },
    { path: '/introspect', client: WEB, fields: { token: 'some-token-value' } },
  ];
  for (const [i, { path, client, fields }] of clientSurfaces.entries()) {
    it(`client authentication at ${path}: 5 bad secrets, then the right one gets a 429 in the OAuth format`, async () => {
      const headers = from(`198.51.100.${20 + i}`);
      for (let n = 0; n < LIMIT; n++) {
        const res = await asClient(server.url, client, fields, {
          path,
          headers,
          secret: `bad-secret-${n}`,
        });
        expect(res.status, `bad secret ${n + 1} at ${path}`).toBe(401);
        expect(((await res.json()) as { error: string }).error).toBe('invalid_client');
      }
      await expectOAuth429(await asClient(server.url, client, fields, { path, headers }), path);
    });
  }

  it('a right password is refused until the window passes, then accepted (RATE_LIMIT_WINDOW=1)', async () => {
    const ip = '203.0.113.40';
    const wrong = await Promise.all(
      Array.from({ length: LIMIT }, (_, i) => login(quick.url, ip, `wrong-${i}`)),
    );
    expect(wrong.map((r) => r.status)).toEqual(Array(LIMIT).fill(401));
    const refused = await login(quick.url, ip, 'alice-password');
    const retryAfter = Number(refused.headers.get('retry-after'));
    await expectProblem429(refused, 'the right password within the window');
    expect(retryAfter).toBeLessThanOrEqual(1);
    await pause(retryAfter * 1000 + 100);
    expect((await login(quick.url, ip, 'alice-password')).status).toBe(204);
  });
});

describe('device user codes', () => {
  it('a concurrent burst of 30 codes, the right one 20th, approves nothing (5 wrong codes at most)', async () => {
    const { device_code, user_code } = await startDevice(quick.url);
    const statuses = await deviceCodeBurst([quick.url], user_code, '203.0.113.41');
    expect(statuses.filter((s) => s !== 429).length, String(statuses)).toBeLessThanOrEqual(5);
    const poll = await pollDevice(quick.url, device_code);
    expect(poll.status).toBe(400);
    expect(poll.body).toMatchObject({ error: 'authorization_pending' });
  });

  it('30 codes read complete at the same moment, the right one last: at most 5 wrong ones looked up, none approved', async () => {
    await expectReleasedBurstHeld([quick.url], '203.0.113.42');
  });
});
