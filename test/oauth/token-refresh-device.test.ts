import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OAuthContext } from '../../src/oauth/context.js';
import { createDeviceAuthorizationEndpoint } from '../../src/oauth/endpoints/device-authorization.js';
import { DEVICE_CODE_GRANT } from '../../src/oauth/grants/device-code.js';
import { deviceCodes, refreshTokens } from '../../src/oauth/store/records.js';
import { hashToken, newOpaqueToken } from '../../src/oauth/tokens/issue.js';
import { closeAll, json, type Listening, request, serve } from '../helpers/http.js';
import {
  expectError,
  expectTokens,
  pkce,
  plantCode,
  plantDeviceCode,
  startTokenServer,
  tokenRequest,
  verifyAccessToken,
  verifyIdToken,
  WEB_REDIRECT,
} from './token-fixtures.js';

let ctx: OAuthContext;
let server: Listening;
/** A second server whose context has a 1-second refresh grace period. */
let graceCtx: OAuthContext;
let graceServer: Listening;

beforeAll(async () => {
  ({ ctx, server } = await startTokenServer());
  ({ ctx: graceCtx, server: graceServer } = await startTokenServer({ refreshGracePeriod: 1_000 }));
});

afterAll(closeAll);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs the code flow for demo-web on `on` and returns its tokens. */
async function signIn(on: { ctx: OAuthContext; server: Listening } = { ctx, server }) {
  const { verifier, challenge } = pkce();
  const { code, record } = await plantCode(on.ctx, { codeChallenge: challenge });
  const tokens = expectTokens(
    await tokenRequest(
      on.server,
      {
        grant_type: 'authorization_code',
        code,
        redirect_uri: WEB_REDIRECT,
        code_verifier: verifier,
      },
      { client: 'demo-web' },
    ),
  );
  return { ...tokens, refresh_token: tokens.refresh_token!, record };
}

const refresh = (
  refreshToken: string,
  extra: Record<string, string> = {},
  { client = 'demo-web', on = server }: { client?: string; on?: Listening } = {},
) =>
  tokenRequest(
    on,
    { grant_type: 'refresh_token', refresh_token: refreshToken, ...extra },
    { client },
  );

