import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { OAuthContext } from '../../../src/oauth/context.js';
import { codes } from '../../../src/oauth/store/records.js';
import { hashToken } from '../../../src/oauth/tokens/issue.js';
import { closeAll, json, type Listening, request } from '../../helpers/http.js';
import {
  basic,
  expectError,
  expectTokenHeaders,
  expectTokens,
  ISSUER,
  pkce,
  plantCode,
  redeemWebCode,
  SPA_REDIRECT,
  startTokenServer,
  tokenRequest,
  verifyAccessToken,
  verifyIdToken,
  WEB_REDIRECT,
} from '../token-fixtures.js';

let ctx: OAuthContext;
let server: Listening;

beforeAll(async () => {
  ({ ctx, server } = await startTokenServer());
});

afterAll(closeAll);

const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };
const post = (body: string, headers: Record<string, string> = {}, path = '/token') =>
  request(server, path, { method: 'POST', headers: { ...FORM, ...headers }, body });

/** Exchanges a fresh code planted for `demo-web` with PKCE. */
async function exchange(overrides: Parameters<typeof plantCode>[1] = {}) {
  const { verifier, challenge } = pkce();
  const { code, record } = await plantCode(ctx, { codeChallenge: challenge, ...overrides });
  const reply = await tokenRequest(
    server,
    {
      grant_type: 'authorization_code',
      code,
      redirect_uri: record.redirectUri,
      code_verifier: verifier,
    },
    { client: record.clientId },
  );
  return { reply, code, verifier, record };
}

