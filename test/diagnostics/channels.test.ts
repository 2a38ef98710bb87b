// Every channel of portico/diagnostics, subscribed and triggered against real servers.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { apiKeyAuth } from '../../src/auth/api-key/authenticator.js';
import { createApiKey, MemoryApiKeyStore } from '../../src/auth/api-key/store.js';
import { authenticate } from '../../src/auth/authenticate.js';
import { createRevocations } from '../../src/auth/revocations.js';
import type { Middleware } from '../../src/core/compose.js';
import { sendJson } from '../../src/core/send.js';
import { channels, silentLogger } from '../../src/diagnostics/index.js';
import { rateLimit } from '../../src/rate-limit/rate-limit.js';
import { createHub } from '../../src/realtime/hub.js';
import { MemoryBroker } from '../../src/realtime/memory-broker.js';
import { createEventStream } from '../../src/sse/stream.js';
import { createWebhookSender, type WebhookSender } from '../../src/webhook/sender.js';
import { createUpgradeHandler } from '../../src/ws/upgrade.js';
import { closeAll, type Listening, listen, request, serve } from '../helpers/http.js';
import { connect as connectSse } from '../helpers/sse.js';
import { startTokenServer, tokenRequest } from '../oauth/token-fixtures.js';

type Seen = { name: string; message: Record<string, unknown> };

/** Subscribes to `names` until the test ends; what they publish lands in the returned list. */
function record(...names: string[]): Seen[] {
  const seen: Seen[] = [];
  for (const name of names) {
    const listener = (message: unknown) => seen.push({ name, message: message as Seen['message'] });
    subscribe(name, listener);
    cleanups.push(() => unsubscribe(name, listener));
  }
  return seen;
}

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await closeAll();
});

/** Waits until `check` holds (bounded). */
async function until(check: () => boolean, ms = 3_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out waiting for an event');
    await new Promise((r) => setTimeout(r, 10));
  }
}

const me: Middleware = (_req, res) => sendJson(res, 200, { ok: true });

describe('the channels are named and exported', () => {
  it('has one constant per channel, all under portico:', () => {
    expect(Object.values(channels).every((name) => name.startsWith('portico:'))).toBe(true);
    expect(new Set(Object.values(channels)).size).toBe(Object.values(channels).length);
  });
});

describe('authentication and rate limits', () => {
  it('publishes authSucceeded and authRefused, never the key', async () => {
    const store = new MemoryApiKeyStore();
    const { key } = await createApiKey(store, { owner: 'alice', name: 'test' });
    const server = await serve([authenticate([apiKeyAuth({ store })]), me]);
    const seen = record(channels.authSucceeded, channels.authRefused);
    expect((await request(server, '/', { headers: { 'x-api-key': key } })).status).toBe(200);
    expect((await request(server, '/', { headers: { 'x-api-key': `${key}x` } })).status).toBe(401);
    expect((await request(server, '/')).status).toBe(401);
    expect(seen.map(({ name, message }) => [name, message.mechanism, message.status])).toEqual([
      [channels.authSucceeded, 'api_key', undefined],
      [channels.authRefused, 'ApiKey', 401],
      [channels.authRefused, undefined, 401],
    ]);
    expect(seen[0]!.message).toMatchObject({ sub: 'alice', surface: 'http' });
    expect(seen[1]!.message).toMatchObject({ code: expect.any(String), surface: 'http' });
    const text = JSON.stringify(seen.map(({ message: { req: _req, ...rest } }) => rest));
    expect(text).not.toContain(key.slice(4));
  });

  it('publishes rateLimited with the key counted and the limit', async () => {
    const server = await serve([rateLimit({ limit: 1, windowMs: 60_000 }), me]);
    const seen = record(channels.rateLimited);
    expect((await request(server, '/')).status).toBe(200);
    expect(seen).toHaveLength(0);
    expect((await request(server, '/')).status).toBe(429);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.message).toMatchObject({ key: 'ip:127.0.0.1', limit: 1 });
    expect(seen[0]!.message.resetAt).toBeGreaterThan(Date.now());
  });
});

describe('the token endpoint', () => {
  it('publishes tokenIssued and tokenRefused, never a secret or a token', async () => {
    const { server } = await startTokenServer();
    const seen = record(channels.tokenIssued, channels.tokenRefused);
    const issued = await tokenRequest(
      server,
      { grant_type: 'client_credentials' },
      { client: 'demo-service' },
    );
    expect(issued.status).toBe(200);
    const refused = await tokenRequest(
      server,
      { grant_type: 'password' },
      { client: 'demo-service' },
    );
    expect(refused.status).toBe(400);
    expect(seen.map(({ name, message: { req: _req, ...rest } }) => [name, rest])).toEqual([
      [
        channels.tokenIssued,
        {
          grantType: 'client_credentials',
          clientId: 'demo-service',
          scope: expect.any(String),
          refreshToken: false,
        },
      ],
      [
        channels.tokenRefused,
        {
          grantType: undefined,
          clientId: 'demo-service',
          error: 'unsupported_grant_type',
          status: 400,
        },
      ],
    ]);
    const accessToken = JSON.parse(issued.body).access_token as string;
    const text = JSON.stringify(seen.map(({ message: { req: _req, ...rest } }) => rest));
    expect(text).not.toContain('demo-service-secret');
    expect(text).not.toContain(accessToken);
  });
});

