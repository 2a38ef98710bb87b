import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { describe, expect, it } from 'vitest';
import { toNodeListener } from '../../src/adapters/node.ts';
import type { Middleware } from '../../src/core/compose.ts';
import { sendJson } from '../../src/core/send.ts';
import { tlsServerOptions } from '../../src/http/https.ts';
import {
  API_CONTENT_SECURITY_POLICY,
  type SecurityHeadersOptions,
  securityHeaders,
} from '../../src/http/security-headers.ts';
import { listen, type Reply, request } from '../helpers/http.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url));
const ca = fixture('ca.pem');

const ok: Middleware = (req, res, next) => {
  if (req.url === '/page') res.setHeader('Content-Security-Policy', "default-src 'self'");
  if (req.url === '/missing') return next(); // the adapter answers a 404 problem
  sendJson(res, 200, { ok: true });
};

/** Serves `securityHeaders(options)` over http (or https), makes one request, closes. */
async function fetchWith(
  options: SecurityHeadersOptions | undefined,
  via: { tls?: boolean; path?: string; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const listener = toNodeListener([securityHeaders(options), ok]);
  const server = await listen(
    via.tls
      ? createHttpsServer(
          tlsServerOptions({ cert: fixture('server.pem'), key: fixture('server.key') }),
          listener,
        )
      : createServer(listener),
  );
  try {
    return await request(server, via.path ?? '/', {
      headers: via.headers ?? {},
      tls: via.tls ? { ca } : undefined,
    });
  } finally {
    await server.close();
  }
}

const DEFAULTS: Record<string, string> = {
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'permissions-policy': 'camera=(), microphone=(), geolocation=(), payment=(), usb=()',
  'referrer-policy': 'no-referrer',
};
const HSTS = 'max-age=31536000; includeSubDomains';

describe('securityHeaders defaults', () => {
  it('sets every header but HSTS over plain HTTP', async () => {
    const { status, headers } = await fetchWith(undefined);
    expect(status).toBe(200);
    for (const [name, value] of Object.entries(DEFAULTS)) expect(headers[name], name).toBe(value);
    expect(headers['strict-transport-security']).toBeUndefined();
    expect(headers['cross-origin-opener-policy'], 'COOP is for documents: opt-in').toBeUndefined();
    expect(API_CONTENT_SECURITY_POLICY).toBe(DEFAULTS['content-security-policy']);
  });

  it('adds HSTS over TLS', async () => {
    const { status, headers } = await fetchWith({}, { tls: true });
    expect(status).toBe(200);
    expect(headers['strict-transport-security']).toBe(HSTS);
    expect(headers['x-frame-options']).toBe('DENY');
  });

  it('keeps the headers on problem answers', async () => {
    const { status, headers } = await fetchWith({}, { path: '/missing' });
    expect(status).toBe(404);
    expect(headers['content-type']).toBe('application/problem+json');
    for (const [name, value] of Object.entries(DEFAULTS)) expect(headers[name], name).toBe(value);
  });

  it('lets a handler override a header for its own answer', async () => {
    const { headers } = await fetchWith({}, { path: '/page' });
    expect(headers['content-security-policy']).toBe("default-src 'self'");
    expect(headers['x-frame-options']).toBe('DENY');
  });

  it('removes the X-Powered-By a host set before it, and leaves one a handler sets after', async () => {
    const poweredBy: Middleware = (_req, res, next) => {
      res.setHeader('X-Powered-By', 'Express'); // what Express does before any middleware
      return next();
    };
    const server = await listen(
      createServer(
        toNodeListener([
          poweredBy,
          securityHeaders(),
          (req, res, next) => {
            if (req.url === '/own') res.setHeader('X-Powered-By', 'chosen');
            return req.url === '/missing' ? next() : sendJson(res, 200, { ok: true });
          },
        ]),
      ),
    );
    try {
      for (const path of ['/', '/missing']) {
        const { headers } = await request(server, path);
        expect(headers['x-powered-by'], path).toBeUndefined();
        expect(headers['x-content-type-options']).toBe('nosniff');
      }
      expect((await request(server, '/own')).headers['x-powered-by']).toBe('chosen');
    } finally {
      await server.close();
    }
  });
});

describe('HSTS behind a proxy', () => {
  it("trusts a trusted proxy's X-Forwarded-Proto: https", async () => {
    const { headers } = await fetchWith(
      { trustProxy: 'loopback' },
      { headers: { 'X-Forwarded-Proto': 'https' } },
    );
    expect(headers['strict-transport-security']).toBe(HSTS);
  });

  it('leaves HSTS off when the trusted proxy says http', async () => {
    const { headers } = await fetchWith(
      { trustProxy: 'loopback' },
      { headers: { 'X-Forwarded-Proto': 'http' } },
    );
    expect(headers['strict-transport-security']).toBeUndefined();
  });

  it('ignores X-Forwarded-Proto when no proxy is trusted', async () => {
    const { headers } = await fetchWith(undefined, { headers: { 'X-Forwarded-Proto': 'https' } });
    expect(headers['strict-transport-security']).toBeUndefined();
  });

  it('ignores X-Forwarded-Proto from a peer outside the trusted ranges', async () => {
    const { headers } = await fetchWith(
      { trustProxy: '10.0.0.0/8' },
      { headers: { 'X-Forwarded-Proto': 'https' } },
    );
    expect(headers['strict-transport-security']).toBeUndefined();
  });
});

describe('each header can be turned off', () => {
  const cases: [keyof SecurityHeadersOptions, string][] = [
    ['contentSecurityPolicy', 'content-security-policy'],
    ['xContentTypeOptions', 'x-content-type-options'],
    ['xFrameOptions', 'x-frame-options'],
    ['permissionsPolicy', 'permissions-policy'],
    ['referrerPolicy', 'referrer-policy'],
    ['crossOriginOpenerPolicy', 'cross-origin-opener-policy'],
  ];
  for (const [option, header] of cases) {
    it(`${option}: false drops ${header} and keeps the others`, async () => {
      const { headers } = await fetchWith({ [option]: false });
      expect(headers[header]).toBeUndefined();
      for (const [name, value] of Object.entries(DEFAULTS)) {
        if (name !== header) expect(headers[name], name).toBe(value);
      }
    });
  }

  it('strictTransportSecurity: false drops HSTS even over TLS', async () => {
    const { headers } = await fetchWith({ strictTransportSecurity: false }, { tls: true });
    expect(headers['strict-transport-security']).toBeUndefined();
    expect(headers['x-content-type-options']).toBe('nosniff');
  });
});

describe('custom values', () => {
  it('sends the configured values', async () => {
    const { headers } = await fetchWith({
      contentSecurityPolicy: "default-src 'self'; img-src https:",
      xFrameOptions: 'SAMEORIGIN',
      permissionsPolicy: 'geolocation=(self)',
      referrerPolicy: 'no-referrer, strict-origin-when-cross-origin',
      crossOriginOpenerPolicy: 'same-origin-allow-popups',
    });
    expect(headers['content-security-policy']).toBe("default-src 'self'; img-src https:");
    expect(headers['x-frame-options']).toBe('SAMEORIGIN');
    expect(headers['permissions-policy']).toBe('geolocation=(self)');
    expect(headers['referrer-policy']).toBe('no-referrer, strict-origin-when-cross-origin');
    expect(headers['cross-origin-opener-policy']).toBe('same-origin-allow-popups');
  });

  it('builds HSTS from its options', async () => {
    const short = await fetchWith(
      { strictTransportSecurity: { maxAge: 600_000, includeSubDomains: false } },
      { tls: true },
    );
    expect(short.headers['strict-transport-security']).toBe('max-age=600');
    const preload = await fetchWith({ strictTransportSecurity: { preload: true } }, { tls: true });
    expect(preload.headers['strict-transport-security']).toBe(`${HSTS}; preload`);
  });

  it('normalizes the case of X-Frame-Options', async () => {
    const { headers } = await fetchWith({
      xFrameOptions: 'sameorigin' as SecurityHeadersOptions['xFrameOptions'],
    });
    expect(headers['x-frame-options']).toBe('SAMEORIGIN');
  });
});

describe('option validation', () => {
  const invalid = (options: unknown) => () => securityHeaders(options as SecurityHeadersOptions);

  it('hints at the option meant by a typo', () => {
    expect(invalid({ xFrameOption: 'DENY' })).toThrow(TypeError);
    expect(invalid({ xFrameOption: 'DENY' })).toThrow(
      /`xFrameOption`.*Did you mean `xFrameOptions`\?/,
    );
    expect(invalid({ strictTransportSecurity: { maxage: 1 } })).toThrow(/Did you mean `maxAge`\?/);
    try {
      securityHeaders({ contentSecurityPolicies: 'x' } as SecurityHeadersOptions);
      expect.unreachable();
    } catch (err) {
      expect((err as { code?: string }).code).toBe('ERR_INVALID_OPTION');
    }
  });

  it('rejects header values that would break the header line', () => {
    expect(invalid({ contentSecurityPolicy: "default-src 'none'\r\nSet-Cookie: a=b" })).toThrow(
      TypeError,
    );
    expect(invalid({ permissionsPolicy: 'camera=()\n' })).toThrow(/CR, LF/);
    expect(invalid({ contentSecurityPolicy: '' })).toThrow(TypeError);
    expect(invalid({ contentSecurityPolicy: 42 })).toThrow(TypeError);
  });

  it('rejects values outside the enumerations', () => {
    expect(invalid({ xFrameOptions: 'ALLOW-FROM https://a.example' })).toThrow(/xFrameOptions/);
    expect(invalid({ referrerPolicy: 'never' })).toThrow(/referrerPolicy/);
    expect(invalid({ referrerPolicy: 'no-referrer, sometimes' })).toThrow(/referrerPolicy/);
    expect(invalid({ crossOriginOpenerPolicy: 'strict' })).toThrow(/crossOriginOpenerPolicy/);
    expect(invalid({ xContentTypeOptions: 'yes' })).toThrow(/xContentTypeOptions/);
  });

  it('rejects an unusable HSTS policy', () => {
    expect(invalid({ strictTransportSecurity: { maxAge: -1 } })).toThrow(/maxAge/);
    expect(invalid({ strictTransportSecurity: { maxAge: 1.5 } })).toThrow(/maxAge/);
    expect(
      invalid({ strictTransportSecurity: { preload: true, includeSubDomains: false } }),
    ).toThrow(/preload/);
    expect(invalid({ strictTransportSecurity: { preload: true, maxAge: 600_000 } })).toThrow(
      /preload/,
    );
    // a year in milliseconds, one short of it: no preload
    expect(invalid({ strictTransportSecurity: { preload: true, maxAge: 31_535_999_999 } })).toThrow(
      /preload/,
    );
    expect(invalid({ strictTransportSecurity: 'max-age=1' })).toThrow(/strictTransportSecurity/);
  });

  it('rejects an invalid trustProxy at construction', () => {
    expect(invalid({ trustProxy: 'not-an-ip' })).toThrow(TypeError);
  });

  it('never mutates the options', () => {
    const options = Object.freeze({
      strictTransportSecurity: Object.freeze({ maxAge: 60_000 }),
      xFrameOptions: 'SAMEORIGIN' as const,
    });
    expect(typeof securityHeaders(options)).toBe('function');
    expect(options).toEqual({
      strictTransportSecurity: { maxAge: 60_000 },
      xFrameOptions: 'SAMEORIGIN',
    });
  });

  it('returns a named middleware', () => {
    expect(securityHeaders().name).toBe('securityHeadersMiddleware');
  });
});