describe('token endpoint: request format and client authentication', () => {
  it('answers tokens at any path it is mounted on, with the RFC 6749 §5.1 headers', async () => {
    const reply = await tokenRequest(
      server,
      { grant_type: 'client_credentials' },
      { client: 'demo-service', path: '/oauth/token' },
    );
    expect(reply.status).toBe(200);
    expectTokenHeaders(reply);
  });

  it('accepts client_secret_basic with id and secret form-encoded as oauth4webapi sends them', async () => {
    const reply = await post('grant_type=client_credentials', {
      Authorization: basic('demo-service', 'demo-service-secret'),
    });
    expect(basic('demo-service', 'x')).toBe(
      `Basic ${Buffer.from('demo%2Dservice:x').toString('base64')}`,
    );
    expectTokens(reply);
  });

  it('accepts client_secret_post with a ;charset=UTF-8 body', async () => {
    const reply = await post(
      'grant_type=client_credentials&client_id=demo-service&client_secret=demo-service-secret',
      { 'Content-Type': 'application/x-www-form-urlencoded;charset=UTF-8' },
    );
    expectTokens(reply);
  });

  it('answers a body with a content coding by invalid_request 400 with Accept-Encoding: identity', async () => {
    const auth = { Authorization: basic('demo-service', 'demo-service-secret') };
    const form = 'grant_type=client_credentials';
    for (const [body, coding] of [
      [gzipSync(form), 'gzip'],
      [form, 'gzip'], // an uncoded form labelled gzip is not read as it is either
      [form, 'Deflate'],
    ] as const) {
      const reply = await request(server, '/token', {
        method: 'POST',
        headers: { ...FORM, ...auth, 'Content-Encoding': coding },
        body,
      });
      expectError(reply, 'invalid_request');
      expect(reply.headers['accept-encoding']).toBe('identity');
      expect(json(reply).error_description).toContain('Content-Encoding');
    }
    expectTokens(await post(form, { ...auth, 'Content-Encoding': 'Identity' }));
  });

  it('answers invalid_client 401 with a Basic challenge only when Basic was tried', async () => {
    const viaBasic = await post('grant_type=client_credentials', {
      Authorization: basic('demo-service', 'wrong-secret'),
    });
    expectError(viaBasic, 'invalid_client', 401);
    expect(viaBasic.headers['www-authenticate']).toMatch(/^Basic\b/);
    expect(viaBasic.headers['www-authenticate']).toContain('error="invalid_client"');

    const unknownViaBasic = await post('grant_type=client_credentials', {
      Authorization: basic('nobody', 'whatever-secret'),
    });
    expectError(unknownViaBasic, 'invalid_client', 401);
    expect(unknownViaBasic.headers['www-authenticate']).toContain('error="invalid_client"');

    for (const body of [
      'grant_type=client_credentials&client_id=demo-service&client_secret=wrong-secret',
      'grant_type=client_credentials&client_id=nobody&client_secret=whatever-secret',
      'grant_type=client_credentials&client_id=demo-service',
    ]) {
      const reply = await post(body);
      expectError(reply, 'invalid_client', 401);
      // a 401 always names a scheme (RFC 9110 §15.5.2): Basic, which this client may use
      expect(reply.headers['www-authenticate']).toBe('Basic realm="token", error="invalid_client"');
    }
  });

  it('refuses two authentication methods in one request and repeated parameters', async () => {
    expectError(
      await post(
        'grant_type=client_credentials&client_id=demo-service&client_secret=demo-service-secret',
        { Authorization: basic('demo-service', 'demo-service-secret') },
      ),
      'invalid_request',
    );
    expectError(
      await post('grant_type=client_credentials&scope=read:messages&scope=write:messages', {
        Authorization: basic('demo-service', 'demo-service-secret'),
      }),
      'invalid_request',
    );
    expectError(
      await post('grant_type=client_credentials&grant_type=client_credentials', {
        Authorization: basic('demo-service', 'demo-service-secret'),
      }),
      'invalid_request',
    );
  });

  it('requires grant_type, and refuses unknown grants and grants the client may not use', async () => {
    const auth = { Authorization: basic('demo-service', 'demo-service-secret') };
    expectError(await post('scope=read:messages', auth), 'invalid_request');
    expectError(await post('grant_type=', auth), 'invalid_request');
    expectError(
      await post('grant_type=password&username=alice&password=alice-password', auth),
      'unsupported_grant_type',
    );
    expectError(await post('grant_type=implicit', auth), 'unsupported_grant_type');
    expectError(await post('grant_type=__proto__', auth), 'unsupported_grant_type');
    expectError(
      await post(`grant_type=authorization_code&code=x&redirect_uri=${WEB_REDIRECT}`, auth),
      'unauthorized_client',
    );
    expectError(
      await tokenRequest(server, { grant_type: 'client_credentials' }, { client: 'demo-spa' }),
      'unauthorized_client',
    );
  });

  it('turns body problems (JSON, no type, other charset, too large) into invalid_request', async () => {
    const json415 = await request(server, '/token', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ grant_type: 'client_credentials', client_id: 'demo-service' }),
    });
    expectError(json415, 'invalid_request');
    const untyped = await request(server, '/token', {
      method: 'POST',
      body: 'grant_type=client_credentials',
    });
    expectError(untyped, 'invalid_request');
    expectError(
      await post('grant_type=client_credentials', {
        'Content-Type': 'application/x-www-form-urlencoded; charset=iso-8859-1',
      }),
      'invalid_request',
    );
    const large = await post(`grant_type=client_credentials&pad=${'a'.repeat(70 * 1024)}`);
    expectError(large, 'invalid_request');
    const notUtf8 = await request(server, '/token', {
      method: 'POST',
      headers: FORM,
      body: Buffer.from([0x67, 0x3d, 0xff, 0xfe]),
    });
    expectError(notUtf8, 'invalid_request');
  });

  it('answers a non-POST that reaches it with 405 and Allow: POST', async () => {
    const reply = await request(server, '/token?grant_type=client_credentials');
    expect(reply.status).toBe(405);
    expect(reply.headers.allow).toBe('POST');
    expect(json(reply).error).toBe('invalid_request');
    expectTokenHeaders(reply);
  });

  it('answers unexpected failures with server_error 500, logging no credentials', async () => {
    const errors = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const { verifier, challenge } = pkce();
      const { code } = await plantCode(ctx, { sub: 'explode', codeChallenge: challenge });
      const reply = await redeemWebCode(server, code, verifier);
      expectError(reply, 'server_error', 500);
      const lines = errors.mock.calls
        .map((call) => String(call[0]))
        .filter((line) => line.startsWith('[portico]'));
      expect(lines).toHaveLength(1);
      const logged = lines[0]!;
      expect(logged).toContain('oauth token.failed');
      expect(logged).toContain('the user database is down');
      for (const secret of [code, verifier, 'demo-web-secret'])
        expect(logged).not.toContain(secret);
    } finally {
      errors.mockRestore();
    }
  });
});

