// Pushed authorization requests (RFC 9126) and dpop_jkt (RFC 9449 §10): /par checks and keeps
// the request, /authorize takes it once by its request_uri for its own client only, clients
// (or the whole server) that require PAR are refused without it, and a code bound to a DPoP
// key is redeemed only with a proof of that key.
import { randomUUID } from 'node:crypto';
import { decodeJwt, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSessions } from '../../../src/auth/session/session.js';
import { CLIENT_ASSERTION_TYPE } from '../../../src/oauth/clients/assertion.js';
import { MemoryClientStore } from '../../../src/oauth/clients/store.js';
import { createAuthorizationServer } from '../../../src/oauth/server.js';
import { MemoryRecordStore } from '../../../src/oauth/store/store.js';
import { createKeySet, type KeySet } from '../../../src/oauth/tokens/key-set.js';
import { hiddenInputs } from '../../helpers/browser.js';
import { closeAll, json, request } from '../../helpers/http.js';
import { basic, pkce } from '../token-fixtures.js';
import {
  approveVia,
  authorizationQuery,
  authorizeWith,
  dpopProof,
  forgetConsents,
  type Key,
  log,
  newKey,
  post,
  push,
  redeem,
  requestUriOf,
  SECRETS,
  type Site,
  startSite as start,
  WEB,
} from './par-fixtures.js';

let keys: KeySet;
let clientKey: Key;
let dpopKey: Key;
let otherKey: Key;
const startSite = (options = {}) => start(keys, clientKey, options);
let site: Site;

beforeAll(async () => {
  keys = await createKeySet();
  clientKey = await newKey();
  dpopKey = await newKey();
  otherKey = await newKey();
  site = await startSite();
});
afterAll(async () => {
  await closeAll();
  expect(log.errors).toEqual([]);
});

