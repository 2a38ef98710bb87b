import { readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { parseReply, rawRequest } from '../helpers/http.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const fixtures = new URL('../fixtures/tls/', import.meta.url);

let server: RunningServer;
const json = { 'Content-Type': 'application/json' };
/** An operator-supplied demo key (any string works): `/api/*` needs a credential. */
const DEMO_KEY = 'demo-key-of-the-reference-suite-0123456789';
const auth = { 'X-API-Key': DEMO_KEY };

beforeAll(async () => {
  server = await startReferenceServer({ DEMO_API_KEY: DEMO_KEY });
});

afterAll(async () => {
  await server?.stop();
});

/** A request with the demo API key unless the caller sets `X-API-Key` itself. */
const api = (path: string, init: RequestInit = {}) =>
  fetch(`${server.url}${path}`, {
    ...init,
    headers: { ...auth, ...(init.headers as Record<string, string>) },
  });

interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  errors: { field: string; message: string }[];
}
const problemOf = async (res: Response) => (await res.json()) as Problem;

async function create(text = 'hello', channel?: string) {
  const res = await api('/api/messages', {
    method: 'POST',
    headers: json,
    body: JSON.stringify(channel === undefined ? { text } : { text, channel }),
  });
  expect(res.status).toBe(201);
  return { res, message: (await res.json()) as Record<string, string> };
}

