// Two reference-server processes on a real six-node Redis Cluster (REDIS_CLUSTER): their keys
// spread over every primary; each primary in turn is killed, and after each promotion both
// processes answer again within 15 s, with nothing acknowledged before lost (messages, an API
// key issued, an API key revoked, the signing key behind a token issued before), and their
// sharded subscriptions follow the promoted primaries (a message posted to one process still
// reaches a WebSocket client of the other).
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { closeAll } from '../helpers/http.js';
import { hasRedis } from '../helpers/redis.js';
import { type RedisClusterServer, startRedisCluster } from '../helpers/redis-cluster.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const DEMO_KEY = 'demo-key-of-the-cluster-suite-0123456789';
const BOB = { Authorization: `Basic ${Buffer.from('bob:bob-password').toString('base64')}` };
const ORIGIN = 'http://portico.test';

/** How long after a promotion both processes must answer again (the contract). */
const RECOVERY_MS = 15_000;

describe.skipIf(!hasRedis)('reference server on a Redis Cluster: failover', () => {
  let cluster: RedisClusterServer;
  let a: RunningServer;
  let b: RunningServer;

  beforeAll(async () => {
    cluster = await startRedisCluster();
    const env = {
      BASE_URL: ORIGIN,
      DEMO_API_KEY: DEMO_KEY,
      REDIS_CLUSTER: cluster.ports.map((port) => `127.0.0.1:${port}`).join(','),
      // the polling below is many calls of one user
      RATE_LIMIT: '100000',
    };
    [a, b] = await Promise.all([startReferenceServer(env), startReferenceServer(env)]);
  }, 40_000);
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await closeAll();
    await cluster?.stop();
  });

  const post = (server: RunningServer, text: string) =>
    fetch(`${server.url}/api/messages`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...BOB },
      body: JSON.stringify({ text }),
    });

  /** The texts of the messages `server` lists, or its status when it does not answer 200. */
  async function listed(server: RunningServer): Promise<string[] | number> {
    const response = await fetch(`${server.url}/api/messages`, { headers: BOB });
    if (response.status !== 200) return response.status;
    const body = (await response.json()) as { items?: { text: string }[] } | { text: string }[];
    const items = Array.isArray(body) ? body : (body.items ?? []);
    return items.map((m) => m.text);
  }

  /** Polls `server` until it lists messages again: how long that took. */
  async function recovery(server: RunningServer, since: number): Promise<number> {
    while (Date.now() - since < RECOVERY_MS + 5_000) {
      // while the slot has no primary: a 503 problem, never a 500
      const answer = await listed(server);
      if (Array.isArray(answer)) return Date.now() - since;
      expect(answer).toBe(503);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    return Number.POSITIVE_INFINITY;
  }

  async function signIn(): Promise<Record<string, string>> {
    const login = await fetch(`${a.url}/login`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Origin: ORIGIN },
      body: JSON.stringify({ username: 'alice', password: 'alice-password' }),
    });
    const cookie = login.headers.getSetCookie().find((c) => c.startsWith('session='));
    expect(cookie).toBeTruthy();
    return { Cookie: cookie!.split(';')[0]!, Origin: ORIGIN };
  }

  async function issueKey(asAlice: Record<string, string>): Promise<{ key: string; id: string }> {
    const issued = await fetch(`${a.url}/api/keys`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...asAlice },
      body: JSON.stringify({ name: 'kept' }),
    });
    expect(issued.status).toBe(201);
    return (await issued.json()) as { key: string; id: string };
  }

  const status = (server: RunningServer, headers: Record<string, string>) =>
    fetch(`${server.url}/api/me`, { headers }).then((r) => r.status);

  it('answers within 15 s of each primary’s failover and loses nothing acknowledged', async () => {
    const asAlice = await signIn();
    const kept = await issueKey(asAlice);
    const revoked = await issueKey(asAlice);
    expect(
      (await fetch(`${b.url}/api/keys/${revoked.id}`, { method: 'DELETE', headers: asAlice }))
        .status,
    ).toBe(204);
    const token = await fetch(`${a.url}/token`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/x-www-form-urlencoded',
        Authorization: `Basic ${Buffer.from('demo-service:demo-service-secret').toString('base64')}`,
      },
      body: 'grant_type=client_credentials&scope=read%3Amessages',
    });
    const { access_token } = (await token.json()) as { access_token: string };
    const texts: string[] = [];
    for (let i = 0; i < 6; i++) {
      const text = `before ${i}`;
      expect((await post(i % 2 ? a : b, text)).status).toBe(201);
      texts.push(text);
    }
    // the service's keys are spread over every primary
    const perPrimary = await cluster.keysPerPrimary();
    expect(perPrimary.size).toBe(3);
    for (const count of perPrimary.values()) expect(count).toBeGreaterThan(0);

    for (const primary of await cluster.primaries()) {
      const text = `acknowledged before ${primary} failed`;
      expect((await post(a, text)).status).toBe(201);
      texts.push(text);
      const promotedAt = await cluster.failover(primary);
      const [onA, onB] = await Promise.all([recovery(a, promotedAt), recovery(b, promotedAt)]);
      expect(onA).toBeLessThan(RECOVERY_MS);
      expect(onB).toBeLessThan(RECOVERY_MS);
      for (const server of [a, b]) {
        expect(await listed(server)).toEqual(expect.arrayContaining(texts));
        expect(await status(server, { 'X-API-Key': kept.key })).toBe(200);
        expect(await status(server, { 'X-API-Key': revoked.key })).toBe(401);
        expect(await status(server, { Authorization: `Bearer ${access_token}` })).toBe(200);
      }
    }
    // the channel's shard moved during the failovers: the subscriptions followed it
    const ws = new WebSocket(`${a.url.replace('http', 'ws')}/ws`, {
      headers: { 'X-API-Key': DEMO_KEY },
    });
    const received: Record<string, unknown>[] = [];
    ws.on('message', (data) => received.push(JSON.parse(String(data))));
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    ws.send(JSON.stringify({ type: 'subscribe', channel: 'general', recover: true }));
    await vi.waitFor(() => expect(received.map((m) => m.type)).toContain('subscribed'), {
      timeout: 5_000,
    });
    expect((await post(b, 'after every failover')).status).toBe(201);
    await vi.waitFor(
      () =>
        expect(received.find((m) => m.type === 'push')).toMatchObject({
          data: { text: 'after every failover' },
        }),
      { timeout: 10_000 },
    );
    ws.close();
    expect(a.child.exitCode).toBeNull();
    expect(b.child.exitCode).toBeNull();
  }, 120_000);
});