describe('POST /par (RFC 9126)', () => {
  it('keeps a checked request: 201 with a request_uri, single-use at /authorize, and a code', async () => {
    const { verifier, challenge } = pkce();
    const pushed = await push(site, 'web', {}, {}, challenge);
    expect(pushed.status, pushed.body).toBe(201);
    expect(pushed.headers['cache-control']).toBe('no-store');
    const body = json<{ request_uri: string; expires_in: number }>(pushed);
    expect(body.request_uri).toMatch(/^urn:ietf:params:oauth:request_uri:[\w-]{43}$/);
    expect(body.expires_in).toBe(60);
    const { code } = await approveVia(site, authorizeWith('web', body.request_uri));
    const tokens = await redeem(site, code!, verifier);
    expect(tokens.status, tokens.body).toBe(200);
    // used once: the same request_uri again is an error page, never a redirect
    const again = await request(site.app, authorizeWith('web', body.request_uri), {
      headers: { Cookie: site.cookie },
    });
    expect(again.status).toBe(400);
    expect(again.headers.location).toBeUndefined();
  });

  it('uses only the pushed parameters: what the query adds is ignored', async () => {
    await forgetConsents(site);
    const requestUri = requestUriOf(await push(site, 'web', { scope: 'openid' }));
    const consent = await request(
      site.app,
      authorizeWith(
        'web',
        requestUri,
        `&scope=read:messages&redirect_uri=${encodeURIComponent('https://evil.example/cb')}&state=evil`,
      ),
      { headers: { Cookie: site.cookie } },
    );
    expect(consent.status).toBe(200);
    const fields = new Map(hiddenInputs(consent.body));
    expect(fields.get('scope')).toBe('openid');
    expect(fields.get('redirect_uri')).toBe(WEB);
    expect(fields.get('state')).toBe('st-1');
  });

  it('gives a request_uri to its own client only, another client’s use not spending it', async () => {
    const { verifier, challenge } = pkce();
    const requestUri = requestUriOf(await push(site, 'web', {}, {}, challenge));
    for (const thief of ['other', 'nobody']) {
      const stolen = await request(site.app, authorizeWith(thief, requestUri), {
        headers: { Cookie: site.cookie },
      });
      expect(stolen.status).toBe(400);
      expect(stolen.headers.location).toBeUndefined();
    }
    // its own client still takes it (once), and the code is redeemed
    const { code } = await approveVia(site, authorizeWith('web', requestUri));
    expect((await redeem(site, code!, verifier)).status).toBe(200);
    const again = await request(site.app, authorizeWith('web', requestUri), {
      headers: { Cookie: site.cookie },
    });
    expect(again.status).toBe(400);
  });

  it.each([
    ['an unknown request_uri', `urn:ietf:params:oauth:request_uri:${'A'.repeat(43)}`],
    ['an overlong request_uri', `urn:ietf:params:oauth:request_uri:${'A'.repeat(400)}`],
  ])('answers %s with an error page', async (_name, uri) => {
    const reply = await request(site.app, authorizeWith('web', uri), {
      headers: { Cookie: site.cookie },
    });
    expect(reply.status).toBe(400);
    expect(reply.headers.location).toBeUndefined();
  });

  it('refuses a request_uri without client_id, or twice', async () => {
    const requestUri = requestUriOf(await push(site, 'web'));
    const alone = await request(
      site.app,
      `/authorize?request_uri=${encodeURIComponent(requestUri)}`,
    );
    expect(alone.status).toBe(400);
    const twice = await request(site.app, `${authorizeWith('web', requestUri)}&request_uri=x`);
    expect(twice.status).toBe(400);
  });

  it.each([
    [
      'an unregistered redirect_uri',
      { redirect_uri: 'https://evil.example/cb' },
      'invalid_request',
      400,
    ],
    [
      'no PKCE challenge',
      { code_challenge: '', code_challenge_method: '' },
      'invalid_request',
      400,
    ],
    ['a scope the client may not have', { scope: 'admin' }, 'invalid_scope', 400],
    [
      'a request_uri',
      { request_uri: 'urn:ietf:params:oauth:request_uri:abc' },
      'invalid_request',
      400,
    ],
    ['a request object', { request: 'eyJhbGciOiJub25lIn0.e30.' }, 'invalid_request', 400],
    ['another client_id', { client_id: 'other' }, 'invalid_request', 400],
    ['a malformed dpop_jkt', { dpop_jkt: 'short' }, 'invalid_request', 400],
  ])('refuses a push with %s, as JSON', async (_name, extra, error, status) => {
    const form = new URLSearchParams(authorizationQuery('web', extra));
    if (!('client_id' in extra)) form.delete('client_id');
    for (const [name, value] of [...form]) if (value === '') form.delete(name);
    const reply = await post(site, '/par', form, { Authorization: basic('web', SECRETS.web!) });
    expect({ status: reply.status, error: json(reply).error }).toEqual({ status, error });
    expect(reply.headers['content-type']).toBe('application/json');
  });

  it('authenticates the client as the token endpoint does', async () => {
    const wrong = await post(site, '/par', authorizationQuery('web'), {
      Authorization: basic('web', 'not-the-secret'),
    });
    expect({ status: wrong.status, error: json(wrong).error }).toEqual({
      status: 401,
      error: 'invalid_client',
    });
    const none = await post(site, '/par', new URLSearchParams(authorizationQuery('web')));
    expect(json(none).error).toBe('invalid_client');
    // a public client pushes with its client_id alone
    const spa = await push(site, 'spa');
    expect(spa.status, spa.body).toBe(201);
    // a client with keys pushes with an assertion (private_key_jwt)
    const now = Math.floor(Date.now() / 1000);
    const assertion = await new SignJWT({
      iss: 'keyed',
      sub: 'keyed',
      aud: site.app.url,
      jti: randomUUID(),
      exp: now + 60,
    })
      .setProtectedHeader({ alg: 'ES256' })
      .sign(clientKey.privateKey);
    const form = new URLSearchParams(authorizationQuery('keyed'));
    form.set('client_assertion_type', CLIENT_ASSERTION_TYPE);
    form.set('client_assertion', assertion);
    const keyed = await post(site, '/par', form);
    expect(keyed.status, keyed.body).toBe(201);
    // the pushed request keeps no credential
    const consent = await request(site.app, authorizeWith('keyed', requestUriOf(keyed)), {
      headers: { Cookie: site.cookie },
    });
    expect(consent.body).not.toContain(assertion);
    expect(consent.body).not.toContain('client_assertion');
  });
});

