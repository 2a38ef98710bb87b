// Issue 17, contract "Every surface guarded", across processes: two reference servers on one
// real Redis (REDIS_URL) act as one service, so a credential ended on B ends, within a second,
// the stream and the WebSocket it opened on A; and wrong device user codes sent to both at once
// share one budget counted before the lookup. Skipped without redis-server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasRedis, type RedisServer, startRedis } from '../helpers/redis.js';
import {
  asClient,
  deviceCodeBurst,
  expectLiveEnded,
  expectReleasedBurstHeld,
  JSON_TYPE,
  type Live,
  openLive,
  pollDevice,
  SPA,
  signIn,
  startDevice,
  userTokens,
} from './guarded-helpers.js';
import { within } from './live-clients.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const DEMO_KEY = 'demo-key-of-the-guarded-redis-suite-0123';
const KEY = { 'X-API-Key': DEMO_KEY };
const PUBLIC = 'http://portico.test';
const ORIGIN = { Origin: 'http://localhost:5173' };
/** The contract's "within one second", and a quarter more for a loaded test machine. */
const ACROSS_MS = 1250;

describe.skipIf(!hasRedis)('guarded surfaces across two processes on one Redis', () => {
  let redis: RedisServer;
  let a: RunningServer;
  let b: RunningServer;

  beforeAll(async () => {
    redis = await startRedis();
    const env = {
      // one service: one public address (the token issuer and audience) for every process
      BASE_URL: PUBLIC,
      DEMO_API_KEY: DEMO_KEY,
      REDIS_URL: redis.url,
      RATE_LIMIT: '1000',
    };
    [a, b] = await Promise.all([startReferenceServer(env), startReferenceServer(env)]);
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await redis?.stop();
  });

  /** Posts on B, as alice's demo key. */
  const postOnB = async (text: string, channel: string) => {
    const res = await fetch(`${b.url}/api/messages`, {
      method: 'POST',
      headers: { ...KEY, ...JSON_TYPE },
      body: JSON.stringify({ text, channel }),
    });
    expect(res.status).toBe(201);
  };

  /** Waits (bounded by ACROSS_MS from now) for both to end, then checks nothing came after. */
  async function endsAcross(live: Live, channel: string, why: RegExp) {
    await Promise.all([
      within(live.stream.ended, ACROSS_MS, 'the event stream on A ends'),
      within(live.closed, ACROSS_MS, 'the WebSocket on A closes'),
    ]);
    await expectLiveEnded(live, channel, why, postOnB);
  }

  it('an API key deleted on B ends its stream and WebSocket on A within a second', async () => {
    const made = await fetch(`${a.url}/api/keys`, {
      method: 'POST',
      headers: { ...KEY, ...JSON_TYPE },
      body: '{"name":"across"}',
    });
    expect(made.status).toBe(201);
    const { id, key } = (await made.json()) as { id: string; key: string };
    const live = await openLive(a.url, { ...ORIGIN, 'X-API-Key': key }, 'across-key', postOnB);
    const deleted = await fetch(`${b.url}/api/keys/${id}`, { method: 'DELETE', headers: KEY });
    expect(deleted.status).toBe(204);
    await endsAcross(live, 'across-key', /revok/i);
  });

  it('signing out on B ends what the session opened on A within a second', async () => {
    const cookie = await signIn(a.url, 'bob', { Origin: PUBLIC });
    const live = await openLive(a.url, { ...ORIGIN, Cookie: cookie }, 'across-session', postOnB);
    const out = await fetch(`${b.url}/logout`, { method: 'POST', headers: { Cookie: cookie } });
    expect(out.status).toBe(204);
    await endsAcross(live, 'across-session', /revok/i);
  });

  it('a grant revoked at /revoke on B ends what its token opened on A within a second', async () => {
    const tokens = await userTokens(a.url, SPA, 'openid offline_access read:messages', {
      origin: PUBLIC,
    });
    const headers = { ...ORIGIN, Authorization: `Bearer ${tokens.access_token}` };
    const live = await openLive(a.url, headers, 'across-grant', postOnB);
    const revoked = await asClient(
      b.url,
      SPA,
      { token: tokens.refresh_token! },
      { path: '/revoke' },
    );
    expect(revoked.status).toBe(200);
    await endsAcross(live, 'across-grant', /revok/i);
  });

  it('a burst of 30 user codes over both processes, the right one 20th, approves nothing', async () => {
    const { device_code, user_code } = await startDevice(a.url);
    const statuses = await deviceCodeBurst([a.url, b.url], user_code, '127.0.0.1', PUBLIC);
    expect(statuses.filter((s) => s !== 429).length, String(statuses)).toBeLessThanOrEqual(5);
    const poll = await pollDevice(b.url, device_code);
    expect(poll.status).toBe(400);
    expect(poll.body).toMatchObject({ error: 'authorization_pending' });
  });

  // on one process, whose every step is a Redis round trip: the counts of the wrong codes are
  // on their way when the right one is looked up, unless they are counted first
  it('30 codes read complete at the same moment, the right one last: at most 5 wrong ones looked up, none approved', async () => {
    await expectReleasedBurstHeld([a.url], '127.0.0.1', PUBLIC);
  });
});
