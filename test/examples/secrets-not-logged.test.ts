// Every secret the reference server handles in a full run stays out of its stdout and stderr.
//
// The server prints its ready line, the generated demo key (once, by contract) and the
// shutdown line, and logs with pino at LOG_LEVEL: here `trace`, its most verbose, so every
// line it can write is written: the access log (one line per request, credentials sent in
// headers, cookies, forms and query strings), failed webhook attempts and dead letters, and
// every error that becomes a 5xx or fails in the background (webhook store, event publishing,
// token endpoint). In memory no request can be made to fail with a 500; with Redis (when
// redis-server is installed) the run ends with Redis taken away, so that every credential is
// sent once more into 503s, which are logged.
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { absoluteFormGet } from '../helpers/absolute-form.js';
import { Browser, hiddenInputs } from '../helpers/browser.js';
import { closeAll, listen } from '../helpers/http.js';
import { hasRedis, type RedisServer, startRedis } from '../helpers/redis.js';
import { connect as connectEvents } from '../helpers/sse.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const REDIRECT = 'http://127.0.0.1:8080/callback';
const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };
/** A form POST, with `headers` added. */
const postForm = (fields: Record<string, string>, headers: Record<string, string> = {}) => ({
  method: 'POST',
  headers: { ...FORM, ...headers },
  body: new URLSearchParams(fields).toString(),
});

/** Every secret value seen in a run (values shorter than 6 characters are not secrets). */
class Secrets {
  readonly values = new Set<string>();
  add(...values: unknown[]): void {
    for (const value of values) {
      if (typeof value !== 'string' || value.length < 6) continue;
      this.values.add(value);
      // a JWT's parts one by one: the signature alone would be as bad
      for (const part of value.split('.')) if (part.length >= 16) this.values.add(part);
    }
  }
  /** Those found in `text`, whole or by any 16-character piece of a longer one. */
  foundIn(text: string): string[] {
    const found: string[] = [];
    for (const secret of this.values) {
      if (text.includes(secret)) {
        found.push(secret);
        continue;
      }
      for (let i = 0; i + 16 <= secret.length; i++) {
        if (text.includes(secret.slice(i, i + 16))) {
          found.push(`${secret} (by "${secret.slice(i, i + 16)}")`);
          break;
        }
      }
    }
    return found;
  }
}

/** A webhook receiver that drops every connection (a failing delivery, retried). */
async function resettingReceiver() {
  let attempts = 0;
  const target = await listen((req) => {
    attempts++;
    req.socket.destroy();
  });
  return { url: `${target.url}/hook`, attempts: () => attempts };
}

/**
 * Runs every grant, every authentication method (and failed ones), API key creation and a
 * webhook registration with a failing receiver against `server`, as `apiKey`'s owner (alice).
 */
