// Issue 17, contract "Every surface guarded": an /events stream or a /ws connection ends with
// the credential that opened it (API key deleted, session signed out, token or grant revoked,
// refresh-token reuse, `exp`), before anything published afterwards reaches it; a deleted
// message leaves the replay history; PUT/PATCH publish message.updated. Black-box attacks on a
// spawned reference server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEvents } from '../helpers/sse.js';
import {
  asClient,
  expectLiveEnded,
  JSON_TYPE,
  type Live,
  mintToken,
  openEvents,
  openLive,
  pause,
  revokeToken,
  SPA,
  signIn,
  signingKeyFile,
  subscribedSocket,
  type Tokens,
  userTokens,
  WEB,
} from './guarded-helpers.js';
import { openSocket, within } from './live-clients.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const DEMO_KEY = 'demo-key-of-the-guarded-streams-suite-01';
const KEY = { 'X-API-Key': DEMO_KEY };
const ORIGIN = { Origin: 'http://localhost:5173' };
const signing = signingKeyFile();
let server: RunningServer;

beforeAll(async () => {
  server = await startReferenceServer({
    DEMO_API_KEY: DEMO_KEY,
    SIGNING_KEY: signing.path,
    RATE_LIMIT: '1000',
  });
});
afterAll(async () => {
  await server?.stop();
  signing.remove();
});

