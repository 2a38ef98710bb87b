// Origins that only look allowed, and preflights that ask for more than is allowed: against
// cors({ origins: [...] }) in process and the reference server started with CORS_ORIGINS.
// None may get Access-Control-Allow-Origin (or any Access-Control-* header), every answer
// varies on Origin, none is a 5xx, and the servers keep answering.
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Middleware } from '../../src/core/compose.js';
import { sendJson } from '../../src/core/send.js';
import { cors, DEFAULT_CORS_ALLOWED_HEADERS } from '../../src/cors/index.js';
import { type RunningServer, startReferenceServer } from '../examples/spawn-server.js';
import { closeAll, parseReply, rawRequest, request, serve } from '../helpers/http.js';

const APP = 'https://example.com';
const DEV = 'http://localhost:5173';
const DEMO_KEY = 'demo-key-of-the-hostile-origins-suite-0123456789';

let ref: RunningServer;
let exact: string;
let patterned: string;
let predicate: string;
const asked: string[] = [];

const ok: Middleware = (_req, res) => sendJson(res, 200, { ok: true });

beforeAll(async () => {
  const started = startReferenceServer({
    DEMO_API_KEY: DEMO_KEY,
    CORS_ORIGINS: `${APP},${DEV}`,
    RATE_LIMIT: '100000',
  });
  exact = (await serve([cors({ origins: [APP, DEV], credentials: true }), ok])).url;
  patterned = (
    await serve([cors({ origins: [/https:\/\/[a-z0-9-]+\.example\.com/], credentials: true }), ok])
  ).url;
  predicate = (
    await serve([
      cors({
        origins: (origin) => {
          asked.push(origin);
          return origin === APP;
        },
        credentials: true,
      }),
      ok,
    ])
  ).url;
  ref = await started;
});

afterAll(async () => {
  await closeAll();
  await ref?.stop();
});

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
}

const call = async (base: string, path: string, method: string, headers: OutgoingHttpHeaders) => {
  const reply = await request(base, path, { method, headers });
  return { status: reply.status, headers: reply.headers } satisfies Answer;
};

const accessControl = (headers: IncomingHttpHeaders) =>
  Object.keys(headers).filter((name) => name.startsWith('access-control-'));

function expectRefused(answer: Answer, status: number): void {
  expect(answer.status).toBe(status);
  expect(answer.headers['access-control-allow-origin']).toBeUndefined();
  expect(accessControl(answer.headers)).toEqual([]);
  expect(String(answer.headers.vary ?? '')).toMatch(/\bOrigin\b/);
}

const preflight = (origin: string | string[], extra: OutgoingHttpHeaders = {}) => ({
  Origin: origin,
  'Access-Control-Request-Method': 'PUT',
  'Access-Control-Request-Headers': 'content-type, authorization',
  ...extra,
});

/** Origins that resemble an allowed one (https://example.com, http://localhost:5173). */
const LOOK_ALIKES: [string, string | string[]][] = [
  ['a suffix domain', 'https://example.com.evil.net'],
  ['a prefixed domain', 'https://evil-example.com'],
  ['a sub-domain', 'https://www.example.com'],
  ['the other scheme', 'http://example.com'],
  ['wss instead of https', 'wss://example.com'],
  ['the default port spelt out', 'https://example.com:443'],
  ['another port', 'https://example.com:8443'],
  ['the dev origin on another port', 'http://localhost:5174'],
  ['the dev origin as 127.0.0.1', 'http://127.0.0.1:5173'],
  ['the dev origin over https', 'https://localhost:5173'],
  ['null', 'null'],
  ['an upper-case host', 'https://EXAMPLE.COM'],
  ['an upper-case scheme', 'HTTPS://example.com'],
  ['a mixed-case host', 'https://Example.com'],
  ['a trailing slash', 'https://example.com/'],
  ['a path', 'https://example.com/app'],
  ['a query', 'https://example.com?x=1'],
  ['a fragment', 'https://example.com#x'],
  ['a trailing dot', 'https://example.com.'],
  ['user info', 'https://user:pass@example.com'],
  ['user info naming the allowed host', 'https://example.com@evil.net'],
  ['a percent-encoded NUL', 'https://example.com%00.evil.net'],
  ['a backslash', 'https://evil.net\\example.com'],
  ['inner whitespace', 'https://example .com'],
  ['a tab inside', 'https://example.com\t.evil.net'],
  ['a list of two origins', `${APP}, https://evil.net`],
  ['the allowed origin twice as a list', `${APP}, ${APP}`],
  ['a space-separated origin list', `https://evil.net ${APP}`],
  ['two Origin header lines', [APP, 'https://evil.net']],
  ['two equal Origin header lines', [APP, APP]],
  ['a wildcard', '*'],
  ['an empty origin', ''],
  ['a file origin', 'file://'],
  ['an extension origin', 'chrome-extension://example.com'],
  ['a punycode look-alike', 'https://xn--exmple-cua.com'],
  ['latin-1 bytes', 'https://ex\xe4mple.com'],
  ['a very long origin', `https://${'a'.repeat(8000)}.example.com`],
  ['a very long suffix', `${APP}${'.evil'.repeat(1500)}`],
];

