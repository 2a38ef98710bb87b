// Token exchange (RFC 8693) over a real server, driven by openid-client's generic grant
// request: delegation (`act`, nested, `may_act`), the target and scope, expiry and revocation
// following the subject token, DPoP, ID tokens as subjects, the policy hook and every refusal.
import { randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, type JWTPayload, SignJWT } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  defaultGrants,
  defineClient,
  TOKEN_EXCHANGE_GRANT,
  type TokenExchange,
  tokenExchangeGrant,
} from '../../../src/oauth/index.js';
import { createOwnTokenVerifier, isAccessTokenRevoked } from '../../../src/oauth/tokens/verify.js';
import { closeAll } from '../../helpers/http.js';
import { type RunningAuth, startAuth, testKeys, USERS } from './fixtures.js';

const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
const ID_TOKEN = 'urn:ietf:params:oauth:token-type:id_token';

let running: RunningAuth;
let mcp: string;
const configs: Record<string, client.Configuration> = {};
const policy: TokenExchange[] = [];

const SECRETS: Record<string, string | undefined> = {
  web: 'web-secret-1',
  svc: 'svc-secret-1',
  unlisted: 'unlisted-secret',
  pub: undefined,
};

beforeAll(async () => {
  const clients = await Promise.all([
    defineClient({
      clientId: 'web',
      secret: 'web-secret-1',
      grantTypes: ['authorization_code', 'refresh_token', TOKEN_EXCHANGE_GRANT],
      redirectUris: ['http://127.0.0.1:8080/cb'],
      scopes: ['openid', 'profile', 'read:all', 'write:all'],
    }),
    defineClient({
      clientId: 'svc',
      secret: 'svc-secret-1',
      grantTypes: ['client_credentials', TOKEN_EXCHANGE_GRANT],
      redirectUris: [],
      scopes: ['read:all', 'write:all', 'send:mail'],
    }),
    defineClient({
      clientId: 'unlisted',
      secret: 'unlisted-secret',
      grantTypes: [TOKEN_EXCHANGE_GRANT],
      redirectUris: [],
      scopes: ['read:all'],
    }),
    defineClient({
      clientId: 'pub',
      grantTypes: ['authorization_code', TOKEN_EXCHANGE_GRANT],
      redirectUris: ['http://127.0.0.1:8080/cb'],
      scopes: ['read:all'],
    }),
  ]);
  running = await startAuth(clients, (url) => {
    mcp = `${url}/mcp`;
    return {
      grants: [
        ...defaultGrants,
        tokenExchangeGrant({
          targets: [url, mcp, 'mail-service'],
          clients: ['svc', 'pub', 'web'],
          idTokens: true,
          allow(exchange) {
            policy.push(exchange);
            // admins' tokens never reach the mail service
            return !(exchange.target === 'mail-service' && exchange.subject.role === 'admin');
          },
        }),
      ],
    };
  });
  for (const [id, secret] of Object.entries(SECRETS)) {
    configs[id] = await client.discovery(
      new URL(running.url),
      id,
      undefined,
      secret === undefined ? client.None() : client.ClientSecretBasic(secret),
      { execute: [client.allowInsecureRequests] },
    );
  }
});

afterAll(closeAll);

const ctx = () => running.auth.context;

/** A user's access token of client `web`, as its code grant would issue it. */
async function userToken(
  user = 'alice',
  more: { scope?: string[]; grantId?: string; jkt?: string; expiresAt?: number } = {},
) {
  const grantId = more.grantId ?? randomUUID();
  const { token } = await ctx().tokens.accessToken({
    sub: user,
    clientId: 'web',
    scope: more.scope ?? ['openid', 'read:all', 'write:all'],
    grantId,
    user: { name: USERS[user]!.name, role: USERS[user]!.role },
    ...(more.jkt !== undefined && { jkt: more.jkt }),
    ...(more.expiresAt !== undefined && { expiresAt: more.expiresAt }),
  });
  return { token, grantId };
}

/** An access token signed by this server's key with whatever claims a test needs. */
async function signed(claims: JWTPayload, expiresIn = 300) {
  const key = (await testKeys()).signingKey();
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ client_id: 'web', scope: 'read:all', jti: randomUUID(), ...claims })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt' })
    .setIssuer(running.url)
    .setAudience(running.url)
    .setSubject('alice')
    .setIssuedAt(now - 10)
    .setExpirationTime(now + expiresIn)
    .sign(key.privateKey);
}