async function post(text: string, channel: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${server.url}/api/messages`, {
    method: 'POST',
    headers: { ...KEY, ...JSON_TYPE },
    body: JSON.stringify({ text, channel }),
  });
  expect(res.status).toBe(201);
  return (await res.json()) as Record<string, unknown>;
}

const events = (headers: Record<string, string>) => openEvents(server.url, headers);

/** Opens an /events stream and a subscribed /ws connection on this server with `headers`. */
const openBoth = (headers: Record<string, string>, channel: string) =>
  openLive(server.url, { ...ORIGIN, ...headers }, channel, post);

/** Posts after the end, then expects both ended without it (see {@link expectLiveEnded}). */
const expectBothEnded = (both: Live, channel: string, why: RegExp) =>
  expectLiveEnded(both, channel, why, post);

describe('streams end with their credential', () => {
  it('an API key deleted (with alice’s session) ends its stream and its WebSocket', async () => {
    const made = await fetch(`${server.url}/api/keys`, {
      method: 'POST',
      headers: { ...KEY, ...JSON_TYPE },
      body: '{"name":"streams"}',
    });
    expect(made.status).toBe(201);
    const { id, key } = (await made.json()) as { id: string; key: string };
    const both = await openBoth({ 'X-API-Key': key }, 'key-deleted');
    const cookie = await signIn(server.url, 'alice');
    const deleted = await fetch(`${server.url}/api/keys/${id}`, {
      method: 'DELETE',
      headers: { Cookie: cookie },
    });
    expect(deleted.status).toBe(204);
    await expectBothEnded(both, 'key-deleted', /revok/i);
  });

  it('signing out ends the stream and the WebSocket opened with the session', async () => {
    const cookie = await signIn(server.url, 'bob');
    const both = await openBoth({ Cookie: cookie }, 'signed-out');
    const out = await fetch(`${server.url}/logout`, {
      method: 'POST',
      headers: { Cookie: cookie },
    });
    expect(out.status).toBe(204);
    await expectBothEnded(both, 'signed-out', /revok/i);
  });

  it('revoking a demo-web grant’s refresh token at /revoke ends what its access token opened', async () => {
    const tokens = await userTokens(server.url, WEB, 'openid offline_access read:messages');
    expect(tokens.refresh_token).toBeTypeOf('string');
    const both = await openBoth(
      { Authorization: `Bearer ${tokens.access_token}` },
      'grant-revoked',
    );
    await revokeToken(server.url, WEB, tokens.refresh_token!);
    await expectBothEnded(both, 'grant-revoked', /revok/i);
  });

  it('revoking the access token itself at /revoke ends what it opened', async () => {
    const tokens = await userTokens(server.url, WEB, 'read:messages');
    const both = await openBoth(
      { Authorization: `Bearer ${tokens.access_token}` },
      'token-revoked',
    );
    await revokeToken(server.url, WEB, tokens.access_token);
    await expectBothEnded(both, 'token-revoked', /revok/i);
  });

  it('refresh-token reuse revokes the grant: what its newest access token opened ends', async () => {
    const first = await userTokens(server.url, SPA, 'openid offline_access read:messages');
    const refresh = (token: string) =>
      asClient(server.url, SPA, { grant_type: 'refresh_token', refresh_token: token });
    const rotated = await refresh(first.refresh_token!);
    expect(rotated.status).toBe(200);
    const second = (await rotated.json()) as Tokens;
    const both = await openBoth({ Authorization: `Bearer ${second.access_token}` }, 'reused');
    const reuse = await refresh(first.refresh_token!);
    expect(reuse.status).toBe(400);
    expect(await reuse.json()).toMatchObject({ error: 'invalid_grant' });
    await expectBothEnded(both, 'reused', /revok/i);
  });

  it('a token’s exp ends the stream and the WebSocket at that time, before later messages', async () => {
    const exp = Math.floor(Date.now() / 1000) + 2;
    const token = await mintToken(server.url, signing.key, { scope: 'read:messages' }, exp);
    const both = await openBoth({ Authorization: `Bearer ${token}` }, 'expiring');
    // just past exp (at most ~2 s from now): what is published now must not reach them
    await pause(Math.max(0, exp * 1000 - Date.now()) + 50);
    await expectBothEnded(both, 'expiring', /expir/i);
  });
});

describe('deleted messages leave the replay history', () => {
  it('neither a Last-Event-ID replay nor a ws `since` replay returns a deleted message’s text', async () => {
    const channel = 'deletions';
    const doomed = await post('doomed text of the deletion test', channel);
    await post('kept text of the deletion test', channel);
    const removed = await fetch(`${server.url}/api/messages/${doomed.id}`, {
      method: 'DELETE',
      headers: KEY,
    });
    expect(removed.status).toBe(204);

    const replay = await events({ ...KEY, 'Last-Event-ID': '0' });
    await replay.until((text) => text.includes('kept text of the deletion test'), 3000);
    expect(replay.text()).not.toContain('doomed text');
    replay.destroy();

    // the channel's epoch, then a resume from its very start
    const probe = await openSocket(server.url, KEY);
    probe.ws.send(JSON.stringify({ type: 'subscribe', channel, recover: true }));
    const at = String((await probe.next('subscribed')).position);
    const epoch = at.slice(0, at.lastIndexOf(':'));
    expect(epoch.length).toBeGreaterThan(0);
    probe.ws.close();
    const again = await openSocket(server.url, KEY);
    again.ws.send(JSON.stringify({ type: 'subscribe', channel, since: `${epoch}:0` }));
    expect(await again.next('subscribed')).toMatchObject({ recovered: true });
    await within(
      (async () => {
        while (!JSON.stringify(again.received).includes('kept text')) await pause(20);
      })(),
      3000,
      'the replay of the kept message',
    );
    expect(JSON.stringify(again.received)).not.toContain('doomed text');
    again.ws.close();
  });

  it('PUT and PATCH publish message.updated with the new message, on /events and /ws', async () => {
    const channel = 'updates';
    const stream = await events(KEY);
    const { socket } = await subscribedSocket(server.url, KEY, channel);
    const created = await post('before the update', channel);
    expect(await socket.next('push')).toMatchObject({ event: 'message.created' });
    const change = async (method: string, body: unknown) => {
      const res = await fetch(`${server.url}/api/messages/${created.id}`, {
        method,
        headers: { ...KEY, ...JSON_TYPE },
        body: JSON.stringify(body),
      });
      expect(res.status, method).toBe(200);
      return (await res.json()) as Record<string, unknown>;
    };
    for (const [method, body] of [
      ['PATCH', { text: 'patched text' }],
      ['PUT', { text: 'put text', channel }],
    ] as const) {
      const updated = await change(method, body);
      expect(updated).toMatchObject({ id: created.id, text: body.text });
      const push = await socket.next('push');
      expect(push, method).toMatchObject({ event: 'message.updated', data: updated });
      const seen = await stream.until(
        (text) => parseEvents(text).some((e) => e.data?.includes(body.text)),
        3000,
      );
      const event = parseEvents(seen).find((e) => e.data?.includes(body.text));
      expect(JSON.parse(event!.data!), method).toEqual({ event: 'message.updated', data: updated });
    }
    stream.destroy();
    socket.ws.close();
  });
});
