// Dynamic client registration (RFC 7591) and its management (RFC 7592) over real sockets:
// openid-client and oauth4webapi register, every kind of bad metadata is refused with the
// RFC 7591 §3.2.2 error, a registered client runs the code flow with PKCE like any client,
// registrations are throttled per IP, a full store answers 503, GET/PUT/DELETE need the
// registration access token, and a DELETE ends every token and stream of the client.
import * as oauth from 'oauth4webapi';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryClientStore } from '../../../src/oauth/clients/store.js';
import { createAuthorizationServer } from '../../../src/oauth/server.js';
import { createKeySet, type KeySet } from '../../../src/oauth/tokens/key-set.js';
import { closeAll, json, request } from '../../helpers/http.js';
import { basic, pkce } from '../token-fixtures.js';
import {
  approve,
  FORM,
  log,
  query,
  type RegistrationSite,
  register,
  startRegistrationSite,
} from './registration-fixtures.js';

let keys: KeySet;
let site: RegistrationSite;
const insecure = { execute: [client.allowInsecureRequests] };

beforeAll(async () => {
  keys = await createKeySet();
  site = await startRegistrationSite(keys, { registration: { limit: 1_000 } });
});
afterAll(async () => {
  await closeAll();
  expect(log.errors).toEqual([]);
});

/** The RFC 7591 §3.2.2 error of a refused registration, read by oauth4webapi. */
async function refusal(metadata: unknown): Promise<{ status: number; error: string }> {
  const as = { issuer: site.app.url, registration_endpoint: `${site.app.url}/register` };
  const response = await oauth.dynamicClientRegistrationRequest(
    as,
    metadata as Partial<oauth.Client>,
    { [oauth.allowInsecureRequests]: true },
  );
  const status = response.status;
  try {
    await oauth.processDynamicClientRegistrationResponse(response);
  } catch (error) {
    expect(error).toBeInstanceOf(oauth.ResponseBodyError);
    const { cause } = error as oauth.ResponseBodyError;
    expect(typeof cause.error_description).toBe('string');
    return { status, error: String(cause.error) };
  }
  throw new Error('the registration was accepted');
}

/** Redeems a code of a public client. */
function redeem(clientId: string, code: string, verifier: string, redirectUri: string) {
  return request(site.app, '/token', {
    method: 'POST',
    headers: FORM,
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      client_id: clientId,
      code,
      code_verifier: verifier,
      redirect_uri: redirectUri,
    }).toString(),
  });
}

describe('discovery', () => {
  it('lists registration_endpoint when the switch is on, and not by default', async () => {
    const doc = json(await request(site.app, '/.well-known/oauth-authorization-server'));
    expect(doc.registration_endpoint).toBe(`${site.app.url}/register`);
    expect(doc.code_challenge_methods_supported).toEqual(['S256']);
    const off = createAuthorizationServer({
      issuer: 'https://off.example.com',
      clients: new MemoryClientStore(),
      keys,
      users: site.as.context.users,
      sessions: site.as.context.sessions,
    });
    expect(off.metadata().registration_endpoint).toBeUndefined();
    expect(Object.keys(off.routes)).not.toContain('/register');
  });

  it('refuses a registration policy without the switch, and a client store that cannot be written', async () => {
    const base = {
      issuer: 'https://x.example.com',
      keys,
      users: site.as.context.users,
      sessions: site.as.context.sessions,
    };
    expect(() =>
      createAuthorizationServer({
        ...base,
        clients: new MemoryClientStore(),
        registration: { limit: 3 },
      }),
    ).toThrow(/features: \{ registration: true \}/);
    expect(() =>
      createAuthorizationServer({
        ...base,
        clients: { get: () => undefined },
        features: { registration: true },
      }),
    ).toThrow(/writable client store/);
    expect(() =>
      createAuthorizationServer({
        ...base,
        clients: new MemoryClientStore(),
        features: { registration: true },
        registration: { limt: 3 } as never,
      }),
    ).toThrow(/limit/);
  });
});

