// private_key_jwt (RFC 7523 §2.2, OpenID Connect Core §9) at the token, revocation and
// introspection endpoints: keys inline or at a jwks_uri, one-time jti, aud = the issuer or
// the endpoint, and a hostile corpus of assertions refused as invalid_client, never a 200.
import { randomUUID, type webcrypto } from 'node:crypto';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCredentialGuard } from '../../../src/auth/credential-guard.js';
import { sendJson } from '../../../src/core/send.js';
import { CLIENT_ASSERTION_TYPE } from '../../../src/oauth/clients/assertion.js';
import { defineClient } from '../../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../../src/oauth/clients/store.js';
import { closeAll, json, type Listening, request, serve } from '../../helpers/http.js';
import { expectError, ISSUER, startOAuthServer } from '../token-fixtures.js';

type Key = { privateKey: webcrypto.CryptoKey; jwk: JWK };
const TOKEN_URL = `${ISSUER}/token`;

async function newKey(alg: string, kid: string): Promise<Key> {
  const pair = await generateKeyPair(alg, { extractable: true });
  return { privateKey: pair.privateKey, jwk: { ...(await exportJWK(pair.publicKey)), kid, alg } };
}

let es: Key;
let rsa: Key;
let ed: Key;
let ed25519: Key;
let stranger: Key;
let remoteKey: Key;
let server: Listening;
let jwksHost: Listening;
let jwksFetches = 0;

/** An assertion of `client`, signed by `key`: what openid-client and oauth4webapi send. */
function assertion(
  key: Key,
  claims: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
  client = 'key-client',
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({
    iss: client,
    sub: client,
    aud: ISSUER,
    jti: randomUUID(),
    iat: now,
    exp: now + 60,
    ...claims,
  })
    .setProtectedHeader({ alg: key.jwk.alg as string, kid: key.jwk.kid, ...header })
    .sign(key.privateKey);
}

function post(path: string, params: Record<string, string>, headers: Record<string, string> = {}) {
  return request(server, path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(params).toString(),
  });
}

const withAssertion = (value: string, extra: Record<string, string> = {}) => ({
  client_assertion_type: CLIENT_ASSERTION_TYPE,
  client_assertion: value,
  ...extra,
});

const clientCredentials = (value: string, extra: Record<string, string> = {}) =>
  post('/token', { grant_type: 'client_credentials', ...withAssertion(value, extra) });

beforeAll(async () => {
  es = await newKey('ES256', 'es');
  rsa = await newKey('PS256', 'ps');
  ed = await newKey('EdDSA', 'ed');
  ed25519 = await newKey('Ed25519', 'ed25519');
  stranger = await newKey('ES256', 'es'); // same kid, other key
  remoteKey = await newKey('RS256', 'rs');
  jwksHost = await serve((_req, res) => {
    jwksFetches++;
    sendJson(res, 200, { keys: [remoteKey.jwk] });
  });
  const clients = new MemoryClientStore([
    await defineClient({
      clientId: 'key-client',
      jwks: { keys: [es.jwk, rsa.jwk, ed.jwk, ed25519.jwk] },
      grantTypes: ['client_credentials'],
      redirectUris: [],
      scopes: ['read:messages'],
      introspection: 'any',
    }),
    await defineClient({
      clientId: 'remote-client',
      jwksUri: `${jwksHost.url}/jwks.json`,
      grantTypes: ['client_credentials'],
      redirectUris: [],
      scopes: ['read:messages'],
    }),
    // a client that registered itself (RFC 7591) chose its jwks_uri: a loopback one
    await defineClient({
      clientId: 'registered-remote-client',
      jwksUri: `${jwksHost.url}/jwks.json`,
      grantTypes: ['client_credentials'],
      redirectUris: [],
      scopes: ['read:messages'],
      provenance: 'registered',
    }),
    await defineClient({
      clientId: 'secret-client',
      secret: 'secret-client-secret',
      grantTypes: ['client_credentials'],
      redirectUris: [],
      scopes: ['read:messages'],
    }),
  ]);
  ({ server } = await startOAuthServer({ clients }));
});
afterAll(closeAll);

