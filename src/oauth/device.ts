import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SessionRecord } from '../auth/session-store.js';
import type { Middleware } from '../core/compose.js';
import { sendJson } from '../core/send.js';
import { type MethodTable, methods } from '../http/router.js';
import { assertKnownOptions, invalidOption } from '../internal/options.js';
import { MemoryStore } from '../rate-limit/memory-store.js';
import type { RateLimitStore } from '../rate-limit/store.js';
import { singleParams } from './client-auth.js';
import type { OAuthContext } from './context.js';
import { NO_STORE, OAuthError, sendOAuthError } from './errors.js';
import { readOAuthForm } from './form.js';
import {
  bodyErrorHeaders,
  createFormTokens,
  FORM_TOKEN_FIELD,
  type FormFields,
  type FormPageOptions,
  readPageForm,
  resolvePages,
  sessionBinding,
  signInChallenge,
  signInFromForm,
  singleValue,
} from './form-token.js';
import { DEVICE_CODE_GRANT } from './grants/device-code.js';
import { sendPage } from './pages.js';
import { resolveScopes } from './scope.js';
import { type DeviceCodeRecord, isDeviceCodeExpired } from './store.js';
import { hashToken, newOpaqueToken } from './tokens.js';

/**
 * The characters of user codes: consonants only (no vowels, so no words; no 0/O or 1/I
 * confusion), as RFC 8628 §6.1 suggests. 20⁸ ≈ 2.6 × 10¹⁰ codes.
 *
 * @example
 * ```ts
 * /^[BCDFGHJKLMNPQRSTVWXZ]{8}$/.test(generateUserCode()); // true: USER_CODE_ALPHABET only
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8628#section-6.1 | RFC 8628 §6.1}
 */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
const USER_CODE_LENGTH = 8;
const USER_CODE_SHAPE = new RegExp(`^[${USER_CODE_ALPHABET}]{${USER_CODE_LENGTH}}$`);
/** Bytes at or above this are dropped, so that `byte % 20` is uniform. */
const SAMPLE_LIMIT = 256 - (256 % USER_CODE_ALPHABET.length);

/**
 * A new user code: 8 characters of {@link USER_CODE_ALPHABET}, each uniform (rejection
 * sampling on `randomBytes`), in normalised form (no dash).
 *
 * @example
 * ```ts
 * formatUserCode(generateUserCode()); // 'WDJB-MJHT'
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8628#section-6.1 | RFC 8628 §6.1}
 */
export function generateUserCode(): string {
  let code = '';
  while (code.length < USER_CODE_LENGTH) {
    for (const byte of randomBytes(16)) {
      if (byte >= SAMPLE_LIMIT) continue;
      code += USER_CODE_ALPHABET[byte % USER_CODE_ALPHABET.length];
      if (code.length === USER_CODE_LENGTH) break;
    }
  }
  return code;
}

/**
 * A user code as typed (any case, dashes and spaces anywhere) in normalised form, or
 * `undefined` when it cannot be one.
 *
 * @example
 * ```ts
 * normalizeUserCode('wdjb-mjht'); // 'WDJBMJHT'
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8628#section-6.1 | RFC 8628 §6.1}
 */
export function normalizeUserCode(input: string): string | undefined {
  if (typeof input !== 'string' || input.length > 64) return undefined;
  const code = input.replace(/[\s-]/g, '').toUpperCase();
  return USER_CODE_SHAPE.test(code) ? code : undefined;
}

/**
 * A normalised user code as shown to people: `XXXX-XXXX`.
 *
 * @example
 * ```ts
 * formatUserCode('WDJBMJHT'); // 'WDJB-MJHT'
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8628#section-6.1 | RFC 8628 §6.1}
 */
export function formatUserCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

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

