// The attacks of RFC 9700 on the authorization endpoint and the code and refresh grants,
// table by table (setup in hostile-fixtures.ts): open redirects through redirect_uri
// spellings, authorization code injection, PKCE downgrade, code and refresh token replay,
// parameter pollution, oversized state and other response types. Client authentication,
// grant types, methods and bodies of the token endpoint are in hostile-token-requests.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeChallengeS256 } from '../../src/oauth/protocol/pkce.js';
import { hiddenInputs } from '../helpers/browser.js';
import { closeAll, type Reply, request } from '../helpers/http.js';
import {
  app,
  codeFor,
  cookie,
  expectErrorPage,
  expectRedirectError,
  FORM,
  failures,
  IDN,
  isActive,
  LOOPBACK,
  post,
  query,
  redeem,
  SECRETS,
  SPA,
  startHostileServer,
  token,
  WEB,
} from './hostile-fixtures.js';
import { basic, expectError, expectTokens, pkce } from './token-fixtures.js';

beforeAll(startHostileServer);
afterAll(async () => {
  await closeAll();
  expect(failures).toEqual([]);
});

describe('open redirects through redirect_uri (RFC 9700 §4.1): a 400 page, never a redirect', () => {
  const tries: [string, string][] = [
    ['a trailing slash', `${WEB}/`],
    ['the host in upper case', 'https://APP.example.com/cb'],
    ['the path in upper case', 'https://app.example.com/CB'],
    ['the scheme in upper case', 'HTTPS://app.example.com/cb'],
    ['%2F for the slash', 'https://app.example.com%2Fcb'],
    ['%2F in the scheme', 'https:%2F%2Fapp.example.com/cb'],
    ['an escaped letter', 'https://app.example.com/%63b'],
    ['a dot segment', 'https://app.example.com/x/../cb'],
    ['an encoded dot segment', 'https://app.example.com/x/%2E%2E/cb'],
    ['userinfo before the host', 'https://evil.example@app.example.com/cb'],
    ['the host as userinfo', 'https://app.example.com@evil.example/cb'],
    ['a backslash', 'https://app.example.com\\@evil.example/cb'],
    ['a fragment', `${WEB}#x`],
    ['an encoded fragment', `${WEB}%23x`],
    ['an added query', `${WEB}?next=https://evil.example`],
    ['an empty query', `${WEB}?`],
    ['a suffix on the host', 'https://app.example.com.evil.example/cb'],
    ['a trailing dot on the host', 'https://app.example.com./cb'],
    ['a scheme-relative URI', '//app.example.com/cb'],
    ['the IDN of a punycode registration', 'https://bücher.example/cb'],
    ['the punycode in upper case', 'https://XN--BCHER-KVA.example/cb'],
    ['localhost for 127.0.0.1', 'http://localhost:8080/callback'],
    ['::1 for 127.0.0.1', 'http://[::1]:8080/callback'],
    ['127.0.0.1 as one number', 'http://2130706433:8080/callback'],
    ['another port', 'http://127.0.0.1:8081/callback'],
    ['no port', 'http://127.0.0.1/callback'],
    ['a zero-padded port', 'http://127.0.0.1:08080/callback'],
    ['https for http', 'https://127.0.0.1:8080/callback'],
    ['a trailing newline', `${WEB}\n`],
    ['a trailing NUL', `${WEB}\u0000`],
    ['a javascript: URI', 'javascript:alert(1)//https://app.example.com/cb'],
    ['a data: URI', 'data:text/html,https://app.example.com/cb'],
  ];
  it.each(tries)('%s', async (_name, redirect_uri) => {
    const reply = await request(app, `/authorize?${query('web', { redirect_uri })}`, {
      headers: { Cookie: cookie },
    });
    expectErrorPage(reply);
    expect(reply.body).toContain('not registered');
    expect(reply.body).not.toContain('<script');
  });

  it.each<[string, (uri: string) => string]>([
    ['a trailing slash', (u) => `${u}/`],
    ['another case', (u) => u.replace('app', 'APP')],
    ['%2F', (u) => u.replace('/cb', '%2Fcb')],
    ['an added query', (u) => `${u}?x=1`],
    ['a fragment', (u) => `${u}#x`],
    ['another registered URI', () => LOOPBACK],
  ])('refuses a code redeemed with %s as redirect_uri (invalid_grant)', async (_name, change) => {
    const issued = await codeFor();
    expectError(await redeem({ ...issued, redirectUri: change(WEB) }), 'invalid_grant');
    // the refused attempt did not spend the code: the right URI still redeems it
    expectTokens(await redeem(issued));
  });

  it('takes each registered URI exactly as registered', async () => {
    for (const uri of [WEB, LOOPBACK, IDN]) expectTokens(await redeem(await codeFor('web', uri)));
  });
});