describe('private_key_jwt at the token endpoint', () => {
  it('never fetches the keys of a self-described client from a loopback address (SSRF)', async () => {
    const before = jwksFetches;
    const reply = await clientCredentials(
      await assertion(remoteKey, {}, {}, 'registered-remote-client'),
    );
    expectError(reply, 'invalid_client');
    expect(jwksFetches, 'no request reached the loopback host').toBe(before);
    // the same URL, configured by the deployment, is fetched
    const configured = await clientCredentials(await assertion(remoteKey, {}, {}, 'remote-client'));
    expect(configured.status, configured.body).toBe(200);
    expect(jwksFetches).toBeGreaterThan(before);
  });

  it.each([
    ['ES256', () => es],
    ['PS256', () => rsa],
    ['EdDSA', () => ed],
    ['Ed25519 (RFC 9864, as oauth4webapi names it)', () => ed25519],
  ])('takes an assertion signed with %s by one of the client’s keys', async (_alg, key) => {
    const reply = await clientCredentials(await assertion(key()));
    expect(reply.status, reply.body).toBe(200);
    expect(json<{ token_type: string }>(reply).token_type).toBe('Bearer');
  });

  it('takes the token endpoint’s URL as aud, a one-value array, and a matching client_id', async () => {
    for (const aud of [TOKEN_URL, [ISSUER]]) {
      const reply = await clientCredentials(await assertion(es, { aud }), {
        client_id: 'key-client',
      });
      expect(reply.status, reply.body).toBe(200);
    }
  });

  it('takes keys from the client’s jwks_uri', async () => {
    const reply = await clientCredentials(await assertion(remoteKey, {}, {}, 'remote-client'));
    expect(reply.status, reply.body).toBe(200);
  });

  it('refuses an assertion used a second time', async () => {
    const once = await assertion(es);
    expect((await clientCredentials(once)).status).toBe(200);
    expectError(await clientCredentials(once), 'invalid_client');
  });

  const now = () => Math.floor(Date.now() / 1000);
  const corpus: [string, () => Promise<string>][] = [
    ['signed by a key the client does not have', () => assertion(stranger)],
    ['for another server', () => assertion(es, { aud: 'https://other.example.test' })],
    [
      'for another endpoint of another server',
      () => assertion(es, { aud: 'https://other.example.test/token' }),
    ],
    ['for another path of this server', () => assertion(es, { aud: `${ISSUER}/elsewhere` })],
    ['with an empty aud array', () => assertion(es, { aud: [] })],
    ['with no aud', () => assertion(es, { aud: undefined })],
    ['expired', () => assertion(es, { iat: now() - 600, exp: now() - 300 })],
    ['valid for an hour (exp too far ahead)', () => assertion(es, { exp: now() + 3600 })],
    ['without exp', () => assertion(es, { exp: undefined })],
    ['without jti', () => assertion(es, { jti: undefined })],
    ['with a numeric jti', () => assertion(es, { jti: 42 })],
    ['not yet valid (nbf)', () => assertion(es, { nbf: now() + 600 })],
    ['whose sub is another client', () => assertion(es, { sub: 'secret-client' })],
    [
      'naming another client with keys it does not hold',
      () => assertion(es, {}, {}, 'remote-client'),
    ],
    ['for a client with a secret', () => assertion(es, {}, {}, 'secret-client')],
    ['for an unknown client', () => assertion(es, {}, {}, 'nobody')],
    ['typed as a DPoP proof', () => assertion(es, {}, { typ: 'dpop+jwt' })],
    ['typed as an access token', () => assertion(es, {}, { typ: 'at+jwt' })],
    [
      'with alg none',
      async () => {
        const h = Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url');
        const p = Buffer.from(
          JSON.stringify({
            iss: 'key-client',
            sub: 'key-client',
            aud: ISSUER,
            jti: 'x',
            exp: now() + 60,
          }),
        ).toString('base64url');
        return `${h}.${p}.`;
      },
    ],
    [
      'signed with HS256 over the public key',
      () =>
        new SignJWT({
          iss: 'key-client',
          sub: 'key-client',
          aud: ISSUER,
          jti: randomUUID(),
          exp: now() + 60,
        })
          .setProtectedHeader({ alg: 'HS256' })
          .sign(new TextEncoder().encode(JSON.stringify(es.jwk))),
    ],
    [
      'with its signature cut',
      async () => {
        const good = await assertion(es);
        return `${good.slice(0, good.lastIndexOf('.'))}.AAAA`;
      },
    ],
    ['that is not a JWT', async () => 'not-a-jwt'],
    ['of 10 KiB', async () => `${'a'.repeat(5000)}.${'b'.repeat(5000)}.c`],
    ['whose payload is not JSON', async () => 'eyJhbGciOiJFUzI1NiJ9.bm90LWpzb24.c2ln'],
  ];

  it.each(corpus)('refuses an assertion %s: 401 invalid_client', async (_name, make) => {
    const reply = await clientCredentials(await make());
    expect(expectError(reply, 'invalid_client').error_description).toBe(
      'Client authentication failed.',
    );
  });

  it.each([
    ['a client_id naming another client', { client_id: 'secret-client' }, 'invalid_client'],
  ])('refuses %s', async (_name, extra, error) => {
    expectError(await clientCredentials(await assertion(es), extra), error);
  });

  it('refuses two methods at once, a wrong assertion type, and a client with keys using a secret', async () => {
    const good = await assertion(es);
    expectError(
      await post(
        '/token',
        { grant_type: 'client_credentials', ...withAssertion(good) },
        { authorization: `Basic ${Buffer.from('key-client:whatever').toString('base64')}` },
      ),
      'invalid_request',
    );
    expectError(
      await post('/token', {
        grant_type: 'client_credentials',
        ...withAssertion(good, { client_secret: 'x' }),
      }),
      'invalid_request',
    );
    expectError(
      await post('/token', {
        grant_type: 'client_credentials',
        client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:saml2-bearer',
        client_assertion: good,
      }),
      'invalid_request',
    );
    expectError(
      await post('/token', { grant_type: 'client_credentials', client_assertion: good }),
      'invalid_request',
    );
    expectError(
      await post(
        '/token',
        { grant_type: 'client_credentials' },
        { authorization: `Basic ${Buffer.from('key-client:a-long-secret').toString('base64')}` },
      ),
      'invalid_client',
    );
    expectError(
      await post('/token', { grant_type: 'client_credentials', client_id: 'key-client' }),
      'invalid_client',
    );
  });
});