/**
 * The device authorization endpoint (RFC 8628 §3.1–3.2) for `POST /device`: authenticates
 * the client (public clients by `client_id`), which must have the device grant, resolves
 * the scope, and answers `device_code` (256 random bits, stored only as a hash),
 * `user_code` (`XXXX-XXXX`), `verification_uri`, `verification_uri_complete`, `expires_in`
 * and `interval`. Errors are RFC 6749 §5.2 JSON. The store keeps the record for as long
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
  assertKnownOptions(owner, options, ['verificationUri']);
  const verificationUri =
    options.verificationUri ?? `${ctx.issuer.replace(/\/$/, '')}/device/verify`;
  let complete: URL;
  try {
    complete = new URL(verificationUri);
  } catch {
    throw invalidOption(`${owner}: \`verificationUri\` must be an absolute URL`);
  }
  if (!/^https?:$/.test(complete.protocol) || complete.hash !== '') {
    throw invalidOption(`${owner}: \`verificationUri\` must be an http(s) URL without a fragment`);
  }
  const { deviceCodeTtl, devicePollInterval } = ctx.settings;

  async function deviceAuthorization(req: IncomingMessage, res: ServerResponse) {
    try {
      const params = singleParams(await readOAuthForm(req));
      const client = await ctx.authenticateClient(req, params);
      if (!client.grantTypes.includes(DEVICE_CODE_GRANT)) {
        throw new OAuthError('unauthorized_client', 'This client may not use the device grant.');
      }
      const scope = resolveScopes(client, params.get('scope'));
      let userCode = generateUserCode();
      for (let tries = 1; (await ctx.store.findDeviceCode(userCode)) !== undefined; tries++) {
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
        expiresAt: Date.now() + deviceCodeTtl * 1000,
      };
      // kept for as long again once expired: a late poll is `expired_token`, not an unknown code
      await ctx.store.saveDeviceCode(hashToken(deviceCode), record, 2 * deviceCodeTtl * 1000);
      const shown = formatUserCode(userCode);
      const withCode = new URL(complete);
      withCode.searchParams.set('user_code', shown);
      res.setHeader('Content-Type', 'application/json');
      sendJson(
        res,
        200,
        {
          device_code: deviceCode,
          user_code: shown,
          verification_uri: verificationUri,
          verification_uri_complete: withCode.href,
          expires_in: deviceCodeTtl,
          interval: devicePollInterval,
        },
        NO_STORE,
      );
    } catch (err) {
      if (err instanceof OAuthError) return sendOAuthError(res, err);
      throw err;
    }
  }

  return methods({ POST: deviceAuthorization });
}

/**
 * Options of {@link createDeviceVerificationEndpoint}.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc8628#section-3.3 | RFC 8628 §3.3}
 */
export interface DeviceVerificationOptions extends FormPageOptions {
  /**
   * Wrong user codes a user may enter within `failureWindow` before the page answers 429
   * (RFC 8628 §5.1: user codes have little entropy, so guessing must be limited).
   * @defaultValue `5`
   */
  maxFailures?: number;
  /**
   * Seconds over which wrong user codes are counted, from the first one.
   * @defaultValue `900` (15 minutes)
   */
  failureWindow?: number;
  /**
   * Where wrong user codes are counted, per user. Give a shared one (`RedisRateLimitStore`)
   * when several processes serve the page, or each process allows `maxFailures` of its own.
   * It must implement `peek`.
   * @defaultValue a new in-memory `MemoryStore`
   */
  failureStore?: RateLimitStore;
}

function positive(owner: string, name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw invalidOption(`${owner}: \`${name}\` must be a positive whole number`);
  }
  return value;
}

const BAD_CODE = 'That code is not valid or has expired. Check the code your device shows.';

/**
 * The page behind `verification_uri` (RFC 8628 §3.3) for `GET` and `POST /device/verify`:
 * a sign-in form when signed out, then a form with the `user_code` (filled in from
 * `verification_uri_complete`) and Allow/Deny buttons. Codes are accepted in any case,
 * with or without the dash. Wrong codes are counted per user, and past `maxFailures`
 * within `failureWindow` the page answers 429 with `Retry-After` (§5.1).
 *
 * @example
 * ```ts
 * const routes = createRouter({ '/device/verify': createDeviceVerificationEndpoint(ctx) });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8628#section-3.3 | RFC 8628 §3.3}
 * @see {@link https://www.rfc-editor.org/rfc/rfc8628#section-5.1 | RFC 8628 §5.1}
 */
