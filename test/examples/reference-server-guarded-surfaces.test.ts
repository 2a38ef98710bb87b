// Issue 17, contract "Every surface guarded": webhooks end with their grant or key, API keys are
// managed with the user's own credentials only, credentialed answers are not cached, the https
// redirect never trusts Host, a refused code exchange does not spend the code, and PKCE is
// required of every client. Black-box attacks on a spawned reference server.
//
// "Revocation is forever" (a full store refuses new grants with 503 rather than forgetting a
// revocation) cannot be driven through 100k revocations from outside in a test of reasonable
// length: the library's unit tests of the OAuth stores cover it.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Browser } from '../helpers/browser.js';
import { closeAll, listen, request } from '../helpers/http.js';
import {
  asClient,
  authorizeUrl,
  basic,
  codeFor,
  JSON_TYPE,
  pause,
  pkcePair,
  revokeToken,
  SERVICE,
  SPA,
  signIn,
  type Tokens,
  throughAuthorize,
  userTokens,
  WEB,
} from './guarded-helpers.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const DEMO_KEY = 'demo-key-of-the-guarded-surfaces-suite-1';
const KEY = { 'X-API-Key': DEMO_KEY };
const ALICE = { Authorization: basic('alice', 'alice-password') };
const BOB = { Authorization: basic('bob', 'bob-password') };
let server: RunningServer;

beforeAll(async () => {
  server = await startReferenceServer({
    DEMO_API_KEY: DEMO_KEY,
    WEBHOOK_ALLOW_PRIVATE: '1',
    RATE_LIMIT: '1000',
  });
});
afterAll(async () => {
  await server?.stop();
  await closeAll();
});

const call = (method: string, path: string, headers: Record<string, string>, body?: unknown) =>
  fetch(`${server.url}${path}`, {
    method,
    headers: { ...JSON_TYPE, ...headers },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });

const bearer = (tokens: Tokens) => ({ Authorization: `Bearer ${tokens.access_token}` });

/** The subscriptions `GET /api/webhooks` lists for `headers` (a bare array, or its one array field). */
async function webhooksOf(headers: Record<string, string>): Promise<Record<string, unknown>[]> {
  const res = await call('GET', '/api/webhooks', headers);
  expect(res.status, 'GET /api/webhooks').toBe(200);
  const text = await res.text();
  const body = JSON.parse(text) as unknown;
  if (Array.isArray(body)) return body;
  const arrays = Object.values(body as object).filter(Array.isArray);
  expect(arrays, `one list in ${text}`).toHaveLength(1);
  return arrays[0] as Record<string, unknown>[];
}

/** A receiver that keeps every delivery's body. */
async function receiver() {
  const bodies: string[] = [];
  const listening = await listen((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => {
      body += chunk;
    });
    req.on('end', () => {
      bodies.push(body);
      res.writeHead(204).end();
    });
  });
  return { url: `${listening.url}/hook`, bodies };
}

async function subscribe(headers: Record<string, string>, url: string) {
  const res = await call('POST', '/api/webhooks', headers, { url });
  expect(res.status, `POST /api/webhooks ${url}`).toBe(201);
  return (await res.json()) as { id: string; secret: string };
}