describe('WebSocket connections', () => {
  it('publishes authentication, wsOpened and wsClosed (code, reason, duration)', async () => {
    const server = createServer((_req, res) => res.end());
    server.on(
      'upgrade',
      createUpgradeHandler({
        path: '/ws',
        authenticators: [
          {
            scheme: 'Test',
            authenticate: (req) => {
              const user = req.headers['x-user'];
              if (user === 'mallory') throw new (class extends Error {})();
              return typeof user === 'string'
                ? { sub: user, scopes: [], method: 'test' }
                : undefined;
            },
          },
        ],
        onConnection: (ws) => ws.on('message', () => ws.close(4000, 'bye')),
      }),
    );
    const listening = await listen(server);
    const seen = record(
      channels.wsOpened,
      channels.wsClosed,
      channels.authSucceeded,
      channels.authRefused,
    );
    const url = `ws://127.0.0.1:${listening.port}/ws`;
    const ws = new WebSocket(url, { headers: { 'x-user': 'alice' } });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    ws.send('hi');
    await new Promise((resolve) => ws.once('close', resolve));
    await until(() => seen.some((s) => s.name === channels.wsClosed));
    const refused = new WebSocket(url);
    await new Promise((resolve) => refused.once('error', resolve).once('close', resolve));
    await until(() => seen.some((s) => s.name === channels.authRefused));
    const summary = seen.map(({ name, message: { req: _req, ...rest } }) => [name, rest]);
    expect(summary).toEqual([
      [channels.authSucceeded, { mechanism: 'test', sub: 'alice', surface: 'ws' }],
      [channels.wsOpened, { sub: 'alice', protocol: '' }],
      [
        channels.wsClosed,
        { sub: 'alice', code: 4000, reason: 'bye', durationMs: expect.any(Number) },
      ],
      [
        channels.authRefused,
        { status: 401, code: expect.any(String), mechanism: undefined, surface: 'ws' },
      ],
    ]);
  });
});

describe('event streams', () => {
  it('publishes sseOpened and sseEnded with the reason', async () => {
    const server = await serve((req, res) => {
      const stream = createEventStream(req, res, { retry: false, heartbeat: 0 });
      if (req.url === '/closed') stream.close();
    });
    const seen = record(channels.sseOpened, channels.sseEnded);
    const byServer = await connectSse(server, '/closed');
    await byServer.ended;
    const byClient = await connectSse(server, '/');
    byClient.destroy();
    await until(() => seen.length === 4);
    expect(seen.map(({ name, message }) => [name, message.reason])).toEqual([
      [channels.sseOpened, undefined],
      [channels.sseEnded, 'server'],
      [channels.sseOpened, undefined],
      [channels.sseEnded, 'client'],
    ]);
  });
});

describe('webhooks', () => {
  it('publishes each attempt and the dead letter, never the URL or the secret', async () => {
    let answered = 0;
    const receiver: Server = createServer((_req, res) => {
      answered++;
      res.writeHead(answered === 1 ? 200 : 500).end();
    });
    const target: Listening = await listen(receiver);
    const sender: WebhookSender = createWebhookSender({
      allowHttp: true,
      allowPrivate: true,
      schedule: ['10ms'],
      jitter: 0,
    });
    cleanups.push(() => sender.close());
    const seen = record(channels.webhookAttempt, channels.webhookDeadLettered);
    const port = (receiver.address() as AddressInfo).port;
    const endpoint = await sender.addEndpoint({
      url: `http://127.0.0.1:${port}/hook?token=q-secret`,
    });
    await sender.send('first', { n: 1 });
    await until(() => seen.length === 1);
    await sender.send('second', { n: 2 });
    await until(() => seen.some((s) => s.name === channels.webhookDeadLettered));
    expect(
      seen.map(({ name, message }) => [
        name,
        message.attempt ?? message.attempts,
        message.ok,
        message.status,
      ]),
    ).toEqual([
      [channels.webhookAttempt, 1, true, 200],
      [channels.webhookAttempt, 1, false, 500],
      [channels.webhookAttempt, 2, false, 500],
      [channels.webhookDeadLettered, 2, undefined, undefined],
    ]);
    expect(seen[0]!.message).toMatchObject({ endpointId: endpoint.id, eventType: 'first' });
    const text = JSON.stringify(seen);
    expect(text).not.toContain('q-secret');
    expect(text).not.toContain(endpoint.secrets[0]!);
    expect(target.port).toBe(port);
  });
});

describe('revocations', () => {
  it('publishes revocation: local when revoked here, transport when heard', async () => {
    const hub = createHub({ broker: new MemoryBroker() });
    cleanups.push(() => hub.close());
    const here = createRevocations({ transport: hub });
    const seen = record(channels.revocation);
    await here.revoke(['api_key:key_1']);
    await until(() => seen.length === 2);
    expect(seen.map(({ message }) => message)).toEqual([
      { ids: ['api_key:key_1'], origin: 'local' },
      { ids: ['api_key:key_1'], origin: 'transport' },
    ]);
    here.close();
  });
});

describe('the request TracingChannel', () => {
  it('wraps each request: start, end, asyncStart, asyncEnd, and error when it throws', async () => {
    const server = await serve(
      [
        (req, _res, next) => {
          if (req.url === '/boom') throw new Error('boom');
          return next();
        },
        me,
      ],
      { logger: silentLogger },
    );
    const events = ['start', 'end', 'asyncStart', 'asyncEnd', 'error'];
    const seen = record(...events.map((e) => `tracing:${channels.request}:${e}`));
    expect((await request(server, '/')).status).toBe(200);
    expect((await request(server, '/boom')).status).toBe(500);
    const names = seen.map(({ name }) => name.split(':').at(-1));
    expect(names).toEqual([
      ...['start', 'end', 'asyncStart', 'asyncEnd'],
      ...['start', 'end', 'error', 'asyncStart', 'asyncEnd'],
    ]);
    expect(seen[0]!.message.req).toBeDefined();
    expect((seen.at(-1)!.message.error as Error).message).toBe('boom');
  });
});