async function fullRun(server: RunningServer, apiKey: string, secrets: Secrets): Promise<void> {
  const url = server.url;
  const call = (path: string, init: RequestInit = {}) => fetch(`${url}${path}`, init);
  const json = (res: Response) => res.json() as Promise<Record<string, string>>;
  secrets.add(apiKey, 'alice-password', 'bob-password', 'demo-service-secret', 'demo-web-secret');

  // authorization_code with PKCE, through the real sign-in and consent forms (one wrong password)
  const verifier = randomBytes(32).toString('base64url');
  const nonce = randomBytes(16).toString('base64url');
  secrets.add(verifier, nonce);
  const authorize = new URL(`${url}/authorize`);
  for (const [k, v] of Object.entries({
    response_type: 'code',
    client_id: 'demo-web',
    redirect_uri: REDIRECT,
    scope: 'openid profile email offline_access read:messages write:messages',
    state: 'xyz',
    nonce,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  })) {
    authorize.searchParams.set(k, v);
  }
  const browser = new Browser(url);
  /** The hidden inputs that look like tokens (CSRF, form bindings), not URLs or scopes. */
  const keepHidden = (html: string) => {
    for (const [, value] of hiddenInputs(html)) {
      if (/^[\w.~+/=-]{16,}$/.test(value)) secrets.add(value);
    }
  };
  /** Submits a page's form, keeping its hidden inputs (CSRF tokens) and the cookies set. */
  const submit = async (page: Response, fields: Record<string, string>, at: string | URL) => {
    keepHidden(await page.clone().text());
    const answer = await browser.submit(page, fields, at);
    secrets.add(...browser.cookies.values());
    return answer;
  };
  const wrongPassword = `wrong-${randomBytes(8).toString('hex')}`;
  secrets.add(wrongPassword);
  const refused = await submit(
    await browser.fetch(authorize),
    { username: 'alice', password: wrongPassword },
    authorize,
  );
  expect(refused.headers.get('location')).toBeNull(); // not signed in
  const signedIn = await submit(
    await browser.fetch(authorize),
    { username: 'alice', password: 'alice-password' },
    authorize,
  );
  const consent = [302, 303].includes(signedIn.status)
    ? await browser.fetch(new URL(signedIn.headers.get('location')!, authorize))
    : signedIn;
  const approved = await submit(consent, { decision: 'approve' }, authorize);
  const code = new URL(approved.headers.get('location')!).searchParams.get('code');
  expect(code).toBeTruthy();
  secrets.add(code);
  const asWeb = { Authorization: basic('demo-web', 'demo-web-secret') };
  const issued = await call(
    '/token',
    postForm(
      {
        grant_type: 'authorization_code',
        code: code!,
        redirect_uri: REDIRECT,
        code_verifier: verifier,
      },
      asWeb,
    ),
  );
  expect(issued.status).toBe(200);
  const tokens = await json(issued);
  secrets.add(tokens.access_token, tokens.refresh_token, tokens.id_token);
  expect(tokens.id_token).toBeTruthy();

  // refresh_token (client_secret_post, at the alias path), then a reuse of the old one
  const refreshed = await call(
    '/oauth/token',
    postForm({
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token!,
      client_id: 'demo-web',
      client_secret: 'demo-web-secret',
    }),
  );
  expect(refreshed.status).toBe(200);
  const rotated = await json(refreshed);
  secrets.add(rotated.access_token, rotated.refresh_token, rotated.id_token);
  // a wrong client secret
  const wrongSecret = `wrong-secret-${randomBytes(8).toString('hex')}`;
  secrets.add(wrongSecret);
  const badClient = await call(
    '/token',
    postForm(
      { grant_type: 'client_credentials' },
      { Authorization: basic('demo-service', wrongSecret) },
    ),
  );
  expect(badClient.status).toBe(401);

  // userinfo, introspection and revocation carry tokens too
  expect(
    (await call('/userinfo', { headers: { Authorization: `Bearer ${rotated.access_token}` } }))
      .status,
  ).toBe(200);
  const introspected = await call('/introspect', postForm({ token: rotated.access_token! }, asWeb));
  expect(await introspected.json()).toMatchObject({ active: true });
  const revoked = await call('/revoke', postForm({ token: rotated.refresh_token! }, asWeb));
  expect(revoked.status).toBe(200);
  // the first refresh token again: refused (rotation)
  const reuse = await call(
    '/token',
    postForm({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token! }, asWeb),
  );
  expect(reuse.status).toBe(400);

  // client_credentials, used as a bearer token to write
  const asService = { Authorization: basic('demo-service', 'demo-service-secret') };
  const service = await call(
    '/token',
    postForm(
      { grant_type: 'client_credentials', scope: 'read:messages write:messages' },
      asService,
    ),
  );
  expect(service.status).toBe(200);
  const serviceToken = (await json(service)).access_token!;
  secrets.add(serviceToken);

  // the device flow, approved by bob at /device/verify (one wrong code first)
  const device = await call(
    '/device',
    postForm({ client_id: 'demo-device', scope: 'openid read:messages offline_access' }),
  );
  expect(device.status).toBe(200);
  const started = await json(device);
  secrets.add(started.device_code, started.user_code, started.user_code!.replace('-', ''));
  const verifyUrl = `${url}/device/verify`;
  const second = new Browser(url);
  const onSecond = async (page: Response, fields: Record<string, string>) => {
    keepHidden(await page.clone().text());
    const answer = await second.submit(page, fields, verifyUrl);
    secrets.add(...second.cookies.values());
    return answer;
  };
  let page = await onSecond(await second.fetch(verifyUrl), {
    username: 'bob',
    password: 'bob-password',
  });
  if ([302, 303].includes(page.status)) {
    page = await second.fetch(new URL(page.headers.get('location')!, verifyUrl));
  }
  await onSecond(page, { user_code: 'BCDF-GHJK', decision: 'approve' }); // a wrong code
  page = await second.fetch(verifyUrl);
  // the first Allow shows the device and its scopes, the second approves (RFC 8628 §5.4)
  const typed = { user_code: started.user_code!, decision: 'approve' };
  const approvedDevice = await onSecond(await onSecond(page, typed), typed);
  expect(approvedDevice.status).toBeLessThan(400);
  const polled = await call(
    '/token',
    postForm({
      grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
      device_code: started.device_code!,
      client_id: 'demo-device',
    }),
  );
  expect(polled.status).toBe(200);
  const deviceTokens = await json(polled);
  secrets.add(deviceTokens.access_token, deviceTokens.refresh_token, deviceTokens.id_token);

  // credentials in query strings: the access log writes paths without them
  expect((await call(`/api/me?api_key=${apiKey}`)).status).toBe(401);
  // RFC 6750 §2.3 query tokens are refused outright
  expect((await call(`/api/me?access_token=${serviceToken}`)).status).toBe(400);
  expect((await call(`/no/such/page?password=${wrongPassword}`)).status).toBe(404);
  // a target in absolute form (RFC 9112 §3.2.2) with userinfo: logged by its path alone
  const port = Number(new URL(url).port);
  const proxied = await absoluteFormGet(port, `/api/me?api_key=${apiKey}`, {
    userinfo: 'alice:alice-password',
    headers: { 'X-API-Key': apiKey, 'X-Request-ID': 'absolute-form' },
  });
  expect(proxied.status).toBe(200);
  const lost = await absoluteFormGet(port, `/no/such/page?password=${wrongPassword}`, {
    userinfo: `bob:${wrongPassword}`,
  });
  expect(lost.status).toBe(404);

  // every authentication method on /api/me, and refused ones
  const me = (headers: Record<string, string>) => call('/api/me', { headers });
  expect((await me({ Authorization: `Bearer ${serviceToken}` })).status).toBe(200);
  expect((await me({ Authorization: `Bearer ${deviceTokens.access_token}` })).status).toBe(200);
  expect((await me({ 'X-API-Key': apiKey })).status).toBe(200);
  expect((await me({ Authorization: basic('bob', 'bob-password') })).status).toBe(200);
  expect((await me({ Authorization: basic('bob', wrongPassword) })).status).toBe(401);
  const [head, body, signature] = serviceToken.split('.');
  const forged = `${head}.${body}.${signature!.slice(0, -4)}AAAA`;
  expect((await me({ Authorization: `Bearer ${forged}` })).status).toBe(401);
  expect((await me({ Authorization: `Bearer ${tokens.id_token}` })).status).toBe(401);
  const unknownKey = `${apiKey.slice(0, 8)}${randomBytes(24).toString('base64url')}`;
  secrets.add(unknownKey);
  expect((await me({ 'X-API-Key': unknownKey })).status).toBe(401);
  const login = (username: string, password: string) =>
    call('/login', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Origin: url },
      body: JSON.stringify({ username, password }),
    });
  expect((await login('alice', wrongPassword)).status).toBe(401);
  expect((await login('nobody', wrongPassword)).status).toBe(401);
  const session = await login('alice', 'alice-password');
  expect(session.status).toBe(204);
  const cookie = session.headers.get('set-cookie')!.split(';')[0]!;
  secrets.add(cookie.slice('session='.length));
  expect((await me({ Cookie: cookie })).status).toBe(200);

  // an API key made and revoked; a webhook subscription whose receiver fails
  const created = await call('/api/keys', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Cookie: cookie, Origin: url },
    body: '{"name":"secrets run"}',
  });
  expect(created.status).toBe(201);
  const madeKey = await json(created);
  secrets.add(madeKey.key);
  expect((await me({ 'X-API-Key': madeKey.key! })).status).toBe(200);
  expect(
    (
      await call(`/api/keys/${madeKey.id}`, {
        method: 'DELETE',
        headers: { 'X-API-Key': apiKey },
      })
    ).status,
  ).toBe(204);
  expect((await me({ 'X-API-Key': madeKey.key! })).status).toBe(401);
  const receiver = await resettingReceiver();
  const hook = await call('/api/webhooks', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${serviceToken}` },
    body: JSON.stringify({ url: receiver.url }),
  });
  expect(hook.status).toBe(201);
  secrets.add((await json(hook)).secret);

  // live channels with credentials: an event stream and a WebSocket
  const events = await connectEvents({ port }, '/events', { 'X-API-Key': apiKey });
  expect(events.status).toBe(200);
  const ws = new WebSocket(`${url.replace('http', 'ws')}/ws`, {
    headers: { Authorization: `Bearer ${deviceTokens.access_token}` },
  });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const posted = await call('/api/messages', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${serviceToken}` },
    body: '{"text":"a message for the failing webhook"}',
  });
  expect(posted.status).toBe(201);
  await events.until((text) => text.includes('failing webhook'), 5000);
  // every attempt fails: the first and the two retries of WEBHOOK_RETRY_SCHEDULE
  await vi.waitFor(() => expect(receiver.attempts()).toBe(3), { timeout: 8000, interval: 50 });
  events.destroy();
  ws.close();
  expect(
    (await call('/logout', { method: 'POST', headers: { Cookie: cookie, Origin: url } })).status,
  ).toBe(204);
}