describe('webhooks end with their grant', () => {
  it('a webhook made with a demo-web token is listed without its secret, and goes when the grant is revoked', async () => {
    const tokens = await userTokens(server.url, WEB, 'openid offline_access read:messages');
    const target = await receiver();
    const { id, secret } = await subscribe(bearer(tokens), target.url);

    const listRes = await call('GET', '/api/webhooks', bearer(tokens));
    expect(listRes.status).toBe(200);
    expect(await listRes.text()).not.toContain(secret);
    const mine = (await webhooksOf(bearer(tokens))).find((w) => w.id === id);
    expect(mine).toMatchObject({ id, url: target.url, events: expect.any(Array) });
    expect(mine).not.toHaveProperty('secret');
    // the user's subscriptions, whichever credential lists them
    expect((await webhooksOf(ALICE)).map((w) => w.id)).toContain(id);

    await revokeToken(server.url, WEB, tokens.refresh_token!);
    await vi.waitFor(
      async () => expect((await webhooksOf(ALICE)).map((w) => w.id)).not.toContain(id),
      {
        timeout: 1000,
        interval: 50,
      },
    );
    expect((await call('POST', '/api/messages', KEY, { text: 'after the grant' })).status).toBe(
      201,
    );
    await pause(300);
    expect(target.bodies).toEqual([]);
  });

  it('a webhook made with an API key goes when the key is deleted', async () => {
    const made = await call('POST', '/api/keys', KEY, { name: 'hooks' });
    expect(made.status).toBe(201);
    const key = (await made.json()) as { id: string; key: string };
    const { id } = await subscribe({ 'X-API-Key': key.key }, 'http://127.0.0.1:9/by-key');
    expect((await webhooksOf(ALICE)).map((w) => w.id)).toContain(id);
    expect((await call('DELETE', `/api/keys/${key.id}`, KEY)).status).toBe(204);
    await vi.waitFor(
      async () => expect((await webhooksOf(ALICE)).map((w) => w.id)).not.toContain(id),
      {
        timeout: 1000,
        interval: 50,
      },
    );
  });

  it('DELETE /api/webhooks/{id} needs read:messages of a bearer token, as creating one does', async () => {
    const reader = await userTokens(server.url, WEB, 'read:messages');
    const writer = await userTokens(server.url, WEB, 'write:messages');
    const { id } = await subscribe(bearer(reader), 'http://127.0.0.1:9/scoped');
    const refused = await call('DELETE', `/api/webhooks/${id}`, bearer(writer));
    expect(refused.status).toBe(403);
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    expect((await webhooksOf(ALICE)).map((w) => w.id)).toContain(id);
    expect((await call('DELETE', `/api/webhooks/${id}`, bearer(reader))).status).toBe(204);
    expect((await webhooksOf(ALICE)).map((w) => w.id)).not.toContain(id);
  });

  it('at most 10 subscriptions per user (the 11th: 422 with errors); the same URL twice: 409', async () => {
    const url = (i: number) => `http://127.0.0.1:9/bob-${i}`;
    const first = await subscribe(BOB, url(0));
    const twice = await call('POST', '/api/webhooks', BOB, { url: url(0) });
    expect(twice.status).toBe(409);
    expect(twice.headers.get('content-type')).toBe('application/problem+json');
    for (let i = 1; i < 10; i++) await subscribe(BOB, url(i));
    expect(await webhooksOf(BOB)).toHaveLength(10);
    const eleventh = await call('POST', '/api/webhooks', BOB, { url: url(10) });
    expect(eleventh.status).toBe(422);
    const problem = (await eleventh.json()) as { errors?: unknown[] };
    expect(problem.errors?.length).toBeGreaterThan(0);
    expect(await webhooksOf(BOB)).toHaveLength(10);
    // a limit, not a dead end: one removed, one more accepted
    expect((await call('DELETE', `/api/webhooks/${first.id}`, BOB)).status).toBe(204);
    await subscribe(BOB, url(10));
  });
});

describe('API keys are managed with the user’s own credentials', () => {
  it('refuses bearer tokens issued to clients (403 problem) on every method of /api/keys', async () => {
    const cookie = { Cookie: await signIn(server.url, 'alice') };
    const made = await call('POST', '/api/keys', cookie, { name: 'by session' });
    expect(made.status).toBe(201);
    const victim = (await made.json()) as { id: string; key: string };

    const delegated = await userTokens(server.url, WEB, 'openid read:messages write:messages');
    const service = await asClient(server.url, SERVICE, {
      grant_type: 'client_credentials',
      scope: 'read:messages write:messages',
    });
    expect(service.status).toBe(200);
    for (const headers of [bearer(delegated), bearer((await service.json()) as Tokens)]) {
      for (const [method, path] of [
        ['POST', '/api/keys'],
        ['GET', '/api/keys'],
        ['DELETE', `/api/keys/${victim.id}`],
      ] as const) {
        const res = await call(method, path, headers, method === 'POST' ? {} : undefined);
        expect(res.status, `${method} ${path}`).toBe(403);
        expect(res.headers.get('content-type')).toBe('application/problem+json');
      }
    }
    expect((await call('GET', '/api/me', { 'X-API-Key': victim.key })).status).toBe(200);
    // the user's own credentials, and an API key with her full rights, may
    expect((await call('POST', '/api/keys', ALICE, { name: 'by basic' })).status).toBe(201);
    expect((await call('POST', '/api/keys', KEY, { name: 'by key' })).status).toBe(201);
    expect((await call('DELETE', `/api/keys/${victim.id}`, cookie)).status).toBe(204);
  });
});