describe('refresh_token grant', () => {
  it('rotates on every use, keeping the grant, the scope and the family’s absolute end', async () => {
    const first = await signIn();
    const second = expectTokens(await refresh(first.refresh_token));
    expect(second.refresh_token).toBeDefined();
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(second.scope).toBe(first.scope);
    const access = await verifyAccessToken(ctx, second.access_token);
    expect(access).toMatchObject({
      sub: 'alice',
      client_id: 'demo-web',
      name: 'Alice Example',
      role: 'admin',
      grant_id: first.record.grantId,
    });
    expect(access.exp! - access.iat!).toBe(900);

    const before = await refreshTokens(ctx.store).find(hashToken(first.refresh_token));
    const after = await refreshTokens(ctx.store).find(hashToken(second.refresh_token!));
    expect(after?.state).toBe('fresh');
    expect(after?.record.familyExpiresAt).toBe(before?.record.familyExpiresAt);
    expect(before!.record.familyExpiresAt - Date.now()).toBeGreaterThan(2_592_000_000 - 60_000);

    const third = expectTokens(await refresh(second.refresh_token!));
    expect(third.refresh_token).not.toBe(second.refresh_token);
  });

  it('issues a new ID token on refresh: original auth_time, no nonce (OIDC Core §12.2)', async () => {
    const first = await signIn();
    const next = expectTokens(await refresh(first.refresh_token));
    const id = await verifyIdToken(ctx, next.id_token!, 'demo-web');
    expect(id).toMatchObject({ sub: 'alice', aud: 'demo-web', auth_time: first.record.authTime });
    expect(id.nonce).toBeUndefined();
  });

  it('revokes the whole family when a rotated token is used again (RFC 9700 §4.14.2)', async () => {
    const first = await signIn();
    const second = expectTokens(await refresh(first.refresh_token));
    expectError(await refresh(first.refresh_token), 'invalid_grant');
    expect(await ctx.store.isGrantRevoked(first.record.grantId)).toBe(true);
    // the legitimate successor is gone too, and so is its access token's grant
    expectError(await refresh(second.refresh_token!), 'invalid_grant');
    expect((await verifyAccessToken(ctx, second.access_token)).grant_id).toBe(first.record.grantId);
  });

  it('counts two concurrent refreshes of one token as reuse when there is no grace period', async () => {
    const first = await signIn();
    const replies = await Promise.all([refresh(first.refresh_token), refresh(first.refresh_token)]);
    expect(replies.filter((r) => r.status === 200).length).toBeLessThanOrEqual(1);
    expect(await ctx.store.isGrantRevoked(first.record.grantId)).toBe(true);
  });

  it('is bound to its client: another client is refused and the token stays usable', async () => {
    const first = await signIn();
    expectError(await refresh(first.refresh_token, {}, { client: 'other-web' }), 'invalid_grant');
    expect(await ctx.store.isGrantRevoked(first.record.grantId)).toBe(false);
    expectTokens(await refresh(first.refresh_token));
  });

  it('may narrow the scope, never widen it; a refused widening does not consume the token', async () => {
    const first = await signIn();
    const narrowed = expectTokens(await refresh(first.refresh_token, { scope: 'read:messages' }));
    expect(narrowed.scope).toBe('read:messages');
    expect(narrowed.id_token).toBeUndefined();
    expect((await verifyAccessToken(ctx, narrowed.access_token)).scope).toBe('read:messages');

    expectError(
      await refresh(narrowed.refresh_token!, { scope: 'read:messages write:messages' }),
      'invalid_scope',
    );
    // the new refresh token keeps the original grant's scope (RFC 6749 §6)
    const full = expectTokens(await refresh(narrowed.refresh_token!));
    expect(full.scope).toBe(first.scope);
  });

  it('refuses unknown and missing refresh tokens, and tokens past the family’s end', async () => {
    expectError(await refresh(newOpaqueToken()), 'invalid_grant');
    expectError(
      await tokenRequest(server, { grant_type: 'refresh_token' }, { client: 'demo-web' }),
      'invalid_request',
    );
    const token = newOpaqueToken();
    await refreshTokens(ctx.store).save(
      hashToken(token),
      {
        clientId: 'demo-web',
        sub: 'alice',
        scope: ['read:messages'],
        grantId: 'ended-family',
        familyExpiresAt: Date.now() - 1,
      },
      60_000,
    );
    expectError(await refresh(token), 'invalid_grant');
  });

  it('refuses a refresh token whose user is gone', async () => {
    const token = newOpaqueToken();
    await refreshTokens(ctx.store).save(
      hashToken(token),
      {
        clientId: 'demo-web',
        sub: 'carol',
        scope: ['read:messages'],
        grantId: 'carol-grant',
        familyExpiresAt: Date.now() + 60_000,
      },
      60_000,
    );
    expectError(await refresh(token), 'invalid_grant');
  });

  describe('with a grace period', () => {
    const on = () => ({ ctx: graceCtx, server: graceServer });

    it('lets the same client reuse a just-rotated token within the window (two tabs)', async () => {
      const first = await signIn(on());
      const [a, b] = await Promise.all([
        refresh(first.refresh_token, {}, { on: graceServer }),
        refresh(first.refresh_token, {}, { on: graceServer }),
      ]);
      const tabA = expectTokens(a!);
      const tabB = expectTokens(b!);
      expect(tabA.refresh_token).not.toBe(tabB.refresh_token);
      expect(await graceCtx.store.isGrantRevoked(first.record.grantId)).toBe(false);
      expectTokens(await refresh(tabA.refresh_token!, {}, { on: graceServer }));
      expectTokens(await refresh(tabB.refresh_token!, {}, { on: graceServer }));
    });

    it('still refuses another client within the window', async () => {
      const first = await signIn(on());
      expectTokens(await refresh(first.refresh_token, {}, { on: graceServer }));
      expectError(
        await refresh(first.refresh_token, {}, { on: graceServer, client: 'other-web' }),
        'invalid_grant',
      );
    });

    it('revokes the family on reuse after the window, as without one', async () => {
      const first = await signIn(on());
      const second = expectTokens(await refresh(first.refresh_token, {}, { on: graceServer }));
      await sleep(1_100);
      expectError(await refresh(first.refresh_token, {}, { on: graceServer }), 'invalid_grant');
      expect(await graceCtx.store.isGrantRevoked(first.record.grantId)).toBe(true);
      expectError(await refresh(second.refresh_token!, {}, { on: graceServer }), 'invalid_grant');
    });
  });
});

