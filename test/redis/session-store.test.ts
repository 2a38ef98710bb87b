import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { parseSetCookie } from 'cookie';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { authenticate } from '../../src/auth/authenticate.js';
import { createSessions, type SessionOptions } from '../../src/auth/session/session.js';
import type { SessionRecord } from '../../src/auth/session/store.js';
import type { Middleware } from '../../src/core/compose.js';
import { getPrincipal } from '../../src/core/principal.js';
import { sendJson, sendNoContent } from '../../src/core/send.js';
import { silentLogger } from '../../src/diagnostics/index.js';
import { RedisUnavailableError } from '../../src/redis/script.js';
import { RedisSessionStore } from '../../src/redis/session-store.js';
import { closeAll, json, type Listening, request, serve } from '../helpers/http.js';
import { hasRedis, type RedisServer, startRedis } from '../helpers/redis.js';

const ORIGIN = 'https://app.example.com';
const USER = { sub: 'u-1', name: 'Alice', role: 'user', scopes: ['read:messages'] };
const hash = (id: string) => createHash('sha256').update(id).digest('base64url');

function record(overrides: Partial<SessionRecord> = {}): SessionRecord {
  const t = Date.now();
  return {
    sub: 'u-1',
    name: 'Alice',
    scopes: ['read:messages'],
    createdAt: t,
    lastSeenAt: t,
    expiresAt: t + 3_600_000,
    ...overrides,
  };
}

function sessionCookie(headers: IncomingHttpHeaders): string | undefined {
  const lines = headers['set-cookie'] ?? [];
  return lines.map((line) => parseSetCookie(line)).find((c) => c.name === 'session')?.value;
}

const withCookie = (id: string, extra: Record<string, string> = {}) => ({
  headers: { Cookie: `session=${id}`, ...extra },
});

