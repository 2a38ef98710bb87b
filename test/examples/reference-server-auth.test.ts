import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type JWTPayload, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from '../helpers/http.js';
import { openSocket } from './live-clients.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const fixtures = new URL('../fixtures/tls/', import.meta.url);
const DEMO_KEY = 'demo-key-of-the-auth-suite-0123456789abcdef';
const json = { 'Content-Type': 'application/json' };
const ORIGIN = 'http://localhost:5173';

let server: RunningServer;
let dir: string;
let signingKey: KeyObject;
let kid: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'portico-ref-'));
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  signingKey = privateKey;
  writeFileSync(join(dir, 'signing.pem'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
  server = await startReferenceServer({
    DEMO_API_KEY: DEMO_KEY,
    SIGNING_KEY: join(dir, 'signing.pem'),
  });
  const jwks = (await (await fetch(`${server.url}/.well-known/jwks.json`)).json()) as {
    keys: { kid: string }[];
  };
  kid = jwks.keys[0]!.kid;
});

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const call = (path: string, init: RequestInit = {}) => fetch(`${server.url}${path}`, init);
const basic = (user: string, password: string) => ({
  Authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
});

/** An access token as the authorization server will issue it (RS256, typ at+jwt). */
function mint(
  claims: JWTPayload,
  options: { typ?: string; expiresIn?: string | number; key?: KeyObject } = {},
) {
  return new SignJWT({
    name: 'Alice Example',
    role: 'admin',
    scope: 'read:messages',
    client_id: 'demo-spa',
    ...claims,
  })
    .setProtectedHeader({ alg: 'RS256', typ: options.typ ?? 'at+jwt', kid })
    .setSubject(typeof claims.sub === 'string' ? claims.sub : 'alice')
    .setIssuer(server.url)
    .setAudience(server.url)
    .setIssuedAt()
    .setExpirationTime(options.expiresIn ?? '15m')
    .setJti(crypto.randomUUID())
    .sign(options.key ?? signingKey);
}

async function signIn(user = 'alice', password = `${user}-password`): Promise<string> {
  const res = await call('/login', {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ username: user, password }),
  });
  expect(res.status).toBe(204);
  const cookie = res.headers.get('set-cookie')!;
  return cookie.split(';')[0]!;
}

