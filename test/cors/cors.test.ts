import type { IncomingHttpHeaders } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { Middleware } from '../../src/core/compose.js';
import { notFound } from '../../src/core/errors/errors.js';
import { sendJson } from '../../src/core/send.js';
import {
  cors,
  DEFAULT_CORS_ALLOWED_HEADERS,
  DEFAULT_CORS_EXPOSED_HEADERS,
  DEFAULT_CORS_METHODS,
  isPreflightRequest,
  type OriginAllowlist,
} from '../../src/cors/index.js';
import { silentLogger } from '../../src/diagnostics/index.js';
import { thrownTypeError } from '../helpers/errors.js';
import { closeAll, serve as listenOn, request } from '../helpers/http.js';

afterEach(closeAll);

const ok: Middleware = (_req, res) => sendJson(res, 200, { ok: true });

/** Serves `stack` until the end of the test; answers its base URL. */
async function serve(stack: Middleware[]): Promise<string> {
  return (await listenOn(stack, { logger: silentLogger })).url;
}

/** Sends `method` to `base` + `path` with `headers`. */
const call = (
  base: string,
  method: string,
  headers: Record<string, string> = {},
  path = '/things',
) => request(base, path, { method, headers });

const preflight = (origin: string, extra: Record<string, string> = {}) => ({
  Origin: origin,
  'Access-Control-Request-Method': 'PUT',
  'Access-Control-Request-Headers': 'authorization, content-type',
  ...extra,
});

function corsHeaders(headers: IncomingHttpHeaders): string[] {
  return Object.keys(headers).filter((name) => name.startsWith('access-control-'));
}

const APP = 'https://app.example.com';