describe('reference server: start-up and common headers', () => {
  it('prints the real listening address', () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.url).not.toMatch(/:0$/);
  });

  it('sends security headers and a request id on every answer, 404s included', async () => {
    for (const path of ['/api/messages', '/does-not-exist']) {
      const res = await api(path);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
    const notFound = await api('/does-not-exist');
    expect(notFound.status).toBe(404);
    expect(notFound.headers.get('content-type')).toBe('application/problem+json');
    const problem = await problemOf(notFound);
    expect(problem).toMatchObject({ status: 404, instance: '/does-not-exist' });
    expect(problem.type).toBeTypeOf('string');
    expect(problem.title).toBeTypeOf('string');
    expect(problem.detail).toBeTypeOf('string');
  });

  it('answers a request without Host, or with two, 400, on /api with the rate-limit fields', async () => {
    const port = Number(new URL(server.url).port);
    for (const hosts of ['', 'Host: a\r\nHost: b\r\n']) {
      const reply = parseReply(
        await rawRequest(port, `GET /api/me HTTP/1.1\r\n${hosts}Connection: close\r\n\r\n`),
      );
      expect(reply.status).toBe(400);
      expect(reply.headers['content-type']).toBe('application/problem+json');
      expect(reply.headers['x-ratelimit-limit']).toMatch(/^\d+$/);
      expect(reply.headers['x-ratelimit-remaining']).toMatch(/^\d+$/);
    }
  });

  it('answers Expect: 100-continue with a body over 1 MiB by the 413 itself, no 100', async () => {
    const port = Number(new URL(server.url).port);
    const text = await rawRequest(
      port,
      `POST /api/messages HTTP/1.1\r\nHost: x\r\nX-API-Key: ${DEMO_KEY}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 2000000\r\n' +
        'Expect: 100-continue\r\nConnection: close\r\n\r\n',
    );
    expect(text).not.toContain('100 Continue');
    expect(parseReply(text).status).toBe(413);
  });

  it('serves requests that ask to upgrade to HTTP/2 (curl --http2) as the HTTP/1.1 they also are', async () => {
    const port = Number(new URL(server.url).port);
    const h2c =
      'Upgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n';
    const me = parseReply(
      await rawRequest(
        port,
        `GET /api/me HTTP/1.1\r\nHost: x\r\n${h2c}X-API-Key: ${DEMO_KEY}\r\nConnection: close\r\n\r\n`,
      ),
    );
    expect(me.status).toBe(200);
    expect(JSON.parse(me.body)).toMatchObject({ sub: 'alice', method: 'api_key' });
    const form = 'grant_type=client_credentials';
    const basic = Buffer.from('demo-service:demo-service-secret').toString('base64');
    const token = parseReply(
      await rawRequest(
        port,
        `POST /token HTTP/1.1\r\nHost: x\r\n${h2c}Authorization: Basic ${basic}\r\n` +
          'Content-Type: application/x-www-form-urlencoded\r\n' +
          `Content-Length: ${form.length}\r\nConnection: close\r\n\r\n${form}`,
      ),
    );
    expect(token.status).toBe(200);
    expect(JSON.parse(token.body).access_token).toBeTypeOf('string');
  });

  it('answers CONNECT (a tunnel only a proxy gives) with a 501 problem and closes', async () => {
    const port = Number(new URL(server.url).port);
    const text = await rawRequest(
      port,
      'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n',
      { timeoutMs: 3000 },
    );
    const answer = parseReply(text);
    expect(answer.status).toBe(501);
    expect(answer.headers['content-type']).toBe('application/problem+json');
    expect(answer.headers['x-content-type-options']).toBe('nosniff');
    expect(answer.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(answer.headers.connection).toBe('close');
    expect(JSON.parse(answer.body)).toMatchObject({ status: 501 });
  });

  it("sends them on what node's parser refuses too (400, 431)", async () => {
    const port = Number(new URL(server.url).port);
    for (const [status, head] of [
      [400, 'GET /a b c\r\n\r\n'],
      [431, `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`],
    ] as const) {
      const answer = parseReply(await rawRequest(port, head, { tolerateReset: true }));
      expect(answer.status).toBe(status);
      expect(answer.headers['content-type']).toBe('application/problem+json');
      expect(answer.headers['x-content-type-options']).toBe('nosniff');
      expect(answer.headers['x-frame-options']).toBe('DENY');
      expect(answer.headers['content-security-policy']).toContain("default-src 'none'");
      expect(answer.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      expect(JSON.parse(answer.body)).toMatchObject({
        status,
        requestId: answer.headers['x-request-id'],
        instance: `urn:uuid:${answer.headers['x-request-id']}`,
      });
    }
  });

  it('serves its console page at / with a policy that allows no inline script', async () => {
    const page = await fetch(`${server.url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(await page.text()).toContain('src="/console.js"');
    for (const asset of ['/console.js', '/live.js', '/style.css']) {
      expect((await fetch(`${server.url}${asset}`)).status).toBe(200);
    }
  });

  it('keeps a sane caller X-Request-ID and replaces others', async () => {
    const kept = await api('/api/messages', { headers: { 'X-Request-ID': 'trace-1.2:3_x' } });
    expect(kept.headers.get('x-request-id')).toBe('trace-1.2:3_x');
    const replaced = await api('/api/messages', { headers: { 'X-Request-ID': 'bad id!' } });
    expect(replaced.headers.get('x-request-id')).not.toBe('bad id!');
  });

  it('puts rate-limit headers on /api/* only', async () => {
    const res = await api('/api/messages');
    expect(res.headers.get('x-ratelimit-limit')).toBe('100');
    // present, and a non-negative integer (Number(null) would be 0): at most the limit less
    // this request
    const remaining = res.headers.get('x-ratelimit-remaining');
    expect(remaining).toMatch(/^(0|[1-9]\d*)$/);
    expect(Number(remaining)).toBeLessThanOrEqual(99);
    const other = await api('/elsewhere');
    expect(other.headers.get('x-ratelimit-limit')).toBeNull();
  });
});

describe('reference server: /api/messages', () => {
  it('creates a message: 201, Location, ETag and the message', async () => {
    const { res, message } = await create('first', 'random');
    expect(res.headers.get('location')).toBe(`/api/messages/${message.id}`);
    expect(res.headers.get('etag')).toMatch(/^"[^"]+"$/);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(message).toMatchObject({ text: 'first', channel: 'random', from: 'alice' });
    expect(Object.keys(message).sort()).toEqual(['channel', 'createdAt', 'from', 'id', 'text']);
    expect(new Date(message.createdAt!).toISOString()).toBe(message.createdAt);
    const { message: defaulted } = await create('second');
    expect(defaulted.channel).toBe('general');
  });

  it('lists messages', async () => {
    const { message } = await create('listed');
    const res = await api('/api/messages');
    expect(res.status).toBe(200);
    const list = (await res.json()) as { id: string }[];
    expect(list.some((m) => m.id === message.id)).toBe(true);
  });

  it('refuses invalid JSON (400), non-JSON (415), invalid fields (422) and big bodies (413)', async () => {
    const invalid = await api('/api/messages', {
      method: 'POST',
      headers: json,
      body: '{"text": ',
    });
    expect(invalid.status).toBe(400);
    expect(invalid.headers.get('content-type')).toBe('application/problem+json');

    const notJson = await api('/api/messages', {
      method: 'POST',
      headers: { 'Content-Type': 'text/plain' },
      body: 'hi',
    });
    expect(notJson.status).toBe(415);

    for (const body of [
      {},
      { text: '' },
      { text: 'x'.repeat(1001) },
      { text: 5 },
      { text: 'ok', channel: 7 },
      { text: 'ok', channel: 'a\u0001b' },
      [],
    ]) {
      const res = await api('/api/messages', {
        method: 'POST',
        headers: json,
        body: JSON.stringify(body),
      });
      expect(res.status, JSON.stringify(body)).toBe(422);
      const problem = await problemOf(res);
      expect(problem.errors.length).toBeGreaterThan(0);
      expect(problem.errors[0]).toEqual({ field: expect.any(String), message: expect.any(String) });
    }
    const textProblem = await problemOf(
      await api('/api/messages', { method: 'POST', headers: json, body: '{"text":""}' }),
    );
    expect(textProblem.errors[0]?.field).toBe('text');
    const atLimit = await api('/api/messages', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ text: '€'.repeat(1000) }),
    });
    expect(atLimit.status).toBe(201);

    const big = await api('/api/messages', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ text: 'x'.repeat(1024 * 1024) }),
    });
    expect(big.status).toBe(413);
    expect((await problemOf(big)).status).toBe(413);
  });

  it('reads one message with validators, 304 on If-None-Match and If-Modified-Since, HEAD alike', async () => {
    const { message } = await create('cached');
    const res = await api(`/api/messages/${message.id}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(message);
    const etag = res.headers.get('etag')!;
    const lastModified = res.headers.get('last-modified')!;
    expect(new Date(lastModified).getTime()).not.toBeNaN();

    const byEtag = await api(`/api/messages/${message.id}`, { headers: { 'If-None-Match': etag } });
    expect(byEtag.status).toBe(304);
    expect(await byEtag.text()).toBe('');
    expect(byEtag.headers.get('etag')).toBe(etag);
    const byDate = await api(`/api/messages/${message.id}`, {
      headers: { 'If-Modified-Since': lastModified },
    });
    expect(byDate.status).toBe(304);
    const stale = await api(`/api/messages/${message.id}`, {
      headers: { 'If-None-Match': '"other"' },
    });
    expect(stale.status).toBe(200);

    const head = await api(`/api/messages/${message.id}`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('etag')).toBe(etag);
    expect(head.headers.get('content-length')).toBe(res.headers.get('content-length'));
    expect(await head.text()).toBe('');
  });

  it('replaces with PUT (all fields), patches with PATCH, honours If-Match', async () => {
    const { res: created, message } = await create('to change', 'a');
    const url = `/api/messages/${message.id}`;
    const partial = await api(url, { method: 'PUT', headers: json, body: '{"text":"only text"}' });
    expect(partial.status).toBe(422);
    expect((await problemOf(partial)).errors).toEqual([
      { field: 'channel', message: expect.any(String) },
    ]);

    const mismatch = await api(url, {
      method: 'PUT',
      headers: { ...json, 'If-Match': '"not-the-etag"' },
      body: '{"text":"x","channel":"b"}',
    });
    expect(mismatch.status).toBe(412);
    expect(mismatch.headers.get('content-type')).toBe('application/problem+json');

    const put = await api(url, {
      method: 'PUT',
      headers: { ...json, 'If-Match': created.headers.get('etag')! },
      body: '{"text":"replaced","channel":"b"}',
    });
    expect(put.status).toBe(200);
    expect(await put.json()).toMatchObject({
      id: message.id,
      text: 'replaced',
      channel: 'b',
      from: message.from,
    });
    expect(put.headers.get('etag')).not.toBe(created.headers.get('etag'));

    const patch = await api(url, { method: 'PATCH', headers: json, body: '{"text":"patched"}' });
    expect(patch.status).toBe(200);
    expect(await patch.json()).toMatchObject({ text: 'patched', channel: 'b' });
    const emptyPatch = await api(url, { method: 'PATCH', headers: json, body: '{}' });
    expect(emptyPatch.status).toBe(422);
  });

  it('deletes: 204, then 410; unknown ids 404', async () => {
    const { message } = await create('doomed');
    const url = `/api/messages/${message.id}`;
    const del = await api(url, { method: 'DELETE' });
    expect(del.status).toBe(204);
    expect(await del.text()).toBe('');
    for (const method of ['GET', 'PUT', 'PATCH', 'DELETE']) {
      const res = await api(url, {
        method,
        headers: json,
        body: method.startsWith('P') ? '{"text":"x","channel":"y"}' : undefined,
      });
      expect(res.status, method).toBe(410);
    }
    const unknown = await api('/api/messages/no-such-id');
    expect(unknown.status).toBe(404);
    expect((await problemOf(unknown)).instance).toBe('/api/messages/no-such-id');
  });

  it('answers other methods 405 with Allow, and OPTIONS 204 with Allow', async () => {
    const res = await api('/api/messages', { method: 'DELETE' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, POST, HEAD, OPTIONS');
    const item = await api('/api/messages/x', { method: 'POST' });
    expect(item.status).toBe(405);
    expect(item.headers.get('allow')).toBe('GET, PUT, PATCH, DELETE, HEAD, OPTIONS');
    const options = await api('/api/messages', { method: 'OPTIONS' });
    expect(options.status).toBe(204);
    const anonymous = await fetch(`${server.url}/api/messages`, { method: 'OPTIONS' });
    expect(anonymous.status).toBe(204);
    expect(anonymous.headers.get('allow')).toBe('GET, POST, HEAD, OPTIONS');
    expect(anonymous.headers.get('x-ratelimit-limit')).not.toBeNull();
    expect(options.headers.get('allow')).toBe('GET, POST, HEAD, OPTIONS');
    // the method is checked before the credential: 405 and 204 need none, on /events too
    const anonymousPatch = await fetch(`${server.url}/api/me`, { method: 'PATCH' });
    expect(anonymousPatch.status).toBe(405);
    expect(anonymousPatch.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
    expect(anonymousPatch.headers.get('x-ratelimit-remaining')).not.toBeNull();
    const events = await fetch(`${server.url}/events`, { method: 'OPTIONS' });
    expect(events.status).toBe(204);
    expect(events.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
    expect((await fetch(`${server.url}/events`, { method: 'DELETE' })).status).toBe(405);
    // a bad credential is still a 401, whatever the method
    const bad = await fetch(`${server.url}/api/me`, {
      method: 'PATCH',
      headers: { 'X-API-Key': 'not-a-key' },
    });
    expect(bad.status).toBe(401);
  });
});

describe('reference server: CORS', () => {
  it('answers a preflight from an allowed origin, with credentials, and not from others', async () => {
    const ok = await api('/api/messages', {
      method: 'OPTIONS',
      headers: {
        Origin: 'http://localhost:5173',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'content-type, authorization',
      },
    });
    expect(ok.status).toBe(204);
    expect(ok.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    expect(ok.headers.get('access-control-allow-credentials')).toBe('true');
    expect(ok.headers.get('access-control-allow-methods')).toContain('POST');
    expect(ok.headers.get('access-control-allow-headers')?.toLowerCase()).toContain(
      'authorization',
    );
    expect(ok.headers.get('access-control-max-age')).toBe('86400');
    // on /api/* a preflight tells the rate limit too, and is not counted by it
    const preflight = () =>
      fetch(`${server.url}/api/messages`, {
        method: 'OPTIONS',
        headers: { Origin: 'http://localhost:5173', 'Access-Control-Request-Method': 'POST' },
      });
    const first = await preflight();
    const second = await preflight();
    expect(first.status).toBe(204);
    expect(first.headers.get('x-ratelimit-limit')).toBe('100');
    expect(first.headers.get('x-ratelimit-remaining')).toMatch(/^\d+$/);
    expect(second.headers.get('x-ratelimit-remaining')).toBe(
      first.headers.get('x-ratelimit-remaining'),
    );

    const evil = await api('/api/messages', {
      method: 'OPTIONS',
      headers: {
        Origin: 'http://localhost:5173.evil.test',
        'Access-Control-Request-Method': 'POST',
      },
    });
    expect(evil.headers.get('access-control-allow-origin')).toBeNull();
    const actual = await api('/api/messages', { headers: { Origin: 'http://127.0.0.1:5173' } });
    expect(actual.headers.get('access-control-allow-origin')).toBe('http://127.0.0.1:5173');
    expect(actual.headers.get('access-control-expose-headers')).toContain('X-Request-ID');
  });
});

describe('reference server: settings', () => {
  it('limits /api/* per client with RATE_LIMIT and RATE_LIMIT_WINDOW: 429 with Retry-After', async () => {
    const limited = await startReferenceServer({
      RATE_LIMIT: '3',
      RATE_LIMIT_WINDOW: '30',
      DEMO_API_KEY: DEMO_KEY,
    });
    try {
      const statuses: number[] = [];
      let last: Response | undefined;
      for (let i = 0; i < 5; i++) {
        last = await fetch(`${limited.url}/api/messages`, { headers: auth });
        statuses.push(last.status);
      }
      expect(statuses).toEqual([200, 200, 200, 429, 429]);
      expect(last!.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(Number(last!.headers.get('retry-after'))).toBeLessThanOrEqual(30);
      expect(last!.headers.get('x-ratelimit-limit')).toBe('3');
      expect(last!.headers.get('x-ratelimit-remaining')).toBe('0');
      expect(last!.headers.get('content-type')).toBe('application/problem+json');
    } finally {
      await limited.stop();
    }
  });

  it('counts refused credentials against the client IP: guessing keys ends in 429', async () => {
    const limited = await startReferenceServer({ RATE_LIMIT: '3', RATE_LIMIT_WINDOW: '30' });
    try {
      const statuses: number[] = [];
      for (const guess of ['ptk_guess-1', 'ptk_guess-2', 'ptk_guess-3', 'ptk_guess-4']) {
        const res = await fetch(`${limited.url}/api/me`, { headers: { 'X-API-Key': guess } });
        statuses.push(res.status);
        await res.arrayBuffer();
      }
      const basic = await fetch(`${limited.url}/api/me`, {
        headers: { Authorization: `Basic ${Buffer.from('alice:wrong').toString('base64')}` },
      });
      statuses.push(basic.status);
      expect(statuses).toEqual([401, 401, 401, 429, 429]);
      expect(basic.headers.get('retry-after')).toMatch(/^\d+$/);
    } finally {
      await limited.stop();
    }
  });

  it('uses BASE_URL as given, a trailing slash included, as issuer and audience', async () => {
    const given = 'http://portico.test/';
    const other = await startReferenceServer({ BASE_URL: given, DEMO_API_KEY: DEMO_KEY });
    try {
      const metadata = (await (
        await fetch(`${other.url}/.well-known/openid-configuration`)
      ).json()) as Record<string, string>;
      expect(metadata.issuer).toBe(given);
      expect(metadata.token_endpoint).toBe('http://portico.test/token');
      expect(metadata.jwks_uri).toBe('http://portico.test/.well-known/jwks.json');
      const issued = await fetch(`${other.url}/token`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/x-www-form-urlencoded',
          Authorization: `Basic ${Buffer.from('demo-service:demo-service-secret').toString('base64')}`,
        },
        body: 'grant_type=client_credentials',
      });
      const { access_token: token } = (await issued.json()) as { access_token: string };
      const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString());
      expect(claims).toMatchObject({ iss: given, aud: given });
      const me = await fetch(`${other.url}/api/me`, {
        headers: { Authorization: `Bearer ${token}` },
      });
      expect(me.status).toBe(200);
    } finally {
      await other.stop();
    }
  });

  it('refuses to start in production without TLS or a trusted proxy', async () => {
    await expect(startReferenceServer({ NODE_ENV: 'production' })).rejects.toMatchObject({
      code: 1,
    });
  });

  it('says plainly that its port is taken, naming PORT, and exits 1', async () => {
    const taken = new URL(server.url).port;
    const refused = startReferenceServer({ PORT: taken });
    await expect(refused).rejects.toMatchObject({ code: 1 });
    const { out } = (await refused.catch((error: unknown) => error)) as { out: string };
    expect(out).toContain(`127.0.0.1:${taken} is already in use`);
    expect(out).toContain('PORT');
    expect(out).not.toContain('EADDRINUSE');
  });

  it('behind a trusted proxy in production: 308 to https for GET/HEAD, 403 for others, HSTS on https', async () => {
    const proxied = await startReferenceServer({
      NODE_ENV: 'production',
      TRUST_PROXY: '1',
      DEMO_API_KEY: DEMO_KEY,
    });
    try {
      const get = await fetch(`${proxied.url}/api/messages?x=1`, {
        redirect: 'manual',
        headers: { 'X-Forwarded-Proto': 'http' },
      });
      expect(get.status).toBe(308);
      // the same URL, only the scheme changed
      expect(get.headers.get('location')).toBe(
        `${proxied.url.replace(/^http:/, 'https:')}/api/messages?x=1`,
      );
      const post = await fetch(`${proxied.url}/api/messages`, {
        method: 'POST',
        headers: { 'X-Forwarded-Proto': 'http', ...json },
        body: '{"text":"x"}',
      });
      expect(post.status).toBe(403);
      expect(post.headers.get('content-type')).toBe('application/problem+json');
      // answered before the limit counts, and still told the caller's standing
      for (const early of [get, post]) {
        expect(early.headers.get('x-ratelimit-limit')).toBe('100');
        expect(early.headers.get('x-ratelimit-remaining')).toMatch(/^\d+$/);
      }
      const secure = await fetch(`${proxied.url}/api/messages`, {
        headers: { 'X-Forwarded-Proto': 'https', ...auth },
      });
      expect(secure.status).toBe(200);
      expect(secure.headers.get('strict-transport-security')).toMatch(/max-age=\d+/);
      // a WebSocket handshake that reached the proxy over plain http: 403 before the 101
      const handshake = (proto: string) =>
        new Promise<number>((resolve, reject) => {
          const ws = new WebSocket(`${proxied.url.replace('http', 'ws')}/ws`, {
            headers: { 'X-Forwarded-Proto': proto, ...auth },
          });
          ws.once('open', () => {
            ws.close();
            resolve(101);
          });
          ws.once('unexpected-response', (_req, res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          });
          ws.once('error', reject);
        });
      expect(await handshake('http')).toBe(403);
      expect(await handshake('https')).toBe(101);
    } finally {
      await proxied.stop();
    }
  });

  it('serves HTTPS only with TLS_CERT and TLS_KEY', async () => {
    const tls = await startReferenceServer({
      TLS_CERT: new URL('server.pem', fixtures).pathname,
      TLS_KEY: new URL('server.key', fixtures).pathname,
      DEMO_API_KEY: DEMO_KEY,
    });
    try {
      expect(tls.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      const ca = readFileSync(new URL('ca.pem', fixtures));
      const res = await new Promise<{ status: number; hsts: string | undefined }>(
        (resolve, reject) => {
          httpsRequest(
            `${tls.url}/api/messages`,
            { ca, servername: 'localhost', headers: auth },
            (r) => {
              r.resume();
              resolve({
                status: r.statusCode ?? 0,
                hsts: r.headers['strict-transport-security'] as string | undefined,
              });
            },
          )
            .on('error', reject)
            .end();
        },
      );
      expect(res.status).toBe(200);
      expect(res.hsts).toMatch(/max-age=/);
      await expect(fetch(tls.url.replace('https:', 'http:'))).rejects.toThrow();
    } finally {
      await tls.stop();
    }
  });

  it('shuts down gracefully on SIGTERM with exit code 0', async () => {
    const s = await startReferenceServer();
    await fetch(`${s.url}/api/messages`);
    const started = Date.now();
    expect(await s.stop('SIGTERM')).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  // `npm start` runs the script through a shell: dash (Debian's sh) keeps itself between npm
  // and node, and npm's forwarded SIGTERM then ended the shell and left node serving, orphaned.
  // The project's .npmrc names bash, which execs a single command.
  it.each(['SIGTERM', 'SIGINT'] as const)(
    '`npm start` hands %s to the server: graceful close, exit 0, nothing left listening',
    async (signal) => {
      const s = await startReferenceServer({}, 30_000, true);
      expect((await fetch(`${s.url}/.well-known/jwks.json`)).status).toBe(200);
      const started = Date.now();
      expect(await s.stop(signal)).toBe(0);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(s.output()).toContain(`${signal} received`);
      await expect(fetch(`${s.url}/.well-known/jwks.json`)).rejects.toThrow();
    },
    40_000,
  );
});
