import { OAuthError } from '../protocol/errors.js';
import { resourcesOf, tokenAudience } from '../resources.js';
import { deviceCodes, isDeviceCodeExpired } from '../store/records.js';
import { hashToken } from '../tokens/issue.js';
import {
  assertCanIssue,
  defineGrant,
  type Grant,
  type GrantHandler,
  grantUser,
  issueUserTokens,
  requiredParameter,
} from './contract.js';

/**
 * The `grant_type` of the device authorization grant (RFC 8628 §3.4).
 *
 * @example
 * ```ts
 * // the device polls the token endpoint with
 * new URLSearchParams({ grant_type: DEVICE_CODE_GRANT, device_code: deviceCode, client_id: 'tv' });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8628#section-3.4 | RFC 8628 §3.4}
 */
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

/** Added to the polling interval on each `slow_down`: 5 seconds (RFC 8628 §3.5), in milliseconds. */
const SLOW_DOWN_STEP = 5_000;

/** What the device grant does: see {@link deviceCodeGrant}. */
const pollDeviceCode: GrantHandler = async (ctx, client, params, binding) => {
  const hash = hashToken(requiredParameter(params, 'device_code'));
  const record = await deviceCodes(ctx.store).get(hash);
  if (record === undefined) {
    throw new OAuthError('invalid_grant', 'The device code is invalid or was already used.');
  }
  if (record.clientId !== client.clientId) {
    throw new OAuthError('invalid_grant', 'The device code was issued to another client.');
  }
  if (isDeviceCodeExpired(record)) {
    throw new OAuthError('expired_token', 'The device code has expired; start over.');
  }
  if (record.status === 'pending') {
    const now = Date.now();
    const early = record.lastPollAt !== undefined && now - record.lastPollAt < record.interval;
    const interval = early ? record.interval + SLOW_DOWN_STEP : record.interval;
    // a decision made meanwhile is never undone by this poll's stale 'pending'
    await deviceCodes(ctx.store).replace(
      hash,
      { ...record, lastPollAt: now, interval },
      { status: 'pending' },
    );
    if (early) {
      throw new OAuthError(
        'slow_down',
        `Polling too fast: wait ${Math.ceil(interval / 1000)} seconds between requests.`,
      );
    }
    throw new OAuthError('authorization_pending', 'The user has not decided yet.');
  }
  if (record.status === 'denied') {
    await deviceCodes(ctx.store).destroy(hash);
    throw new OAuthError('access_denied', 'The user denied the authorization.');
  }
  if (record.sub === undefined) {
    throw new Error('An approved device authorization has no subject.');
  }
  if (await ctx.store.isGrantRevoked(record.grantId)) {
    throw new OAuthError('invalid_grant', 'The grant was revoked.');
  }
  const user = await grantUser(ctx, record.sub);
  const audience = tokenAudience(ctx.resources, record.resources, resourcesOf(params));
  await assertCanIssue(ctx, binding);
  if (!(await deviceCodes(ctx.store).destroy(hash))) {
    throw new OAuthError('invalid_grant', 'The device code was already used.');
  }
  return issueUserTokens(
    ctx,
    client,
    {
      user,
      scope: record.scope,
      grantId: record.grantId,
      authTime: record.authTime,
      audience,
      family: {
        scope: record.scope,
        expiresAt: Date.now() + ctx.settings.refreshTokenTtl,
        ...(record.resources !== undefined && { resources: record.resources }),
      },
    },
    binding,
  );
};

/**
 * The device authorization grant's token request (RFC 8628 §3.4–3.5). While the user has not
 * decided, the device gets `authorization_pending`; polling again sooner than the interval
 * gets `slow_down`, and the interval grows by 5 seconds for this and every later poll. A
 * denial answers `access_denied` once and ends the authorization; an approval issues the
 * tokens once (the device code is consumed atomically) — a refresh token when the client
 * may refresh, an ID token when the scope has `openid`. A device code past its expiry is
 * `expired_token` (the device should start over); one never issued, or whose authorization
 * already ended (exchanged, denied, or expired long ago), is `invalid_grant` (RFC 6749 §5.2).
 *
 * @example
 * ```ts
 * // a custom token endpoint: the grants take the context, the authenticated client and the
 * // form parameters (each at most once)
 * const params = singleParams(await readForm(req));
 * const answer = await deviceCodeGrant.handle(ctx, client, params, binding);
 * sendJson(res, 200, answer, NO_STORE);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8628#section-3.5 | RFC 8628 §3.5}
 */
export const deviceCodeGrant: Grant = defineGrant({
  type: DEVICE_CODE_GRANT,
  parameters: ['device_code', 'resource'],
  handle: pollDeviceCode,
});