describe('cors preflight', () => {
  it('answers an allowed origin with 204 and every header', async () => {
    const base = await serve([cors({ origins: [APP], credentials: true }), ok]);
    const res = await call(base, 'OPTIONS', preflight(APP));
    expect(res.status).toBe(204);
    expect(res.body).toBe('');
    expect(res.headers['content-length']).toBeUndefined();
    expect(res.headers['access-control-allow-origin']).toBe(APP);
    expect(res.headers['access-control-allow-credentials']).toBe('true');
    expect(res.headers['access-control-allow-methods']).toBe('GET, HEAD, PUT, PATCH, POST, DELETE');
    expect(res.headers['access-control-allow-headers']).toBe(
      'Authorization, Content-Type, X-API-Key, X-Request-ID, If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since, Last-Event-ID, Mcp-Session-Id, MCP-Protocol-Version',
    );
    expect(res.headers['access-control-max-age']).toBe('86400');
    expect(res.headers.vary).toBe(
      'Origin, Access-Control-Request-Method, Access-Control-Request-Headers',
    );
    expect(res.headers['access-control-expose-headers']).toBeUndefined();
  });

  it("lets a browser MCP client send its session and protocol version, and read the session's id", async () => {
    const base = await serve([cors({ origins: [APP] }), ok]);
    const pre = await call(base, 'OPTIONS', {
      Origin: APP,
      'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'content-type, mcp-protocol-version, mcp-session-id',
    });
    expect(pre.status).toBe(204);
    const allowed = String(pre.headers['access-control-allow-headers']).toLowerCase().split(', ');
    for (const name of ['mcp-session-id', 'mcp-protocol-version', 'last-event-id']) {
      expect(allowed).toContain(name);
    }
    const answer = await call(base, 'POST', { Origin: APP });
    const exposed = String(answer.headers['access-control-expose-headers']).split(', ');
    expect(exposed).toContain('Mcp-Session-Id');
    expect(exposed).toContain('WWW-Authenticate');
    expect(DEFAULT_CORS_EXPOSED_HEADERS).toContain('Mcp-Session-Id');
    expect(DEFAULT_CORS_ALLOWED_HEADERS).toEqual(
      expect.arrayContaining(['Mcp-Session-Id', 'MCP-Protocol-Version', 'Last-Event-ID']),
    );
  });

  it('answers before the routes run', async () => {
    let reached = false;
    const base = await serve([
      cors({ origins: [APP] }),
      () => {
        reached = true;
        throw notFound();
      },
    ]);
    const res = await call(base, 'OPTIONS', preflight(APP), '/nowhere');
    expect(res.status).toBe(204);
    expect(reached).toBe(false);
    expect(res.headers['access-control-allow-credentials']).toBeUndefined();
  });

  it('gives a disallowed origin 204 with Vary and no CORS headers', async () => {
    const base = await serve([cors({ origins: [APP], credentials: true }), ok]);
    const res = await call(base, 'OPTIONS', preflight('https://evil.test'));
    expect(res.status).toBe(204);
    expect(res.body).toBe('');
    expect(corsHeaders(res.headers)).toEqual([]);
    expect(res.headers.vary).toContain('Origin');
  });

  it('uses the configured lists and max age', async () => {
    const base = await serve([
      cors({
        origins: [APP],
        methods: ['GET', 'POST'],
        allowedHeaders: ['X-Custom'],
        maxAge: 600_000,
      }),
      ok,
    ]);
    const res = await call(base, 'OPTIONS', preflight(APP));
    expect(res.headers['access-control-allow-methods']).toBe('GET, POST');
    expect(res.headers['access-control-allow-headers']).toBe('X-Custom');
    expect(res.headers['access-control-max-age']).toBe('600');
  });

  it('writes maxAge, given in milliseconds, in whole seconds rounded down', async () => {
    for (const [maxAge, header] of [
      [1_999, '1'],
      ['999ms', '0'],
      [0, '0'],
    ] as const) {
      const base = await serve([cors({ origins: [APP], maxAge }), ok]);
      const res = await call(base, 'OPTIONS', preflight(APP));
      expect(res.headers['access-control-max-age'], String(maxAge)).toBe(header);
    }
  });

  it('refuses maxAge in seconds as the cors package takes it (600), and suggests `origins` for `origin`', () => {
    expect(() => cors({ origins: [APP], maxAge: 600 })).toThrow(
      'cors(): `maxAge` is 600 ms, which looks like seconds: did you mean 600_000?',
    );
    expect(() => cors({ origin: APP } as never)).toThrow(
      "cors(): unknown option `origin`. Did you mean `origins`? (the cors package's `origin` is portico's `origins`)",
    );
  });

  it('leaves an OPTIONS request without Access-Control-Request-Method to the routes', async () => {
    const base = await serve([cors({ origins: [APP] }), ok]);
    const res = await call(base, 'OPTIONS', { Origin: APP });
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe(APP);
  });

  it('omits Allow-Methods and Allow-Headers when their lists are empty', async () => {
    const base = await serve([cors({ origins: [APP], methods: [], allowedHeaders: [] }), ok]);
    const res = await call(base, 'OPTIONS', preflight(APP));
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe(APP);
    expect(res.headers['access-control-allow-methods']).toBeUndefined();
    expect(res.headers['access-control-allow-headers']).toBeUndefined();
    expect(res.headers['access-control-max-age']).toBe('86400');
  });

  it('leaves an OPTIONS request with Access-Control-Request-Method but no Origin to the routes', async () => {
    let reached = 0;
    const base = await serve([
      cors({ origins: [APP], credentials: true }),
      (req, res, next) => {
        reached++;
        return ok(req, res, next);
      },
    ]);
    const res = await call(base, 'OPTIONS', { 'Access-Control-Request-Method': 'PUT' });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ ok: true });
    expect(reached).toBe(1);
    expect(corsHeaders(res.headers)).toEqual([]);
    expect(res.headers.vary).toBe('Origin');
  });

  it('takes only OPTIONS for a preflight, not another method asking Access-Control-Request-Method', async () => {
    for (const origins of [[APP], () => true] as const) {
      const base = await serve([cors({ origins, credentials: true }), ok]);
      for (const method of ['GET', 'POST', 'PUT']) {
        const res = await call(base, method, preflight(APP));
        expect(res.status, method).toBe(200);
        expect(JSON.parse(res.body), method).toEqual({ ok: true });
        expect(res.headers['access-control-allow-origin'], method).toBe(APP);
        expect(res.headers['access-control-expose-headers'], method).toBe(
          DEFAULT_CORS_EXPOSED_HEADERS.join(', '),
        );
        expect(res.headers['access-control-allow-methods'], method).toBeUndefined();
        expect(res.headers['access-control-max-age'], method).toBeUndefined();
        expect(res.headers.vary, method).toBe('Origin');
      }
    }
  });
});