describe('POST /register (RFC 7591)', () => {
  it('registers a public client with openid-client, which then runs the code flow with PKCE on any loopback port', async () => {
    const config = await client.dynamicClientRegistration(
      new URL(site.app.url),
      {
        redirect_uris: ['http://127.0.0.1/callback'],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        client_name: 'Agent One',
        scope: 'openid offline_access read:messages',
        software_id: 'agent-one',
        unknown_field: 'ignored',
      } as Partial<client.ClientMetadata>,
      client.None(),
      insecure,
    );
    const metadata = config.clientMetadata();
    expect(metadata.client_id).toMatch(/^[\w-]{24}$/);
    expect(metadata.client_secret).toBeUndefined();
    expect(metadata.unknown_field).toBeUndefined();
    expect(metadata.software_id).toBe('agent-one');
    const clientId = metadata.client_id;
    // the code goes to the port the app listens on now
    const { verifier, challenge } = pkce();
    const redirectUri = 'http://127.0.0.1:53219/callback';
    const { consent, code, location } = await approve(
      site,
      `/authorize?${query(clientId, redirectUri, challenge)}`,
    );
    expect(consent.body).toContain('Agent One');
    expect(`${location.origin}${location.pathname}`).toBe(redirectUri);
    const tokens = await redeem(clientId, code, verifier, redirectUri);
    expect(tokens.status, tokens.body).toBe(200);
    const { access_token, refresh_token } = json<{ access_token: string; refresh_token: string }>(
      tokens,
    );
    const me = await request(site.app, '/me', {
      headers: { Authorization: `Bearer ${access_token}` },
    });
    expect(json(me)).toEqual({ sub: 'alice', clientId });
    // refresh tokens rotate as for any public client
    const refreshed = await request(site.app, '/token', {
      method: 'POST',
      headers: FORM,
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        client_id: clientId,
        refresh_token,
      }).toString(),
    });
    expect(refreshed.status, refreshed.body).toBe(200);
    expect(json(refreshed).refresh_token).not.toBe(refresh_token);
    // PKCE stays required
    const noPkce = new URLSearchParams(query(clientId, redirectUri));
    noPkce.delete('code_challenge');
    noPkce.delete('code_challenge_method');
    const refused = await request(site.app, `/authorize?${noPkce}`, {
      headers: { Cookie: site.cookie },
    });
    expect(refused.status).toBe(303);
    expect(new URL(refused.headers.location!).searchParams.get('error')).toBe('invalid_request');
  });

  it('registers a confidential client with oauth4webapi: its secret once, its hash kept, and RFC 7591 §3.2.1 fields', async () => {
    const as = { issuer: site.app.url, registration_endpoint: `${site.app.url}/register` };
    const response = await oauth.dynamicClientRegistrationRequest(
      as,
      {
        redirect_uris: ['https://agent.example/cb'],
        grant_types: ['authorization_code', 'client_credentials'],
        client_name: 'Agent Two',
        contacts: ['ops@agent.example'],
        scope: 'read:messages',
      },
      { [oauth.allowInsecureRequests]: true },
    );
    expect(response.status).toBe(201);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const registered = await oauth.processDynamicClientRegistrationResponse(response);
    expect(registered.token_endpoint_auth_method).toBe('client_secret_basic');
    expect(registered.client_secret).toMatch(/^[\w-]{43}$/);
    expect(registered.client_secret_expires_at).toBe(0);
    expect(typeof registered.client_id_issued_at).toBe('number');
    expect(registered.registration_client_uri).toBe(
      `${site.app.url}/register/${registered.client_id}`,
    );
    expect(registered.registration_access_token).toMatch(/^[\w-]{43}$/);
    expect(registered.response_types).toEqual(['code']);
    // stored hashed: neither the secret nor the registration token in clear
    const stored = await site.clients.get(registered.client_id);
    expect(stored?.provenance).toBe('registered');
    expect(JSON.stringify(stored)).not.toContain(registered.client_secret as string);
    expect(JSON.stringify(stored)).not.toContain(registered.registration_access_token as string);
    const tokens = await request(site.app, '/token', {
      method: 'POST',
      headers: {
        ...FORM,
        Authorization: basic(registered.client_id, registered.client_secret as string),
      },
      body: 'grant_type=client_credentials&scope=read%3Amessages',
    });
    expect(tokens.status, tokens.body).toBe(200);
  });

  it.each([
    [{ redirect_uris: ['javascript:alert(1)'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['data:text/html,<script>1</script>'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['https://agent.example/cb#frag'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['http://agent.example/cb'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['myapp://cb'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['https://user:pw@agent.example/cb'] }, 'invalid_redirect_uri'],
    [{}, 'invalid_redirect_uri'],
    [{ redirect_uris: 'https://agent.example/cb' }, 'invalid_client_metadata'],
    [
      { redirect_uris: ['https://a.example/cb'], token_endpoint_auth_method: 'tls_client_auth' },
      'invalid_client_metadata',
    ],
    [
      {
        redirect_uris: ['https://a.example/cb'],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'client_credentials'],
      },
      'invalid_client_metadata',
    ],
    [
      { redirect_uris: ['https://a.example/cb'], grant_types: ['implicit'] },
      'invalid_client_metadata',
    ],
    [
      { redirect_uris: ['https://a.example/cb'], response_types: ['token'] },
      'invalid_client_metadata',
    ],
    [{ redirect_uris: ['https://a.example/cb'], scope: 'openid admin' }, 'invalid_client_metadata'],
    [
      { redirect_uris: ['https://a.example/cb'], token_endpoint_auth_method: 'private_key_jwt' },
      'invalid_client_metadata',
    ],
    [
      {
        redirect_uris: ['https://a.example/cb'],
        token_endpoint_auth_method: 'private_key_jwt',
        jwks: { keys: [{ kty: 'EC', crv: 'P-256', x: 'x', y: 'y', d: 'secret' }] },
      },
      'invalid_client_metadata',
    ],
    [
      { redirect_uris: ['https://a.example/cb'], jwks_uri: 'https://a.example/jwks' },
      'invalid_client_metadata',
    ],
    [
      { redirect_uris: ['https://a.example/cb'], client_name: 'Bank\u202e' },
      'invalid_client_metadata',
    ],
    [
      { redirect_uris: ['https://a.example/cb'], logo_uri: 'http://a.example/logo.png' },
      'invalid_client_metadata',
    ],
    [
      { redirect_uris: ['https://a.example/cb'], application_type: 'desktop' },
      'invalid_client_metadata',
    ],
    [{ redirect_uris: ['https://a.example/cb'], contacts: 'ops' }, 'invalid_client_metadata'],
  ])('refuses %j with %s (400)', async (metadata, error) => {
    expect(await refusal(metadata)).toEqual({ status: 400, error });
  });

  it('accepts a private-use scheme, loopback [::1] and localhost, and private_key_jwt with jwks_uri', async () => {
    const reply = await register(site, {
      redirect_uris: ['com.example.agent:/cb', 'http://[::1]/cb', 'http://localhost:8080/cb'],
      token_endpoint_auth_method: 'private_key_jwt',
      jwks_uri: 'https://agent.example/jwks.json',
      application_type: 'native',
    });
    expect(reply.status, reply.body).toBe(201);
    const body = json(reply);
    expect(body.client_secret).toBeUndefined();
    expect(body.jwks_uri).toBe('https://agent.example/jwks.json');
    expect(body.scope).toBe('openid offline_access read:messages');
  });

  it('answers a body that is not JSON with invalid_client_metadata', async () => {
    const reply = await register(site, '{"redirect_uris": [', {});
    expect(reply.status).toBe(400);
    expect(json(reply).error).toBe('invalid_client_metadata');
    const form = await request(site.app, '/register', {
      method: 'POST',
      headers: FORM,
      body: 'redirect_uris=https://a.example/cb',
    });
    expect(json(form).error).toBe('invalid_client_metadata');
  });
});

describe('RFC 7592: the registration access token', () => {
  async function registered() {
    const reply = await register(site, {
      redirect_uris: ['http://127.0.0.1/cb'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      client_name: 'Managed',
    });
    expect(reply.status, reply.body).toBe(201);
    return json<{
      client_id: string;
      registration_access_token: string;
      registration_client_uri: string;
    }>(reply);
  }
  const path = (uri: string) => new URL(uri).pathname;

  it('GET answers the current metadata, never a secret; PUT replaces it', async () => {
    const reg = await registered();
    const auth = { Authorization: `Bearer ${reg.registration_access_token}` };
    const read = await request(site.app, path(reg.registration_client_uri), { headers: auth });
    expect(read.status).toBe(200);
    expect(read.headers['cache-control']).toBe('no-store');
    const current = json(read);
    expect(current.client_name).toBe('Managed');
    expect(current.registration_access_token).toBeUndefined();
    expect(current.client_secret).toBeUndefined();
    const put = await request(site.app, path(reg.registration_client_uri), {
      method: 'PUT',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ ...current, client_name: 'Managed 2' }),
    });
    expect(put.status, put.body).toBe(200);
    expect(json(put).client_name).toBe('Managed 2');
    expect((await site.clients.get(reg.client_id))?.name).toBe('Managed 2');
  });

  it('a wrong or missing token is 401 with a Bearer challenge', async () => {
    const reg = await registered();
    const missing = await request(site.app, path(reg.registration_client_uri));
    expect(missing.status).toBe(401);
    expect(missing.headers['www-authenticate']).toBe('Bearer realm="register"');
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const wrong = await request(site.app, path(reg.registration_client_uri), {
        method,
        headers: { Authorization: 'Bearer not-the-token' },
      });
      expect(wrong.status).toBe(401);
      expect(wrong.headers['www-authenticate']).toMatch(/^Bearer .*error="invalid_token"/);
    }
    // another client's token does not open this one
    const other = await registered();
    const crossed = await request(site.app, path(reg.registration_client_uri), {
      headers: { Authorization: `Bearer ${other.registration_access_token}` },
    });
    expect(crossed.status).toBe(401);
    expect(await site.clients.get(reg.client_id)).toBeDefined();
  });

  it('DELETE removes the client and ends its access tokens, refresh tokens and open streams', async () => {
    const reg = await registered();
    const { verifier, challenge } = pkce();
    const redirectUri = 'http://127.0.0.1:40111/cb';
    const { code } = await approve(
      site,
      `/authorize?${query(reg.client_id, redirectUri, challenge)}`,
    );
    const tokens = json<{ access_token: string; refresh_token: string }>(
      await redeem(reg.client_id, code, verifier, redirectUri),
    );
    const bearer = { Authorization: `Bearer ${tokens.access_token}` };
    expect((await request(site.app, '/me', { headers: bearer })).status).toBe(200);
    // a stream opened with the token, held open over a real socket
    const before = site.streams.length;
    const streamed = request(site.app, '/stream', { headers: bearer });
    await expect.poll(() => site.streams.length).toBe(before + 1);
    const removed = await request(site.app, path(reg.registration_client_uri), {
      method: 'DELETE',
      headers: { Authorization: `Bearer ${reg.registration_access_token}` },
    });
    expect(removed.status).toBe(204);
    expect(await site.streams[before]).toBe(`revoked client:${reg.client_id}`);
    expect((await streamed).body).toContain('event: end');
    expect(await site.clients.get(reg.client_id)).toBeUndefined();
    const me = await request(site.app, '/me', { headers: bearer });
    expect(me.status).toBe(401);
    const refresh = await request(site.app, '/token', {
      method: 'POST',
      headers: FORM,
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        client_id: reg.client_id,
        refresh_token: tokens.refresh_token,
      }).toString(),
    });
    expect(refresh.status).toBe(401);
    expect(json(refresh).error).toBe('invalid_client');
    // and the registration token is spent with it
    const again = await request(site.app, path(reg.registration_client_uri), {
      headers: { Authorization: `Bearer ${reg.registration_access_token}` },
    });
    expect(again.status).toBe(401);
  });
});

