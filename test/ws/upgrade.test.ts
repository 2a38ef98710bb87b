import { createServer, type IncomingMessage, type Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { Authenticator } from '../../src/auth/authenticator.js';
import { createCredentialGuard } from '../../src/auth/credential-guard.js';
import { unauthorized } from '../../src/core/errors/errors.js';
import { silentLogger } from '../../src/diagnostics/index.js';
import { requestId } from '../../src/http/request-id.js';
import { securityHeaders } from '../../src/http/security-headers.js';
import { rateLimit } from '../../src/rate-limit/rate-limit.js';
import { createUpgradeHandler, type UpgradeContext } from '../../src/ws/upgrade.js';
import { parseReply, rawRequest } from '../helpers/http.js';
import { captureLogger } from '../helpers/logger.js';

const fakeAuth: Authenticator = {
  scheme: 'Token',
  challenge: 'Token realm="test"',
  authenticate(req) {
    const token = req.headers['x-token'];
    if (token === undefined) return undefined;
    if (token !== 'good') throw unauthorized('The token is not valid.');
    return { sub: 'alice', scopes: [], method: 'token' };
  },
};

let server: Server | undefined;
const clients: WebSocket[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.terminate();
  if (server) {
    const s = server;
    server = undefined;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
});

async function start(
  options: Partial<Parameters<typeof createUpgradeHandler>[0]> = {},
): Promise<{ url: string; connections: UpgradeContext[] }> {
  const connections: UpgradeContext[] = [];
  const handler = createUpgradeHandler({
    path: '/ws',
    origins: ['https://app.example.com'],
    authenticators: [fakeAuth],
    protocols: ['chat.v1', 'chat.v2'],
    onConnection(ws, ctx) {
      connections.push(ctx);
      ws.send(JSON.stringify({ sub: ctx.principal?.sub, protocol: ctx.protocol ?? null }));
    },
    ...options,
  });
  server = createServer((_req, res) => res.end());
  server.on('upgrade', handler);
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `ws://127.0.0.1:${port}`, connections };
}

interface Refusal {
  status: number;
  headers: IncomingMessage['headers'];
  body: string;
}

function refused(
  url: string,
  options: ConstructorParameters<typeof WebSocket>[2] = {},
  protocols?: string[],
): Promise<Refusal> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, protocols, { ...options, handshakeTimeout: 2000 });
    clients.push(ws);
    ws.on('open', () => reject(new Error('unexpected open')));
    ws.on('error', () => {});
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
        ws.terminate();
      });
    });
  });
}

function opened(
  url: string,
  options: ConstructorParameters<typeof WebSocket>[2] = {},
  protocols?: string[],
): Promise<{ ws: WebSocket; first: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, protocols, { ...options, handshakeTimeout: 2000 });
    clients.push(ws);
    ws.on('error', reject);
    ws.on('unexpected-response', (_req, res) => reject(new Error(`refused ${res.statusCode}`)));
    ws.once('message', (data) => resolve({ ws, first: JSON.parse(String(data)) }));
  });
}