describe('/api/me with each mechanism', () => {
  it('refuses no credential with 401 and a challenge per scheme', async () => {
    const res = await call('/api/me');
    expect(res.status).toBe(401);
    const challenges = res.headers.get('www-authenticate') ?? '';
    expect(challenges).toContain('Bearer realm=');
    expect(challenges).toContain('Basic realm=');
    expect(challenges).toContain('charset="UTF-8"');
    expect(res.headers.get('content-type')).toBe('application/problem+json');
  });

  it('offers no Basic challenge to a page’s script, so the browser shows no password prompt', async () => {
    const fromPage = { 'Sec-Fetch-Site': 'same-origin', 'Sec-Fetch-Mode': 'cors' };
    const res = await call('/api/me', { headers: fromPage });
    expect(res.status).toBe(401);
    const challenges = res.headers.get('www-authenticate') ?? '';
    expect(challenges).toContain('Bearer realm=');
    expect(challenges).not.toContain('Basic');
    // fetch() always sends its own Sec-Fetch-Mode: a navigation goes through node:http
    const navigation = { 'sec-fetch-site': 'none', 'sec-fetch-mode': 'navigate' };
    const typed = await request(server.url, '/api/me', {
      headers: navigation,
    });
    expect(typed.status).toBe(401);
    expect(String(typed.headers['www-authenticate'])).toContain('Basic realm=');
  });

  it('answers for the owner of an API key', async () => {
    const res = await call('/api/me', { headers: { 'X-API-Key': DEMO_KEY } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      sub: 'alice',
      name: 'Alice Example',
      role: 'admin',
      scopes: ['read:messages', 'write:messages'],
      method: 'api_key',
    });
  });

  it('accepts a bearer access token and keeps to its scopes', async () => {
    const token = await mint({ sub: 'alice', scope: 'read:messages' });
    const me = await call('/api/me', { headers: { Authorization: `Bearer ${token}` } });
    expect(me.status).toBe(200);
    expect(await me.json()).toEqual({
      sub: 'alice',
      name: 'Alice Example',
      role: 'admin',
      scopes: ['read:messages'],
      method: 'bearer',
    });
    const list = await call('/api/messages', { headers: { Authorization: `Bearer ${token}` } });
    expect(list.status).toBe(200);
    const post = await call('/api/messages', {
      method: 'POST',
      headers: { ...json, Authorization: `Bearer ${token}` },
      body: '{"text":"hi"}',
    });
    expect(post.status).toBe(403);
    expect(post.headers.get('www-authenticate')).toContain('error="insufficient_scope"');
    expect(post.headers.get('www-authenticate')).toContain('scope="write:messages"');
  });

  it('keeps a credential without read:messages from every way of reading messages', async () => {
    const writeOnly = {
      Authorization: `Bearer ${await mint({ sub: 'alice', scope: 'write:messages' })}`,
    };
    const key = await call('/api/keys', {
      method: 'POST',
      headers: { ...json, 'X-API-Key': DEMO_KEY },
      body: '{"name":"write only","scopes":["write:messages"]}',
    });
    expect(key.status).toBe(201);
    const keyOnly = { 'X-API-Key': ((await key.json()) as { key: string }).key };
    for (const headers of [writeOnly, keyOnly]) {
      for (const [path, init] of [
        ['/api/messages', {}],
        ['/events', {}],
        [
          '/api/webhooks',
          { method: 'POST', headers: json, body: '{"url":"https://example.com/h"}' },
        ],
      ] as const) {
        const res = await call(path, { ...init, headers: { ...init.headers, ...headers } });
        expect(res.status, `${path} with ${Object.keys(headers)[0]}`).toBe(403);
        expect(res.headers.get('content-type')).toBe('application/problem+json');
        if ('Authorization' in headers) {
          expect(res.headers.get('www-authenticate')).toContain('scope="read:messages"');
        }
      }
      // the channel opens (it also relays chat), but a subscription would carry messages
      const socket = await openSocket(server.url, headers);
      // the control: a reader subscribed to the same channel (live once a ping sent after
      // the subscribe is answered)
      const reader = await openSocket(server.url, { 'X-API-Key': DEMO_KEY });
      try {
        reader.ws.send('{"type":"subscribe","channel":"general"}');
        reader.ws.send('{"type":"ping"}');
        await reader.next('pong');
        socket.ws.send('{"type":"subscribe","channel":"general"}');
        expect(await socket.next('error')).toEqual({
          type: 'error',
          code: 'forbidden',
          action: 'subscribe',
          channel: 'general',
        });
        const text = `not for the ${Object.keys(headers)[0]} writer to read back`;
        const made = await call('/api/messages', {
          method: 'POST',
          headers: { ...json, ...headers },
          body: JSON.stringify({ text }),
        });
        expect(made.status).toBe(201);
        // the push reached the reader: one to the writer went out at the same time, so
        // before the server answered a ping the writer sends now
        expect(await reader.next('push')).toMatchObject({ data: { text, channel: 'general' } });
        socket.ws.send('{"type":"ping"}');
        await socket.next('pong');
        expect(socket.received.filter((m) => m.type === 'push')).toEqual([]);
      } finally {
        socket.ws.close();
        reader.ws.close();
      }
    }
    // the same token with the scope reads all three ways
    const reader = {
      Authorization: `Bearer ${await mint({ sub: 'alice', scope: 'read:messages' })}`,
    };
    const stream = await call('/events', { headers: reader });
    expect(stream.status).toBe(200);
    await stream.body?.cancel();
  });

  it('tells an expired token from an invalid one, and refuses ID tokens', async () => {
    const expired = await mint({}, { expiresIn: Math.floor(Date.now() / 1000) - 60 });
    const res = await call('/api/me', { headers: { Authorization: `Bearer ${expired}` } });
    expect(res.status).toBe(401);
    expect(String(((await res.json()) as { type: string }).type)).toMatch(/expired/);
    expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');

    const { privateKey: other } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    for (const token of [
      await mint({}, { key: other }),
      await mint({}, { typ: 'JWT' }),
      'not.a.token',
    ]) {
      const bad = await call('/api/me', { headers: { Authorization: `Bearer ${token}` } });
      expect(bad.status).toBe(401);
      const problem = (await bad.json()) as { type: string; detail: string };
      expect(problem.type).toMatch(/invalid/);
      expect(problem.detail).not.toContain(token.slice(0, 20));
    }
  });

  it('accepts Basic credentials and refuses wrong ones', async () => {
    const ok = await call('/api/me', { headers: basic('bob', 'bob-password') });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({
      sub: 'bob',
      name: 'Bob Example',
      role: 'user',
      method: 'basic',
    });
    expect((await call('/api/me', { headers: basic('bob', 'nope') })).status).toBe(401);
    expect((await call('/api/me', { headers: basic('nobody', 'x') })).status).toBe(401);
  });
});