describe('the consent page of a registered client', () => {
  it('shows a phishing client_name escaped, marked unverified, with the host the code goes to', async () => {
    const name = 'Google <img src=x onerror=alert(1)> ✓ verified';
    const reply = await register(site, {
      redirect_uris: ['https://evil.example/cb'],
      token_endpoint_auth_method: 'none',
      client_name: name,
    });
    expect(reply.status, reply.body).toBe(201);
    const { client_id } = json<{ client_id: string }>(reply);
    const page = await request(
      site.app,
      `/authorize?${query(client_id, 'https://evil.example/cb', pkce().challenge, 'openid')}`,
      { headers: { Cookie: site.cookie } },
    );
    expect(page.status).toBe(200);
    expect(page.body).not.toContain('<img');
    expect(page.body).toContain('Google &lt;img src=x onerror=alert(1)&gt; ✓ verified');
    expect(page.body).toContain('(unverified, <code>');
    expect(page.body).toContain(client_id);
    expect(page.body).toContain('<strong>evil.example</strong>');
    expect(page.body).toMatch(/<title>[^<]*\(unverified\)\?<\/title>/);
    // the sign-in page before it marks the name too
    const signIn = await request(
      site.app,
      `/authorize?${query(client_id, 'https://evil.example/cb', pkce().challenge, 'openid')}`,
    );
    expect(signIn.status).toBe(200);
    expect(signIn.body).not.toContain('<img');
    expect(signIn.body).toContain('<span class="unverified">(unverified)</span>');
    // a configured client is not marked
    const configured = await request(
      site.app,
      `/authorize?${query('web', 'https://app.example.com/cb', pkce().challenge, 'openid')}`,
      { headers: { Cookie: site.cookie } },
    );
    expect(configured.body).not.toContain('unverified');
  });
});

