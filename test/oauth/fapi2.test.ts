// The FAPI 2.0 Security Profile switch (`fapi2`): for the clients it holds, PAR with a
// redirect_uri, private_key_jwt only (PS256/ES256/EdDSA, aud the issuer alone), DPoP-bound
// tokens only (no RS256 proofs), no refresh-token rotation; other clients unchanged; and the
// server refuses to start with what the profile forbids.
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSessions } from '../../src/auth/session/session.js';
import { defineClient } from '../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../src/oauth/clients/store.js';
import { createAuthorizationServer } from '../../src/oauth/server.js';
import { createKeySet, type KeySet } from '../../src/oauth/tokens/key-set.js';
import { closeAll, json, type Reply, request } from '../helpers/http.js';
import {
  approveVia,
  assertionParams,
  authorizationQuery,
  authorizeWith,
  clientAssertion,
  dpopProof,
  type Key,
  log,
  newKey,
  post,
  requestUriOf,
  type Site,
  startSite,
  WEB,
} from './endpoints/par-fixtures.js';
import { pkce } from './token-fixtures.js';

let keys: KeySet;
let bankKey: Key;
let bankRsa: Key;
let dpopKey: Key;
let site: Site;

beforeAll(async () => {
  keys = await createKeySet({ algorithm: 'ES256' });
  bankKey = await newKey('ES256');
  bankRsa = await newKey('RS256');
  dpopKey = await newKey('ES256');
  const scopes = ['openid', 'offline_access', 'read:messages'];
  const bank = await defineClient({
    clientId: 'bank',
    jwks: { keys: [bankKey.jwk, bankRsa.jwk] },
    grantTypes: ['authorization_code', 'refresh_token'],
    redirectUris: [WEB],
    scopes,
  });
  const lax = await defineClient({
    clientId: 'lax-bank',
    secret: 'lax-bank-secret',
    grantTypes: ['authorization_code'],
    redirectUris: [WEB],
    scopes,
  });
  site = await startSite(keys, bankKey, { fapi2: ['bank', 'lax-bank'] }, [bank, lax]);
});
afterAll(async () => {
  await closeAll();
  expect(log.errors).toEqual([]);
});

const error = (reply: Reply) => ({ status: reply.status, error: json(reply).error });

/** bank pushes its request with an assertion (and a DPoP proof unless `dpop` is false). */
async function bankPush(extra: Record<string, string> = {}, challenge = pkce().challenge) {
  const form = new URLSearchParams(authorizationQuery('bank', extra, challenge));
  form.delete('client_id');
  for (const [name, value] of Object.entries(
    assertionParams(await clientAssertion(site, 'bank', bankKey)),
  )) {
    form.set(name, value);
  }
  for (const [name, value] of [...form]) if (value === '') form.delete(name);
  return post(site, '/par', form);
}

async function bankToken(params: Record<string, string>, proofKey: Key | null = dpopKey) {
  const form = new URLSearchParams({
    ...params,
    ...assertionParams(await clientAssertion(site, 'bank', bankKey)),
  });
  const headers = proofKey === null ? {} : { DPoP: await dpopProof(site, proofKey, '/token') };
  return post(site, '/token', form, headers);
}

/** A code for bank through PAR and the consent page, with its verifier. */
async function bankCode() {
  const { verifier, challenge } = pkce();
  const pushed = await bankPush({}, challenge);
  expect(pushed.status, pushed.body).toBe(201);
  const { code } = await approveVia(site, authorizeWith('bank', requestUriOf(pushed)));
  return { code: code!, verifier };
}

const codeParams = (code: string, verifier: string) => ({
  grant_type: 'authorization_code',
  code,
  redirect_uri: WEB,
  code_verifier: verifier,
});