describe('sessions: /login and /logout', () => {
  it('signs in with JSON or a form and sets the session cookie with its attributes', async () => {
    const res = await call('/login', {
      method: 'POST',
      headers: json,
      body: '{"username":"alice","password":"alice-password"}',
    });
    expect(res.status).toBe(204);
    const cookie = res.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^session=[A-Za-z0-9_-]{43};/);
    for (const attribute of ['HttpOnly', 'Secure', 'SameSite=Strict', 'Path=/'])
      expect(cookie).toContain(attribute);
    const form = await call('/login', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'username=bob&password=bob-password',
    });
    expect(form.status).toBe(204);
    const me = await call('/api/me', {
      headers: { Cookie: form.headers.get('set-cookie')!.split(';')[0]! },
    });
    expect(await me.json()).toMatchObject({ sub: 'bob', method: 'session' });
  });

  it('refuses bad credentials with 401 and a challenge that does not prompt', async () => {
    const res = await call('/login', {
      method: 'POST',
      headers: json,
      body: '{"username":"alice","password":"wrong"}',
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBeTruthy();
    expect(res.headers.get('www-authenticate')).not.toMatch(/^Basic/);
    expect(res.headers.get('set-cookie')).toBeNull();
    const missing = await call('/login', {
      method: 'POST',
      headers: json,
      body: '{"username":"alice"}',
    });
    expect(missing.status).toBe(422);
    const wrongType = await call('/login', {
      method: 'POST',
      headers: json,
      body: '{"username":["alice"],"password":"alice-password"}',
    });
    expect(wrongType.status).toBe(422);
    expect(((await wrongType.json()) as { errors: unknown[] }).errors).toEqual([
      { field: 'username', message: 'must be a string' },
    ]);
    // a repeated field is refused, not read as its first value (parameter pollution)
    const repeated = await call('/login', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'username=bob&password=bob-password&password=x',
    });
    expect(repeated.status).toBe(400);
    expect(repeated.headers.get('content-type')).toBe('application/problem+json');
    expect(repeated.headers.get('set-cookie')).toBeNull();
  });

  it('signs out server-side and clears the cookie', async () => {
    const cookie = await signIn('alice');
    expect((await call('/api/me', { headers: { Cookie: cookie } })).status).toBe(200);
    const out = await call('/logout', { method: 'POST', headers: { Cookie: cookie } });
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toMatch(/^session=;.*Max-Age=0/);
    expect((await call('/api/me', { headers: { Cookie: cookie } })).status).toBe(401);
  });

  it('refuses state changes by cookie from another origin (CSRF)', async () => {
    const cookie = await signIn('alice');
    const post = (origin?: string) =>
      call('/api/messages', {
        method: 'POST',
        headers: { ...json, Cookie: cookie, ...(origin ? { Origin: origin } : {}) },
        body: '{"text":"from a page"}',
      });
    expect((await post('https://evil.example')).status).toBe(403);
    expect((await post(ORIGIN)).status).toBe(201);
    expect((await post()).status).toBe(201);
  });
});

