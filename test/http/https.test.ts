import { readFileSync } from 'node:fs';
import type { RequestListener } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { type ConnectionOptions, type TLSSocket, connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toNodeListener } from '../../src/adapters/node.ts';
import type { Middleware } from '../../src/core/compose.ts';
import { sendJson } from '../../src/core/send.ts';
import { MODERN_CIPHERS, requireHttps, tlsServerOptions } from '../../src/http/https.ts';
import { closeAll, json, listen, parseReply, rawRequest, request, serve } from '../helpers/http.ts';

afterAll(closeAll);

const fixture = (name: string) => readFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url));
const ca = fixture('ca.pem');
const cert = fixture('server.pem');
const key = fixture('server.key');

/** Opens a TLS connection; resolves with the negotiated protocol and cipher, or the error. */
function handshake(
  port: number,
  options: ConnectionOptions,
): Promise<{ protocol: string | null; cipher: string } | { error: NodeJS.ErrnoException }> {
  return new Promise((resolve) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, servername: 'localhost', ca, ...options });
    socket.on('secureConnect', () => {
      resolve({ protocol: socket.getProtocol(), cipher: socket.getCipher().name });
      socket.end();
    });
    socket.on('error', (error) => resolve({ error }));
  });
}

describe('tlsServerOptions', () => {
  it('sets TLS 1.2 as the minimum, modern ciphers and the server order', () => {
    const options = tlsServerOptions({ cert, key });
    expect(options.minVersion).toBe('TLSv1.2');
    expect(options.honorCipherOrder).toBe(true);
    expect(options.ciphers).toBe(MODERN_CIPHERS);
    expect(options.cert).toBe(cert);
    expect(options.key).toBe(key);
    expect(options.requestCert).toBeUndefined();
    for (const suite of MODERN_CIPHERS.split(':')) {
      if (suite.startsWith('TLS_')) continue; // TLS 1.3 suites
      expect(suite).toMatch(
        /^ECDHE-(?:ECDSA|RSA)-(?:AES(?:128|256)-GCM-SHA(?:256|384)|CHACHA20-POLY1305)$/,
      );
    }
  });

  it('requests client certificates without requiring them when a CA is given', () => {
    const options = tlsServerOptions({ cert, key, ca });
    expect(options.ca).toBe(ca);
    expect(options.requestCert).toBe(true);
    expect(options.rejectUnauthorized).toBe(false);
    expect(tlsServerOptions({ cert, key, ca, requestCert: false }).requestCert).toBeUndefined();
    const requested = tlsServerOptions({ cert, key, requestCert: true });
    expect(requested.requestCert).toBe(true);
    expect(requested.rejectUnauthorized).toBe(false);
  });

  it('returns a new object and leaves the input alone', () => {
    const input = Object.freeze({ cert, key, ca });
    const options = tlsServerOptions(input);
    expect(options).not.toBe(input);
    expect(Object.keys(input)).toEqual(['cert', 'key', 'ca']);
  });

  it('rejects missing material and unknown options', () => {
    expect(() => tlsServerOptions({ cert } as never)).toThrow(/`cert` and `key`/);
    expect(() => tlsServerOptions({ cert, key, requestCerts: true } as never)).toThrow(
      /Did you mean `requestCert`\?/,
    );
    expect(() => tlsServerOptions({ cert, key, requestCert: 'yes' } as never)).toThrow(TypeError);
  });
});