describe('cors actual requests', () => {
  it('marks answers to an allowed origin', async () => {
    const base = await serve([cors({ origins: [APP], credentials: true }), ok]);
    const res = await call(base, 'GET', { Origin: APP });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ ok: true });
    expect(res.headers['access-control-allow-origin']).toBe(APP);
    expect(res.headers['access-control-allow-credentials']).toBe('true');
    expect(res.headers['access-control-expose-headers']).toBe(
      DEFAULT_CORS_EXPOSED_HEADERS.join(', '),
    );
    expect(res.headers['access-control-expose-headers']).toContain('X-Request-ID');
    expect(res.headers['access-control-expose-headers']).toContain('Retry-After');
    expect(res.headers.vary).toBe('Origin');
    expect(res.headers['access-control-allow-methods']).toBeUndefined();
  });

  it('omits Allow-Credentials unless enabled', async () => {
    const base = await serve([cors({ origins: [APP] }), ok]);
    const res = await call(base, 'GET', { Origin: APP });
    expect(res.headers['access-control-allow-origin']).toBe(APP);
    expect(res.headers['access-control-allow-credentials']).toBeUndefined();
  });

  it('serves a disallowed origin without CORS headers', async () => {
    const base = await serve([cors({ origins: [APP], credentials: true }), ok]);
    const res = await call(base, 'POST', { Origin: 'https://evil.test' });
    expect(res.status).toBe(200);
    expect(corsHeaders(res.headers)).toEqual([]);
    expect(res.headers.vary).toBe('Origin');
  });

  it('varies on Origin even when the request has none', async () => {
    const base = await serve([cors({ origins: [APP] }), ok]);
    const res = await call(base, 'GET');
    expect(res.status).toBe(200);
    expect(corsHeaders(res.headers)).toEqual([]);
    expect(res.headers.vary).toBe('Origin');
  });

  it('keeps the headers on a thrown HttpError', async () => {
    const base = await serve([
      cors({ origins: [APP], credentials: true }),
      () => {
        throw notFound('No such thing.');
      },
    ]);
    const res = await call(base, 'GET', { Origin: APP });
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(res.body)).toMatchObject({ status: 404, detail: 'No such thing.' });
    expect(res.headers['access-control-allow-origin']).toBe(APP);
    expect(res.headers['access-control-allow-credentials']).toBe('true');
    expect(res.headers['access-control-expose-headers']).toContain('X-Request-ID');
  });

  it('keeps the headers on an unexpected error (500)', async () => {
    const base = await serve([
      cors({ origins: [APP] }),
      async () => {
        throw new Error('database down');
      },
    ]);
    const res = await call(base, 'PUT', { Origin: APP });
    expect(res.status).toBe(500);
    expect(res.body).not.toContain('database down');
    expect(res.headers['access-control-allow-origin']).toBe(APP);
    expect(res.headers['access-control-expose-headers']).toContain('Retry-After');
    expect(res.headers.vary).toBe('Origin');
  });

  it('keeps the headers on the 404 of an unrouted path', async () => {
    const base = await serve([cors({ origins: [APP] })]);
    const res = await call(base, 'GET', { Origin: APP });
    expect(res.status).toBe(404);
    expect(res.headers['access-control-allow-origin']).toBe(APP);
  });

  it('appends to Vary instead of replacing it', async () => {
    const base = await serve([
      (_req, res, next) => {
        res.setHeader('Vary', 'Accept-Encoding');
        return next();
      },
      cors({ origins: [APP] }),
      (_req, res, next) => {
        res.setHeader('Vary', `${res.getHeader('Vary')}, Accept`);
        return next();
      },
      ok,
    ]);
    const res = await call(base, 'GET', { Origin: APP });
    expect(res.headers.vary).toBe('Accept-Encoding, Origin, Accept');
    const pre = await call(base, 'OPTIONS', preflight(APP));
    expect(pre.headers.vary).toBe(
      'Accept-Encoding, Origin, Access-Control-Request-Method, Access-Control-Request-Headers',
    );
  });
});