describe('credentialed answers', () => {
  it('carry Cache-Control no-store (or private) and a Vary naming the credential header', async () => {
    const cookie = await signIn(server.url, 'bob');
    const tokens = await userTokens(server.url, WEB, 'openid read:messages');
    const cases: [string, Record<string, string>, string][] = [
      ['/api/me', KEY, 'x-api-key'],
      ['/api/me', ALICE, 'authorization'],
      ['/api/me', { Cookie: cookie }, 'cookie'],
      ['/api/me', bearer(tokens), 'authorization'],
      ['/api/messages', KEY, 'x-api-key'],
      ['/api/messages/no-such-message', KEY, 'x-api-key'],
      ['/api/me', { 'X-API-Key': 'not-a-key-of-this-service-0123456789' }, 'x-api-key'],
      ['/userinfo', bearer(tokens), 'authorization'],
    ];
    for (const [path, headers, credential] of cases) {
      const res = await fetch(`${server.url}${path}`, { headers });
      await res.body?.cancel();
      const what = `${path} with ${Object.keys(headers)[0]} (${res.status})`;
      expect(res.headers.get('cache-control'), what).toMatch(/no-store|private/);
      const vary = (res.headers.get('vary') ?? '').toLowerCase().split(/\s*,\s*/);
      expect(vary, what).toContain(credential);
    }
  });
});

describe('the https redirect behind TRUST_PROXY', () => {
  it('is built from BASE_URL’s origin, never from Host, and is not cached', async () => {
    const proxied = await startReferenceServer({
      NODE_ENV: 'production',
      TRUST_PROXY: '1',
      BASE_URL: 'https://svc.example',
    });
    try {
      const attacks: [string, string, Record<string, string>][] = [
        ['GET', '/api/messages?x=1', { Host: 'evil.example' }],
        ['HEAD', '/authorize?client_id=demo-web', { Host: 'evil.example:8443' }],
        ['GET', '/', { Host: 'svc.example', 'X-Forwarded-Host': 'evil.example' }],
      ];
      for (const [method, path, headers] of attacks) {
        const reply = await request(proxied.url, path, {
          method,
          headers: { ...headers, 'X-Forwarded-Proto': 'http' },
        });
        expect(reply.status, `${method} ${path}`).toBe(308);
        expect(reply.headers.location).toBe(`https://svc.example${path}`);
        expect(reply.headers['cache-control']).toMatch(/no-store/);
      }
    } finally {
      await proxied.stop();
    }
  });
});

describe('authorization codes', () => {
  it('an exchange refused for another client, redirect_uri or verifier does not spend the code', async () => {
    const { code, verifier } = await codeFor(server.url, WEB, 'openid read:messages');
    const exchange = {
      grant_type: 'authorization_code',
      code,
      redirect_uri: WEB.redirectUri,
      code_verifier: verifier,
    };
    const byOtherPublic = await asClient(server.url, SPA, exchange);
    expect(byOtherPublic.status).toBe(400);
    expect(await byOtherPublic.json()).toMatchObject({ error: 'invalid_grant' });
    const byService = await asClient(server.url, SERVICE, exchange);
    expect(byService.status).toBe(400);
    expect(['invalid_grant', 'unauthorized_client']).toContain(
      ((await byService.json()) as { error: string }).error,
    );
    for (const wrong of [
      { redirect_uri: 'http://127.0.0.1:8080/other' },
      { code_verifier: pkcePair().verifier },
    ]) {
      const res = await asClient(server.url, WEB, { ...exchange, ...wrong });
      expect(res.status, JSON.stringify(wrong)).toBe(400);
      expect(await res.json()).toMatchObject({ error: 'invalid_grant' });
    }
    const redeemed = await asClient(server.url, WEB, exchange);
    expect(redeemed.status).toBe(200);
    expect(((await redeemed.json()) as Tokens).access_token).toBeTypeOf('string');
    // and still once only
    const again = await asClient(server.url, WEB, exchange);
    expect(await again.json()).toMatchObject({ error: 'invalid_grant' });
  });
});

describe('PKCE', () => {
  it('is required of every client using the code, confidential ones included (S256 only)', async () => {
    for (const client of [WEB, SPA]) {
      const variants: Record<string, string>[] = [
        {},
        { code_challenge: pkcePair().challenge, code_challenge_method: 'plain' },
      ];
      for (const params of variants) {
        const url = authorizeUrl(server.url, client, { scope: 'openid', state: 'pk', ...params });
        const back = await throughAuthorize(new Browser(server.url), url, client);
        const what = `${client.id} ${JSON.stringify(params)}`;
        expect(back.searchParams.get('error'), what).toBe('invalid_request');
        expect(back.searchParams.get('state'), what).toBe('pk');
        expect(back.searchParams.has('code'), what).toBe(false);
      }
    }
  });
});