describe('a server built from tlsServerOptions', () => {
  let port: number;
  const clientErrors: string[] = [];
  const whoIs: RequestListener = (req, res) => {
    const socket = req.socket as TLSSocket;
    const peer = socket.getPeerCertificate();
    res.setHeader('Content-Type', 'application/json');
    res.end(
      JSON.stringify({
        authorized: socket.authorized,
        error: socket.authorizationError ?? null,
        cn: peer?.subject?.CN ?? null,
      }),
    );
  };

  beforeAll(async () => {
    const server = createHttpsServer(tlsServerOptions({ cert, key, ca }), whoIs);
    server.on('tlsClientError', (err: NodeJS.ErrnoException) => clientErrors.push(err.code ?? ''));
    ({ port } = await listen(server));
  });

  async function whoAmI(client: { cert?: Buffer; key?: Buffer }) {
    return json<{ authorized: boolean; error: string | null; cn: string | null }>(
      await request(port, '/', { tls: { ca, ...client } }),
    );
  }

  it('refuses TLS 1.1', async () => {
    clientErrors.length = 0;
    const result = await handshake(port, {
      minVersion: 'TLSv1',
      maxVersion: 'TLSv1.1',
      ciphers: 'DEFAULT@SECLEVEL=0', // let the client offer TLS 1.1 at all
    });
    expect('error' in result).toBe(true);
    if ('error' in result) expect(result.error.code).toBe('ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION');
    expect(clientErrors).toContain('ERR_SSL_UNSUPPORTED_PROTOCOL');
  });

  it('accepts TLS 1.2 with a forward-secret AEAD cipher', async () => {
    const result = await handshake(port, { maxVersion: 'TLSv1.2' });
    expect(result).toEqual({ protocol: 'TLSv1.2', cipher: 'ECDHE-ECDSA-AES128-GCM-SHA256' });
  });

  it('refuses a TLS 1.2 client that offers only CBC ciphers', async () => {
    clientErrors.length = 0;
    const result = await handshake(port, {
      maxVersion: 'TLSv1.2',
      ciphers: 'ECDHE-ECDSA-AES128-SHA256:ECDHE-ECDSA-AES256-SHA',
    });
    expect('error' in result).toBe(true);
    expect(clientErrors).toContain('ERR_SSL_NO_SHARED_CIPHER');
  });

  it('negotiates TLS 1.3 when the client can', async () => {
    const result = await handshake(port, {});
    expect('protocol' in result && result.protocol).toBe('TLSv1.3');
  });

  it('is valid for 127.0.0.1 as well as localhost', async () => {
    const result = await handshake(port, { servername: undefined });
    expect('protocol' in result).toBe(true);
  });

  it('authorizes a client certificate from the CA', async () => {
    const who = await whoAmI({ cert: fixture('client.pem'), key: fixture('client.key') });
    expect(who).toEqual({ authorized: true, error: null, cn: 'alice' });
  });

  it('does not authorize a certificate from another CA, but lets the request in', async () => {
    const who = await whoAmI({
      cert: fixture('client-other-ca.pem'),
      key: fixture('client-other-ca.key'),
    });
    expect(who.authorized).toBe(false);
    expect(who.error).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
    expect(who.cn).toBe('alice');
  });

  it('does not authorize an expired certificate from the CA', async () => {
    const who = await whoAmI({
      cert: fixture('client-expired.pem'),
      key: fixture('client-expired.key'),
    });
    expect(who.authorized).toBe(false);
    expect(who.error).toBe('CERT_HAS_EXPIRED');
  });

  it('serves a client without a certificate, unauthorized', async () => {
    const who = await whoAmI({});
    expect(who.authorized).toBe(false);
    expect(who.cn).toBeNull();
  });
});

/** Sends `head` as written (so the Host header can be anything) and reads the answer. */
const raw = async (port: number, head: string, body = '') =>
  parseReply(await rawRequest(port, `${head}\r\nConnection: close\r\n\r\n${body}`));

const hello: Middleware = (_req, res) => sendJson(res, 200, { hello: 'world' });

