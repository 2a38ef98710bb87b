// Two reference-server processes on one real Redis (REDIS_URL), or on a real six-node Redis
// Cluster (REDIS_CLUSTER), act as one service: the same checks on both.
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { Browser } from '../helpers/browser.js';
import { closeAll, listen } from '../helpers/http.js';
import { hasRedis, type RedisServer, startRedis } from '../helpers/redis.js';
import { type RedisClusterServer, startRedisCluster } from '../helpers/redis-cluster.js';
import { connect, parseEvents } from '../helpers/sse.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const DEMO_KEY = 'demo-key-of-the-redis-suite-0123456789ab';
const BOB = `Basic ${Buffer.from('bob:bob-password').toString('base64')}`;

/** Where the processes share their state: one Redis, or a cluster. */
interface Backend {
  /** The environment naming it. */
  env: Record<string, string>;
  /** One Redis only: takes it away and brings it back empty. */
  single?: RedisServer;
  stop(): Promise<void>;
}

const BACKENDS: [string, () => Promise<Backend>][] = [
  [
    'one Redis',
    async () => {
      const redis = await startRedis();
      return { env: { REDIS_URL: redis.url }, single: redis, stop: () => redis.stop() };
    },
  ],
  [
    'a Redis Cluster',
    async () => {
      const cluster: RedisClusterServer = await startRedisCluster();
      const seeds = cluster.ports.map((port) => `127.0.0.1:${port}`).join(',');
      return { env: { REDIS_CLUSTER: seeds }, stop: () => cluster.stop() };
    },
  ],
];