describe('authorization_code grant', () => {
  it('issues an RFC 9068 access token, a refresh token and an OpenID Connect ID token', async () => {
    const { reply, record } = await exchange();
    const body = expectTokens(reply);
    expect(Object.keys(body).sort()).toEqual(
      ['access_token', 'expires_in', 'id_token', 'refresh_token', 'scope', 'token_type'].sort(),
    );
    expect(body.expires_in).toBe(900);
    expect(body.scope).toBe('openid profile email offline_access read:messages');
    expect(body.refresh_token).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const access = await verifyAccessToken(ctx, body.access_token);
    expect(access).toMatchObject({
      iss: ISSUER,
      aud: ISSUER,
      sub: 'alice',
      client_id: 'demo-web',
      scope: 'openid profile email offline_access read:messages',
      name: 'Alice Example',
      role: 'admin',
      grant_id: record.grantId,
    });
    expect(typeof access.jti).toBe('string');
    expect(access.exp! - access.iat!).toBe(900);

    const id = await verifyIdToken(ctx, body.id_token!, 'demo-web');
    expect(id).toMatchObject({
      iss: ISSUER,
      sub: 'alice',
      aud: 'demo-web',
      nonce: record.nonce,
      auth_time: record.authTime,
      name: 'Alice Example',
      picture: 'https://example.test/alice.png',
      email: 'alice@example.com',
      email_verified: true,
    });
    expect(typeof id.exp).toBe('number');
    expect(typeof id.iat).toBe('number');
    expect(id.role).toBeUndefined();
  });

  it('releases ID token claims per scope, and no ID token without openid', async () => {
    const noEmail = expectTokens((await exchange({ scope: ['openid', 'profile'] })).reply);
    const id = await verifyIdToken(ctx, noEmail.id_token!, 'demo-web');
    expect(id.name).toBe('Alice Example');
    expect(id.email).toBeUndefined();
    expect(id.email_verified).toBeUndefined();

    const bare = expectTokens((await exchange({ scope: ['openid'], nonce: undefined })).reply);
    const bareId = await verifyIdToken(ctx, bare.id_token!, 'demo-web');
    expect(bareId.name).toBeUndefined();
    expect(bareId.email).toBeUndefined();
    expect(bareId.nonce).toBeUndefined();

    const apiOnly = expectTokens((await exchange({ scope: ['read:messages'] })).reply);
    expect(apiOnly.id_token).toBeUndefined();
    expect(apiOnly.scope).toBe('read:messages');
  });

  it('issues no refresh token to a client without the refresh_token grant', async () => {
    const body = expectTokens((await exchange({ clientId: 'no-refresh-web' })).reply);
    expect(body.refresh_token).toBeUndefined();
    expect(body.id_token).toBeDefined();
  });

  it('serves a public client authenticating with none and PKCE', async () => {
    const { reply } = await exchange({ clientId: 'demo-spa', redirectUri: SPA_REDIRECT });
    const body = expectTokens(reply);
    expect(body.refresh_token).toBeDefined();
    expect((await verifyAccessToken(ctx, body.access_token)).client_id).toBe('demo-spa');
  });

  it('refuses a second use and revokes the tokens issued from the code (RFC 6749 §4.1.2)', async () => {
    const first = await exchange();
    const tokens = expectTokens(first.reply);
    const replay = await tokenRequest(
      server,
      {
        grant_type: 'authorization_code',
        code: first.code,
        redirect_uri: WEB_REDIRECT,
        code_verifier: first.verifier,
      },
      { client: 'demo-web' },
    );
    expectError(replay, 'invalid_grant');
    const grantId = (await verifyAccessToken(ctx, tokens.access_token)).grant_id as string;
    expect(await ctx.store.isGrantRevoked(grantId)).toBe(true);
    expectError(
      await tokenRequest(
        server,
        { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! },
        { client: 'demo-web' },
      ),
      'invalid_grant',
    );
  });

  it('gives exactly one of ten concurrent redemptions of one code its tokens', async () => {
    const { verifier, challenge } = pkce();
    const { code } = await plantCode(ctx, { codeChallenge: challenge });
    const replies = await Promise.all(
      Array.from({ length: 10 }, () => redeemWebCode(server, code, verifier)),
    );
    expect(replies.filter((r) => r.status === 200)).toHaveLength(1);
    for (const reply of replies.filter((r) => r.status !== 200))
      expectError(reply, 'invalid_grant');
  });

  it('refuses unknown, expired and missing codes, and a missing redirect_uri', async () => {
    const exchangeCode = (params: Record<string, string>) =>
      tokenRequest(server, { grant_type: 'authorization_code', ...params }, { client: 'demo-web' });
    expectError(
      await exchangeCode({ code: 'not-a-code', redirect_uri: WEB_REDIRECT }),
      'invalid_grant',
    );
    const { code: expired } = await plantCode(ctx, {}, 1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expectError(await exchangeCode({ code: expired, redirect_uri: WEB_REDIRECT }), 'invalid_grant');
    expectError(await exchangeCode({ redirect_uri: WEB_REDIRECT }), 'invalid_request');
    const { verifier, challenge } = pkce();
    const { code } = await plantCode(ctx, { codeChallenge: challenge });
    expectError(await exchangeCode({ code, code_verifier: verifier }), 'invalid_request');
    // the refusal did not spend the code
    expectTokens(await exchangeCode({ code, redirect_uri: WEB_REDIRECT, code_verifier: verifier }));
  });

  it('lets the exchange omit redirect_uri when the authorization request did (RFC 6749 §4.1.3)', async () => {
    const { verifier, challenge } = pkce();
    const exchangeCode = (params: Record<string, string>) =>
      tokenRequest(
        server,
        { grant_type: 'authorization_code', code_verifier: verifier, ...params },
        { client: 'demo-web' },
      );
    const { code } = await plantCode(ctx, { redirectUriOmitted: true, codeChallenge: challenge });
    expect((await exchangeCode({ code })).status).toBe(200);
    const { code: other } = await plantCode(ctx, {
      redirectUriOmitted: true,
      codeChallenge: challenge,
    });
    expectError(
      await exchangeCode({ code: other, redirect_uri: 'http://127.0.0.1:8080/other' }),
      'invalid_grant',
    );
  });

  it('refuses a redirect_uri that is not exactly the authorization request’s', async () => {
    for (const redirect of [
      `${WEB_REDIRECT}/`,
      `${WEB_REDIRECT}?x=1`,
      WEB_REDIRECT.toUpperCase(),
      'http://localhost:8080/callback',
    ]) {
      const { verifier, challenge } = pkce();
      const { code } = await plantCode(ctx, { codeChallenge: challenge });
      const reply = await tokenRequest(
        server,
        {
          grant_type: 'authorization_code',
          code,
          redirect_uri: redirect,
          code_verifier: verifier,
        },
        { client: 'demo-web' },
      );
      expectError(reply, 'invalid_grant');
    }
  });

  it('refuses a code issued to another client without spending it, nor letting that client revoke the grant', async () => {
    const { verifier, challenge } = pkce();
    const { code } = await plantCode(ctx, { codeChallenge: challenge });
    const params = {
      grant_type: 'authorization_code',
      code,
      redirect_uri: WEB_REDIRECT,
      code_verifier: verifier,
    };
    expectError(await tokenRequest(server, params, { client: 'other-web' }), 'invalid_grant');
    // the attempt did not burn the code: its rightful client redeems it
    expect(await codes(ctx.store).find(hashToken(code))).toMatchObject({ state: 'fresh' });
    expectTokens(await tokenRequest(server, params, { client: 'demo-web' }));

    const redeemed = await exchange();
    const tokens = expectTokens(redeemed.reply);
    const foreign = await tokenRequest(
      server,
      {
        grant_type: 'authorization_code',
        code: redeemed.code,
        redirect_uri: WEB_REDIRECT,
        code_verifier: redeemed.verifier,
      },
      { client: 'other-web' },
    );
    expectError(foreign, 'invalid_grant');
    expect(await ctx.store.isGrantRevoked(redeemed.record.grantId)).toBe(false);
    expectTokens(
      await tokenRequest(
        server,
        { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! },
        { client: 'demo-web' },
      ),
    );
  });

  describe('PKCE (RFC 7636, S256 only)', () => {
    const redeem = (code: string, client: string, extra: Record<string, string> = {}) =>
      tokenRequest(
        server,
        {
          grant_type: 'authorization_code',
          code,
          redirect_uri: client === 'demo-spa' ? SPA_REDIRECT : WEB_REDIRECT,
          ...extra,
        },
        { client },
      );

    it('requires the verifier when the code has a challenge', async () => {
      const { challenge } = pkce();
      const { code } = await plantCode(ctx, { codeChallenge: challenge });
      expectError(await redeem(code, 'demo-web'), 'invalid_grant');
    });

    it('refuses a verifier that does not match', async () => {
      const { challenge } = pkce();
      const { code } = await plantCode(ctx, { codeChallenge: challenge });
      expectError(
        await redeem(code, 'demo-web', { code_verifier: pkce().verifier }),
        'invalid_grant',
      );
    });

    it('refuses the challenge itself as verifier (plain is not supported)', async () => {
      const { challenge } = pkce();
      const { code } = await plantCode(ctx, { codeChallenge: challenge });
      expectError(await redeem(code, 'demo-web', { code_verifier: challenge }), 'invalid_grant');
    });

    it('refuses a malformed verifier as invalid_request', async () => {
      const { challenge } = pkce();
      for (const verifier of [
        'short',
        'a'.repeat(129),
        `${'a'.repeat(43)}+`,
        `${'a'.repeat(43)} `,
      ]) {
        const { code } = await plantCode(ctx, { codeChallenge: challenge });
        expectError(await redeem(code, 'demo-web', { code_verifier: verifier }), 'invalid_request');
      }
    });

    it('refuses a verifier for a code that had no challenge (downgrade)', async () => {
      const { code } = await plantCode(ctx);
      expectError(
        await redeem(code, 'demo-web', { code_verifier: pkce().verifier }),
        'invalid_grant',
      );
    });

    it('refuses a code issued without a challenge, to confidential and public clients alike (RFC 9700 §2.1.1)', async () => {
      const { code } = await plantCode(ctx);
      const refused = expectError(await redeem(code, 'demo-web'), 'invalid_grant');
      expect(refused.error_description).toMatch(/PKCE/);
      const { code: spaCode } = await plantCode(ctx, {
        clientId: 'demo-spa',
        redirectUri: SPA_REDIRECT,
      });
      expectError(await redeem(spaCode, 'demo-spa'), 'invalid_grant');
    });

    it('spends no code on a wrong verifier or redirect_uri: the right request still works', async () => {
      const { verifier, challenge } = pkce();
      const { code } = await plantCode(ctx, { codeChallenge: challenge });
      expectError(
        await redeem(code, 'demo-web', { code_verifier: pkce().verifier }),
        'invalid_grant',
      );
      expectError(await redeem(code, 'demo-web'), 'invalid_grant');
      expectError(
        await tokenRequest(
          server,
          {
            grant_type: 'authorization_code',
            code,
            redirect_uri: `${WEB_REDIRECT}/evil`,
            code_verifier: verifier,
          },
          { client: 'demo-web' },
        ),
        'invalid_grant',
      );
      expect(await codes(ctx.store).find(hashToken(code))).toMatchObject({ state: 'fresh' });
      const tokens = expectTokens(await redeem(code, 'demo-web', { code_verifier: verifier }));
      // nothing of the refused attempts counted as a replay
      const grantId = (await verifyAccessToken(ctx, tokens.access_token)).grant_id as string;
      expect(await ctx.store.isGrantRevoked(grantId)).toBe(false);
    });

    it('matches the RFC 7636 appendix B example', async () => {
      const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
      const { code } = await plantCode(ctx, {
        clientId: 'demo-spa',
        redirectUri: SPA_REDIRECT,
        codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      });
      expectTokens(await redeem(code, 'demo-spa', { code_verifier: verifier }));
    });
  });
});

describe('client_credentials grant', () => {
  const cc = (client: string, extra: Record<string, string> = {}) =>
    tokenRequest(server, { grant_type: 'client_credentials', ...extra }, { client });

  it('issues an access token whose sub is the client id, without refresh or ID token', async () => {
    const body = expectTokens(await cc('demo-service'));
    expect(Object.keys(body).sort()).toEqual(
      ['access_token', 'expires_in', 'scope', 'token_type'].sort(),
    );
    expect(body.scope).toBe('read:messages write:messages');
    const access = await verifyAccessToken(ctx, body.access_token);
    expect(access).toMatchObject({
      sub: 'demo-service',
      client_id: 'demo-service',
      scope: 'read:messages write:messages',
    });
    expect(access.exp! - access.iat!).toBe(900);
    expect(access.grant_id).toBeUndefined();
  });

  it('grants a requested scope within the client’s scopes, and refuses one beyond', async () => {
    expect(expectTokens(await cc('demo-service', { scope: 'read:messages' })).scope).toBe(
      'read:messages',
    );
    expectError(await cc('demo-service', { scope: 'read:messages admin' }), 'invalid_scope');
    expectError(await cc('demo-service', { scope: 'openid' }), 'invalid_scope');
  });

  it('grants the client’s default scopes when none is requested', async () => {
    expect(expectTokens(await cc('reader-service')).scope).toBe('read:messages');
    expect(expectTokens(await cc('reader-service', { scope: 'write:messages' })).scope).toBe(
      'write:messages',
    );
  });

  it('refuses a public client, whether posing with a secret or not', async () => {
    const posing = await post(
      'grant_type=client_credentials&client_id=odd-public&client_secret=made-up-secret',
    );
    expectError(posing, 'invalid_client', 401);
    expectError(await cc('odd-public'), 'unauthorized_client');
    expectError(await cc('demo-spa'), 'unauthorized_client');
  });
});
