// The device page's user-code lockout under a concurrent burst (RFC 8628 §5.1): each code is
// counted before it is looked up, so however many arrive at once at most `maxFailures` are
// looked up, with the in-memory store and with a real Redis shared by two "processes".
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSessions } from '../../../src/auth/session/session.js';
import { createRouter } from '../../../src/http/routing/router.js';
import { defineClient } from '../../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../../src/oauth/clients/store.js';
import { createOAuthContext } from '../../../src/oauth/context.js';
import {
  createDeviceAuthorizationEndpoint,
  createDeviceVerificationEndpoint,
  formatUserCode,
  generateUserCode,
} from '../../../src/oauth/endpoints/device-authorization.js';
import { deviceCodes } from '../../../src/oauth/store/records.js';
import { MemoryRecordStore } from '../../../src/oauth/store/store.js';
import { hashToken } from '../../../src/oauth/tokens/issue.js';
import { createKeySet } from '../../../src/oauth/tokens/key-set.js';
import type { RateLimitStore } from '../../../src/rate-limit/store.js';
import { RedisRateLimitStore } from '../../../src/redis/rate-limit-store.js';
import { hiddenInputs, sessionCookie } from '../../helpers/browser.js';
import { closeAll, json, type Listening, type Reply, request, serve } from '../../helpers/http.js';
import { hasRedis, type RedisServer, startRedis } from '../../helpers/redis.js';

const ISSUER = 'https://auth.example.test';
const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };

/** A memory OAuth store that records the user codes looked up. */
class CountingStore extends MemoryRecordStore {
  readonly lookups: string[] = [];
  override findByKey(kind: string, key: string): ReturnType<MemoryRecordStore['findByKey']> {
    if (kind === deviceCodes.kind) this.lookups.push(key);
    return super.findByKey(kind, key);
  }
}

interface Verifier {
  /** The servers (one per failure store), sharing one OAuth store. */
  servers: Listening[];
  store: CountingStore;
}

async function startVerifier(failureStores: (RateLimitStore | undefined)[]): Promise<Verifier> {
  const store = new CountingStore();
  // a lookup that takes 5 ms, like a network store's (RedisRecordStore) under load
  const find = store.findByKey.bind(store);
  store.findByKey = (kind, code) =>
    new Promise((resolve) => setTimeout(() => resolve(find(kind, code)), 5)) as never;
  const ctx = createOAuthContext({
    issuer: ISSUER,
    clients: new MemoryClientStore([
      await defineClient({
        clientId: 'tv',
        name: 'Living-room TV',
        grantTypes: ['urn:ietf:params:oauth:grant-type:device_code'],
        redirectUris: [],
        scopes: ['openid'],
      }),
    ]),
    keys: await createKeySet(),
    store,
    users: {
      verify: (username, password) =>
        password === `${username}-password` ? { sub: username } : undefined,
      get: (sub) => ({ sub }),
    },
    sessions: createSessions({ allowedOrigins: [ISSUER], cookie: { secure: false } }),
  });
  const formKey = 'a shared form key of at least 32 characters';
  const servers = await Promise.all(
    failureStores.map((failureStore) =>
      serve(
        createRouter({
          '/device': createDeviceAuthorizationEndpoint(ctx),
          '/device/verify': createDeviceVerificationEndpoint(ctx, {
            formKey,
            ...(failureStore === undefined ? {} : { failureStore }),
          }),
        }),
      ),
    ),
  );
  return { servers, store };
}

const post = (server: Listening, fields: [string, string][], cookie?: string) =>
  request(server, '/device/verify', {
    method: 'POST',
    headers: { ...FORM, ...(cookie === undefined ? {} : { Cookie: cookie }) },
    body: new URLSearchParams(fields).toString(),
  });

