// A memory store that fails closed: flooding it with revocations never makes it forget one
// (the old store dropped the oldest, and a family killed by reuse detection worked again);
// while revocations are over the bound, new grants are refused with a 503 in the OAuth format.
import { afterAll, describe, expect, it } from 'vitest';
import { codes, refreshTokens } from '../../../src/oauth/store/records.js';
import { MemoryRecordStore } from '../../../src/oauth/store/store.js';
import { hashToken } from '../../../src/oauth/tokens/issue.js';
import { closeAll, json, type Listening, type Reply, request } from '../../helpers/http.js';
import {
  basic,
  expectError,
  expectTokens,
  pkce,
  plantCode,
  redeemWebCode,
  startOAuthServer,
  tokenRequest,
} from '../token-fixtures.js';

afterAll(closeAll);

const MAX = 6;
const SERVICE = { Authorization: basic('demo-service', 'demo-service-secret') };
const WEB = { Authorization: basic('demo-web', 'demo-web-secret') };

const post = (server: Listening, path: string, body: Record<string, string>, headers = {}) =>
  request(server, path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(body).toString(),
  });

/** A 503 in the RFC 6749 §5.2 format, with Retry-After and no-store. */
function expectFull(reply: Reply): void {
  const body = expectError(reply, 'temporarily_unavailable', 503);
  expect(reply.headers['retry-after']).toMatch(/^[1-9]\d*$/);
  expect(body.error_description).not.toMatch(/MemoryRecordStore|ExpiringMap/);
}

describe('MemoryRecordStore at its bound, behind a real token endpoint', () => {
  it('never forgets a revoked family under a flood of revocations, and refuses new grants meanwhile', async () => {
    const clock = { skew: 0 };
    const store = new MemoryRecordStore({ maxEntries: MAX, now: () => Date.now() + clock.skew });
    const { ctx, server } = await startOAuthServer({ store });
    const redeem = (code: string, verifier: string) => redeemWebCode(server, code, verifier);
    const refresh = (token: string) =>
      tokenRequest(
        server,
        { grant_type: 'refresh_token', refresh_token: token },
        { client: 'demo-web' },
      );
    const clientCredentials = () =>
      tokenRequest(server, { grant_type: 'client_credentials' }, { client: 'demo-service' });

    // a family killed by reuse detection
    const first = pkce();
    const planted = await plantCode(ctx, { codeChallenge: first.challenge });
    const family = expectTokens(await redeem(planted.code, first.verifier));
    const successor = expectTokens(await refresh(family.refresh_token!));
    expectError(await refresh(family.refresh_token!), 'invalid_grant');
    expect(await ctx.store.isGrantRevoked(planted.record.grantId)).toBe(true);
    // another family, rotated once: its first token will be replayed during the flood
    const second = pkce();
    const other = await plantCode(ctx, { codeChallenge: second.challenge });
    const otherFamily = expectTokens(await redeem(other.code, second.verifier));
    expectTokens(await refresh(otherFamily.refresh_token!));
    // a code waiting for its client, planted while the store had room
    const later = pkce();
    const waiting = await plantCode(ctx, { codeChallenge: later.challenge }, 3_600_000);

    // the flood: as many client_credentials tokens as the bound, each revoked at /revoke
    const flood = await Promise.all(
      Array.from({ length: MAX }, async () => expectTokens(await clientCredentials()).access_token),
    );
    for (const token of flood)
      expect((await post(server, '/revoke', { token }, SERVICE)).status).toBe(200);

    // every revocation is still known: the family's first of all
    expect(await ctx.store.isGrantRevoked(planted.record.grantId)).toBe(true);
    expectError(await refresh(successor.refresh_token!), 'invalid_grant');
    expect(json(await post(server, '/introspect', { token: successor.access_token }, WEB))).toEqual(
      {
        active: false,
      },
    );
    const me = (token: string) =>
      request(server, '/api/me', { headers: { Authorization: `Bearer ${token}` } });
    expect((await me(successor.access_token)).status).toBe(401);
    for (const token of flood) expect((await me(token)).status).toBe(401);

    // reuse detection still revokes, past the bound
    expectError(await refresh(otherFamily.refresh_token!), 'invalid_grant');
    expect(await ctx.store.isGrantRevoked(other.record.grantId)).toBe(true);

    // new grants are refused with a 503 rather than forgetting anything, and spend nothing
    expectFull(await clientCredentials());
    expectFull(await redeem(waiting.code, later.verifier));
    expect(await codes(ctx.store).find(hashToken(waiting.code))).toMatchObject({ state: 'fresh' });
    expect(() => codes(store).save('another', planted.record, 60_000)).toThrow(
      expect.objectContaining({ status: 503, code: 'ERR_STORE_FULL' }),
    );

    // once the flood's revocations end with their tokens (15 min + 1 min), grants come back;
    // the family's revocation (30 days) stays
    clock.skew = 17 * 60_000;
    expectError(await refresh(successor.refresh_token!), 'invalid_grant');
    expectTokens(await clientCredentials());
    expectTokens(await redeem(waiting.code, later.verifier));
    expect(await ctx.store.isGrantRevoked(planted.record.grantId)).toBe(true);
    expect(await ctx.store.isGrantRevoked(other.record.grantId)).toBe(true);
  });

  it('refuses a grant with a 503 when its refresh token could not be kept, spending nothing', async () => {
    const store = new MemoryRecordStore({ maxEntries: 2 });
    const { ctx, server } = await startOAuthServer({ store });
    const exchange = async () => {
      const { verifier, challenge } = pkce();
      const { code } = await plantCode(ctx, { codeChallenge: challenge });
      const reply = await redeemWebCode(server, code, verifier);
      return { reply, code };
    };
    const a = expectTokens((await exchange()).reply);
    // rotating writes a successor: the refresh map is now full (a, its successor)
    const b = expectTokens(
      await tokenRequest(
        server,
        { grant_type: 'refresh_token', refresh_token: a.refresh_token! },
        { client: 'demo-web' },
      ),
    );
    // the next rotation would need a third entry: refused before b is spent
    const refused = await tokenRequest(
      server,
      { grant_type: 'refresh_token', refresh_token: b.refresh_token! },
      { client: 'demo-web' },
    );
    expectFull(refused);
    expect(await refreshTokens(ctx.store).find(hashToken(b.refresh_token!))).toMatchObject({
      state: 'fresh',
    });
  });
});
