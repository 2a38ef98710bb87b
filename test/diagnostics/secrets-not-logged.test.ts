// Every logging path of portico, fed secrets (in headers, cookies, query strings, forms, URLs,
// payloads): none of them reaches a log line. The reference server's whole run is checked in
// test/examples/secrets-not-logged.test.ts.
import { randomBytes } from 'node:crypto';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer, type IncomingMessage } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { accessLog } from '../../examples/reference-server/logging.js';
import { apiKeyAuth } from '../../src/auth/api-key/authenticator.js';
import { createApiKey, MemoryApiKeyStore } from '../../src/auth/api-key/store.js';
import { authenticate } from '../../src/auth/authenticate.js';
import type { Middleware } from '../../src/core/compose.js';
import { sendJson } from '../../src/core/send.js';
import { channels, requestPath } from '../../src/diagnostics/index.js';
import { requestId } from '../../src/http/request-id.js';
import { createHub } from '../../src/realtime/hub.js';
import { MemoryBroker } from '../../src/realtime/memory-broker.js';
import { createWebhookSender } from '../../src/webhook/sender.js';
import { createUpgradeHandler } from '../../src/ws/upgrade.js';
import { absoluteFormGet, absoluteTarget } from '../helpers/absolute-form.js';
import { closeAll, listen, request, serve } from '../helpers/http.js';
import { captureLogger } from '../helpers/logger.js';
import { pkce, plantCode, redeemWebCode, startTokenServer } from '../oauth/token-fixtures.js';

const secret = (name: string) => `${name}-${randomBytes(12).toString('hex')}`;
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
  await closeAll();
});

/** The captured lines hold at least one line, and none of `secrets`. */
function expectClean(log: ReturnType<typeof captureLogger>, secrets: string[]): void {
  expect(log.lines.length).toBeGreaterThan(0);
  const text = log.text();
  for (const value of secrets) expect(text, value).not.toContain(value);
}

/** A server whose WebSocket handler fails after the handshake, logging to `log`. */
function failingUpgrades(log: ReturnType<typeof captureLogger>) {
  const server = createServer((_req, res) => res.end());
  server.on(
    'upgrade',
    createUpgradeHandler({
      path: '/ws',
      onConnection: () => {
        throw new Error('the chat backend is down');
      },
      logger: log,
    }),
  );
  return server;
}