/** Signs `user` in at the device page: the blank code form and the session cookie. */
async function signIn(server: Listening, user: string) {
  const first = await request(server, '/device/verify');
  const page = await post(server, [
    ...hiddenInputs(first.body),
    ['username', user],
    ['password', `${user}-password`],
  ]);
  expect(page.body).toContain('name="user_code"');
  return { page, cookie: sessionCookie(page.headers)! };
}

/** A code of the right shape that no device has. */
function wrongCode(right: string): string {
  for (;;) {
    const code = formatUserCode(generateUserCode());
    if (code !== right) return code;
  }
}

/**
 * 30 Allows at once from one signed-in user, spread over the servers, the right code 16th:
 * at most 5 lookups, the rest 429 unlooked, the device never approved.
 */
async function burst({ servers, store }: Verifier, user: string) {
  const started = json(
    await request(servers[0]!, '/device', { method: 'POST', headers: FORM, body: 'client_id=tv' }),
  );
  const right = started.user_code as string;
  const { page, cookie } = await signIn(servers[0]!, user);
  const codes = Array.from({ length: 30 }, (_, i) => (i === 15 ? right : wrongCode(right)));
  store.lookups.length = 0;
  const replies = await Promise.all(
    codes.map((code, i) =>
      post(
        servers[i % servers.length]!,
        [...hiddenInputs(page.body), ['user_code', code], ['decision', 'approve']],
        cookie,
      ),
    ),
  );
  expect(store.lookups.length).toBeLessThanOrEqual(5);
  const locked = replies.filter((reply) => reply.status === 429);
  expect(locked.length).toBeGreaterThanOrEqual(25);
  for (const reply of locked) expect(Number(reply.headers['retry-after'])).toBeGreaterThan(0);
  // the right code's device is shown only if its lookup was among the five counted
  const shown = (reply: Reply) => reply.body.includes('Living-room TV');
  expect(shown(replies[15]!)).toBe(store.lookups.includes(right.replace('-', '')));
  expect(replies.filter(shown).length).toBeLessThanOrEqual(1);
  // and after the burst the right code is refused without a lookup, and nothing was approved
  const after = await post(
    servers[0]!,
    [...hiddenInputs(page.body), ['user_code', right], ['decision', 'approve']],
    cookie,
  );
  expect(after.status).toBe(429);
  expect(store.lookups.length).toBeLessThanOrEqual(5);
  const record = deviceCodes(store).get(hashToken(started.device_code as string));
  expect(record?.status).toBe('pending');
}

afterAll(closeAll);

describe('the user-code lockout under a concurrent burst', () => {
  it('looks up at most 5 of 30 codes at once (memory failure store)', async () => {
    await burst(await startVerifier([undefined]), 'alice');
  });

  it('counts a right code too: the 6th code, right, is not looked up', async () => {
    const verifier = await startVerifier([undefined]);
    const [server] = verifier.servers;
    const started = json(
      await request(server!, '/device', { method: 'POST', headers: FORM, body: 'client_id=tv' }),
    );
    const { page, cookie } = await signIn(server!, 'bob');
    const attempt = (code: string, decision = 'approve') =>
      post(
        server!,
        [...hiddenInputs(page.body), ['user_code', code], ['decision', decision]],
        cookie,
      );
    for (let i = 0; i < 4; i++) expect((await attempt(wrongCode(''), 'deny')).status).toBe(400);
    verifier.store.lookups.length = 0;
    const right = started.user_code as string;
    expect((await attempt(right)).body).toContain('Living-room TV'); // the 5th, looked up
    const sixth = await attempt(right);
    expect(sixth.status).toBe(429);
    expect(verifier.store.lookups).toHaveLength(1);
  });
});

describe.skipIf(!hasRedis)('the user-code lockout in Redis (real redis-server)', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('looks up at most 5 of 30 codes sent at once to two processes sharing Redis', async () => {
    const stores = [redis.client(), redis.client()].map(
      (client) => new RedisRateLimitStore({ client, prefix: 'device:' }),
    );
    await burst(await startVerifier(stores), 'carol');
  });
});
