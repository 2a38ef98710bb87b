// Event streams end with the credential they were opened with, are capped per principal,
// and never replay a message that was redacted from the history: attacks over real sockets,
// on node:http and through the Fetch adapter (portico/fetch on @hono/node-server), where the
// stream is a Web Response's body.
import { createServer } from 'node:http';
import { getRequestListener } from '@hono/node-server';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toFetchHandler } from '../../src/adapters/fetch/index.js';
import { authenticate } from '../../src/auth/authenticate.js';
import {
  createRevocations,
  grantCredentialId,
  type Revocations,
} from '../../src/auth/revocations.js';
import type { Middleware } from '../../src/core/compose.js';
import { silentLogger } from '../../src/diagnostics/index.js';
import { createHub, type Hub } from '../../src/realtime/hub.js';
import { MemoryBroker } from '../../src/realtime/memory-broker.js';
import { type ChannelStreamOptions, streamChannel } from '../../src/sse/channel.js';
import type { EventStreamCloseReason } from '../../src/sse/stream.js';
import { nodeServerAddress } from '../helpers/adapters.js';
import { closeAll, type Listening, listen, request, serve } from '../helpers/http.js';
import { type Client, connect, parseEvents } from '../helpers/sse.js';
import { type Credentials, credentials } from '../realtime/credential-fixtures.js';

let revocations: Revocations;
let creds: Credentials;
let hub: Hub;
let broker: MemoryBroker;
let closes: EventStreamCloseReason[];

beforeEach(async () => {
  revocations = createRevocations();
  creds = await credentials(revocations);
  broker = new MemoryBroker();
  hub = createHub({ broker });
  closes = [];
});
afterEach(async () => {
  await closeAll();
  await hub.close();
});

/** `/events` streams channel `news` to authenticated requests. */
function serveEvents(options: Partial<ChannelStreamOptions> = {}): Promise<Listening> {
  return (host === 'fetch' ? serveFetch : serve)(
    [
      creds.accountRoutes,
      authenticate(creds.authenticators),
      (req, res) => {
        const stream = streamChannel(req, res, {
          hub,
          channel: 'news',
          heartbeat: 0,
          retry: false,
          revocations,
          ...options,
        });
        const mine = closes; // this test's, however late the stream ends
        stream.onClose((reason) => mine.push(reason));
      },
    ],
    { logger: silentLogger },
  );
}

/** The host of the tests below: node:http, or the Fetch adapter on @hono/node-server. */
let host: 'node:http' | 'fetch' = 'node:http';

function serveFetch(
  app: Middleware[],
  options: { logger: typeof silentLogger },
): Promise<Listening> {
  const fetch = toFetchHandler(app, { ...options, clientAddress: nodeServerAddress });
  return listen(createServer(getRequestListener(fetch)));
}

/** A stream that is live: it received an event published after it opened. */
async function live(server: Listening, headers: Record<string, string>): Promise<Client> {
  const client = await connect(server, '/events', headers);
  expect(client.status).toBe(200);
  await hub.publish('news', 'headline', { n: 'before' });
  await client.until((text) => text.includes('before'));
  return client;
}

/** Ends within `ms`, else fails. */
function endsWithin(client: Client, ms = 1000): Promise<void> {
  return Promise.race([
    client.ended,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`still open; read ${client.text()}`)), ms).unref(),
    ),
  ]);
}

/** The stream ended with `credential-ended` and nothing published after the revocation. */
async function endedFor(client: Client, reason: 'revoked' | 'expired'): Promise<void> {
  await endsWithin(client);
  const events = parseEvents(client.text());
  expect(events.at(-1)).toEqual({ event: 'credential-ended', data: `{"reason":"${reason}"}` });
  expect(client.text()).not.toContain('after');
  expect(closes).toEqual([`credential-${reason}`]);
}