describe('no log line holds a secret', () => {
  it('http request.failed: headers, cookie and query of the failed request', async () => {
    const log = captureLogger();
    const secrets = [secret('bearer'), secret('cookie'), secret('key'), secret('query')];
    const server = await serve(
      () => {
        throw new Error('the database is down');
      },
      { logger: log },
    );
    const reply = await request(server, `/orders?api_key=${secrets[3]}`, {
      headers: {
        authorization: `Bearer ${secrets[0]}`,
        cookie: `session=${secrets[1]}`,
        'x-api-key': secrets[2],
      },
    });
    expect(reply.status).toBe(500);
    expect(log.lines[0]!.fields).toMatchObject({ event: 'request.failed', path: '/orders' });
    expectClean(log, secrets);
  });

  it('oauth token.failed: the client secret, the code and the verifier', async () => {
    const log = captureLogger();
    const { ctx, server } = await startTokenServer({ logger: log });
    const { verifier, challenge } = pkce();
    const { code } = await plantCode(ctx, { sub: 'explode', codeChallenge: challenge });
    const reply = await redeemWebCode(server, code, verifier);
    expect(reply.status).toBe(500);
    expect(log.lines[0]!.fields).toMatchObject({ component: 'oauth', event: 'token.failed' });
    expectClean(log, ['demo-web-secret', code, verifier]);
  });

  it('ws upgrade.failed: the handshake’s credential and query', async () => {
    const log = captureLogger();
    const secrets = [secret('bearer'), secret('query')];
    const { port } = await listen(failingUpgrades(log));
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws?token=${secrets[1]}`, {
      headers: { authorization: `Bearer ${secrets[0]}` },
    });
    const code = await new Promise<number>((resolve) => ws.once('close', resolve));
    expect(code).toBe(1011);
    expect(log.lines[0]!.fields).toMatchObject({ event: 'upgrade.failed', path: '/ws' });
    expectClean(log, secrets);
  });

  it('webhook attempt.failed and dead letter: the URL’s token and the signing secret', async () => {
    const log = captureLogger();
    const receiver = createServer((_req, res) => res.writeHead(500).end());
    const { port } = await listen(receiver);
    const sender = createWebhookSender({
      allowHttp: true,
      allowPrivate: true,
      schedule: [],
      logger: log,
    });
    cleanups.push(() => sender.close());
    const token = secret('url-token');
    const endpoint = await sender.addEndpoint({ url: `http://127.0.0.1:${port}/hook?t=${token}` });
    await sender.send('order.paid', { card: secret('payload') });
    const end = Date.now() + 5_000;
    while (!log.lines.some((l) => l.fields.event === 'delivery.dead-lettered')) {
      if (Date.now() > end) throw new Error('no dead letter logged');
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(log.lines[0]).toMatchObject({
      level: 'warn',
      fields: { event: 'attempt.failed', endpointId: endpoint.id, status: 500 },
    });
    expectClean(log, [token, endpoint.secrets[0]!, `127.0.0.1:${port}`]);
    expect((receiver.address() as AddressInfo).port).toBe(port);
  });

  it('realtime listener.failed: the message’s data', async () => {
    const log = captureLogger();
    const hub = createHub({ broker: new MemoryBroker({ logger: log }) });
    cleanups.push(() => hub.close());
    hub.subscribe('room:1', () => {
      throw new Error('a listener failed');
    });
    const password = secret('password');
    await hub.publish('room:1', 'message', { password });
    expect(log.lines[0]!.fields).toMatchObject({ event: 'listener.failed', channel: 'room:1' });
    expectClean(log, [password]);
  });
});

/**
 * Subscribes to `names` until the test ends, as an audit log or a tracer would: each message
 * becomes a line of `log` with the request's path (`requestPath(req)`) and the message's own
 * fields; `payloads` keeps those fields, the request and response left out.
 */
function observe(log: ReturnType<typeof captureLogger>, names: string[]): unknown[] {
  const payloads: unknown[] = [];
  for (const name of names) {
    const listener = (message: unknown) => {
      const {
        req,
        res: _res,
        error: _error,
        ...rest
      } = message as {
        req: IncomingMessage;
        res?: unknown;
        error?: unknown;
      };
      payloads.push(rest);
      log.info({ component: 'audit', event: name, path: requestPath(req), ...rest }, name);
    };
    subscribe(name, listener);
    cleanups.push(() => unsubscribe(name, listener));
  }
  return payloads;
}

describe('a request target in absolute form with userinfo (RFC 9112 §3.2.2)', () => {
  const userinfo = 'alice:alice-password';

  it('is logged by its path alone: access log, request.failed, diagnostics subscribers', async () => {
    const log = captureLogger();
    const store = new MemoryApiKeyStore();
    const { key } = await createApiKey(store, { owner: 'alice', name: 'test' });
    const query = `?api_key=${key}&token=${secret('token')}`;
    const payloads = observe(log, [
      'tracing:portico:request:start',
      'tracing:portico:request:error',
      channels.authSucceeded,
      channels.authRefused,
    ]);
    const me: Middleware = (_req, res) => sendJson(res, 200, { ok: true });
    const routes: Middleware = (req, _res, next) => {
      if (requestPath(req) === '/boom') throw new Error('the database is down');
      return next();
    };
    const server = await serve(
      [requestId(), accessLog(log), routes, authenticate([apiKeyAuth({ store })]), me],
      { logger: log },
    );
    const send = (path: string, headers: Record<string, string> = {}) =>
      absoluteFormGet(server.port, `${path}${query}`, { userinfo, headers });
    expect((await send('/api/me', { 'X-API-Key': key })).status).toBe(200);
    expect((await send('/api/me', { 'X-API-Key': `${key}x` })).status).toBe(401);
    expect((await send('/boom')).status).toBe(500);
    await expect
      .poll(() => log.lines.filter((l) => l.message.startsWith('request ')).length)
      .toBe(3);

    const events = log.lines.map(({ fields }) => [fields.event ?? 'access', fields.path]);
    expect(events).toEqual(
      expect.arrayContaining([
        ['tracing:portico:request:start', '/api/me'],
        [channels.authSucceeded, '/api/me'],
        [channels.authRefused, '/api/me'],
        ['tracing:portico:request:start', '/boom'],
        ['request.failed', '/boom'],
        ['tracing:portico:request:error', '/boom'],
      ]),
    );
    const access = log.lines.filter((l) => l.message === 'request completed');
    expect(access.map((l) => (l.fields.req as { url: string }).url)).toEqual([
      '/api/me',
      '/api/me',
      '/boom',
    ]);
    expect(payloads.length).toBeGreaterThanOrEqual(6);
    const target = absoluteTarget(server.port, '', userinfo);
    for (const text of [log.text(), JSON.stringify(payloads)]) {
      for (const leaked of ['alice-password', target, key.slice(4), 'api_key=', 'token=', '?']) {
        expect(text, leaked).not.toContain(leaked);
      }
    }
  });

  it('is logged by its path alone by a WebSocket upgrade that fails', async () => {
    const log = captureLogger();
    const { port } = await listen(failingUpgrades(log));
    const token = secret('query');
    const socket = connect(port, '127.0.0.1', () =>
      socket.write(
        [
          `GET ${absoluteTarget(port, `/ws?token=${token}`, userinfo)} HTTP/1.1`,
          `Host: 127.0.0.1:${port}`,
          'Upgrade: websocket',
          'Connection: Upgrade',
          'Sec-WebSocket-Version: 13',
          `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
          '',
          '',
        ].join('\r\n'),
      ),
    );
    socket.on('error', () => {});
    cleanups.push(() => socket.destroy());
    await expect.poll(() => log.lines.length).toBeGreaterThan(0);
    expect(log.lines[0]!.fields).toMatchObject({ event: 'upgrade.failed', path: '/ws' });
    expectClean(log, ['alice-password', token, `127.0.0.1:${port}`]);
  });
});