describe('fapi2: the clients it holds', () => {
  it('runs the whole flow: PAR, consent, DPoP-bound tokens, refresh without rotation', async () => {
    const { code, verifier } = await bankCode();
    const issued = await bankToken(codeParams(code, verifier));
    expect(issued.status, issued.body).toBe(200);
    const body = json<{ token_type: string; access_token: string; refresh_token: string }>(issued);
    expect(body.token_type).toBe('DPoP');
    expect(decodeJwt(body.access_token).cnf).toEqual({ jkt: dpopKey.jkt });
    for (let i = 0; i < 2; i++) {
      const refreshed = await bankToken({
        grant_type: 'refresh_token',
        refresh_token: body.refresh_token,
      });
      expect(refreshed.status, refreshed.body).toBe(200);
      // the same refresh token stays in use: no successor
      expect(json(refreshed).refresh_token).toBeUndefined();
      expect(json(refreshed).token_type).toBe('DPoP');
    }
  });

  it('refuses an authorization request sent straight to /authorize', async () => {
    const direct = await request(site.app, `/authorize?${authorizationQuery('bank')}`, {
      headers: { Cookie: site.cookie },
    });
    expect(direct.status).toBe(303);
    expect(new URL(direct.headers.location!).searchParams.get('error')).toBe('invalid_request');
  });

  it('refuses a push without redirect_uri', async () => {
    expect(error(await bankPush({ redirect_uri: '' }))).toEqual({
      status: 400,
      error: 'invalid_request',
    });
  });

  it.each([
    [
      'aud the token endpoint’s URL',
      () => clientAssertion(site, 'bank', bankKey, { aud: `${site.app.url}/token` }),
    ],
    [
      'aud an array holding the issuer',
      () => clientAssertion(site, 'bank', bankKey, { aud: [site.app.url] }),
    ],
    ['signed with RS256', () => clientAssertion(site, 'bank', bankRsa)],
  ])('refuses a client assertion with %s', async (_name, make) => {
    const form = new URLSearchParams(authorizationQuery('bank'));
    form.delete('client_id');
    for (const [name, value] of Object.entries(assertionParams(await make())))
      form.set(name, value);
    expect(error(await post(site, '/par', form))).toEqual({ status: 401, error: 'invalid_client' });
  });

  it('refuses a client held to the profile that authenticates with a secret', async () => {
    const form = new URLSearchParams(authorizationQuery('lax-bank'));
    form.set('client_secret', 'lax-bank-secret');
    expect(error(await post(site, '/par', form))).toEqual({ status: 401, error: 'invalid_client' });
  });

  it('refuses a token request without a DPoP proof, or with an RS256 one', async () => {
    const { code, verifier } = await bankCode();
    expect(error(await bankToken(codeParams(code, verifier), null))).toEqual({
      status: 400,
      error: 'invalid_dpop_proof',
    });
    expect(error(await bankToken(codeParams(code, verifier), bankRsa))).toEqual({
      status: 400,
      error: 'invalid_dpop_proof',
    });
    // the refusals did not spend the code
    expect((await bankToken(codeParams(code, verifier))).status).toBe(200);
  });

  it('leaves the other clients as they were', async () => {
    const { code } = await approveVia(site, `/authorize?${authorizationQuery('web')}`);
    expect(code).toBeDefined();
  });
});

describe('fapi2: what the server must be able to do', () => {
  const base = async (keySet: KeySet, extra: Record<string, unknown> = {}) =>
    createAuthorizationServer({
      issuer: 'https://bank.example.test',
      clients: new MemoryClientStore([]),
      keys: keySet,
      users: { verify: () => undefined, get: () => undefined },
      sessions: createSessions({ allowedOrigins: ['https://bank.example.test'] }),
      ...extra,
    });

  it('refuses an RS256 key set, DPoP off, and a value that is not a list of ids', async () => {
    const rsa = await createKeySet();
    await expect(base(rsa, { fapi2: true })).rejects.toThrow(/ES256 or EdDSA/);
    await expect(base(keys, { fapi2: true, dpop: false })).rejects.toThrow(/needs DPoP/);
    await expect(base(keys, { fapi2: 'bank' })).rejects.toThrow(/list of client ids/);
    await expect(base(keys, { fapi2: true })).resolves.toBeDefined();
  });
});