describe.skipIf(!hasRedis).each(BACKENDS)(
  'reference server: two processes on %s',
  (name, start) => {
    let backend: Backend;
    let a: RunningServer;
    let b: RunningServer;

    /** Every process of the service gets the same settings. */
    const ENV = () => ({
      // one service: one public address (the token issuer and audience) for every process
      BASE_URL: 'http://portico.test',
      DEMO_API_KEY: DEMO_KEY,
      ...backend.env,
      // the rate-limit test counts bob's calls; alice's key makes 7 calls in all
      RATE_LIMIT: '10',
      WEBHOOK_ALLOW_PRIVATE: '1',
      WEBHOOK_TIMEOUT: '2',
      WEBHOOK_RETRY_SCHEDULE: '0.1,0.1',
    });

    beforeAll(async () => {
      backend = await start();
      [a, b] = await Promise.all([startReferenceServer(ENV()), startReferenceServer(ENV())]);
    }, 40_000);
    afterAll(async () => {
      await Promise.all([a?.stop(), b?.stop()]);
      await closeAll();
      await backend?.stop();
    });

    const post = (server: RunningServer, text: string) =>
      fetch(`${server.url}/api/messages`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-API-Key': DEMO_KEY },
        body: JSON.stringify({ text }),
      });

    it('pushes a message posted to B to a WebSocket client of A', async () => {
      const ws = new WebSocket(`${a.url.replace('http', 'ws')}/ws`, {
        headers: { 'X-API-Key': DEMO_KEY },
      });
      const received: Record<string, unknown>[] = [];
      ws.on('message', (data) => received.push(JSON.parse(String(data))));
      await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
      ws.send(JSON.stringify({ type: 'subscribe', channel: 'general', recover: true }));
      await vi.waitFor(() => expect(received.map((m) => m.type)).toContain('subscribed'));
      const created = await post(b, 'from B');
      expect(created.status).toBe(201);
      // the message itself is shared too: A serves it, with the same validators
      const { id } = (await created.json()) as { id: string };
      const onA = await fetch(`${a.url}/api/messages/${id}`, {
        headers: { 'X-API-Key': DEMO_KEY },
      });
      expect(onA.status).toBe(200);
      expect(onA.headers.get('etag')).toBe(created.headers.get('etag'));
      // across processes through Redis: a few ms here, more on a loaded machine
      await vi.waitFor(
        () =>
          expect(received.find((m) => m.type === 'push')).toMatchObject({
            event: 'message.created',
            data: { text: 'from B' },
          }),
        { timeout: 8000 },
      );
      ws.close();
    });

    it('relays a WebSocket message sent on A to the clients of B (of its channel, if named)', async () => {
      const open = async (server: RunningServer, credentials: Record<string, string>) => {
        const ws = new WebSocket(`${server.url.replace('http', 'ws')}/ws`, {
          headers: credentials,
        });
        const received: Record<string, unknown>[] = [];
        ws.on('message', (data) => received.push(JSON.parse(String(data))));
        await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
        return { ws, received };
      };
      const alice = await open(a, { 'X-API-Key': DEMO_KEY });
      const bob = await open(b, { Authorization: BOB });
      bob.ws.send(JSON.stringify({ type: 'subscribe', channel: 'r' }));
      bob.ws.send(JSON.stringify({ type: 'ping' }));
      await vi.waitFor(() => expect(bob.received).toContainEqual({ type: 'pong' }));
      // both relay subscriptions (made with each process's first connection) are live once a
      // relay gets through; each try is a new text, so only the last can be missing
      let tries = 0;
      await vi.waitFor(
        () => {
          alice.ws.send(JSON.stringify({ type: 'message', text: `hello ${++tries}` }));
          expect(bob.received.some((m) => m.type === 'message')).toBe(true);
        },
        { timeout: 5000, interval: 200 },
      );
      alice.ws.send(JSON.stringify({ type: 'message', text: 'in r', channel: 'r' }));
      await vi.waitFor(() =>
        expect(bob.received).toContainEqual({
          type: 'message',
          text: 'in r',
          from: 'alice',
          channel: 'r',
        }),
      );
      expect(alice.received.filter((m) => m.type === 'message')).toEqual([]);
      alice.ws.close();
      bob.ws.close();
    });

    it('streams B’s messages to A’s /events, and resumes on B with A’s Last-Event-ID', async () => {
      const headers = { 'X-API-Key': DEMO_KEY };
      const onA = await connect({ port: Number(new URL(a.url).port) }, '/events', headers);
      // A's stream hears Redis once a message posted to B reaches it: post until one does,
      // each try a new text, waiting for that text (so the one found is the newest message)
      const textOf = (e: { data?: string }) =>
        e.data === undefined
          ? undefined
          : (JSON.parse(e.data) as { data?: { text?: string } }).data?.text;
      let first: { id?: string; data?: string } | undefined;
      for (let tries = 1; first === undefined; tries++) {
        if (tries > 10) throw new Error(`A never streamed B's messages:\n${onA.text()}`);
        const text = `one ${tries}`;
        expect((await post(b, text)).status).toBe(201);
        const read = await onA
          .until((t) => parseEvents(t).some((e) => textOf(e) === text), 1_000)
          .catch(() => undefined);
        first = read === undefined ? undefined : parseEvents(read).find((e) => textOf(e) === text);
      }
      expect(JSON.parse(first.data!)).toMatchObject({
        event: 'message.created',
        data: { text: expect.stringMatching(/^one \d+$/) },
      });
      onA.destroy();
      await post(a, 'two');
      await post(b, 'three');
      const onB = await connect({ port: Number(new URL(b.url).port) }, '/events', {
        ...headers,
        'Last-Event-ID': first.id!,
      });
      const replayed = parseEvents(await onB.until((t) => parseEvents(t).length >= 2, 5000));
      expect(replayed.map((e) => JSON.parse(e.data!).data.text)).toEqual(['two', 'three']);
      expect(Number(replayed[1]!.id)).toBe(Number(first.id) + 2);
      onB.destroy();
    });

    it('finishes the webhook deliveries of a process killed mid-delivery in another', async () => {
      const first = await startReferenceServer(ENV());
      const ids: string[] = [];
      let firstArrived: () => void = () => {};
      const arrived = new Promise<void>((resolve) => {
        firstArrived = resolve;
      });
      // the first attempt hangs (its sender dies holding it); the next one is answered
      const target = await listen((req, res) => {
        ids.push(String(req.headers['webhook-id']));
        req.resume();
        if (ids.length === 1) firstArrived();
        else res.writeHead(204).end();
      });
      const created = await fetch(`${first.url}/api/webhooks`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-API-Key': DEMO_KEY },
        body: JSON.stringify({ url: `${target.url}/hook` }),
      });
      expect(created.status).toBe(201);
      expect((await post(first, 'delivered by another')).status).toBe(201);
      await arrived;
      await first.stop('SIGKILL');
      // A and B (and a new process) serve as one service: one of them takes the delivery over
      const second = await startReferenceServer(ENV());
      try {
        await vi.waitFor(() => expect(ids).toHaveLength(2), { timeout: 15_000, interval: 100 });
        expect(ids[1]).toBe(ids[0]);
      } finally {
        await second.stop();
      }
    }, 30_000);

    it('shares sessions and API keys: signed in or issued on A, accepted on B', async () => {
      const login = await fetch(`${a.url}/login`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Origin: 'http://portico.test' },
        body: JSON.stringify({ username: 'alice', password: 'alice-password' }),
      });
      expect(login.status).toBeLessThan(400);
      const cookie = login.headers.getSetCookie().find((c) => c.startsWith('session='));
      expect(cookie).toBeTruthy();
      const me = await fetch(`${b.url}/api/me`, { headers: { Cookie: cookie!.split(';')[0]! } });
      expect(me.status).toBe(200);
      expect(await me.json()).toMatchObject({ sub: 'alice' });

      // as alice's session (counted apart from her API key's calls)
      const asAlice = { Cookie: cookie!.split(';')[0]!, Origin: 'http://portico.test' };
      const issued = await fetch(`${a.url}/api/keys`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...asAlice },
        body: JSON.stringify({ name: 'shared' }),
      });
      expect(issued.status).toBe(201);
      const { key, id } = (await issued.json()) as { key: string; id: string };
      expect((await fetch(`${b.url}/api/me`, { headers: { 'X-API-Key': key } })).status).toBe(200);
      const revoked = await fetch(`${b.url}/api/keys/${id}`, {
        method: 'DELETE',
        headers: asAlice,
      });
      expect(revoked.status).toBe(204);
      expect((await fetch(`${a.url}/api/me`, { headers: { 'X-API-Key': key } })).status).toBe(401);
    });

    it('signs with one key: a token issued by A is accepted by B, and both publish one JWKS', async () => {
      const token = await fetch(`${a.url}/token`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/x-www-form-urlencoded',
          Authorization: `Basic ${Buffer.from('demo-service:demo-service-secret').toString('base64')}`,
        },
        body: 'grant_type=client_credentials&scope=read%3Amessages',
      });
      expect(token.status).toBe(200);
      const { access_token } = (await token.json()) as { access_token: string };
      const listed = await fetch(`${b.url}/api/messages`, {
        headers: { Authorization: `Bearer ${access_token}` },
      });
      expect(listed.status).toBe(200);
      const [jwksA, jwksB] = await Promise.all(
        [a, b].map((s) => fetch(`${s.url}/.well-known/jwks.json`).then((r) => r.json())),
      );
      expect(jwksB).toEqual(jwksA);
    });

    it('rotates at B a refresh token issued by A, and detects its reuse at A', async () => {
      const verifier = randomBytes(32).toString('base64url');
      const authorize = new URL(`${a.url}/authorize`);
      for (const [k, v] of Object.entries({
        response_type: 'code',
        client_id: 'demo-spa',
        redirect_uri: 'http://127.0.0.1:5173/callback',
        scope: 'openid read:messages',
        state: 'st',
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
      })) {
        authorize.searchParams.set(k, v);
      }
      // the sign-in and consent forms on A
      const browser = new Browser('http://portico.test');
      const signIn = await browser.fetch(authorize);
      const signedIn = await browser.submit(
        signIn,
        { username: 'alice', password: 'alice-password' },
        authorize,
      );
      const consent = [302, 303].includes(signedIn.status)
        ? await browser.fetch(new URL(signedIn.headers.get('location')!, authorize))
        : signedIn;
      const decided = await browser.submit(consent, { decision: 'approve' }, authorize);
      const code = new URL(decided.headers.get('location')!).searchParams.get('code')!;
      expect(code).toBeTruthy();

      const token = (server: RunningServer, form: Record<string, string>) =>
        fetch(`${server.url}/token`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ client_id: 'demo-spa', ...form }),
        });
      const issued = await token(b, {
        grant_type: 'authorization_code',
        code,
        redirect_uri: 'http://127.0.0.1:5173/callback',
        code_verifier: verifier,
      });
      expect(issued.status).toBe(200);
      const first = (await issued.json()) as { refresh_token: string };
      const rotated = await token(b, {
        grant_type: 'refresh_token',
        refresh_token: first.refresh_token,
      });
      expect(rotated.status).toBe(200);
      const second = (await rotated.json()) as { refresh_token: string };
      const reused = await token(a, {
        grant_type: 'refresh_token',
        refresh_token: first.refresh_token,
      });
      expect(reused.status).toBe(400);
      expect(await reused.json()).toMatchObject({ error: 'invalid_grant' });
      // the whole family is revoked, on every process
      const afterReuse = await token(b, {
        grant_type: 'refresh_token',
        refresh_token: second.refresh_token,
      });
      expect(await afterReuse.json()).toMatchObject({ error: 'invalid_grant' });
    });

    it('counts one rate limit across both: 20 requests against a limit of 10, exactly 10 pass', async () => {
      const statuses = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          fetch(`${(i % 2 ? a : b).url}/api/me`, { headers: { Authorization: BOB } }).then(
            (r) => r.status,
          ),
        ),
      );
      expect(statuses.filter((s) => s === 200)).toHaveLength(10);
      expect(statuses.filter((s) => s === 429)).toHaveLength(10);
    });
    // last: it takes Redis away from every process of the suite (one Redis only: the cluster's
    // failover has a suite of its own, reference-server-cluster.test.ts)
    if (name !== 'one Redis') return;
    it('answers 503 with Retry-After while Redis is down, stays up, and recovers', async () => {
      const redis = backend.single!;
      await redis.kill();
      const down = await fetch(`${a.url}/api/me`, { headers: { Authorization: BOB } });
      expect(down.status).toBe(503);
      expect(down.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(down.headers.get('content-type')).toBe('application/problem+json');
      const posted = await fetch(`${b.url}/api/messages`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: BOB },
        body: '{"text":"while down"}',
      });
      expect(posted.status).toBe(503);
      await redis.restart(); // empty, as after a failover without persistence
      await vi.waitFor(
        async () => {
          const up = await fetch(`${b.url}/api/messages`, { headers: { Authorization: BOB } });
          expect(up.status).toBe(200);
        },
        { timeout: 15_000, interval: 200 },
      );
      expect(a.child.exitCode).toBeNull();
      expect(b.child.exitCode).toBeNull();
    }, 30_000);
  },
);