describe.each(['node:http', 'fetch'] as const)('on %s', (name) => {
  beforeEach(() => {
    host = name;
  });

  describe('an event stream bound to its credential', () => {
    it('ends when its API key is deleted, before a publish that follows', async () => {
      const server = await serveEvents();
      const { headers, id } = await creds.apiKey('alice');
      const client = await live(server, headers);
      await creds.keys.delete(id);
      await hub.publish('news', 'headline', { n: 'after' });
      await endedFor(client, 'revoked');
      // the key no longer opens one
      expect((await request(server, '/events', { headers })).status).toBe(401);
    });

    it('ends when its session signs out', async () => {
      const server = await serveEvents();
      const session = await creds.signIn(server);
      const client = await live(server, session);
      await creds.signOut(server, session);
      await hub.publish('news', 'headline', { n: 'after' });
      await endedFor(client, 'revoked');
    });

    it("ends when its bearer token's grant is revoked", async () => {
      const server = await serveEvents();
      const client = await live(server, await creds.bearer('g-sse'));
      const other = await live(server, await creds.bearer('g-other', 'eve'));
      await revocations.revoke([grantCredentialId('g-sse')]);
      await hub.publish('news', 'headline', { n: 'after' });
      await endedFor(client, 'revoked');
      // a stream of another grant goes on
      await other.until((text) => text.includes('after'));
      other.destroy();
    });

    it('ends when its credential expires, not before', async () => {
      const server = await serveEvents();
      const opened = Date.now();
      const client = await connect(server, '/events', creds.expiring('dave', 300));
      await hub.publish('news', 'headline', { n: 'before' });
      await client.until((text) => text.includes('before'));
      await endsWithin(client);
      expect(Date.now() - opened).toBeGreaterThanOrEqual(250);
      expect(parseEvents(client.text()).at(-1)).toEqual({
        event: 'credential-ended',
        data: '{"reason":"expired"}',
      });
      expect(closes).toEqual(['credential-expired']);
    });

    it('stops watching once the client goes away', async () => {
      const server = await serveEvents();
      const client = await live(server, await creds.bearer('g-gone'));
      expect(revocations.size).toBe(1);
      client.destroy();
      await client.ended;
      await expect.poll(() => revocations.size).toBe(0);
    });
  });

  describe('event streams per principal', () => {
    it('refuses one stream past maxConnectionsPerPrincipal with a 429 problem', async () => {
      const server = await serveEvents({ maxConnectionsPerPrincipal: 2 });
      const { headers } = await creds.apiKey('frank');
      const first = await connect(server, '/events', headers);
      const second = await connect(server, '/events', headers);
      expect([first.status, second.status]).toEqual([200, 200]);
      const third = await request(server, '/events', { headers });
      expect(third.status).toBe(429);
      expect(third.headers['retry-after']).toBe('5');
      expect(third.headers['content-type']).toBe('application/problem+json');
      expect(JSON.parse(third.body)).toMatchObject({
        status: 429,
        detail: expect.stringContaining('Too many open connections'),
      });
      // another principal is not counted against it
      const other = await connect(server, '/events', (await creds.apiKey('grace')).headers);
      expect(other.status).toBe(200);
      // a slot frees up when a stream closes
      first.destroy();
      await first.ended;
      await expect
        .poll(async () => {
          const next = await connect(server, '/events', headers);
          next.destroy();
          return next.status;
        })
        .toBe(200);
      second.destroy();
      other.destroy();
    });
  });

  describe('a redacted message', () => {
    it('is replayed as its redaction after Last-Event-ID: <epoch>:0, never as it was', async () => {
      const server = await serveEvents();
      const created = await hub.publish('news', 'message.created', { id: 1, text: 'secret' });
      await hub.publish('news', 'message.created', { id: 2, text: 'public' });
      const redacted = await hub.redact('news', (m) =>
        (m.data as { id: number }).id === 1
          ? { event: 'message.deleted', data: { id: 1 } }
          : undefined,
      );
      expect(redacted).toBe(1);
      const { headers } = await creds.apiKey('heidi');
      const client = await connect(server, '/events', {
        ...headers,
        'last-event-id': `${broker.epoch}:0`,
      });
      const text = await client.until((t) => parseEvents(t).length >= 2);
      expect(parseEvents(text)).toEqual([
        { id: `${created.epoch}:1`, event: 'message.deleted', data: '{"id":1}' },
        { id: `${created.epoch}:2`, event: 'message.created', data: '{"id":2,"text":"public"}' },
      ]);
      expect(text).not.toContain('secret');
      client.destroy();
    });
  });
});