describe('/api/keys', () => {
  it('lets an admin create a key shown once, list keys without secrets and revoke at once', async () => {
    const created = await call('/api/keys', {
      method: 'POST',
      headers: { ...json, 'X-API-Key': DEMO_KEY },
      body: '{"name":"ci","scopes":["read:messages"]}',
    });
    expect(created.status).toBe(201);
    const key = (await created.json()) as {
      id: string;
      key: string;
      name: string;
      scopes: string[];
    };
    expect(key).toMatchObject({ name: 'ci', scopes: ['read:messages'] });
    expect(key.key).toBeTypeOf('string');
    expect(created.headers.get('location')).toBe(`/api/keys/${key.id}`);

    const me = await call('/api/me', { headers: { 'X-API-Key': key.key } });
    expect(await me.json()).toMatchObject({
      sub: 'alice',
      method: 'api_key',
      scopes: ['read:messages'],
    });
    const write = await call('/api/messages', {
      method: 'POST',
      headers: { ...json, 'X-API-Key': key.key },
      body: '{"text":"x"}',
    });
    expect(write.status).toBe(403);

    const list = await call('/api/keys', { headers: { 'X-API-Key': DEMO_KEY } });
    const text = await list.text();
    expect(list.status).toBe(200);
    expect(text).toContain(key.id);
    expect(text).not.toContain(key.key);
    expect(text).not.toContain(DEMO_KEY);

    expect(
      (await call(`/api/keys/${key.id}`, { method: 'DELETE', headers: { 'X-API-Key': DEMO_KEY } }))
        .status,
    ).toBe(204);
    expect((await call('/api/me', { headers: { 'X-API-Key': key.key } })).status).toBe(401);
    expect(
      (await call(`/api/keys/${key.id}`, { method: 'DELETE', headers: { 'X-API-Key': DEMO_KEY } }))
        .status,
    ).toBe(404);
  });

  it('refuses other roles (403), and malformed or excessive scopes as failed validation (422)', async () => {
    const asBob = await call('/api/keys', {
      method: 'POST',
      headers: { ...json, ...basic('bob', 'bob-password') },
      body: '{}',
    });
    expect(asBob.status).toBe(403);
    const bad = await call('/api/keys', {
      method: 'POST',
      headers: { ...json, 'X-API-Key': DEMO_KEY },
      body: '{"scopes":["read messages"]}',
    });
    expect(bad.status).toBe(422);
    expect(await bad.json()).toMatchObject({
      status: 422,
      errors: [{ field: 'scopes', message: expect.any(String) }],
    });
    for (const scopes of ['[1]', '"read:messages"', '[""]']) {
      const res = await call('/api/keys', {
        method: 'POST',
        headers: { ...json, 'X-API-Key': DEMO_KEY },
        body: `{"scopes":${scopes}}`,
      });
      expect(res.status, scopes).toBe(422);
    }
    const beyond = await call('/api/keys', {
      method: 'POST',
      headers: { ...json, 'X-API-Key': DEMO_KEY },
      body: '{"scopes":["delete:everything"]}',
    });
    expect(beyond.status).toBe(422);
  });
});

describe('who may manage API keys', () => {
  it("needs an admin's full rights: a narrower credential of an admin cannot mint a wider key", async () => {
    const body = JSON.stringify({ scopes: ['read:messages', 'write:messages'] });
    const post = (headers: Record<string, string>) =>
      call('/api/keys', { method: 'POST', headers: { ...json, ...headers }, body });
    // alice signed in to an app with `openid` alone, and a read-only key of hers
    const openidOnly = { Authorization: `Bearer ${await mint({ scope: 'openid' })}` };
    const created = await post({ 'X-API-Key': DEMO_KEY });
    expect(created.status).toBe(201);
    const full = (await created.json()) as { id: string };
    const readOnlyKey = (await (
      await call('/api/keys', {
        method: 'POST',
        headers: { ...json, 'X-API-Key': DEMO_KEY },
        body: '{"scopes":["read:messages"]}',
      })
    ).json()) as { key: string };
    for (const narrow of [openidOnly, { 'X-API-Key': readOnlyKey.key }]) {
      const minted = await post(narrow);
      expect(minted.status).toBe(403);
      expect(minted.headers.get('content-type')).toBe('application/problem+json');
      expect((await call('/api/keys', { headers: narrow })).status).toBe(403);
      const revoked = await call(`/api/keys/${full.id}`, { method: 'DELETE', headers: narrow });
      expect(revoked.status).toBe(403);
    }
    // a token issued to a client may not, even with the full rights: keys are managed with the
    // user's own credentials, and a key minted with a delegated token would outlive its grant
    const fullToken = await mint({ scope: 'openid read:messages write:messages' });
    const delegated = await post({ Authorization: `Bearer ${fullToken}` });
    expect(delegated.status).toBe(403);
    expect(delegated.headers.get('content-type')).toBe('application/problem+json');
    expect(
      (await call('/api/keys', { headers: { Authorization: `Bearer ${fullToken}` } })).status,
    ).toBe(403);
    // the user's own password may, as the demo key may
    expect((await post(basic('alice', 'alice-password'))).status).toBe(201);
    const gone = await call(`/api/keys/${full.id}`, {
      method: 'DELETE',
      headers: { 'X-API-Key': DEMO_KEY },
    });
    expect(gone.status).toBe(204);
  });
});