describe('authorization code injection and PKCE (RFC 9700 §4.5, §2.1.1)', () => {
  it.each<[string, (c: Awaited<ReturnType<typeof codeFor>>) => Promise<Reply>]>([
    ['another code_verifier', (c) => redeem({ ...c, verifier: pkce().verifier })],
    [
      'no code_verifier',
      (c) => token({ grant_type: 'authorization_code', code: c.code, redirect_uri: WEB }),
    ],
    [
      'the challenge as verifier (plain)',
      (c) => redeem({ ...c, verifier: codeChallengeS256(c.verifier) }),
    ],
    ['another confidential client', (c) => redeem(c, 'other')],
    ['a public client', (c) => redeem({ ...c, redirectUri: SPA }, 'spa')],
  ])('refuses the code of web with %s, without spending it', async (_name, attack) => {
    const issued = await codeFor();
    expectError(await attack(issued), 'invalid_grant');
    // nobody but web with the right verifier can burn the code: web still redeems it
    expectTokens(await redeem(issued));
  });

  it('refuses a malformed code_verifier as invalid_request', async () => {
    const issued = await codeFor();
    for (const verifier of ['short', 'a'.repeat(129), `${'a'.repeat(42)} `, `${'é'.repeat(43)}`]) {
      expectError(await redeem({ ...issued, verifier }), 'invalid_request');
    }
  });

  it.each<[string, Record<string, string>]>([
    ['no code_challenge', { code_challenge: '', code_challenge_method: '' }],
    ['code_challenge_method plain', { code_challenge_method: 'plain' }],
    ['code_challenge_method missing', { code_challenge_method: '' }],
    ['code_challenge_method S512', { code_challenge_method: 'S512' }],
    ['a challenge of 44 characters', { code_challenge: `${pkce().challenge}A` }],
    ['a challenge in standard base64', { code_challenge: `${'+/'.repeat(21)}A` }],
  ])('refuses a public or confidential client with %s (PKCE downgrade)', async (_name, extra) => {
    for (const [client, redirect] of [
      ['spa', SPA],
      ['web', WEB],
    ] as const) {
      const reply = await request(app, `/authorize?${query(client, extra)}`, {
        headers: { Cookie: cookie },
      });
      expectRedirectError(reply, 'invalid_request', redirect);
    }
  });

  it('refuses a code replayed after use and revokes what it issued (RFC 6749 §4.1.2)', async () => {
    const issued = await codeFor();
    const tokens = expectTokens(await redeem(issued));
    expect(await isActive(tokens.access_token)).toBe(true);
    expectError(await redeem(issued), 'invalid_grant');
    expect(await isActive(tokens.access_token)).toBe(false);
    expectError(
      await token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token! }),
      'invalid_grant',
    );
  });

  it('detects refresh token reuse and revokes the whole family (RFC 9700 §4.14.2)', async () => {
    const first = expectTokens(await redeem(await codeFor()));
    const refresh = (refresh_token: string, client = 'web') =>
      token({ grant_type: 'refresh_token', refresh_token }, client);
    // another client presenting it is refused without harming the family
    expectError(await refresh(first.refresh_token!, 'other'), 'invalid_grant');
    const second = expectTokens(await refresh(first.refresh_token!));
    expect(await isActive(second.access_token)).toBe(true);
    expectError(await refresh(first.refresh_token!), 'invalid_grant');
    expect(await isActive(second.access_token)).toBe(false);
    expect(await isActive(first.access_token)).toBe(false);
    expectError(await refresh(second.refresh_token!), 'invalid_grant');
  });
});

