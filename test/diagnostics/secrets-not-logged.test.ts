// Every logging path of portico, fed secrets (in headers, cookies, query strings, forms, URLs,
// payloads): none of them reaches a log line. The reference server's whole run is checked in
// test/examples/secrets-not-logged.test.ts.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { createHub } from '../../src/realtime/hub.js';
import { MemoryBroker } from '../../src/realtime/memory-broker.js';
import { createWebhookSender } from '../../src/webhook/sender.js';
import { createUpgradeHandler } from '../../src/ws/upgrade.js';
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
    const { port } = await listen(server);
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