describe('requireHttps', () => {
  let ports: {
    direct: number;
    proxied: number;
    otherPort: number;
    samePort: number;
    origin: number;
    originPort: number;
    tls: number;
  };

  beforeAll(async () => {
    const tls = createHttpsServer(
      tlsServerOptions({ cert, key }),
      toNodeListener([requireHttps(), hello]),
    );
    ports = {
      direct: (await serve([requireHttps(), hello])).port,
      proxied: (await serve([requireHttps({ trustProxy: 'loopback' }), hello])).port,
      otherPort: (await serve([requireHttps({ port: 8443 }), hello])).port,
      samePort: (await serve([requireHttps({ port: 'same' }), hello])).port,
      origin: (await serve([requireHttps({ origin: 'https://api.example.com' }), hello])).port,
      originPort: (
        await serve([requireHttps({ origin: 'https://API.example.com:8443/', port: 8443 }), hello])
      ).port,
      tls: (await listen(tls)).port,
    };
  });

  it('redirects GET with 308 to the same URL over https', async () => {
    const res = await raw(ports.direct, 'GET /api/things?page=2 HTTP/1.1\r\nHost: api.example.com');
    expect(res.status).toBe(308);
    expect(res.headers.location).toBe('https://api.example.com/api/things?page=2');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toBe('');
  });

  it('with `origin`, redirects to that origin whatever the Host header says (no cache keeps it)', async () => {
    // Host-header poisoning: a cache keyed without Host would hand this redirect to everyone
    const poisoned = await raw(ports.origin, 'GET /login?next=%2F HTTP/1.1\r\nHost: evil.example');
    expect(poisoned.status).toBe(308);
    expect(poisoned.headers.location).toBe('https://api.example.com/login?next=%2F');
    expect(poisoned.headers['cache-control']).toBe('no-store');
    for (const host of ['evil.example:8443', '[::1]', 'api.example.com']) {
      const res = await raw(ports.origin, `HEAD /x HTTP/1.1\r\nHost: ${host}`);
      expect(res.status, host).toBe(308);
      expect(res.headers.location, host).toBe('https://api.example.com/x');
    }
    const slashes = await raw(ports.origin, 'GET //evil.example/x HTTP/1.1\r\nHost: evil.example');
    expect(slashes.headers.location).toBe('https://api.example.com//evil.example/x');
    const absolute = await raw(
      ports.origin,
      'GET http://evil.example/a?b=1 HTTP/1.1\r\nHost: evil.example',
    );
    expect(absolute.headers.location).toBe('https://api.example.com/a?b=1');
    const ported = await raw(ports.originPort, 'GET /x HTTP/1.1\r\nHost: evil.example:80');
    expect(ported.headers.location).toBe('https://api.example.com:8443/x');
  });

  it('with `origin`, still refuses other methods and does not need a Host header', async () => {
    const post = await raw(
      ports.origin,
      'POST /x HTTP/1.1\r\nHost: evil.example\r\nContent-Length: 2',
      '{}',
    );
    expect(post.status).toBe(403);
    expect(post.headers.location).toBeUndefined();
    const http10 = parseReply(await rawRequest(ports.origin, 'GET /x HTTP/1.0\r\n\r\n'));
    expect(http10.status).toBe(308);
    expect(http10.headers.location).toBe('https://api.example.com/x');
  });

  it('redirects HEAD the same way', async () => {
    const res = await raw(ports.direct, 'HEAD /x HTTP/1.1\r\nHost: api.example.com');
    expect(res.status).toBe(308);
    expect(res.headers.location).toBe('https://api.example.com/x');
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('drops the plain-HTTP port, or uses the configured HTTPS port', async () => {
    const dropped = await raw(ports.direct, 'GET /x HTTP/1.1\r\nHost: api.example.com:8080');
    expect(dropped.headers.location).toBe('https://api.example.com/x');
    const ipv6 = await raw(ports.direct, 'GET /x HTTP/1.1\r\nHost: [::1]:8080');
    expect(ipv6.headers.location).toBe('https://[::1]/x');
    const configured = await raw(ports.otherPort, 'GET /x HTTP/1.1\r\nHost: 127.0.0.1:8080');
    expect(configured.headers.location).toBe('https://127.0.0.1:8443/x');
  });

  it("with port 'same', changes only the scheme (an explicit :80 excepted)", async () => {
    const cases: [string, string][] = [
      ['127.0.0.1:8080', 'https://127.0.0.1:8080/x?y=1'],
      ['[::1]:3000', 'https://[::1]:3000/x?y=1'],
      ['[::1]', 'https://[::1]/x?y=1'],
      ['api.example.com', 'https://api.example.com/x?y=1'],
      ['api.example.com:80', 'https://api.example.com/x?y=1'],
    ];
    for (const [host, location] of cases) {
      const res = await raw(ports.samePort, `GET /x?y=1 HTTP/1.1\r\nHost: ${host}`);
      expect(res.status, host).toBe(308);
      expect(res.headers.location, host).toBe(location);
      expect(res.headers['cache-control'], host).toBe('no-store');
    }
  });

  it('keeps the redirect on the requested host', async () => {
    const slashes = await raw(
      ports.direct,
      'GET //evil.example/x HTTP/1.1\r\nHost: api.example.com',
    );
    expect(slashes.headers.location).toBe('https://api.example.com//evil.example/x');
    const absolute = await raw(
      ports.direct,
      'GET http://api.example.com/a?b=1 HTTP/1.1\r\nHost: api.example.com',
    );
    expect(absolute.headers.location).toBe('https://api.example.com/a?b=1');
  });

  it('answers a 403 problem, not a redirect, to a WebSocket handshake', async () => {
    const res = await raw(
      ports.direct,
      'GET /ws HTTP/1.1\r\nHost: api.example.com\r\nConnection: Upgrade\r\nUpgrade: websocket',
    );
    expect(res.status).toBe(403);
    expect(res.headers.location).toBeUndefined();
    expect(JSON.parse(res.body)).toMatchObject({ type: 'urn:portico:problem:https-required' });
  });

  it('answers a 403 problem to other methods', async () => {
    const res = await raw(
      ports.direct,
      'POST /api/things HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 2',
      '{}',
    );
    expect(res.status).toBe(403);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(res.headers.location).toBeUndefined();
    const problem = JSON.parse(res.body);
    expect(problem).toMatchObject({
      type: 'urn:portico:problem:https-required',
      status: 403,
      instance: '/api/things',
    });
    expect(problem.detail).toMatch(/HTTPS/);
  });

  it('answers 400 to a Host header that could redirect elsewhere', async () => {
    for (const host of [
      'evil.example/x',
      'evil.example\\x',
      'user@evil.example',
      'api.example.com evil.example',
      'evil.example?x',
      'evil.example#x',
      'api.example.com:99999',
      'api.example.com:0',
      'api.example.com:',
      '',
    ]) {
      const res = await raw(ports.direct, `GET /x HTTP/1.1\r\nHost: ${host}`);
      expect(res.status, host).toBe(400);
      expect(res.headers.location, host).toBeUndefined();
      expect(res.headers['content-type'], host).toBe('application/problem+json');
    }
  });

  it('never lets CR or LF in the Host header through', async () => {
    // node's parser refuses a bare CR before any middleware runs; nothing may reach Location
    const res = await raw(ports.direct, 'GET /x HTTP/1.1\r\nHost: a.example\rLocation: evil');
    expect(res.status).toBe(400);
    expect(res.headers.location).toBeUndefined();
  });

  it('passes requests a trusted proxy received over HTTPS, and only those', async () => {
    const secure = await raw(
      ports.proxied,
      'GET /x HTTP/1.1\r\nHost: api.example.com\r\nX-Forwarded-Proto: https',
    );
    expect(secure.status).toBe(200);
    expect(JSON.parse(secure.body)).toEqual({ hello: 'world' });
    const plain = await raw(
      ports.proxied,
      'GET /x HTTP/1.1\r\nHost: api.example.com\r\nX-Forwarded-Proto: http',
    );
    expect(plain.status).toBe(308);
    const untrusted = await raw(
      ports.direct,
      'GET /x HTTP/1.1\r\nHost: api.example.com\r\nX-Forwarded-Proto: https',
    );
    expect(untrusted.status).toBe(308);
  });

  it('passes requests over its own TLS', async () => {
    const res = await request(ports.tls, '/', { method: 'POST', tls: { ca } });
    const body = `${res.status} ${res.body}`;
    expect(body).toBe('200 {"hello":"world"}');
  });

  it('validates its options', () => {
    expect(() => requireHttps({ trustProxies: 1 } as never)).toThrow(/Did you mean `trustProxy`\?/);
    expect(() => requireHttps({ port: 0 })).toThrow(TypeError);
    expect(() => requireHttps({ port: 'other' as never })).toThrow(TypeError);
    expect(() => requireHttps({ trustProxy: 'nope' })).toThrow(TypeError);
    for (const origin of [
      'http://api.example.com',
      'https://api.example.com/path',
      'https://api.example.com?x',
      'https://user@api.example.com',
      'api.example.com',
      'https://',
      42,
    ]) {
      expect(() => requireHttps({ origin } as never), String(origin)).toThrow(/`origin`/);
    }
    expect(() => requireHttps({ origin: 'https://api.example.com', port: 'same' })).toThrow(
      /conflicts/,
    );
    expect(() => requireHttps({ origin: 'https://api.example.com', port: 8443 })).toThrow(
      /conflicts/,
    );
    expect(() => requireHttps({ origin: 'https://api.example.com', port: 443 })).not.toThrow();
    expect(() => requireHttps({ origins: 'https://a.example' } as never)).toThrow(
      /Did you mean `origin`\?/,
    );
    expect(requireHttps().name).toBe('requireHttpsMiddleware');
  });
});