const exchange = (
  subjectToken: string,
  more: Record<string, string> = {},
  as = 'svc',
  options?: client.DPoPOptions,
) =>
  client.genericGrantRequest(
    configs[as]!,
    TOKEN_EXCHANGE_GRANT,
    { subject_token: subjectToken, subject_token_type: ACCESS_TOKEN, ...more },
    options,
  );

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => 'granted',
    (e: { error?: string; status?: number }) => `${e.status} ${e.error}`,
  );

async function claimsOf(token: string): Promise<JWTPayload> {
  const verifier = createOwnTokenVerifier(ctx(), [running.url, mcp, 'mail-service']);
  return (await verifier.verify(token)).payload;
}

describe('token exchange (RFC 8693)', () => {
  it('delegates: sub the subject, act the client, the subject grant, no refresh token', async () => {
    const { token, grantId } = await userToken('alice');
    const tokens = await exchange(token, { scope: 'read:all' });
    expect(tokens).toMatchObject({
      issued_token_type: ACCESS_TOKEN,
      token_type: 'bearer',
      scope: 'read:all',
    });
    expect(tokens.refresh_token).toBeUndefined();
    expect(tokens.id_token).toBeUndefined();
    const claims = await claimsOf(tokens.access_token);
    expect(claims).toMatchObject({
      sub: 'alice',
      client_id: 'svc',
      aud: running.url,
      scope: 'read:all',
      act: { sub: 'svc' },
      grant_id: grantId,
      name: 'Alice Example',
      role: 'admin',
    });
    expect(policy.at(-1)).toMatchObject({
      subjectTokenType: ACCESS_TOKEN,
      target: running.url,
      scope: ['read:all'],
      actor: undefined,
    });
    expect(policy.at(-1)!.client.clientId).toBe('svc');
  });

  it("keeps the scope within both the subject token's and the client's", async () => {
    const { token } = await userToken('bob', { scope: ['openid', 'read:all', 'write:all'] });
    expect((await exchange(token)).scope).toBe('read:all write:all');
    expect(await refusal(exchange(token, { scope: 'read:all send:mail' }))).toBe(
      '400 invalid_scope',
    );
    expect(await refusal(exchange(token, { scope: 'openid' }))).toBe('400 invalid_scope');
    const none = await userToken('bob', { scope: ['openid', 'profile'] });
    expect(await refusal(exchange(none.token))).toBe('400 invalid_scope');
  });

  it('mints for the target asked for, by resource or audience, among the targets only', async () => {
    const { token } = await userToken('bob');
    const forMcp = await exchange(token, { resource: mcp });
    expect((await claimsOf(forMcp.access_token)).aud).toBe(mcp);
    const byName = await exchange(token, { audience: 'mail-service' });
    expect((await claimsOf(byName.access_token)).aud).toBe('mail-service');
    expect(await refusal(exchange(token, { resource: mcp, audience: mcp }))).toBe('granted');
    for (const target of <Record<string, string>[]>[
      { resource: 'https://elsewhere.example/' },
      { audience: 'elsewhere' },
      { resource: `${mcp}#frag` },
      { resource: 'mail-service' },
      { resource: mcp, audience: 'mail-service' },
    ]) {
      expect(await refusal(exchange(token, target)), JSON.stringify(target)).toBe(
        '400 invalid_target',
      );
    }
  });

  it('ends no later than the subject token', async () => {
    const expiresAt = Math.floor(Date.now() / 1000) + 30;
    const { token } = await userToken('bob', { expiresAt });
    const tokens = await exchange(token);
    expect(tokens.expires_in).toBeLessThanOrEqual(30);
    expect((await claimsOf(tokens.access_token)).exp).toBeLessThanOrEqual(expiresAt);
    const long = await exchange((await userToken('bob')).token);
    expect(long.expires_in).toBeGreaterThan(800);
  });

  it('nests the act of a token that was itself exchanged, whatever target it was for', async () => {
    const { token } = await userToken('bob');
    const first = await exchange(token, { resource: mcp }, 'web');
    expect((await claimsOf(first.access_token)).act).toEqual({ sub: 'web' });
    const second = await exchange(first.access_token);
    expect((await claimsOf(second.access_token)).act).toEqual({ sub: 'svc', act: { sub: 'web' } });
    const malformed = await signed({ act: 'web' });
    expect(await refusal(exchange(malformed))).toBe('400 invalid_grant');
  });

  it('honours may_act: only the party it names may act', async () => {
    expect(await refusal(exchange(await signed({ may_act: { sub: 'svc' } })))).toBe('granted');
    expect(
      await refusal(exchange(await signed({ may_act: { sub: 'svc', client_id: 'svc' } }))),
    ).toBe('granted');
    expect(await refusal(exchange(await signed({ may_act: { sub: 'web' } })))).toBe(
      '400 invalid_grant',
    );
    expect(
      await refusal(exchange(await signed({ may_act: { sub: 'svc', client_id: 'web' } }))),
    ).toBe('400 invalid_grant');
    expect(await refusal(exchange(await signed({ may_act: 'svc' })))).toBe('400 invalid_grant');
  });

  it('names the actor of an actor token issued to the asking client', async () => {
    const { token } = await userToken('bob');
    const own = await client.clientCredentialsGrant(configs.svc!, { scope: 'read:all' });
    const acted = await exchange(token, {
      actor_token: own.access_token,
      actor_token_type: ACCESS_TOKEN,
    });
    expect((await claimsOf(acted.access_token)).act).toEqual({ sub: 'svc' });
    expect(policy.at(-1)!.actor).toMatchObject({ sub: 'svc', client_id: 'svc' });
    // a token of another client is not the asking client's to present as its own
    const others = await userToken('alice');
    expect(
      await refusal(exchange(token, { actor_token: others.token, actor_token_type: ACCESS_TOKEN })),
    ).toBe('400 invalid_grant');
    expect(
      await refusal(exchange(token, { actor_token: 'forged', actor_token_type: ACCESS_TOKEN })),
    ).toBe('400 invalid_grant');
    expect(await refusal(exchange(token, { actor_token: own.access_token }))).toBe(
      '400 invalid_request',
    );
    expect(await refusal(exchange(token, { actor_token_type: ACCESS_TOKEN }))).toBe(
      '400 invalid_request',
    );
  });

  it("is refused once the subject token's grant is revoked, and so is what it gave", async () => {
    const { token } = await userToken('alice');
    const forApi = await exchange(token);
    const forMcp = await exchange(token, { resource: mcp });
    expect(await client.tokenIntrospection(configs.svc!, forApi.access_token)).toMatchObject({
      active: true,
    });
    await client.tokenRevocation(configs.web!, token);
    expect(await refusal(exchange(token))).toBe('400 invalid_grant');
    expect(await client.tokenIntrospection(configs.svc!, forApi.access_token)).toMatchObject({
      active: false,
    });
    // this server's own verifier sees the /mcp token revoked too
    expect(await isAccessTokenRevoked(ctx(), await claimsOf(forMcp.access_token))).toBe(true);
  });

  it("is revoked alone by its acting client: the user's grant with the other client lives on", async () => {
    const { token } = await userToken('alice');
    const delegated = await exchange(token);
    const claims = await claimsOf(delegated.access_token);
    await client.tokenRevocation(configs.svc!, delegated.access_token);
    expect(await client.tokenIntrospection(configs.svc!, delegated.access_token)).toMatchObject({
      active: false,
    });
    expect(await isAccessTokenRevoked(ctx(), claims)).toBe(true);
    // the subject token, and the consent behind it, are untouched
    expect(await client.tokenIntrospection(configs.web!, token)).toMatchObject({ active: true });
    expect((await exchange(token)).access_token).toBeTypeOf('string');
  });

  it('links a token without a grant (client credentials) by its jti', async () => {
    const own = await client.clientCredentialsGrant(configs.svc!, { scope: 'read:all write:all' });
    const tokens = await exchange(own.access_token, { scope: 'read:all' });
    const claims = await claimsOf(tokens.access_token);
    expect(claims).toMatchObject({ sub: 'svc', act: { sub: 'svc' } });
    await client.tokenRevocation(configs.svc!, own.access_token);
    expect(await isAccessTokenRevoked(ctx(), claims)).toBe(true);
  });

  it('refuses subject tokens that are not live tokens of this server', async () => {
    expect(await refusal(exchange(await signed({}, -60)))).toBe('400 invalid_grant');
    expect(await refusal(exchange('a.b.c'))).toBe('400 invalid_grant');
    const idToken = await ctx().tokens.idToken({
      clientId: 'svc',
      user: USERS.alice!,
      scope: ['openid'],
    });
    // an ID token presented as an access token
    expect(await refusal(exchange(idToken))).toBe('400 invalid_grant');
    const foreign = await signed({});
    const [head, body] = foreign.split('.');
    expect(await refusal(exchange(`${head}.${body}.${'A'.repeat(342)}`))).toBe('400 invalid_grant');
  });

  it('takes this server’s ID tokens issued to the asking client when idTokens is on', async () => {
    const idToken = await ctx().tokens.idToken({
      clientId: 'svc',
      user: USERS.bob!,
      scope: ['openid'],
    });
    const tokens = await exchange(idToken, { subject_token_type: ID_TOKEN, scope: 'send:mail' });
    expect(await claimsOf(tokens.access_token)).toMatchObject({ sub: 'bob', scope: 'send:mail' });
    const ofWeb = await ctx().tokens.idToken({
      clientId: 'web',
      user: USERS.bob!,
      scope: ['openid'],
    });
    expect(await refusal(exchange(ofWeb, { subject_token_type: ID_TOKEN }))).toBe(
      '400 invalid_grant',
    );
    // an access token presented as an ID token
    const { token } = await userToken('bob');
    expect(await refusal(exchange(token, { subject_token_type: ID_TOKEN }))).toBe(
      '400 invalid_grant',
    );
  });

  it('binds the new token to the DPoP key of the request, and a bound subject to its key', async () => {
    const keyPair = await client.randomDPoPKeyPair('ES256');
    const jkt = await calculateJwkThumbprint(await exportJWK(keyPair.publicKey));
    const DPoP = client.getDPoPHandle(configs.svc!, keyPair);
    const { token } = await userToken('bob');
    const bound = await exchange(token, {}, 'svc', { DPoP });
    expect(bound.token_type).toBe('dpop');
    expect((await claimsOf(bound.access_token)).cnf).toEqual({ jkt });
    const boundSubject = await userToken('bob', { jkt });
    expect(await refusal(exchange(boundSubject.token))).toBe('400 invalid_grant');
    const other = client.getDPoPHandle(configs.svc!, await client.randomDPoPKeyPair('ES256'));
    expect(await refusal(exchange(boundSubject.token, {}, 'svc', { DPoP: other }))).toBe(
      '400 invalid_grant',
    );
    expect(await refusal(exchange(boundSubject.token, {}, 'svc', { DPoP }))).toBe('granted');
  });

  it('asks the policy, and refuses clients that may not exchange', async () => {
    const alice = await userToken('alice');
    expect(await refusal(exchange(alice.token, { audience: 'mail-service' }))).toBe(
      '400 unauthorized_client',
    );
    const bob = await userToken('bob');
    expect(await refusal(exchange(bob.token, { audience: 'mail-service' }))).toBe('granted');
    expect(await refusal(exchange(bob.token, {}, 'unlisted'))).toBe('400 unauthorized_client');
    expect(await refusal(exchange(bob.token, {}, 'pub'))).toBe('400 unauthorized_client');
  });

  it('refuses missing and unsupported token types (invalid_request)', async () => {
    const { token } = await userToken('bob');
    for (const params of <Record<string, string>[]>[
      { subject_token_type: 'urn:ietf:params:oauth:token-type:saml2' },
      { subject_token_type: '' },
      { requested_token_type: 'urn:ietf:params:oauth:token-type:refresh_token' },
      { requested_token_type: 'urn:ietf:params:oauth:token-type:id_token' },
    ]) {
      expect(await refusal(exchange(token, params)), JSON.stringify(params)).toBe(
        '400 invalid_request',
      );
    }
    expect(await refusal(exchange(token, { requested_token_type: ACCESS_TOKEN }))).toBe('granted');
    const bare = client.genericGrantRequest(configs.svc!, TOKEN_EXCHANGE_GRANT, {
      subject_token: token,
    });
    expect(await refusal(bare)).toBe('400 invalid_request');
    const none = client.genericGrantRequest(configs.svc!, TOKEN_EXCHANGE_GRANT, {
      subject_token_type: ACCESS_TOKEN,
    });
    expect(await refusal(none)).toBe('400 invalid_request');
  });

  it('checks its options once, at construction', () => {
    expect(() => tokenExchangeGrant({ target: [] } as never)).toThrow(
      'tokenExchangeGrant(): unknown option `target`. Did you mean `targets`?',
    );
    expect(() => tokenExchangeGrant({ targets: [''] })).toThrow(
      'tokenExchangeGrant(): `targets` must be a list of non-empty strings',
    );
    expect(() => tokenExchangeGrant({ clients: 'svc' as never })).toThrow(TypeError);
    expect(() => tokenExchangeGrant({ idTokens: 'yes' as never })).toThrow(TypeError);
    expect(() => tokenExchangeGrant({ allow: true as never })).toThrow(TypeError);
    expect(tokenExchangeGrant()).toMatchObject({
      type: TOKEN_EXCHANGE_GRANT,
      parameters: expect.arrayContaining(['subject_token', 'actor_token', 'resource', 'audience']),
    });
  });
});
