// Every revocation of the OAuth server is announced on ctx.revocations before the answer: a
// stream bound (bindToCredential) to the principal an access token gives ends when the grant
// or the token is revoked at /revoke, by refresh-token reuse, or by a code replayed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bindToCredential,
  createRevocations,
  grantCredentialId,
  type Revocations,
  tokenCredentialId,
} from '../../../src/auth/revocations.js';
import type { Principal } from '../../../src/core/principal.js';
import type { OAuthContext } from '../../../src/oauth/context.js';
import { closeAll, json, type Listening, request } from '../../helpers/http.js';
import {
  basic,
  expectError,
  expectTokens,
  pkce,
  plantCode,
  redeemWebCode,
  startOAuthServer,
  tokenRequest,
  verifyAccessToken,
} from '../token-fixtures.js';

let ctx: OAuthContext;
let server: Listening;
let revocations: Revocations;
/** Every id announced, with whether the store knew it revoked at that moment. */
const announced: { id: string; recorded: boolean }[] = [];

beforeAll(async () => {
  revocations = createRevocations();
  ({ ctx, server } = await startOAuthServer({ revocations }));
  revocations.listen((id) => {
    const key = id.startsWith('grant:') ? id.slice(6) : `jti:${id.slice(6)}`;
    announced.push({ id, recorded: ctx.store.isGrantRevoked(key) === true });
  });
});

afterAll(closeAll);

const WEB = { Authorization: basic('demo-web', 'demo-web-secret') };
const SERVICE = { Authorization: basic('demo-service', 'demo-service-secret') };

const post = (path: string, body: Record<string, string>, headers: Record<string, string>) =>
  request(server, path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(body).toString(),
  });

/** Redeems a fresh code of demo-web: its tokens and the code. */
async function signIn() {
  const { verifier, challenge } = pkce();
  const { code } = await plantCode(ctx, { codeChallenge: challenge });
  const redeem = () => redeemWebCode(server, code, verifier);
  const tokens = expectTokens(await redeem());
  const grantId = (await verifyAccessToken(ctx, tokens.access_token)).grant_id as string;
  return { tokens, grantId, redeem };
}

/**
 * A stream opened with `accessToken`: the principal `ownAccessTokens` makes of it, bound to its
 * credential. `ended` says why it ended, if it did.
 */
async function openStream(accessToken: string) {
  const reply = await request(server, '/api/me', {
    headers: { Authorization: `Bearer ${accessToken}` },
  });
  expect(reply.status).toBe(200);
  const principal = json<Principal>(reply);
  const stream: { ended?: { reason: string; id?: string } } = {};
  bindToCredential(principal, {
    revocations,
    onEnd: (reason, id) => {
      stream.ended = { reason, id };
    },
  });
  return { stream, principal };
}

describe('revocations announced by the authorization server', () => {
  it('ends a stream of the grant when its refresh token is revoked, before /revoke answers', async () => {
    const { tokens, grantId } = await signIn();
    const { stream, principal } = await openStream(tokens.access_token);
    expect(principal.credentialIds).toContain(grantCredentialId(grantId));
    const reply = await post('/revoke', { token: tokens.refresh_token! }, WEB);
    expect(reply.status).toBe(200);
    expect(stream.ended).toEqual({ reason: 'revoked', id: grantCredentialId(grantId) });
    expect(announced).toContainEqual({ id: grantCredentialId(grantId), recorded: true });
  });

  it('ends it when the access token itself is revoked', async () => {
    const { tokens, grantId } = await signIn();
    const { stream } = await openStream(tokens.access_token);
    expect((await post('/revoke', { token: tokens.access_token }, WEB)).status).toBe(200);
    expect(stream.ended).toEqual({ reason: 'revoked', id: grantCredentialId(grantId) });
  });

  it('ends every stream of the grant on refresh-token reuse', async () => {
    const { tokens, grantId } = await signIn();
    const refresh = (token: string) =>
      tokenRequest(
        server,
        { grant_type: 'refresh_token', refresh_token: token },
        { client: 'demo-web' },
      );
    const next = expectTokens(await refresh(tokens.refresh_token!));
    const first = await openStream(tokens.access_token);
    const second = await openStream(next.access_token);
    expectError(await refresh(tokens.refresh_token!), 'invalid_grant');
    for (const { stream } of [first, second]) {
      expect(stream.ended).toEqual({ reason: 'revoked', id: grantCredentialId(grantId) });
    }
    expect(announced).toContainEqual({ id: grantCredentialId(grantId), recorded: true });
  });

  it('ends the streams of a grant whose code is replayed', async () => {
    const { tokens, grantId, redeem } = await signIn();
    const { stream } = await openStream(tokens.access_token);
    expectError(await redeem(), 'invalid_grant');
    expect(stream.ended).toEqual({ reason: 'revoked', id: grantCredentialId(grantId) });
  });

  it('ends the stream of a client_credentials token revoked by its jti, and that one only', async () => {
    const issue = async () =>
      expectTokens(
        await tokenRequest(
          server,
          { grant_type: 'client_credentials' },
          { client: 'demo-service' },
        ),
      ).access_token;
    const revoked = await issue();
    const kept = await issue();
    const jti = (await verifyAccessToken(ctx, revoked)).jti as string;
    const a = await openStream(revoked);
    const b = await openStream(kept);
    expect((await post('/revoke', { token: revoked }, SERVICE)).status).toBe(200);
    expect(a.stream.ended).toEqual({ reason: 'revoked', id: tokenCredentialId(jti) });
    expect(b.stream.ended).toBeUndefined();
    expect(announced).toContainEqual({ id: tokenCredentialId(jti), recorded: true });
  });
});