describe('who may change a message', () => {
  const create = async (headers: Record<string, string>) => {
    const res = await call('/api/messages', {
      method: 'POST',
      headers: { ...json, ...headers },
      body: JSON.stringify({ text: 'mine' }),
    });
    expect(res.status).toBe(201);
    return (await res.json()) as { id: string; from: string };
  };
  const change = (id: string, method: string, headers: Record<string, string>) =>
    call(`/api/messages/${id}`, {
      method,
      headers: { ...json, ...headers },
      ...(method === 'DELETE' ? {} : { body: JSON.stringify({ text: 'changed', channel: 'c' }) }),
    });

  it('lets its author change it, an admin and a service too, and refuses another user (403)', async () => {
    const bob = basic('bob', 'bob-password');
    const admin = { 'X-API-Key': DEMO_KEY };
    const byAlice = await create(admin);
    expect(byAlice.from).toBe('alice');
    for (const method of ['PUT', 'PATCH', 'DELETE']) {
      const refused = await change(byAlice.id, method, bob);
      expect(refused.status, method).toBe(403);
      expect(refused.headers.get('content-type')).toBe('application/problem+json');
      expect(await refused.json()).toMatchObject({
        status: 403,
        instance: `/api/messages/${byAlice.id}`,
      });
    }
    // untouched: alice's text is still there
    const kept = await call(`/api/messages/${byAlice.id}`, { headers: admin });
    expect(((await kept.json()) as { text: string }).text).toBe('mine');

    const byBob = await create(bob);
    expect((await change(byBob.id, 'PATCH', bob)).status).toBe(200);
    expect((await change(byBob.id, 'PUT', admin)).status).toBe(200); // an admin
    // a service (client credentials: no user, no role) acts for the system
    const token = await mint({
      sub: 'demo-service',
      client_id: 'demo-service',
      scope: 'write:messages read:messages',
      name: undefined,
      role: undefined,
    });
    expect((await change(byBob.id, 'PATCH', { Authorization: `Bearer ${token}` })).status).toBe(
      200,
    );
    expect((await change(byBob.id, 'DELETE', bob)).status).toBe(204);
    // a message that is not there is 404 for anyone, before any question of who
    expect((await change('no-such-id', 'DELETE', bob)).status).toBe(404);
  });
});

describe('settings that shape authentication', () => {
  it('rate-limits per API key, per user and per client IP separately', async () => {
    const limited = await startReferenceServer({ RATE_LIMIT: '2', DEMO_API_KEY: DEMO_KEY });
    try {
      const statuses = async (headers: Record<string, string>) => {
        const out: number[] = [];
        for (let i = 0; i < 3; i++)
          out.push((await fetch(`${limited.url}/api/me`, { headers })).status);
        return out;
      };
      expect(await statuses({ 'X-API-Key': DEMO_KEY })).toEqual([200, 200, 429]);
      expect(await statuses(basic('alice', 'alice-password'))).toEqual([200, 200, 429]);
      expect(await statuses(basic('bob', 'bob-password'))).toEqual([200, 200, 429]);
    } finally {
      await limited.stop();
    }
  });

  it('generates and prints a demo API key once when DEMO_API_KEY is unset', async () => {
    const fresh = await startReferenceServer();
    try {
      const match = /demo API key[^:]*: (\S+)/.exec(fresh.output());
      expect(match).not.toBeNull();
      const res = await fetch(`${fresh.url}/api/me`, { headers: { 'X-API-Key': match![1]! } });
      expect(await res.json()).toMatchObject({ sub: 'alice', method: 'api_key' });
      expect(fresh.output().split(match![1]!).length - 1).toBe(1);
    } finally {
      await fresh.stop();
    }
  });

  it('authenticates a client certificate from TLS_CA as its CN (mtls)', async () => {
    const tls = await startReferenceServer({
      TLS_CERT: new URL('server.pem', fixtures).pathname,
      TLS_KEY: new URL('server.key', fixtures).pathname,
      TLS_CA: new URL('ca.pem', fixtures).pathname,
    });
    try {
      const ca = readFileSync(new URL('ca.pem', fixtures));
      const get = (client: string) =>
        new Promise<{ status: number; body: string }>((resolve, reject) => {
          httpsRequest(
            `${tls.url}/api/me`,
            {
              ca,
              servername: 'localhost',
              cert: readFileSync(new URL(`${client}.pem`, fixtures)),
              key: readFileSync(new URL(`${client}.key`, fixtures)),
            },
            (r) => {
              let body = '';
              r.on('data', (d: Buffer) => {
                body += d;
              });
              r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
            },
          )
            .on('error', reject)
            .end();
        });
      const alice = await get('client');
      expect(alice.status).toBe(200);
      expect(JSON.parse(alice.body)).toMatchObject({
        sub: 'alice',
        name: 'Alice Example',
        method: 'mtls',
      });
      const stranger = await get('client-other-ca');
      expect(stranger.status).toBe(401);
    } finally {
      await tls.stop();
    }
  });
});