describe('cors({ origins: [...] }): look-alike origins', () => {
  it.each(LOOK_ALIKES)('refuses %s on a request and on a preflight', async (_n, origin) => {
    expectRefused(await call(exact, '/things', 'GET', { Origin: origin }), 200);
    expectRefused(await call(exact, '/things', 'POST', { Origin: origin }), 200);
    expectRefused(await call(exact, '/things', 'OPTIONS', preflight(origin)), 204);
  });

  it('lets surrounding whitespace through: the HTTP parser strips it (RFC 9110 §5.5)', async () => {
    for (const origin of [` ${APP}`, `${APP} `, `\t${APP}\t`]) {
      const answer = await call(exact, '/things', 'GET', { Origin: origin });
      expect(answer.headers['access-control-allow-origin']).toBe(APP);
    }
  });

  it('still serves the allowed origins', async () => {
    for (const origin of [APP, DEV]) {
      const answer = await call(exact, '/things', 'GET', { Origin: origin });
      expect(answer.headers['access-control-allow-origin']).toBe(origin);
      expect(answer.headers['access-control-allow-credentials']).toBe('true');
      expect(answer.headers.vary).toBe('Origin');
    }
  });
});

describe('cors with a pattern: look-alike origins', () => {
  it.each([
    ['a suffix domain', 'https://a.example.com.evil.net'],
    ['a path that ends like the pattern', 'https://evil.net/.example.com'],
    ['a query that ends like the pattern', 'https://evil.net?.example.com'],
    ['user info before the host', 'https://a.example.com@evil.net'],
    ['a sub-sub-domain with a dot in the label', 'https://a.b.example.com'],
    ['the other scheme', 'http://a.example.com'],
    ['a port', 'https://a.example.com:444'],
    ['upper case', 'https://A.example.com'],
    ['null', 'null'],
    ['a list of two origins', 'https://a.example.com, https://evil.net'],
    ['a very long origin', `https://${'a'.repeat(8000)}.example.com.evil.net`],
  ])('refuses %s', async (_n, origin) => {
    expectRefused(await call(patterned, '/things', 'GET', { Origin: origin }), 200);
    expectRefused(await call(patterned, '/things', 'OPTIONS', preflight(origin)), 204);
  });

  it('answers a long run of the pattern’s characters quickly (no catastrophic backtracking)', async () => {
    const started = Date.now();
    const origin = `https://${'a-'.repeat(4000)}!.example.com`;
    expectRefused(await call(patterned, '/things', 'GET', { Origin: origin }), 200);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('still serves a matching origin', async () => {
    const answer = await call(patterned, '/things', 'GET', { Origin: 'https://app.example.com' });
    expect(answer.headers['access-control-allow-origin']).toBe('https://app.example.com');
  });
});

describe('cors with a function: look-alike origins', () => {
  it.each(LOOK_ALIKES)('refuses %s', async (_n, origin) => {
    expectRefused(await call(predicate, '/things', 'GET', { Origin: origin }), 200);
    expectRefused(await call(predicate, '/things', 'OPTIONS', preflight(origin)), 204);
  });

  it('never asks the function about null', () => {
    expect(asked.length).toBeGreaterThan(0);
    expect(asked).not.toContain('null');
    expect(asked).not.toContain('');
  });
});

describe('preflights asking for more than is allowed', () => {
  it.each([
    ['a method outside the list', 'CONNECT', 'content-type'],
    ['TRACE', 'TRACE', 'content-type'],
    ['an extension method', 'PROPFIND', 'content-type'],
    ['a lower-case method', 'put', 'content-type'],
    ['a header outside the list', 'PUT', 'x-evil'],
    ['Cookie as a header', 'PUT', 'cookie'],
    ['a wildcard header', 'PUT', '*'],
    ['a header list with junk', 'PUT', 'authorization,, ,x-evil , \u00e9'],
    ['a very long header list', 'PUT', Array.from({ length: 500 }, (_, i) => `x-h${i}`).join(',')],
  ])(
    'answers an allowed origin asking for %s with the fixed lists only',
    async (_n, method, headers) => {
      const answer = await call(exact, '/things', 'OPTIONS', {
        Origin: APP,
        'Access-Control-Request-Method': method,
        'Access-Control-Request-Headers': headers,
      });
      expect(answer.status).toBe(204);
      // the browser compares its request with these lists: nothing asked for is echoed
      const methods = String(answer.headers['access-control-allow-methods']).split(', ');
      const allowed = String(answer.headers['access-control-allow-headers']).toLowerCase();
      expect(methods).toEqual(['GET', 'HEAD', 'PUT', 'PATCH', 'POST', 'DELETE']);
      if (method !== 'PUT') expect(methods).not.toContain(method);
      const listed = DEFAULT_CORS_ALLOWED_HEADERS.map((h) => h.toLowerCase());
      expect(allowed.split(', ')).toEqual(listed);
      for (const name of headers.split(',').map((h) => h.trim().toLowerCase())) {
        if (!listed.includes(name)) expect(allowed.split(', ')).not.toContain(name);
      }
      expect(allowed).not.toContain('*');
      expect(String(answer.headers.vary)).toMatch(/\bOrigin\b/);
    },
  );

  it.each([
    ['an allowed method and headers', 'GET', 'content-type'],
    ['a forbidden method', 'CONNECT', 'x-evil'],
  ])(
    'answers a look-alike origin asking for %s with no CORS headers',
    async (_n, method, headers) => {
      const answer = await call(exact, '/things', 'OPTIONS', {
        Origin: 'https://example.com.evil.net',
        'Access-Control-Request-Method': method,
        'Access-Control-Request-Headers': headers,
      });
      expectRefused(answer, 204);
    },
  );
});

describe('the reference server with CORS_ORIGINS', () => {
  const get = (origin: string | string[]) =>
    call(ref.url, '/api/messages', 'GET', { Origin: origin, 'X-API-Key': DEMO_KEY });

  it.each(LOOK_ALIKES)('refuses %s on /api/messages and its preflight', async (_n, origin) => {
    expectRefused(await get(origin), 200);
    expectRefused(await call(ref.url, '/api/messages', 'OPTIONS', preflight(origin)), 204);
  });

  it.each([
    ['the token endpoint', '/token'],
    ['the discovery document', '/.well-known/openid-configuration'],
    ['the JWKS', '/.well-known/jwks.json'],
    ['an unknown path', '/nowhere'],
  ])('refuses a look-alike on %s as well', async (_n, path) => {
    const answer = await call(ref.url, path, 'OPTIONS', preflight('https://example.com.evil.net'));
    expectRefused(answer, 204);
    const plain = await call(ref.url, path, 'GET', { Origin: 'https://evil-example.com' });
    expect(plain.status).toBeLessThan(500);
    expect(accessControl(plain.headers)).toEqual([]);
    expect(String(plain.headers.vary)).toMatch(/\bOrigin\b/);
  });

  it('answers an Origin over the header limit with a 431 problem and no CORS headers', async () => {
    const answer = parseReply(
      await rawRequest(
        Number(new URL(ref.url).port),
        `GET /api/messages HTTP/1.1\r\nHost: x\r\nOrigin: https://${'a'.repeat(20_000)}.example.com\r\n\r\n`,
        { tolerateReset: true },
      ),
    );
    expect(answer.status).toBe(431);
    expect(answer.headers['content-type']).toBe('application/problem+json');
    expect(answer.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('answers a forbidden method and header from an allowed origin with its fixed lists', async () => {
    const answer = await call(ref.url, '/api/messages', 'OPTIONS', {
      Origin: APP,
      'Access-Control-Request-Method': 'TRACE',
      'Access-Control-Request-Headers': 'x-evil, cookie',
    });
    expect(answer.status).toBe(204);
    expect(answer.headers['access-control-allow-origin']).toBe(APP);
    expect(String(answer.headers['access-control-allow-methods'])).not.toContain('TRACE');
    const headers = String(answer.headers['access-control-allow-headers']).toLowerCase();
    expect(headers).not.toContain('x-evil');
    expect(headers).not.toContain('cookie');
  });

  it('still serves its allowed origins afterwards', async () => {
    expect(ref.child.exitCode).toBeNull();
    for (const origin of [APP, DEV]) {
      const answer = await get(origin);
      expect(answer.status).toBe(200);
      expect(answer.headers['access-control-allow-origin']).toBe(origin);
      expect(answer.headers['access-control-allow-credentials']).toBe('true');
      expect(String(answer.headers.vary)).toMatch(/\bOrigin\b/);
    }
  });
});
