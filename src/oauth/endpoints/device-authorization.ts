import { randomUUID } from 'node:crypto';
import type { Middleware } from '../../core/compose.js';
import { sendJson } from '../../core/send.js';
import { methods } from '../../http/routing/router.js';
import { assertKnownOptions, invalidOption } from '../../internal/options.js';
import { resolveScopes } from '../clients/scope.js';
import type { OAuthContext } from '../context.js';
import { DEVICE_CODE_GRANT } from '../grants/device-code.js';
import { NO_STORE, OAuthError } from '../protocol/errors.js';
import { readOAuthForm } from '../protocol/form.js';
import { singleParams } from '../protocol/parameters.js';
import { configuredResources, takeResources } from '../resources.js';
import { oauthEndpoint } from '../shared/endpoint.js';
import { hashToken, newOpaqueToken } from '../tokens/issue.js';
import { formatUserCode, generateUserCode } from '../user-codes/format.js';

export {
  formatUserCode,
  generateUserCode,
  normalizeUserCode,
  USER_CODE_ALPHABET,
} from '../user-codes/format.js';
export {
  createDeviceVerificationEndpoint,
  type DeviceVerificationOptions,
} from './device-verify.js';

import { type DeviceCodeRecord, deviceCodes } from '../store/records.js';

/**
 * Options of {@link createDeviceAuthorizationEndpoint}.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc8628#section-3.2 | RFC 8628 §3.2}
 */
export interface DeviceAuthorizationOptions {
  /**
   * `verification_uri`: where users enter the code (the page of
   * {@link createDeviceVerificationEndpoint}).
   * @defaultValue `<issuer>/device/verify`
   */
  verificationUri?: string;
}

const KNOWN = ['verificationUri'] as const satisfies readonly (keyof DeviceAuthorizationOptions)[];

/**
 * The device authorization endpoint (RFC 8628 §3.1–3.2) for `POST /device`: authenticates
 * the client (public clients by `client_id`), which must have the device grant, resolves
 * the scope, and answers `device_code` (256 random bits, stored only as a hash),
 * `user_code` (`XXXX-XXXX`), `verification_uri`, `verification_uri_complete`, `expires_in`
 * and `interval` (both in seconds, as RFC 8628 has them: the context's `deviceCodeTtl` rounded
 * down and its `devicePollInterval` rounded up). Errors are RFC 6749 §5.2 JSON. The store keeps the record for as long
 * again after `expires_in`, so that a late poll is told `expired_token`, not `invalid_grant`.
 *
 * @example
 * ```ts
 * const routes = createRouter({ '/device': createDeviceAuthorizationEndpoint(ctx) });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8628#section-3.1 | RFC 8628 §3.1}
 */
export function createDeviceAuthorizationEndpoint(
  ctx: OAuthContext,
  options: DeviceAuthorizationOptions = {},
): Middleware {
  const owner = 'createDeviceAuthorizationEndpoint()';
  assertKnownOptions(owner, options, KNOWN);
  const verificationUri =
    options.verificationUri ?? `${ctx.issuer.replace(/\/$/, '')}/device/verify`;
  let complete: URL;
  try {
    complete = new URL(verificationUri);
  } catch {
    throw invalidOption(`${owner}: \`verificationUri\` must be an absolute URL`);
  }
  if (!/^https?:$/.test(complete.protocol) || verificationUri.includes('#')) {
    throw invalidOption(`${owner}: \`verificationUri\` must be an http(s) URL without a fragment`);
  }
  const { deviceCodeTtl, devicePollInterval } = ctx.settings;

  // a full store or Redis down is `temporarily_unavailable`, in the RFC 6749 §5.2 format
  const deviceAuthorization = oauthEndpoint(async (req, res) => {
    const form = await readOAuthForm(req);
    // `resource` alone may repeat (RFC 8707 §2): the resources the grant is for
    const named = takeResources(form);
    const params = singleParams(form);
    const client = await ctx.authenticateClient(req, params);
    if (!client.grantTypes.includes(DEVICE_CODE_GRANT)) {
      throw new OAuthError('unauthorized_client', 'This client may not use the device grant.');
    }
    const scope = resolveScopes(client, params.get('scope'));
    const resources = configuredResources(ctx.resources, named);
    let userCode = generateUserCode();
    for (let tries = 1; (await deviceCodes(ctx.store).findByKey(userCode)) !== undefined; tries++) {
      if (tries === 5) throw new OAuthError('temporarily_unavailable', 'Try again.');
      userCode = generateUserCode();
    }
    const deviceCode = newOpaqueToken();
    const record: DeviceCodeRecord = {
      clientId: client.clientId,
      scope,
      userCode,
      status: 'pending',
      interval: devicePollInterval,
      grantId: randomUUID(),
      expiresAt: Date.now() + deviceCodeTtl,
      ...(resources.length > 0 && { resources }),
    };
    // kept for as long again once expired: a late poll is `expired_token`, not an unknown code
    await deviceCodes(ctx.store).save(hashToken(deviceCode), record, 2 * deviceCodeTtl);
    const shown = formatUserCode(userCode);
    const withCode = new URL(complete);
    withCode.searchParams.set('user_code', shown);
    sendJson(
      res,
      200,
      {
        device_code: deviceCode,
        user_code: shown,
        verification_uri: verificationUri,
        verification_uri_complete: withCode.href,
        // RFC 8628 counts seconds: the code is announced to end no later than it does, and
        // the interval no shorter than the one enforced
        expires_in: Math.floor(deviceCodeTtl / 1000),
        interval: Math.ceil(devicePollInterval / 1000),
      },
      { 'Content-Type': 'application/json', ...NO_STORE },
    );
  });

  return methods({ POST: deviceAuthorization });
}