describe('cors origins', () => {
  it.each([
    'https://app.example.com.evil.net',
    'http://app.example.com',
    'https://app.example.com:8443',
    'HTTPS://APP.EXAMPLE.COM',
    'https://app.example.com/',
    'null',
  ])('refuses the look-alike %s', async (origin) => {
    const base = await serve([cors({ origins: [APP], credentials: true }), ok]);
    const actual = await call(base, 'GET', { Origin: origin });
    expect(actual.status).toBe(200);
    expect(corsHeaders(actual.headers)).toEqual([]);
    const pre = await call(base, 'OPTIONS', preflight(origin));
    expect(pre.status).toBe(204);
    expect(corsHeaders(pre.headers)).toEqual([]);
  });

  it('allows the null origin when named', async () => {
    const base = await serve([cors({ origins: ['null'] }), ok]);
    const res = await call(base, 'GET', { Origin: 'null' });
    expect(res.headers['access-control-allow-origin']).toBe('null');
  });

  it('matches patterns against the whole origin', async () => {
    const base = await serve([cors({ origins: [/https:\/\/[a-z0-9-]+\.example\.com/] }), ok]);
    const good = await call(base, 'GET', { Origin: 'https://beta.example.com' });
    expect(good.headers['access-control-allow-origin']).toBe('https://beta.example.com');
    const bad = await call(base, 'GET', { Origin: 'https://beta.example.com.evil.net' });
    expect(bad.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('waits for an async origin function', async () => {
    const asked: string[] = [];
    const base = await serve([
      cors({
        origins: async (origin) => {
          asked.push(origin);
          await new Promise((r) => setTimeout(r, 5));
          return origin === 'https://tenant.test';
        },
        credentials: true,
      }),
      ok,
    ]);
    const res = await call(base, 'GET', { Origin: 'https://tenant.test' });
    expect(res.headers['access-control-allow-origin']).toBe('https://tenant.test');
    expect(res.headers['access-control-allow-credentials']).toBe('true');
    const pre = await call(base, 'OPTIONS', preflight('https://tenant.test'));
    expect(pre.status).toBe(204);
    expect(pre.headers['access-control-allow-origin']).toBe('https://tenant.test');
    const no = await call(base, 'GET', { Origin: 'https://other.test' });
    expect(no.headers['access-control-allow-origin']).toBeUndefined();
    const nul = await call(base, 'GET', { Origin: 'null' });
    expect(nul.headers['access-control-allow-origin']).toBeUndefined();
    expect(asked).toEqual(['https://tenant.test', 'https://tenant.test', 'https://other.test']);
  });

  it('answers 500 when the origin function fails', async () => {
    const base = await serve([
      cors({
        origins: async () => {
          throw new Error('lookup failed');
        },
      }),
      ok,
    ]);
    const res = await call(base, 'GET', { Origin: APP });
    expect(res.status).toBe(500);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe("cors with origins: '*'", () => {
  it('answers every origin with * and no Vary', async () => {
    const base = await serve([cors({ origins: '*' }), ok]);
    for (const origin of ['https://anyone.test', 'null']) {
      const res = await call(base, 'GET', { Origin: origin });
      expect(res.headers['access-control-allow-origin']).toBe('*');
      expect(res.headers['access-control-expose-headers']).toBe(
        DEFAULT_CORS_EXPOSED_HEADERS.join(', '),
      );
      expect(res.headers['access-control-allow-credentials']).toBeUndefined();
      expect(res.headers.vary).toBeUndefined();
    }
    const none = await call(base, 'GET');
    expect(none.headers['access-control-allow-origin']).toBe('*');
  });

  it('answers a preflight with *', async () => {
    const base = await serve([cors({ origins: '*' }), ok]);
    const res = await call(base, 'OPTIONS', preflight('https://anyone.test'));
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-allow-methods']).toBe(DEFAULT_CORS_METHODS.join(', '));
    expect(res.headers['access-control-allow-headers']).toBe(
      DEFAULT_CORS_ALLOWED_HEADERS.join(', '),
    );
    expect(res.headers['access-control-max-age']).toBe('86400');
    expect(res.headers.vary).toBeUndefined();
  });

  it('omits Expose-Headers when the list is empty', async () => {
    const base = await serve([cors({ origins: '*', exposedHeaders: [] }), ok]);
    const res = await call(base, 'GET', { Origin: APP });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ ok: true });
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-expose-headers']).toBeUndefined();
  });

  it('refuses credentials when the factory runs', () => {
    expect(() => cors({ origins: '*', credentials: true })).toThrow(TypeError);
    expect(() => cors({ origins: '*', credentials: true })).toThrow(/credentials/);
  });
});

describe('cors never answers Allow-Origin: * with Allow-Credentials: true', () => {
  const simple = (origin: string) => ({ Origin: origin });
  const requests: [string, (origin: string) => Record<string, string>][] = [
    ['GET', simple],
    ['POST', simple],
    ['OPTIONS', preflight],
  ];

  /** The rule itself, on any answer: credentials only with one origin, never `*`. */
  function expectNoWildcardWithCredentials(headers: IncomingHttpHeaders): void {
    const allowOrigin = headers['access-control-allow-origin'];
    if (headers['access-control-allow-credentials'] !== undefined) {
      expect(headers['access-control-allow-credentials']).toBe('true');
      expect(allowOrigin).toBeDefined();
      expect(allowOrigin).not.toBe('*');
    }
  }

  /** Sends every kind of request from `origin`; answers the replies, each checked against the rule. */
  async function fromEverySide(base: string, origin: string) {
    const replies = [];
    for (const [method, headers] of requests) {
      const reply = await call(base, method, headers(origin));
      expect(reply.status, `${method} from ${origin}`).toBe(method === 'OPTIONS' ? 204 : 200);
      expectNoWildcardWithCredentials(reply.headers);
      replies.push({ method, reply });
    }
    return replies;
  }

  it("refuses origins: '*' with credentials: true when the factory runs, whatever else is given", () => {
    for (const options of [
      { origins: '*', credentials: true },
      { origins: '*', credentials: true, methods: ['GET'], allowedHeaders: ['X-Tenant'] },
      { origins: '*', credentials: true, exposedHeaders: [], maxAge: 0 },
      Object.freeze({ origins: '*', credentials: true }),
    ] as const) {
      const err = thrownTypeError(() => cors(options as never));
      expect(err.code).toBe('ERR_INVALID_OPTION');
      expect(err.message).toContain("`origins: '*'`");
      expect(err.message).toContain('`credentials: true`');
    }
    // a credentials flag that is not the boolean true is no way round it
    for (const credentials of ['true', 1, 'yes']) {
      expect(thrownTypeError(() => cors({ origins: '*', credentials } as never)).message).toMatch(
        /credentials/,
      );
    }
  });

  it("refuses '*' in a list of origins, with or without credentials", () => {
    for (const origins of [['*'], [APP, '*'], ['*', /https:\/\/[a-z]+\.example\.com/]]) {
      for (const credentials of [true, false]) {
        const err = thrownTypeError(() => cors({ origins, credentials }));
        expect(err.code).toBe('ERR_INVALID_OPTION');
        expect(err.message).toMatch(/^cors\(\): origins\[\d\] is '\*'/);
      }
    }
  });

  it("refuses '*' in the header and method lists with credentials (browsers take it literally)", () => {
    for (const name of ['methods', 'allowedHeaders', 'exposedHeaders'] as const) {
      const err = thrownTypeError(() => cors({ origins: [APP], credentials: true, [name]: ['*'] }));
      expect(err.code).toBe('ERR_INVALID_OPTION');
      expect(err.message).toContain(`\`${name}\` cannot use '*' with \`credentials: true\``);
    }
  });

  it("answers origins: '*' without Allow-Credentials, on simple requests and preflights", async () => {
    const base = await serve([cors({ origins: '*' }), ok]);
    for (const { method, reply } of await fromEverySide(base, APP)) {
      expect(reply.headers['access-control-allow-origin'], method).toBe('*');
      expect(reply.headers['access-control-allow-credentials'], method).toBeUndefined();
    }
  });

  it("never writes what an origin function returns: one returning '*' allows nothing", async () => {
    const asked: string[] = [];
    const functions = [
      (origin: string) => {
        asked.push(origin);
        return '*' as never;
      },
      async (origin: string) => {
        asked.push(origin);
        return '*' as never;
      },
    ];
    for (const origins of functions) {
      const base = await serve([cors({ origins, credentials: true }), ok]);
      for (const origin of [APP, 'https://evil.test']) {
        for (const { method, reply } of await fromEverySide(base, origin)) {
          expect(corsHeaders(reply.headers), `${method} from ${origin}`).toEqual([]);
          expect(reply.headers.vary).toMatch(/^Origin\b/);
        }
      }
    }
    expect(asked).toHaveLength(2 * 2 * requests.length);
  });

  it('reflects the one origin a function allows, with Vary: Origin, never *', async () => {
    const base = await serve([cors({ origins: () => true, credentials: true }), ok]);
    for (const origin of [APP, 'https://anyone.test', 'http://localhost:5173']) {
      for (const { method, reply } of await fromEverySide(base, origin)) {
        expect(reply.headers['access-control-allow-origin'], method).toBe(origin);
        expect(reply.headers['access-control-allow-credentials'], method).toBe('true');
        expect(reply.headers.vary, method).toBe(
          method === 'OPTIONS'
            ? 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers'
            : 'Origin',
        );
      }
    }
  });

  it('reflects a listed or matching origin with Vary: Origin, never *', async () => {
    const base = await serve([
      cors({ origins: [APP, /https:\/\/[a-z0-9-]+\.tenant\.test/], credentials: true }),
      ok,
    ]);
    for (const origin of [APP, 'https://beta.tenant.test']) {
      for (const { method, reply } of await fromEverySide(base, origin)) {
        expect(reply.headers['access-control-allow-origin'], method).toBe(origin);
        expect(reply.headers['access-control-allow-credentials'], method).toBe('true');
        expect(reply.headers.vary, method).toMatch(/^Origin(, |$)/);
      }
    }
  });

  it("refuses a request whose Origin is literally '*' when origins are listed", async () => {
    const base = await serve([cors({ origins: [APP], credentials: true }), ok]);
    for (const { method, reply } of await fromEverySide(base, '*')) {
      expect(corsHeaders(reply.headers), method).toEqual([]);
      expect(reply.headers.vary, method).toMatch(/^Origin\b/);
    }
  });

  // Browsers never send `Origin: *`, but any other client may: an allowlist that lets every
  // origin through (a function answering true, a pattern matching anything) must not echo it
  // back as the wildcard next to Allow-Credentials.
  const allowEverything: [string, OriginAllowlist][] = [
    ['a function allowing every origin', () => true],
    ['an async function allowing every origin', async () => true],
    ['a pattern matching any origin', [/.*/]],
    ['a pattern matching any character run', [/[\s\S]*/]],
  ];
  it.each(allowEverything)(
    "does not echo an Origin of '*' with credentials through %s",
    async (_, origins) => {
      const base = await serve([cors({ origins, credentials: true }), ok]);
      for (const { method, reply } of await fromEverySide(base, '*')) {
        expect(reply.headers['access-control-allow-origin'], method).not.toBe('*');
      }
    },
  );
});

describe('cors options', () => {
  it('hints at misspelt option names', () => {
    const err = thrownTypeError(() => cors({ origins: [APP], maxage: 5 } as never));
    expect(err.code).toBe('ERR_INVALID_OPTION');
    expect(err.message).toContain('`maxage`');
    expect(err.message).toContain('Did you mean `maxAge`?');
  });

  it('rejects misspelt origins with a hint', () => {
    const err = thrownTypeError(() => cors({ origins: ['http://localhost:5173/'] }));
    expect(err.code).toBe('ERR_INVALID_OPTION');
    expect(err.message).toMatch(/^cors\(\): origins\[0\]/);
    expect(err.message).toContain('Did you mean `http://localhost:5173`?');
  });

  it('requires origins', () => {
    expect(thrownTypeError(() => cors({} as never)).message).toContain('`origins` is required');
    expect(thrownTypeError(() => cors(undefined as never)).message).toContain(
      '`origins` is required',
    );
    const ofNull = thrownTypeError(() => cors(null as never));
    expect(ofNull.code).toBe('ERR_INVALID_OPTION');
    expect(ofNull.message).toContain('`origins` is required');
  });

  it('validates the other options', () => {
    expect(thrownTypeError(() => cors({ origins: [APP], maxAge: -1 })).message).toContain('maxAge');
    expect(thrownTypeError(() => cors({ origins: [APP], maxAge: 1.5 })).message).toContain(
      'maxAge',
    );
    expect(
      thrownTypeError(() => cors({ origins: [APP], credentials: 'yes' as never })).message,
    ).toContain('credentials');
    expect(
      thrownTypeError(() => cors({ origins: [APP], methods: 'GET' as never })).message,
    ).toContain('methods');
    expect(
      thrownTypeError(() => cors({ origins: [APP], allowedHeaders: ['X Bad'] })).message,
    ).toContain('allowedHeaders');
    expect(
      thrownTypeError(() => cors({ origins: [APP], credentials: true, exposedHeaders: ['*'] }))
        .message,
    ).toContain("'*'");
  });

  it('does not mutate the caller’s options', () => {
    const options = Object.freeze({ origins: Object.freeze([APP]) });
    expect(typeof cors(options)).toBe('function');
    expect(options).toEqual({ origins: [APP] });
  });

  it('omits a header whose list is empty', async () => {
    const base = await serve([cors({ origins: [APP], exposedHeaders: [] }), ok]);
    const res = await call(base, 'GET', { Origin: APP });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ ok: true });
    expect(res.headers['access-control-allow-origin']).toBe(APP);
    expect(res.headers['access-control-expose-headers']).toBeUndefined();
  });

  it("accepts named lists with credentials, and '*' in them without", async () => {
    const named = await serve([
      cors({
        origins: [APP],
        credentials: true,
        methods: ['GET', 'QUERY'],
        allowedHeaders: ['X-Tenant'],
        exposedHeaders: ['X-Total-Count'],
      }),
      ok,
    ]);
    const pre = await call(named, 'OPTIONS', preflight(APP));
    expect(pre.headers['access-control-allow-credentials']).toBe('true');
    expect(pre.headers['access-control-allow-methods']).toBe('GET, QUERY');
    expect(pre.headers['access-control-allow-headers']).toBe('X-Tenant');
    const get = await call(named, 'GET', { Origin: APP });
    expect(get.headers['access-control-expose-headers']).toBe('X-Total-Count');

    const starred = await serve([
      cors({ origins: [APP], methods: ['*'], allowedHeaders: ['*'], exposedHeaders: ['*'] }),
      ok,
    ]);
    const starPre = await call(starred, 'OPTIONS', preflight(APP));
    expect(starPre.headers['access-control-allow-methods']).toBe('*');
    expect(starPre.headers['access-control-allow-headers']).toBe('*');
    const starGet = await call(starred, 'GET', { Origin: APP });
    expect(starGet.headers['access-control-expose-headers']).toBe('*');
  });
});

describe('isPreflightRequest', () => {
  it('needs OPTIONS, Origin and Access-Control-Request-Method', () => {
    const req = (method: string, headers: Record<string, string>) => ({ method, headers }) as never;
    expect(
      isPreflightRequest(req('OPTIONS', { origin: APP, 'access-control-request-method': 'PUT' })),
    ).toBe(true);
    expect(isPreflightRequest(req('OPTIONS', { origin: APP }))).toBe(false);
    expect(isPreflightRequest(req('OPTIONS', { 'access-control-request-method': 'PUT' }))).toBe(
      false,
    );
    expect(
      isPreflightRequest(req('GET', { origin: APP, 'access-control-request-method': 'PUT' })),
    ).toBe(false);
  });
});