/** The settings of both runs: failing deliveries retried fast. */
const SETTINGS = {
  LOG_LEVEL: 'trace',
  WEBHOOK_ALLOW_PRIVATE: '1',
  WEBHOOK_RETRY_SCHEDULE: '0.1,0.1',
  WEBHOOK_TIMEOUT: '1',
  RATE_LIMIT: '10000',
};

afterAll(async () => {
  await closeAll();
});

describe('secrets never reach the reference server’s output', () => {
  it('in memory, with a generated demo key: only its one announced line shows it', async () => {
    const server = await startReferenceServer(SETTINGS);
    const secrets = new Secrets();
    try {
      const line = /^demo API key \(owner alice, shown once\): (\S+)$/m.exec(server.output());
      expect(line).not.toBeNull();
      await fullRun(server, line![1]!, secrets);
    } finally {
      expect(await server.stop()).toBe(0);
    }
    const output = server.output();
    expect(output).toContain('listening on');
    expect(output).toContain('SIGTERM received');
    const [announced] = output.match(/^demo API key \(owner alice, shown once\): \S+\n/gm) ?? [];
    expect(output.split(announced!)).toHaveLength(2); // printed once
    expect(secrets.values.size).toBeGreaterThan(30);
    // the check itself finds a piece of a token (here a JWT's signature) in a line of output
    const jwt = [...secrets.values].find((v) => v.split('.').length === 3)!;
    expect(secrets.foundIn(`log: ${jwt.split('.')[2]!.slice(3, 22)}…`)).not.toEqual([]);
    expect(secrets.foundIn(output.replace(announced!, ''))).toEqual([]);
    // the access log did run: a line per request, each path without its query
    const logged = output
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { msg: string; req?: { url: string } });
    const requests = logged.filter((line) => line.msg === 'request completed');
    expect(requests.length).toBeGreaterThan(30);
    expect(requests.filter((line) => line.req!.url.includes('?'))).toEqual([]);
    // only paths: no scheme, authority or userinfo of a target in absolute form
    expect(requests.filter((line) => !line.req!.url.startsWith('/'))).toEqual([]);
    expect(requests.filter((line) => line.req!.url.includes('@'))).toEqual([]);
    const absolute = requests.find((line) => (line.req as { id?: string }).id === 'absolute-form');
    expect(absolute?.req).toMatchObject({ url: '/api/me' });
    expect(logged.some((line) => line.msg === 'a webhook delivery attempt failed')).toBe(true);
  }, 30_000);

  describe.skipIf(!hasRedis)('on Redis, with DEMO_API_KEY', () => {
    let redis: RedisServer;
    afterAll(async () => {
      await redis?.stop();
    });

    it('logs the 503s of a Redis outage without any credential sent with them', async () => {
      redis = await startRedis();
      const demoKey = `demo-${randomBytes(24).toString('base64url')}`;
      const server = await startReferenceServer({
        ...SETTINGS,
        REDIS_URL: redis.url,
        DEMO_API_KEY: demoKey,
      });
      const secrets = new Secrets();
      const before = server.output().length;
      try {
        await fullRun(server, demoKey, secrets);
        // Redis goes away: every kind of credential again, into answers that are logged
        await redis.kill();
        const answers = await Promise.all([
          fetch(`${server.url}/api/me`, { headers: { 'X-API-Key': demoKey } }),
          fetch(`${server.url}/api/messages`, {
            method: 'POST',
            headers: {
              'Content-Type': 'application/json',
              Authorization: basic('alice', 'alice-password'),
            },
            body: '{"text":"while Redis is away"}',
          }),
          fetch(
            `${server.url}/token`,
            postForm(
              { grant_type: 'client_credentials' },
              { Authorization: basic('demo-service', 'demo-service-secret') },
            ),
          ),
          fetch(`${server.url}/login`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json', Origin: server.url },
            body: '{"username":"bob","password":"bob-password"}',
          }),
        ]);
        expect(answers.map((a) => a.status)).toContain(503);
        // the 503s' causes, logged as pino error lines (level 50)
        await vi.waitFor(() => expect(server.output().slice(before)).toContain('"level":50'), {
          timeout: 5000,
        });
      } finally {
        expect(await server.stop()).toBe(0);
      }
      const output = server.output();
      expect(output).not.toMatch(/demo API key/);
      expect(secrets.foundIn(output)).toEqual([]);
    }, 30_000);
  });
});
