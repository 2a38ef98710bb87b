import { createServer, type RequestListener } from 'node:http';
import express from 'express';
import Koa from 'koa';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { toExpress } from '../../src/adapters/express.js';
import { toKoa } from '../../src/adapters/koa.js';
import { toNodeListener } from '../../src/adapters/node.js';
import type { Authenticator } from '../../src/auth/authenticator.js';
import type { Middleware } from '../../src/core/compose.js';
import { createHub, type Hub } from '../../src/realtime/hub.js';
import { streamChannel } from '../../src/sse/channel.js';
import { type ChannelProtocol, createChannelProtocol } from '../../src/ws/channel/channel.js';
import { createUpgradeHandler } from '../../src/ws/upgrade.js';
import { closeAll, listen } from '../helpers/http.js';
import { connect as connectStream, parseEvents } from '../helpers/sse.js';

const userHeader: Authenticator = {
  scheme: 'User',
  authenticate(req) {
    const sub = req.headers['x-user'];
    return typeof sub === 'string' ? { sub, scopes: [], method: 'test' } : undefined;
  },
};

/** The app under each host: `/events` streams the `news` channel of `hub`. */
const hosts: Record<string, (events: Middleware) => RequestListener> = {
  'node:http': (events) => toNodeListener(events),
  'Express 5': (events) => {
    const app = express();
    app.get('/events', toExpress(events));
    return app;
  },
  'Koa 3': (events) => {
    const app = new Koa();
    app.use(toKoa(events));
    return app.callback();
  },
};

let hub: Hub | undefined;
let protocol: ChannelProtocol | undefined;
afterEach(async () => {
  await protocol?.close();
  await hub?.close();
  await closeAll();
});

function openSocket(url: string, headers: Record<string, string>) {
  const ws = new WebSocket(url, { headers });
  const messages: Record<string, unknown>[] = [];
  ws.on('message', (data) => messages.push(JSON.parse(String(data))));
  const outcome = new Promise<number>((resolve, reject) => {
    ws.once('open', () => resolve(101));
    ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.once('error', reject);
  });
  return { ws, messages, outcome };
}

describe.each(Object.entries(hosts))('WebSocket and SSE behind %s', (_name, host) => {
  it('share one hub: one publish reaches both, and the upgrade is authenticated', async () => {
    const ownHub = createHub();
    hub = ownHub;
    const channels = createChannelProtocol({ hub: ownHub, heartbeat: 0 });
    protocol = channels;
    const events: Middleware = (req, res) => {
      streamChannel(req, res, { hub: ownHub, channel: 'news', heartbeat: 0, retry: false });
    };
    const server = createServer(host(events));
    server.on(
      'upgrade',
      createUpgradeHandler({
        path: '/ws',
        authenticators: [userHeader],
        onConnection: (ws, context) => channels.handle(ws, context),
      }),
    );
    const listening = await listen(server);
    const wsUrl = `ws://127.0.0.1:${listening.port}/ws`;

    const anonymous = openSocket(wsUrl, {});
    expect(await anonymous.outcome).toBe(401);
    const alice = openSocket(wsUrl, { 'x-user': 'alice' });
    expect(await alice.outcome).toBe(101);
    alice.ws.send(JSON.stringify({ type: 'subscribe', channel: 'news' }));
    alice.ws.send(JSON.stringify({ type: 'ping' }));
    const stream = await connectStream(listening, '/events');
    expect(stream.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    await expect.poll(() => alice.messages).toEqual([{ type: 'pong' }]);

    const sent = await ownHub.publish('news', 'headline', { title: 'one hub' });
    const text = await stream.until((t) => parseEvents(t).length > 0);
    expect(parseEvents(text)).toEqual([
      { id: `${sent.epoch}:1`, event: 'headline', data: '{"title":"one hub"}' },
    ]);
    await expect
      .poll(() => alice.messages.at(-1))
      .toEqual({ type: 'push', event: 'headline', data: { title: 'one hub' } });
    stream.destroy();
    alice.ws.close();
  });
});