describe('private_key_jwt at the revocation and introspection endpoints', () => {
  it('authenticates the client there too, with aud the issuer or the endpoint’s URL', async () => {
    const issued = await clientCredentials(await assertion(es));
    const token = json<{ access_token: string }>(issued).access_token;
    const introspected = await post(
      '/introspect',
      withAssertion(await assertion(es, { aud: `${ISSUER}/introspect` }), { token }),
    );
    expect(introspected.status, introspected.body).toBe(200);
    expect(json(introspected)).toMatchObject({ active: true, client_id: 'key-client' });
    const revoked = await post('/revoke', withAssertion(await assertion(es), { token }));
    expect(revoked.status, revoked.body).toBe(200);
    const after = await post('/introspect', withAssertion(await assertion(es), { token }));
    expect(json(after)).toEqual({ active: false });
    // an assertion for /introspect is not one for /revoke
    const misdirected = await post(
      '/revoke',
      withAssertion(await assertion(es, { aud: `${ISSUER}/introspect` }), { token }),
    );
    expectError(misdirected, 'invalid_client');
  });
});

describe('private_key_jwt and the credential guard', () => {
  it('counts refused assertions per IP, and then refuses a good one with 429', async () => {
    const guard = createCredentialGuard({ limit: 3, windowMs: 60_000 });
    const clients = new MemoryClientStore([
      await defineClient({
        clientId: 'key-client',
        jwks: { keys: [es.jwk] },
        grantTypes: ['client_credentials'],
        redirectUris: [],
        scopes: ['read:messages'],
      }),
    ]);
    const guarded = (await startOAuthServer({ clients, guard })).server;
    const send = async (value: string) =>
      request(guarded, '/token', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          ...withAssertion(value),
        }).toString(),
      });
    for (let i = 0; i < 3; i++) expect((await send(await assertion(stranger))).status).toBe(401);
    const spent = await send(await assertion(es));
    expect(spent.status).toBe(429);
    expect(json(spent)).toMatchObject({ error: 'temporarily_unavailable' });
  });
});

describe('defineClient with keys', () => {
  const base = {
    clientId: 'k',
    grantTypes: ['client_credentials' as const],
    redirectUris: [],
    scopes: ['read:messages'],
  };
  it.each([
    ['a private key', () => ({ jwks: { keys: [{ ...es.jwk, d: 'secret' }] } })],
    ['a symmetric key', () => ({ jwks: { keys: [{ kty: 'oct', k: 'c2VjcmV0' }] } })],
    ['an empty set', () => ({ jwks: { keys: [] } })],
    ['keys and a secret', () => ({ jwks: { keys: [es.jwk] }, secret: 'a-long-secret' })],
    [
      'jwks and a jwks_uri',
      () => ({ jwks: { keys: [es.jwk] }, jwksUri: 'https://x.example/jwks' }),
    ],
    ['a jwks_uri that is not http(s)', () => ({ jwksUri: 'file:///etc/passwd' })],
  ])('refuses %s', async (_name, extra) => {
    await expect(defineClient({ ...base, ...extra() })).rejects.toThrow(/defineClient/);
  });
});