describe('bounds', () => {
  it('counts registrations per client IP: past the limit, 429 with Retry-After', async () => {
    const small = await startRegistrationSite(keys, { registration: { limit: 3 } });
    const metadata = {
      redirect_uris: ['https://a.example/cb'],
      token_endpoint_auth_method: 'none',
    };
    const replies = [];
    for (let i = 0; i < 5; i++) replies.push(await register(small, metadata));
    expect(replies.map((r) => r.status)).toEqual([201, 201, 201, 429, 429]);
    expect(Number(replies[3]!.headers['retry-after'])).toBeGreaterThan(3000);
    expect(json(replies[3]!).error).toBe('temporarily_unavailable');
  });

  it('answers 503 temporarily_unavailable when the client store is full, forgetting no client', async () => {
    const full = await startRegistrationSite(
      keys,
      {},
      new MemoryClientStore([], { maxClients: 2 }),
    );
    const metadata = {
      redirect_uris: ['https://a.example/cb'],
      token_endpoint_auth_method: 'none',
    };
    const first = json<{ client_id: string }>(await register(full, metadata));
    await register(full, metadata);
    const refused = await register(full, metadata);
    expect(refused.status).toBe(503);
    expect(json(refused).error).toBe('temporarily_unavailable');
    expect(refused.headers['retry-after']).toBeDefined();
    expect(await full.clients.get(first.client_id)).toBeDefined();
  });

  it('asks for the initial access token when the policy has one, a wrong one counted by the guard', async () => {
    const guarded = await startRegistrationSite(keys, {
      registration: { initialAccessToken: 'the-initial-access-token' },
    });
    const metadata = {
      redirect_uris: ['https://a.example/cb'],
      token_endpoint_auth_method: 'none',
    };
    const missing = await register(guarded, metadata);
    expect(missing.status).toBe(401);
    expect(missing.headers['www-authenticate']).toBe('Bearer realm="register"');
    const wrong = await register(guarded, metadata, { Authorization: 'Bearer wrong-token' });
    expect(wrong.status).toBe(401);
    expect(wrong.headers['www-authenticate']).toContain('error="invalid_token"');
    const config = await client.dynamicClientRegistration(
      new URL(guarded.app.url),
      metadata as Partial<client.ClientMetadata>,
      client.None(),
      { ...insecure, initialAccessToken: 'the-initial-access-token' },
    );
    expect(config.clientMetadata().client_id).toBeDefined();
  });

  it('the review hook amends or refuses a registration', async () => {
    const reviewed = await startRegistrationSite(keys, {
      registration: {
        review: (metadata) =>
          metadata.client_name === 'Refuse me' ? false : { ...metadata, scope: 'openid' },
      },
    });
    const ok = await register(reviewed, {
      redirect_uris: ['https://a.example/cb'],
      token_endpoint_auth_method: 'none',
    });
    expect(json(ok).scope).toBe('openid');
    const no = await register(reviewed, {
      redirect_uris: ['https://a.example/cb'],
      client_name: 'Refuse me',
    });
    expect(no.status).toBe(400);
    expect(json(no).error).toBe('invalid_client_metadata');
  });
});