describe.skipIf(!hasRedis)('RedisSessionStore (real redis-server)', () => {
  let redis: RedisServer;
  let raw: Redis;
  let prefixes = 0;
  const prefix = () => `s${++prefixes}:`;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
  });
  afterEach(closeAll);
  afterAll(async () => {
    await closeAll();
    await redis?.stop();
  });

  /** The app of test/auth/session.test.ts, over a Redis store: public `/login`, `/logout`, `/read`, the rest authenticated. */
  async function app(options: Partial<SessionOptions> & { store: RedisSessionStore }) {
    const sessions = createSessions({ allowedOrigins: [ORIGIN], ...options });
    const publicRoutes: Middleware = async (req, res, next) => {
      if (req.url === '/login' && req.method === 'POST') {
        await sessions.signIn(req, res, USER);
        return sendNoContent(res);
      }
      if (req.url === '/logout' && req.method === 'POST') {
        await sessions.signOut(req, res);
        return sendNoContent(res);
      }
      if (req.url === '/read')
        return sendJson(res, 200, { record: (await sessions.read(req)) ?? null });
      return next();
    };
    const protectedRoutes: Middleware = async (req, res) => {
      if (req.url === '/rotate') await sessions.rotate(req, res, { role: 'admin' });
      sendJson(res, 200, getPrincipal(req));
    };
    return serve([publicRoutes, authenticate([sessions.authenticator]), protectedRoutes], {
      logger: silentLogger,
    });
  }

  async function signIn(server: Listening): Promise<string> {
    const reply = await request(server, '/login', { method: 'POST', headers: { Origin: ORIGIN } });
    expect(reply.status).toBe(204);
    const id = sessionCookie(reply.headers);
    expect(id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    return id!;
  }

  it('stores, reads, replaces and deletes records as JSON with a TTL', async () => {
    const p = prefix();
    const store = new RedisSessionStore({ client: redis.client(), prefix: p });
    const first = record({ role: 'user', data: { theme: 'dark', n: 1.5 } });
    expect(await store.get('h1')).toBeUndefined();
    await store.set('h1', first, 60_000);
    expect(await store.get('h1')).toEqual(first);
    expect(JSON.parse((await raw.get(`${p}h1`))!)).toEqual(first);
    const ttl = await raw.pttl(`${p}h1`);
    expect(ttl).toBeGreaterThan(59_000);
    expect(ttl).toBeLessThanOrEqual(60_000);

    // a copy: changing what get() gave changes nothing stored
    const got = (await store.get('h1'))!;
    (got.scopes as string[]).push('admin');
    expect((await store.get('h1'))?.scopes).toEqual(['read:messages']);

    const second = record({ sub: 'u-2', scopes: [] });
    await store.set('h1', second, 30_000);
    expect(await store.get('h1')).toEqual(second);
    expect(await raw.pttl(`${p}h1`)).toBeLessThanOrEqual(30_000);

    await store.delete('h1');
    expect(await store.get('h1')).toBeUndefined();
    await store.delete('h1'); // deleting nothing is fine
    await store.set('h2', first, 0); // a ttl of 0 stores nothing, as in memory
    expect(await raw.exists(`${p}h2`)).toBe(0);
  });

  it('touch updates lastSeenAt and the TTL, keeping the rest exactly', async () => {
    const p = prefix();
    const store = new RedisSessionStore({ client: redis.client(), prefix: p });
    // data that a Lua JSON round trip would damage: an empty array, precise floats, a nested lastSeenAt
    const stored = record({
      scopes: [],
      data: { list: [], pi: Math.PI, big: 2 ** 53 - 1, nested: { lastSeenAt: 1 }, text: '"}' },
    });
    await store.set('h', stored, 1_000);
    const later = stored.lastSeenAt + 12_345;
    await store.touch('h', later, 90_000);
    expect(await store.get('h')).toEqual({ ...stored, lastSeenAt: later });
    expect(await raw.pttl(`${p}h`)).toBeGreaterThan(89_000);
    await store.touch('h', later + 0.5, 90_000);
    expect((await store.get('h'))?.lastSeenAt).toBe(later + 0.5);
  });

  it('touch never resurrects a deleted or expired session', async () => {
    const p = prefix();
    const store = new RedisSessionStore({ client: redis.client(), prefix: p });
    await store.touch('never', Date.now(), 60_000);
    expect(await raw.exists(`${p}never`)).toBe(0);
    await store.set('gone', record(), 60_000);
    await store.delete('gone');
    await store.touch('gone', Date.now(), 60_000);
    expect(await raw.exists(`${p}gone`)).toBe(0);
    expect(await store.get('gone')).toBeUndefined();
    await store.set('short', record(), 50);
    // until Redis itself has dropped it (however late this process gets to ask)
    await vi.waitFor(async () => expect(await raw.exists(`${p}short`)).toBe(0), {
      timeout: 10_000,
      interval: 20,
    });
    await store.touch('short', Date.now(), 60_000);
    expect(await raw.exists(`${p}short`)).toBe(0);
  });

  it('lets Redis drop a record when its TTL runs out', async () => {
    const p = prefix();
    const store = new RedisSessionStore({ client: redis.client(), prefix: p });
    // a TTL wide enough for the next few commands to land before it runs out on a loaded
    // machine; what is waited for is Redis dropping the record, not a fixed time
    const TTL = 1_500;
    await store.set('t', record(), TTL);
    await store.set('h', record(), TTL);
    expect(await store.get('h')).toBeDefined();
    const ttl = await raw.pttl(`${p}h`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(TTL);
    // and touch extends it: written before 'h', 't' would run out before 'h' does without it
    await store.touch('t', Date.now(), 60_000);
    expect(await raw.pttl(`${p}t`)).toBeGreaterThan(TTL);
    await vi.waitFor(async () => expect(await store.get('h')).toBeUndefined(), {
      timeout: 10_000,
      interval: 50,
    });
    expect(await store.get('t')).toBeDefined();
  });

  it('reads a value that is not a session record as no session, never crashing', async () => {
    const p = prefix();
    const store = new RedisSessionStore({ client: redis.client(), prefix: p });
    const bad = [
      'not json',
      '{"sub":',
      'null',
      '42',
      '[]',
      '{}',
      JSON.stringify({ ...record(), scopes: 'read' }),
      JSON.stringify({ ...record(), scopes: [1] }),
      JSON.stringify({ ...record(), lastSeenAt: 'now' }),
      JSON.stringify({ ...record(), expiresAt: null }),
      JSON.stringify({ ...record(), sub: 7 }),
      JSON.stringify({ ...record(), name: {} }),
      JSON.stringify({ ...record(), data: [1] }),
    ];
    for (const [i, text] of bad.entries()) {
      await raw.set(`${p}bad${i}`, text);
      expect(await store.get(`bad${i}`)).toBeUndefined();
      await store.touch(`bad${i}`, Date.now(), 60_000);
      expect(await raw.get(`${p}bad${i}`)).toBe(text);
    }

    // through createSessions: a 401 that clears the cookie, not a 500
    const server = await app({ store });
    const id = 'A'.repeat(43);
    await raw.set(p + hash(id), 'garbage');
    const reply = await request(server, '/me', withCookie(id));
    expect(reply.status).toBe(401);
    expect(json(reply).type).toBe('urn:portico:problem:invalid-credentials');
  });

  it('shares sessions between two stores on two connections (two processes)', async () => {
    const p = prefix();
    const a = new RedisSessionStore({ client: redis.client(), prefix: p });
    const b = new RedisSessionStore({ client: redis.client(), prefix: p });
    const stored = record();
    await a.set('h', stored, 60_000);
    expect(await b.get('h')).toEqual(stored);
    await b.touch('h', stored.lastSeenAt + 1000, 60_000);
    expect((await a.get('h'))?.lastSeenAt).toBe(stored.lastSeenAt + 1000);
    await a.delete('h');
    expect(await b.get('h')).toBeUndefined();

    // a session signed in on one server works on the other, and signing out ends it on both
    const store = () => new RedisSessionStore({ client: redis.client(), prefix: p });
    const one = await app({ store: store() });
    const two = await app({ store: store() });
    const id = await signIn(one);
    expect(json(await request(two, '/me', withCookie(id)))).toMatchObject({ sub: 'u-1' });
    const out = await request(two, '/logout', {
      method: 'POST',
      ...withCookie(id, { Origin: ORIGIN }),
    });
    expect(out.status).toBe(204);
    expect((await request(one, '/me', withCookie(id))).status).toBe(401);
  });

  it('carries createSessions end to end: sign-in, use, idle expiry, rotation, sign-out', async () => {
    const p = prefix();
    const client = redis.client();
    const store = new RedisSessionStore({ client, prefix: p });
    let clock = Date.now();
    const server = await app({ store, now: () => clock });

    const id = await signIn(server);
    // only the SHA-256 of the id is stored, under the prefix, with a TTL
    expect(await raw.keys(`${p}*`)).toEqual([p + hash(id)]);
    expect(await raw.get(p + hash(id))).not.toContain(id);
    const ttl = await raw.pttl(p + hash(id));
    expect(ttl).toBeGreaterThan(3_500_000); // 30 min idle + 30 min remembered as expired
    expect(ttl).toBeLessThanOrEqual(3_600_000);

    const me = await request(server, '/me', withCookie(id));
    expect(me.status).toBe(200);
    expect(json(me)).toEqual({
      sub: 'u-1',
      name: 'Alice',
      role: 'user',
      scopes: ['read:messages'],
      method: 'session',
      // a stream opened with the session ends when it is signed out, or at its absolute end
      credentialIds: [expect.stringMatching(/^session:[\w-]{43}$/)],
      expiresAt: expect.any(Number),
    });

    clock += 1_799_000; // activity within the idle timeout keeps it alive
    expect((await request(server, '/me', withCookie(id))).status).toBe(200);
    expect((await store.get(hash(id)))?.lastSeenAt).toBe(clock);
    const read = json<{ record: SessionRecord }>(await request(server, '/read', withCookie(id)));
    expect(read.record).toMatchObject({ sub: 'u-1', lastSeenAt: clock });

    // rotation: a new id, the old one stops working and is gone from Redis
    const rotated = await request(server, '/rotate', withCookie(id, { Origin: ORIGIN }));
    expect(rotated.status).toBe(200);
    const next = sessionCookie(rotated.headers)!;
    expect(next).not.toBe(id);
    expect(await raw.keys(`${p}*`)).toEqual([p + hash(next)]);
    expect((await request(server, '/me', withCookie(id))).status).toBe(401);
    expect(json(await request(server, '/me', withCookie(next)))).toMatchObject({ role: 'admin' });

    // idle expiry: told "expired", and the record is deleted
    clock += 1_800_000;
    const expired = await request(server, '/me', withCookie(next));
    expect(expired.status).toBe(401);
    expect(json(expired).type).toBe('urn:portico:problem:credentials-expired');
    expect(await raw.exists(p + hash(next))).toBe(0);

    // sign-out deletes the session server-side
    const again = await signIn(server);
    const out = await request(server, '/logout', {
      method: 'POST',
      ...withCookie(again, { Origin: ORIGIN }),
    });
    expect(out.status).toBe(204);
    expect(out.headers['set-cookie']).toContain(
      'session=; Max-Age=0; Path=/; HttpOnly; Secure; SameSite=Strict',
    );
    expect(await raw.keys(`${p}*`)).toEqual([]);
    expect((await request(server, '/me', withCookie(again))).status).toBe(401);
  });

  it('fails fast with RedisUnavailableError while Redis is slow', async () => {
    const store = new RedisSessionStore({
      client: redis.client(),
      prefix: prefix(),
      timeoutMs: '200ms',
    });
    await store.set('h', record(), 60_000);
    // paused for 2 s: a rejection can only come from the 200 ms bound (else the read succeeds)
    await raw.client('PAUSE', 2_000, 'ALL');
    await expect(store.get('h')).rejects.toMatchObject({ code: 'ERR_REDIS_UNAVAILABLE' });
    await vi.waitFor(async () => expect(await store.get('h')).toBeDefined(), {
      timeout: 10_000,
      interval: 100,
    });
  });

  it('answers 503 with Retry-After while Redis is down, and works again once it is back', async () => {
    const p = prefix();
    const client = redis.client();
    const store = new RedisSessionStore({ client, prefix: p, timeoutMs: '300ms' });
    const server = await app({ store });
    const id = await signIn(server);
    expect((await request(server, '/me', withCookie(id))).status).toBe(200);

    await redis.kill();
    for (const call of [
      () => store.get('h'),
      () => store.set('h', record(), 1000),
      () => store.touch('h', Date.now(), 1000),
      () => store.delete('h'),
    ]) {
      const started = Date.now();
      const error = await call().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RedisUnavailableError);
      expect(Date.now() - started).toBeLessThan(600);
    }
    const started = Date.now();
    const down = await request(server, '/me', withCookie(id));
    expect(Date.now() - started).toBeLessThan(1500);
    expect(down.status).toBe(503);
    expect(down.headers['retry-after']).toMatch(/^\d+$/);
    expect(down.headers['content-type']).toBe('application/problem+json');
    expect(down.body).not.toMatch(/redis|ECONNREFUSED/i);
    expect(down.headers['set-cookie']).toBeUndefined(); // the cookie is kept for later
    const login = await request(server, '/login', { method: 'POST', headers: { Origin: ORIGIN } });
    expect(login.status).toBe(503);

    await redis.restart(); // empty: sessions from before are unknown now
    await expect
      .poll(
        async () =>
          (await request(server, '/login', { method: 'POST', headers: { Origin: ORIGIN } })).status,
        { timeout: 10_000, interval: 100 },
      )
      .toBe(204);
    expect((await request(server, '/me', withCookie(id))).status).toBe(401);
    const fresh = await signIn(server);
    expect((await request(server, '/me', withCookie(fresh))).status).toBe(200);
  });

  it('rejects bad options', () => {
    expect(() => new RedisSessionStore({} as never)).toThrow(TypeError);
    expect(() => new RedisSessionStore(undefined as never)).toThrow(TypeError);
    expect(() => new RedisSessionStore({ client: raw, timeoutMs: 0 })).toThrow(TypeError);
    expect(() => new RedisSessionStore({ client: raw, prefix: 1 as never })).toThrow(TypeError);
    expect(() => new RedisSessionStore({ client: raw, timeout: 5 } as never)).toThrow(
      /Did you mean `timeoutMs`/,
    );
  });
});