describe('device_code grant (RFC 8628)', () => {
  const poll = (deviceCode: string, client = 'demo-device') =>
    tokenRequest(server, { grant_type: DEVICE_CODE_GRANT, device_code: deviceCode }, { client });

  it('answers authorization_pending, slow_down (+5 s), then the tokens once approved', async () => {
    const { deviceCode, hash, record } = await plantDeviceCode(ctx, { interval: 1_000 });
    expectError(await poll(deviceCode), 'authorization_pending');
    // polling again at once is too fast: slow_down, and the interval grows by 5 s
    expectError(await poll(deviceCode), 'slow_down');
    expect((await deviceCodes(ctx.store).get(hash))?.interval).toBe(6_000);
    // a device that waits the old interval (1 s) is still too fast now
    await deviceCodes(ctx.store).replace(hash, {
      ...(await deviceCodes(ctx.store).get(hash))!,
      lastPollAt: Date.now() - 2_000,
    });
    expectError(await poll(deviceCode), 'slow_down');
    expect((await deviceCodes(ctx.store).get(hash))?.interval).toBe(11_000);
    // one that waits the new interval is merely pending
    await deviceCodes(ctx.store).replace(hash, {
      ...(await deviceCodes(ctx.store).get(hash))!,
      lastPollAt: Date.now() - 11_000,
    });
    expectError(await poll(deviceCode), 'authorization_pending');
    expect((await deviceCodes(ctx.store).get(hash))?.interval).toBe(11_000);

    const authTime = Math.floor(Date.now() / 1000);
    await deviceCodes(ctx.store).replace(hash, {
      ...(await deviceCodes(ctx.store).get(hash))!,
      status: 'approved',
      sub: 'bob',
      authTime,
    });
    const tokens = expectTokens(await poll(deviceCode));
    expect(tokens.scope).toBe(record.scope.join(' '));
    expect(tokens.refresh_token).toBeDefined();
    const access = await verifyAccessToken(ctx, tokens.access_token);
    expect(access).toMatchObject({
      sub: 'bob',
      client_id: 'demo-device',
      name: 'Bob Example',
      role: 'user',
      grant_id: record.grantId,
    });
    const id = await verifyIdToken(ctx, tokens.id_token!, 'demo-device');
    expect(id).toMatchObject({ sub: 'bob', auth_time: authTime, name: 'Bob Example' });
    expect(id.email).toBeUndefined();

    // the device code is spent (RFC 6749 §5.2: invalid_grant); the refresh token works
    expectError(await poll(deviceCode), 'invalid_grant');
    expectTokens(
      await tokenRequest(
        server,
        { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! },
        { client: 'demo-device' },
      ),
    );
  });

  it('answers access_denied once the user denied, then invalid_grant', async () => {
    const { deviceCode, hash } = await plantDeviceCode(ctx);
    await deviceCodes(ctx.store).replace(hash, {
      ...(await deviceCodes(ctx.store).get(hash))!,
      status: 'denied',
    });
    expectError(await poll(deviceCode), 'access_denied');
    expectError(await poll(deviceCode), 'invalid_grant');
  });

  it('answers invalid_grant for an unknown device code, invalid_request for none', async () => {
    expectError(await poll(newOpaqueToken()), 'invalid_grant');
    expectError(await poll('bogus'), 'invalid_grant');
    expectError(
      await tokenRequest(server, { grant_type: DEVICE_CODE_GRANT }, { client: 'demo-device' }),
      'invalid_request',
    );
  });

  it('answers expired_token for a device code past its expiry, pending or approved', async () => {
    const pending = await plantDeviceCode(ctx, { expiresAt: Date.now() - 1 });
    expectError(await poll(pending.deviceCode), 'expired_token');
    expectError(await poll(pending.deviceCode), 'expired_token');
    const approved = await plantDeviceCode(ctx, {
      status: 'approved',
      sub: 'alice',
      authTime: Math.floor(Date.now() / 1000),
      expiresAt: Date.now() - 1,
    });
    expectError(await poll(approved.deviceCode), 'expired_token');
    expect(await deviceCodes(ctx.store).get(approved.hash)).toBeDefined();
  });

  it('answers a device code from /device: pending, expired_token once expired, then invalid_grant', async () => {
    const short = await startTokenServer({ deviceCodeTtl: 1_000 });
    const device = await serve(createDeviceAuthorizationEndpoint(short.ctx));
    const started = await request(device, '/device', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'client_id=demo-device',
    });
    expect(started.status, started.body).toBe(200);
    const deviceCode = json(started).device_code as string;
    const pollShort = () =>
      tokenRequest(
        short.server,
        { grant_type: DEVICE_CODE_GRANT, device_code: deviceCode },
        { client: 'demo-device' },
      );
    expectError(await pollShort(), 'authorization_pending');
    await sleep(1_100);
    // expired, and still remembered as such for as long again
    expectError(await pollShort(), 'expired_token');
    await sleep(1_000);
    expectError(await pollShort(), 'invalid_grant');
  });

  it('refuses a device code of another client without touching it', async () => {
    const { deviceCode, hash } = await plantDeviceCode(ctx);
    expectError(await poll(deviceCode, 'other-device'), 'invalid_grant');
    expect((await deviceCodes(ctx.store).get(hash))?.lastPollAt).toBeUndefined();
    expectError(await poll(deviceCode), 'authorization_pending');
  });

  it('issues no refresh token to a device client without the refresh_token grant', async () => {
    const { deviceCode, hash } = await plantDeviceCode(ctx, {
      clientId: 'other-device',
      status: 'approved',
      sub: 'alice',
      scope: ['read:messages'],
    });
    const tokens = expectTokens(await poll(deviceCode, 'other-device'));
    expect(tokens.refresh_token).toBeUndefined();
    expect(tokens.id_token).toBeUndefined();
    expect(await deviceCodes(ctx.store).get(hash)).toBeUndefined();
  });

  it('gives exactly one of concurrent polls of an approved code its tokens', async () => {
    const { deviceCode } = await plantDeviceCode(ctx, { status: 'approved', sub: 'alice' });
    const replies = await Promise.all(Array.from({ length: 8 }, () => poll(deviceCode)));
    expect(replies.filter((r) => r.status === 200)).toHaveLength(1);
    for (const reply of replies.filter((r) => r.status !== 200)) {
      expectError(reply, 'invalid_grant');
    }
  });
});
