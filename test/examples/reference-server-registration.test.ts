// The reference server's dynamic client registration, as the contract's "Clients that register
// themselves" rows say, driven from outside by openid-client and oauth4webapi: open and
// counted per client IP (REGISTRATION_LIMIT), a registered client's code flow with PKCE on a
// loopback port of its choosing, RFC 7592 GET and DELETE (which ends its tokens), and, on a
// real Redis, a client registered on one process working on another.
import * as oauth from 'oauth4webapi';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signInAndApprove } from '../helpers/browser.js';
import { hasRedis, type RedisServer, startRedis } from '../helpers/redis.js';
import { expectLiveEnded, JSON_TYPE, openLive } from './guarded-helpers.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const insecure = { execute: [client.allowInsecureRequests] };

/** A public agent registered at `server` with openid-client: its configuration there. */
function registerAgent(server: RunningServer, name = 'Agent') {
  return client.dynamicClientRegistration(
    new URL(server.url),
    {
      redirect_uris: ['http://127.0.0.1/callback'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      client_name: name,
      scope: 'openid read:messages',
    },
    client.None(),
    insecure,
  );
}

/** The code flow with PKCE of `config` at `server`, to a loopback port the agent picked. */
async function codeFlow(server: RunningServer, config: client.Configuration) {
  const verifier = client.randomPKCECodeVerifier();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: 'http://127.0.0.1:49152/callback',
    scope: 'openid read:messages',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  const back = new URL(await signInAndApprove(server.url, url));
  expect(back.origin).toBe('http://127.0.0.1:49152');
  return client.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier });
}

const DEMO_API_KEY = 'demo-key-of-the-registration-suite-0123';

const messages = (server: RunningServer, token: string) =>
  fetch(`${server.url}/api/messages`, { headers: { Authorization: `Bearer ${token}` } });

describe('the reference server: clients that register themselves', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startReferenceServer({ REGISTRATION_LIMIT: '4', DEMO_API_KEY });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('advertises /register, registers an agent that then runs the code flow, and DELETE ends its tokens', async () => {
    const doc = (await (
      await fetch(`${server.url}/.well-known/oauth-authorization-server`)
    ).json()) as Record<string, unknown>;
    expect(doc.registration_endpoint).toBe(`${server.url}/register`);
    const config = await registerAgent(server);
    const registered = config.clientMetadata();
    expect(registered.registration_access_token).toBeDefined();
    const tokens = await codeFlow(server, config);
    expect((await messages(server, tokens.access_token)).status).toBe(200);
    // RFC 7592: GET with its registration access token, never with another
    const uri = registered.registration_client_uri as string;
    const token = registered.registration_access_token as string;
    const read = await fetch(uri, { headers: { Authorization: `Bearer ${token}` } });
    expect(read.status).toBe(200);
    expect(((await read.json()) as Record<string, unknown>).client_name).toBe('Agent');
    const wrong = await fetch(uri, { headers: { Authorization: 'Bearer wrong' } });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toMatch(/^Bearer /);
    const removed = await fetch(uri, {
      method: 'DELETE',
      headers: { Authorization: `Bearer ${token}` },
    });
    expect(removed.status).toBe(204);
    expect((await messages(server, tokens.access_token)).status).toBe(401);
    await expect(client.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toThrow();
  });

  it('DELETE of a registered client ends the /events stream and the /ws socket its token opened', async () => {
    const config = await registerAgent(server, 'Streaming agent');
    const registered = config.clientMetadata();
    const tokens = await codeFlow(server, config);
    const post = async (text: string, channel: string) => {
      const res = await fetch(`${server.url}/api/messages`, {
        method: 'POST',
        headers: { 'X-API-Key': DEMO_API_KEY, ...JSON_TYPE },
        body: JSON.stringify({ text, channel }),
      });
      expect(res.status).toBe(201);
      return (await res.json()) as Record<string, unknown>;
    };
    const live = await openLive(
      server.url,
      { Origin: 'http://localhost:5173', Authorization: `Bearer ${tokens.access_token}` },
      'client-deleted',
      post,
    );
    const removed = await fetch(registered.registration_client_uri as string, {
      method: 'DELETE',
      headers: { Authorization: `Bearer ${registered.registration_access_token}` },
    });
    expect(removed.status).toBe(204);
    await expectLiveEnded(live, 'client-deleted', /revok/i, post);
  });

  it('refuses bad metadata with the RFC 7591 errors, and a flood with 429 past REGISTRATION_LIMIT', async () => {
    const as = { issuer: server.url, registration_endpoint: `${server.url}/register` };
    const send = (metadata: Partial<oauth.Client>) =>
      oauth.dynamicClientRegistrationRequest(as, metadata, { [oauth.allowInsecureRequests]: true });
    // the tests before registered twice: two more are taken, bad ones counted too
    const bad = await send({ redirect_uris: ['javascript:alert(1)'] });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toBe('invalid_redirect_uri');
    const ok = await send({ redirect_uris: ['https://agent.example/cb'] });
    expect(ok.status).toBe(201);
    const flooded = await send({ redirect_uris: ['https://agent.example/cb'] });
    expect(flooded.status).toBe(429);
    expect(Number(flooded.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});

describe.skipIf(!hasRedis)('the reference server on Redis: registered clients are shared', () => {
  let redis: RedisServer;
  let a: RunningServer;
  let b: RunningServer;
  beforeAll(async () => {
    redis = await startRedis();
    // one service: one public address (the issuer) for both processes
    const env = { REDIS_URL: redis.url, BASE_URL: 'http://portico.test' };
    [a, b] = await Promise.all([
      startReferenceServer(env, 45_000),
      startReferenceServer(env, 45_000),
    ]);
  }, 90_000);
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await redis?.stop();
  });

  const authorize = (server: RunningServer, clientId: string) =>
    fetch(
      `${server.url}/authorize?${new URLSearchParams({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: 'http://127.0.0.1:49153/callback',
        scope: 'openid read:messages',
        state: 's',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
      })}`,
      { redirect: 'manual' },
    );

  it('a client registered on one process is known to, and removed through, the other', async () => {
    const reply = await fetch(`${a.url}/register`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        redirect_uris: ['http://127.0.0.1/callback'],
        token_endpoint_auth_method: 'none',
        client_name: 'Shared agent',
      }),
    });
    expect(reply.status).toBe(201);
    const registered = (await reply.json()) as Record<string, string>;
    expect(registered.registration_client_uri).toBe(
      `http://portico.test/register/${registered.client_id}`,
    );
    const path = new URL(registered.registration_client_uri!).pathname;
    const auth = { Authorization: `Bearer ${registered.registration_access_token}` };
    const read = await fetch(`${b.url}${path}`, { headers: auth });
    expect(read.status).toBe(200);
    expect(((await read.json()) as Record<string, unknown>).client_name).toBe('Shared agent');
    // B shows its sign-in page for the client, on any loopback port
    const page = await authorize(b, registered.client_id!);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Shared agent');
    // deleted through B, A no longer knows it
    expect((await fetch(`${b.url}${path}`, { method: 'DELETE', headers: auth })).status).toBe(204);
    expect((await authorize(a, registered.client_id!)).status).toBe(400);
  });
});