describe('createUpgradeHandler', () => {
  it('refuses a missing credential with 401, WWW-Authenticate and a problem body', async () => {
    const { url } = await start();
    const r = await refused(`${url}/ws`);
    expect(r.status).toBe(401);
    expect(r.headers['www-authenticate']).toBe('Token realm="test"');
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.headers.connection).toBe('close');
    const problem = JSON.parse(r.body);
    expect(problem).toMatchObject({ status: 401, instance: '/ws' });
  });

  it('refuses a bad credential with 401 and the challenges', async () => {
    const { url } = await start();
    const r = await refused(`${url}/ws`, { headers: { 'x-token': 'bad' } });
    expect(r.status).toBe(401);
    expect(r.headers['www-authenticate']).toBe('Token realm="test"');
    expect(JSON.parse(r.body).detail).toBe('The token is not valid.');
  });

  it('refuses an Origin outside the allowlist with 403', async () => {
    const { url } = await start();
    const r = await refused(`${url}/ws`, {
      headers: { 'x-token': 'good' },
      origin: 'https://evil.example.net',
    });
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body).status).toBe(403);
  });

  it('refuses another path with 404', async () => {
    const { url } = await start();
    const r = await refused(`${url}/other`, { headers: { 'x-token': 'good' } });
    expect(r.status).toBe(404);
    expect(r.headers['content-length']).toBe(String(Buffer.byteLength(r.body)));
  });

  it.each([
    ['/%77s', 101],
    ['/WS', 404],
    ['/x/../ws', 400],
    ['/ws%2F', 400],
    ['//ws', 400],
    ['/ws?token=1', 101],
  ])('reads %s in the normal form mount() and the router read: %i', async (target, status) => {
    const { url } = await start();
    const port = Number(new URL(url).port);
    const head =
      `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nX-Token: good\r\n\r\n';
    // the status line is all this needs: a 101 keeps the connection open
    const answer = parseReply(
      await new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => socket.write(head));
        socket.setEncoding('latin1');
        socket.once('data', (text: string) => {
          socket.destroy();
          resolve(text);
        });
        socket.once('error', reject);
      }),
    );
    expect(answer.status).toBe(status);
  });

  it.each([
    ['no Host', ''],
    ['two Host lines', 'Host: a.example\r\nHost: b.example\r\n'],
  ])('refuses a handshake with %s with 400 and no upgrade', async (_what, hosts) => {
    const { url } = await start();
    const port = Number(new URL(url).port);
    const answer = await rawRequest(
      port,
      `GET /ws HTTP/1.1\r\n${hosts}Upgrade: websocket\r\nConnection: Upgrade\r\n` +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n' +
        'X-Token: good\r\n\r\n',
    );
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toContain('one Host header');
    expect(answer).not.toContain('101');
  });

  it('refuses protocol version 8 with 426 and Sec-WebSocket-Version: 13', async () => {
    const { url } = await start();
    const r = await refused(`${url}/ws`, { headers: { 'x-token': 'good' }, protocolVersion: 8 });
    expect(r.status).toBe(426);
    expect(r.headers['sec-websocket-version']).toBe('13');
    expect(JSON.parse(r.body).status).toBe(426);
  });

  it('upgrades and passes the principal to onConnection', async () => {
    const { url, connections } = await start();
    const { ws, first } = await opened(`${url}/ws?x=1`, {
      headers: { 'x-token': 'good' },
      origin: 'https://app.example.com',
    });
    expect(first).toEqual({ sub: 'alice', protocol: null });
    expect(connections[0]?.principal?.sub).toBe('alice');
    expect(ws.protocol).toBe('');
  });

  it('negotiates the first offered subprotocol the server supports', async () => {
    const { url } = await start();
    const { ws, first } = await opened(`${url}/ws`, { headers: { 'x-token': 'good' } }, [
      'chat.v3',
      'chat.v2',
      'chat.v1',
    ]);
    expect(first.protocol).toBe('chat.v2');
    expect(ws.protocol).toBe('chat.v2');
  });

  it('upgrades without authenticators with no principal', async () => {
    const { url } = await start({ authenticators: undefined });
    const { first } = await opened(`${url}/ws`);
    expect(first).toEqual({ protocol: null });
  });

  it('closes with 1011 when onConnection throws', async () => {
    const { url } = await start({
      onConnection() {
        throw new Error('boom');
      },
      logger: silentLogger,
    });
    const ws = new WebSocket(`${url}/ws`, { headers: { 'x-token': 'good' } });
    clients.push(ws);
    const [code] = await new Promise<[number]>((resolve) => ws.on('close', (c) => resolve([c])));
    expect(code).toBe(1011);
  });
});

describe('createUpgradeHandler: middleware', () => {
  const edge = [requestId(), securityHeaders()];

  it("puts the middleware's headers on a refusal and quotes its request id", async () => {
    const { url } = await start({ middleware: edge });
    const r = await refused(`${url}/ws`, { headers: { 'X-Request-ID': 'trace-42' } });
    expect(r.status).toBe(401);
    expect(r.headers['x-request-id']).toBe('trace-42');
    expect(r.headers['content-security-policy']).toBe("default-src 'none'; frame-ancestors 'none'");
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    expect(r.headers['x-frame-options']).toBe('DENY');
    // the refusal's own headers stay, and are written once
    expect(r.headers['www-authenticate']).toBe('Token realm="test"');
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.headers['cache-control']).toBe('no-store');
    expect(JSON.parse(r.body)).toMatchObject({ status: 401, requestId: 'trace-42' });
  });

  it('keeps the case the headers were set in, and makes a request id when none is sent', async () => {
    const { url } = await start({ middleware: edge });
    const text = await rawRequest(
      Number(new URL(url).port),
      'GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
      { timeoutMs: 2000 },
    );
    const id = /\r\nX-Request-ID: ([0-9a-f-]{36})\r\n/.exec(text)?.[1];
    expect(id).toBeDefined();
    expect(text).toContain('\r\nContent-Security-Policy: ');
    expect(text.match(/\r\nContent-Type: /gi)).toHaveLength(1);
    expect(text.match(/\r\nConnection: /gi)).toHaveLength(1);
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)).requestId).toBe(id);
  });

  it('puts them on the 101 too, without touching the handshake headers', async () => {
    const { url } = await start({
      middleware: [
        ...edge,
        (_req, res, next) => {
          res.setHeader('Connection', 'close'); // a handshake header: never copied
          res.setHeader('Sec-WebSocket-Protocol', 'evil');
          return next();
        },
      ],
    });
    const ws = new WebSocket(`${url}/ws`, ['chat.v1'], {
      headers: { 'x-token': 'good', 'X-Request-ID': 'trace-101' },
    });
    clients.push(ws);
    // the first message may come in the same chunk as the 101: listen before it
    const first = new Promise((resolve) => ws.once('message', resolve));
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      ws.on('upgrade', resolve);
      ws.on('error', reject);
    });
    expect(response.statusCode).toBe(101);
    expect(response.headers['x-request-id']).toBe('trace-101');
    expect(response.headers['x-content-type-options']).toBe('nosniff');
    expect(response.headers.connection).toBe('Upgrade');
    expect(response.headers['sec-websocket-protocol']).toBe('chat.v1');
    await first;
    expect(ws.readyState).toBe(WebSocket.OPEN);
  });

  it("refuses with a middleware's error (a rate limit's 429 and Retry-After)", async () => {
    const { url } = await start({
      middleware: [...edge, rateLimit({ limit: 1, windowMs: 60_000 })],
      authenticators: undefined,
    });
    await opened(`${url}/ws`);
    const r = await refused(`${url}/ws`);
    expect(r.status).toBe(429);
    expect(Number(r.headers['retry-after'])).toBeGreaterThan(0);
    expect(r.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.parse(r.body)).toMatchObject({ status: 429 });
  });

  it('answers 500 and reports a middleware that answers instead of calling next()', async () => {
    const log = captureLogger();
    const { url } = await start({
      middleware: (_req, res) => {
        res.end('mine');
      },
      logger: log,
    });
    const r = await refused(`${url}/ws`, { headers: { 'x-token': 'good' } });
    expect(r.status).toBe(500);
    expect(r.body).not.toContain('mine');
    expect(JSON.parse(r.body).detail).toBe('An unexpected error occurred.');
    expect(String(log.errors[0])).toMatch(/must call next\(\)/);
  });

  it('refuses a middleware option that is not a function or a list of them', () => {
    expect(() =>
      createUpgradeHandler({ path: '/ws', onConnection() {}, middleware: 'x' as never }),
    ).toThrow(/middleware/);
  });
});

describe('createUpgradeHandler: other protocols', () => {
  it('hands an h2c upgrade (curl --http2) to the request listener, on any path', async () => {
    const { url } = await start();
    const port = Number(new URL(url).port);
    for (const path of ['/ws', '/elsewhere']) {
      const reply = parseReply(
        await rawRequest(
          port,
          `GET ${path} HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\n` +
            'HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\nConnection: close\r\n\r\n',
        ),
      );
      // the test server's request listener answers 200 with an empty body
      expect(reply.status, path).toBe(200);
      expect(reply.headers['content-type']).toBeUndefined();
    }
  });
});

describe('createUpgradeHandler: guard', () => {
  it('refuses the handshake with 429 once the refusals are spent, a right credential too', async () => {
    let calls = 0;
    const counted: Authenticator = {
      ...fakeAuth,
      authenticate(req) {
        calls++;
        return fakeAuth.authenticate(req);
      },
    };
    const { url, connections } = await start({
      authenticators: [counted],
      guard: createCredentialGuard({ limit: 2 }),
    });
    for (let i = 0; i < 2; i++) {
      expect((await refused(`${url}/ws`, { headers: { 'x-token': `guess-${i}` } })).status).toBe(
        401,
      );
    }
    // the refusal past the limit is answered 429 instead of its verdict
    const third = await refused(`${url}/ws`, { headers: { 'x-token': 'guess-2' } });
    expect(third.status).toBe(429);
    expect(Number(third.headers['retry-after'])).toBeGreaterThan(0);
    expect(third.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(third.body)).toMatchObject({ status: 429, instance: '/ws' });
    // spent: the right credential is refused without being verified, and no 101 is sent
    const before = calls;
    const right = await refused(`${url}/ws`, { headers: { 'x-token': 'good' } });
    expect(right.status).toBe(429);
    expect(right.headers.upgrade).toBeUndefined();
    expect(calls).toBe(before);
    expect(connections).toHaveLength(0);
  });

  it('does not count a handshake without a credential, nor an accepted one', async () => {
    const { url } = await start({ guard: createCredentialGuard({ limit: 1 }) });
    for (let i = 0; i < 3; i++) expect((await refused(`${url}/ws`)).status).toBe(401);
    for (let i = 0; i < 3; i++) {
      const { first } = await opened(`${url}/ws`, { headers: { 'x-token': 'good' } });
      expect(first.sub).toBe('alice');
    }
  });

  it('refuses a guard that is not a CredentialGuard, and an unknown option', () => {
    expect(() =>
      createUpgradeHandler({ path: '/ws', onConnection() {}, guard: {} as never }),
    ).toThrow(/guard/);
    expect(() =>
      createUpgradeHandler({ path: '/ws', onConnection() {}, gaurd: {} } as never),
    ).toThrow(/Did you mean `guard`/);
  });
});

describe('createUpgradeHandler: connections per principal', () => {
  it('refuses one connection past maxConnectionsPerPrincipal with 429, until one closes', async () => {
    const { url } = await start({ maxConnectionsPerPrincipal: 2 });
    const headers = { 'x-token': 'good' };
    const first = await opened(`${url}/ws`, { headers });
    await opened(`${url}/ws`, { headers });
    const third = await refused(`${url}/ws`, { headers });
    expect(third.status).toBe(429);
    expect(third.headers['retry-after']).toBe('5');
    expect(JSON.parse(third.body)).toMatchObject({
      status: 429,
      detail: expect.stringContaining('Too many open connections'),
    });
    first.ws.close();
    await new Promise((resolve) => first.ws.once('close', resolve));
    await expect
      .poll(async () => {
        try {
          return (await opened(`${url}/ws`, { headers })).first.sub;
        } catch (error) {
          return String(error);
        }
      })
      .toBe('alice');
  });

  it('counts each principal apart, and concurrent handshakes within the cap', async () => {
    const twoUsers: Authenticator = {
      scheme: 'User',
      async authenticate(req) {
        await new Promise((resolve) => setTimeout(resolve, 20)); // handshakes overlap
        const sub = req.headers['x-user'];
        return typeof sub === 'string' ? { sub, scopes: [], method: 'test' } : undefined;
      },
    };
    const { url } = await start({ authenticators: [twoUsers], maxConnectionsPerPrincipal: 3 });
    const attempts = await Promise.allSettled(
      Array.from({ length: 6 }, () => opened(`${url}/ws`, { headers: { 'x-user': 'ivan' } })),
    );
    expect(attempts.filter((a) => a.status === 'fulfilled')).toHaveLength(3);
    const { first } = await opened(`${url}/ws`, { headers: { 'x-user': 'judy' } });
    expect(first.sub).toBe('judy');
  });
});