describe('clients that must push (require_pushed_authorization_requests)', () => {
  it('refuses their request sent straight to /authorize, and takes it pushed', async () => {
    const direct = await request(site.app, `/authorize?${authorizationQuery('pushy')}`, {
      headers: { Cookie: site.cookie },
    });
    expect(direct.status).toBe(303);
    const url = new URL(direct.headers.location!);
    expect(url.searchParams.get('error')).toBe('invalid_request');
    expect(url.searchParams.get('error_description')).toMatch(/push/);
    const { verifier, challenge } = pkce();
    const requestUri = requestUriOf(await push(site, 'pushy', {}, {}, challenge));
    const { code } = await approveVia(site, authorizeWith('pushy', requestUri));
    expect((await redeem(site, code!, verifier, 'pushy')).status).toBe(200);
  });

  it('never lets a form forge the pushed origin of a request', async () => {
    // a consent form posted with a request_uri of its own, its token not sealing it
    const page = await request(site.app, `/authorize?${authorizationQuery('web')}`, {
      headers: { Cookie: site.cookie },
    });
    const forged = new URLSearchParams(hiddenInputs(page.body));
    forged.set('client_id', 'pushy');
    forged.set('request_uri', `urn:ietf:params:oauth:request_uri:${'B'.repeat(43)}`);
    forged.set('decision', 'approve');
    const reply = await post(site, '/authorize', forged, { Cookie: site.cookie });
    expect(reply.status).toBe(400);
    expect(reply.headers.location).toBeUndefined();
    // without a session, the consent form is sent back to sign-in: not with a request_uri
    const signedOut = await post(site, '/authorize', forged);
    expect(signedOut.status).toBe(400);
    expect(signedOut.headers.location).toBeUndefined();
  });

  it('server-wide: every client must push, and discovery says so', async () => {
    const strict = await startSite({ requirePushedAuthorizationRequests: true }).catch(
      () => undefined,
    );
    // the sign-in of startSite goes straight to /authorize: it is refused before any page
    expect(strict).toBeUndefined();
    const other = createAuthorizationServer({
      issuer: 'https://strict.example.test',
      clients: new MemoryClientStore([]),
      keys,
      users: { verify: () => undefined, get: () => undefined },
      sessions: createSessions({ allowedOrigins: ['https://strict.example.test'] }),
      requirePushedAuthorizationRequests: true,
    });
    expect(other.metadata()).toMatchObject({
      pushed_authorization_request_endpoint: 'https://strict.example.test/par',
      require_pushed_authorization_requests: true,
    });
    expect(site.as.metadata()).toMatchObject({
      pushed_authorization_request_endpoint: `${site.app.url}/par`,
      require_pushed_authorization_requests: false,
    });
  });

  it('fails closed when its store is full: 503 temporarily_unavailable, nothing forgotten', async () => {
    const full = await startSite({ store: new MemoryRecordStore({ maxEntries: 2 }) });
    const first = requestUriOf(await push(full, 'web'));
    expect((await push(full, 'web')).status).toBe(201);
    const refused = await push(full, 'web');
    expect({ status: refused.status, error: json(refused).error }).toEqual({
      status: 503,
      error: 'temporarily_unavailable',
    });
    expect(refused.headers['retry-after']).toBeDefined();
    // the requests already pushed are kept: the first is still taken
    const consent = await request(full.app, authorizeWith('web', first), {
      headers: { Cookie: full.cookie },
    });
    expect(consent.status).toBe(200);
  });

  it('expires a request_uri after pushedRequestTtl', async () => {
    const quick = await startSite({ pushedRequestTtl: 1_000 });
    const pushed = await push(quick, 'web');
    expect(json(pushed).expires_in).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const late = await request(quick.app, authorizeWith('web', requestUriOf(pushed)), {
      headers: { Cookie: quick.cookie },
    });
    expect(late.status).toBe(400);
  });
});

describe('dpop_jkt (RFC 9449 §10): a code bound to a DPoP key', () => {
  it('binds the code to the key of a proof sent to /par: redeemed only with that key', async () => {
    const { verifier, challenge } = pkce();
    const pushed = await push(
      site,
      'web',
      {},
      { DPoP: await dpopProof(site, dpopKey, '/par') },
      challenge,
    );
    expect(pushed.status, pushed.body).toBe(201);
    const { code } = await approveVia(site, authorizeWith('web', requestUriOf(pushed)));
    const bare = await redeem(site, code!, verifier);
    expect({ status: bare.status, error: json(bare).error }).toEqual({
      status: 400,
      error: 'invalid_grant',
    });
    const stranger = await redeem(site, code!, verifier, 'web', {
      DPoP: await dpopProof(site, otherKey, '/token'),
    });
    expect(json(stranger).error).toBe('invalid_grant');
    const bound = await redeem(site, code!, verifier, 'web', {
      DPoP: await dpopProof(site, dpopKey, '/token'),
    });
    expect(bound.status, bound.body).toBe(200);
    const body = json<{ token_type: string; access_token: string }>(bound);
    expect(body.token_type).toBe('DPoP');
    expect(decodeJwt(body.access_token).cnf).toEqual({ jkt: dpopKey.jkt });
  });

  it('takes dpop_jkt at /authorize and in a push, and refuses a push whose proof is of another key', async () => {
    const { verifier, challenge } = pkce();
    const { code } = await approveVia(
      site,
      `/authorize?${authorizationQuery('spa', { dpop_jkt: dpopKey.jkt }, challenge)}`,
    );
    expect((await redeem(site, code!, verifier, 'spa')).status).toBe(400);
    const ok = await redeem(site, code!, verifier, 'spa', {
      DPoP: await dpopProof(site, dpopKey, '/token'),
    });
    expect(ok.status, ok.body).toBe(200);
    const mismatch = await push(
      site,
      'web',
      { dpop_jkt: otherKey.jkt },
      {
        DPoP: await dpopProof(site, dpopKey, '/par'),
      },
    );
    expect({ status: mismatch.status, error: json(mismatch).error }).toEqual({
      status: 400,
      error: 'invalid_dpop_proof',
    });
    const badProof = await push(
      site,
      'web',
      {},
      { DPoP: await dpopProof(site, dpopKey, '/token') },
    );
    expect(json(badProof).error).toBe('invalid_dpop_proof');
  });

  it('refuses a malformed dpop_jkt at /authorize, redirected', async () => {
    const reply = await request(
      site.app,
      `/authorize?${authorizationQuery('web', { dpop_jkt: 'x' })}`,
      {
        headers: { Cookie: site.cookie },
      },
    );
    expect(reply.status).toBe(303);
    expect(new URL(reply.headers.location!).searchParams.get('error')).toBe('invalid_request');
  });
});