export function createDeviceVerificationEndpoint(
  ctx: OAuthContext,
  options: DeviceVerificationOptions = {},
): MethodTable {
  const owner = 'createDeviceVerificationEndpoint()';
  assertKnownOptions(owner, options, [
    'pages',
    'formKey',
    'formTtl',
    'maxFailures',
    'failureWindow',
    'failureStore',
  ]);
  const pages = resolvePages(owner, options.pages);
  const tokens = createFormTokens(owner, { key: options.formKey, ttl: options.formTtl });
  const maxFailures = positive(owner, 'maxFailures', options.maxFailures, 5);
  const windowMs = positive(owner, 'failureWindow', options.failureWindow, 900) * 1000;
  /** Wrong codes per user (`sub`), counted from the first in the window. */
  const failures = options.failureStore ?? new MemoryStore({ maxKeys: 100_000 });
  if (typeof failures.increment !== 'function' || typeof failures.peek !== 'function') {
    throw invalidOption(`${owner}: \`failureStore\` must implement increment and peek`);
  }
  const keyOf = (sub: string) => `device-user-code:${sub}`;
  const secondsUntil = (resetAt: number) => Math.max(1, Math.ceil((resetAt - Date.now()) / 1000));

  /** Seconds until the user may try again, or 0 when not locked out. */
  async function lockedFor(sub: string): Promise<number> {
    const hit = await failures.peek!(keyOf(sub));
    return hit === undefined || hit.count < maxFailures ? 0 : secondsUntil(hit.resetAt);
  }

  /** Counts a wrong code; the seconds of lockout it leads to, or 0. */
  async function countFailure(sub: string): Promise<number> {
    const hit = await failures.increment(keyOf(sub), windowMs);
    return hit.count < maxFailures ? 0 : secondsUntil(hit.resetAt);
  }

  function errorPage(
    res: ServerResponse,
    status: number,
    title: string,
    message: string,
    headers?: Record<string, string>,
  ): void {
    sendPage(res, status, pages.error({ status, title, message }), { headers });
  }

  const tooMany = (res: ServerResponse, seconds: number) =>
    errorPage(
      res,
      429,
      'Too many attempts',
      `Too many wrong codes. Wait ${Math.ceil(seconds / 60)} minute(s) and try again.`,
      { 'Retry-After': String(seconds) },
    );

  /** A typed code kept to fill in again: short and printable only. */
  const keepTyped = (value: string | undefined) =>
    value !== undefined && value.length <= 32 ? value : undefined;

  function showSignIn(
    res: ServerResponse,
    status: number,
    userCode: string | undefined,
    message?: string,
    username?: string,
  ): void {
    const fields: FormFields = userCode === undefined ? [] : [['user_code', userCode]];
    const html = pages.signIn({
      error: message,
      username,
      hidden: [...fields, [FORM_TOKEN_FIELD, tokens.issue('device-signin', '', fields)]],
    });
    sendPage(res, status, html, { headers: status === 401 ? signInChallenge(ctx) : undefined });
  }

  /** The code form; a filled-in code is looked up to show who asks (and counted if wrong). */
  async function showCodeForm(
    res: ServerResponse,
    session: SessionRecord,
    typed: string | undefined,
    status = 200,
    message?: string,
  ): Promise<void> {
    let clientName: string | undefined;
    let scopes: readonly string[] | undefined;
    if (typed !== undefined && message === undefined) {
      const wait = await lockedFor(session.sub);
      if (wait > 0) return tooMany(res, wait);
      const code = normalizeUserCode(typed);
      const found = code === undefined ? undefined : await ctx.store.findDeviceCode(code);
      if (found?.record.status === 'pending' && !isDeviceCodeExpired(found.record)) {
        const client = await ctx.clients.get(found.record.clientId);
        clientName = client?.name ?? found.record.clientId;
        scopes = found.record.scope;
      } else {
        await countFailure(session.sub);
        message = BAD_CODE;
      }
    }
    const html = pages.deviceCode({
      user: { sub: session.sub, name: session.name },
      userCode: typed,
      clientName,
      scopes,
      error: message,
      hidden: [[FORM_TOKEN_FIELD, tokens.issue('device', sessionBinding(session), [])]],
    });
    sendPage(res, status, html);
  }

  async function verifyGet(req: IncomingMessage, res: ServerResponse) {
    const url = req.url ?? '';
    const q = url.indexOf('?');
    const query = new URLSearchParams(q === -1 ? '' : url.slice(q + 1));
    const typed = keepTyped(singleValue(query, 'user_code'));
    const session = await ctx.sessions.read(req);
    if (session === undefined) return showSignIn(res, 200, typed);
    return showCodeForm(res, session, typed);
  }

  async function verifyPost(req: IncomingMessage, res: ServerResponse) {
    const form = await readPageForm(req);
    if (!(form instanceof URLSearchParams)) {
      return errorPage(
        res,
        form.status,
        'This request cannot be completed',
        form.detail,
        bodyErrorHeaders(form),
      );
    }
    const signingIn = form.has('username') || form.has('password');
    if (signingIn === form.has('decision')) {
      return errorPage(
        res,
        400,
        'This request cannot be completed',
        'The form is not one of ours.',
      );
    }
    const token = singleValue(form, FORM_TOKEN_FIELD);
    const typed = keepTyped(singleValue(form, 'user_code'));
    const expired = () =>
      errorPage(
        res,
        400,
        'This request cannot be completed',
        'This form has expired or was changed. Open the page again.',
      );

    if (signingIn) {
      const fields: FormFields = form.getAll('user_code').map((v) => ['user_code', v] as const);
      if (!tokens.verify('device-signin', '', fields, token)) return expired();
      const outcome = await signInFromForm(ctx, req, res, form);
      if (!outcome.ok) {
        return showSignIn(res, outcome.status, typed, outcome.message, outcome.username);
      }
      return showCodeForm(res, outcome.session, typed);
    }

    const session = await ctx.sessions.read(req);
    if (session === undefined) {
      return showSignIn(res, 401, typed, 'Your session has ended. Sign in again.');
    }
    if (!tokens.verify('device', sessionBinding(session), [], token)) return expired();
    const decision = singleValue(form, 'decision');
    if (decision !== 'approve' && decision !== 'deny') {
      return errorPage(res, 400, 'This request cannot be completed', 'Choose Allow or Deny.');
    }
    const wait = await lockedFor(session.sub);
    if (wait > 0) return tooMany(res, wait);
    const code = typed === undefined ? undefined : normalizeUserCode(typed);
    const found = code === undefined ? undefined : await ctx.store.findDeviceCode(code);
    if (
      found === undefined ||
      found.record.status !== 'pending' ||
      isDeviceCodeExpired(found.record)
    ) {
      const now = await countFailure(session.sub);
      if (now > 0) return tooMany(res, now);
      return showCodeForm(res, session, typed, 400, BAD_CODE);
    }
    const approved = decision === 'approve';
    await ctx.store.updateDeviceCode(
      found.hash,
      approved
        ? {
            ...found.record,
            status: 'approved',
            sub: session.sub,
            authTime: Math.floor(session.createdAt / 1000),
          }
        : { ...found.record, status: 'denied' },
    );
    const client = await ctx.clients.get(found.record.clientId);
    sendPage(
      res,
      200,
      pages.deviceDone({ approved, clientName: client?.name ?? found.record.clientId }),
    );
  }

  return { GET: verifyGet, POST: verifyPost };
}