describe('parameter pollution (RFC 6749 §3.1, §3.2: each parameter at most once)', () => {
  it.each([
    ['client_id', 'client_id=other', 'page'],
    ['redirect_uri', `redirect_uri=${encodeURIComponent(WEB)}`, 'page'],
    ['response_type', 'response_type=code', 'invalid_request'],
    ['scope', 'scope=openid', 'invalid_request'],
    ['state', 'state=st-2', 'invalid_request'],
    ['code_challenge', `code_challenge=${pkce().challenge}`, 'invalid_request'],
    ['code_challenge_method', 'code_challenge_method=S256', 'invalid_request'],
    ['nonce', 'nonce=a&nonce=b', 'invalid_request'],
  ])('refuses /authorize with %s repeated', async (_name, extra, outcome) => {
    const reply = await request(app, `/authorize?${query('web')}&${extra}`, {
      headers: { Cookie: cookie },
    });
    if (outcome === 'page') expectErrorPage(reply);
    else {
      const url = expectRedirectError(reply, outcome);
      // a repeated state is not echoed; any other repeated parameter keeps the one state
      expect(url.searchParams.get('state')).toBe(extra.startsWith('state=') ? null : 'st-1');
    }
  });

  it.each([
    ['grant_type', 'grant_type=authorization_code'],
    ['code', 'code=x'],
    ['redirect_uri', `redirect_uri=${encodeURIComponent(WEB)}`],
    ['code_verifier', `code_verifier=${pkce().verifier}`],
    ['client_id', 'client_id=web&client_id=web'],
    ['scope', 'scope=openid&scope=openid'],
    ['an empty duplicate', 'code='],
  ])('refuses /token with %s repeated, and the code survives', async (_name, extra) => {
    const issued = await codeFor();
    const body = new URLSearchParams({
      grant_type: 'authorization_code',
      code: issued.code,
      redirect_uri: WEB,
      code_verifier: issued.verifier,
    });
    const auth = { Authorization: basic('web', SECRETS.web!) };
    expectError(await post('/token', `${body}&${extra}`, auth), 'invalid_request');
    expectTokens(await post('/token', body.toString(), auth));
  });

  it('reads /token parameters from the body only, never from the query', async () => {
    const issued = await codeFor();
    const reply = await request(app, '/token?grant_type=client_credentials&client_id=other', {
      method: 'POST',
      headers: { ...FORM, Authorization: basic('web', SECRETS.web!) },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: issued.code,
        redirect_uri: WEB,
        code_verifier: issued.verifier,
      }).toString(),
    });
    expect(expectTokens(reply).scope).toBe('openid offline_access');
  });
});

describe('state, response_type and the other authorization parameters', () => {
  const authorize = (extra: Record<string, string>) =>
    request(app, `/authorize?${query('web', extra)}`, { headers: { Cookie: cookie } });

  it('keeps a state of 1024 characters and refuses longer ones without echoing them', async () => {
    const kept = await authorize({ state: 's'.repeat(1024), prompt: 'consent' });
    expect(kept.status).toBe(200);
    expect(new Map(hiddenInputs(kept.body)).get('state')).toBe('s'.repeat(1024));
    for (const length of [1025, 8000]) {
      const url = expectRedirectError(
        await authorize({ state: 's'.repeat(length) }),
        'invalid_request',
      );
      expect(url.searchParams.has('state')).toBe(false);
      expect(url.searchParams.get('error_description')).toMatch(/1024/);
    }
    // beyond node's 16 KiB header limit the HTTP server answers, not the endpoint
    expect((await authorize({ state: 's'.repeat(20_000) })).status).toBe(431);
    const body = `${query('web', { state: 's'.repeat(60_000) })}&decision=approve`;
    expectErrorPage(await post('/authorize', body, { Cookie: cookie }));
  });

  it.each([
    ['token', 'unsupported_response_type'],
    ['id_token', 'unsupported_response_type'],
    ['code token', 'unsupported_response_type'],
    ['code id_token', 'unsupported_response_type'],
    ['token code', 'unsupported_response_type'],
    ['none', 'unsupported_response_type'],
    ['CODE', 'unsupported_response_type'],
    ['code ', 'unsupported_response_type'],
    ['code,token', 'unsupported_response_type'],
    ['', 'invalid_request'],
  ])('answers response_type=%j with %s and no code', async (response_type, error) => {
    const url = expectRedirectError(await authorize({ response_type }), error);
    expect(url.searchParams.get('state')).toBe('st-1');
  });

  it.each(['fragment', 'form_post', 'web_message', 'QUERY'])(
    'refuses response_mode=%s',
    async (response_mode) => {
      expectRedirectError(await authorize({ response_mode }), 'invalid_request');
    },
  );
});
