import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SessionRecord } from '../../auth/session/store.js';
import type { Duration } from '../../core/duration.js';
import type { MethodTable } from '../../http/routing/router.js';
import {
  assertKnownOptions,
  countOption,
  durationOption,
  invalidOption,
} from '../../internal/options.js';
import { targetQuery } from '../../internal/target.js';
import { MemoryRateLimitStore } from '../../rate-limit/memory-store.js';
import type { RateLimitStore } from '../../rate-limit/store.js';
import type { OAuthContext } from '../context.js';
import {
  BAD_CODE,
  type DeviceVerifier,
  deviceErrorPage,
  expiredForm,
  recordDecision,
  SHOWN_FIELD,
  showCodeForm,
  showDeviceSignIn,
  tooManyCodes,
} from '../pages/device-verify.js';
import {
  createFormEndpoint,
  FORM_TOKEN_FIELD,
  type FormPageOptions,
  inPageLanguage,
  readPostedPageForm,
  sessionBinding,
  singleValue,
} from '../pages/form-token.js';
import type { FormFields } from '../pages/render.js';
import { sendThrottledPage, signInFromForm } from '../pages/sign-in-form.js';
import { createUserCodeAttempts, findPendingDeviceCode } from '../user-codes/attempts.js';
import { normalizeUserCode } from '../user-codes/format.js';

/**
 * Options of {@link createDeviceVerificationEndpoint}.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc8628#section-3.3 | RFC 8628 §3.3}
 */
export interface DeviceVerificationOptions extends FormPageOptions {
  /**
   * User codes a user may try within `failureWindow` before the page answers 429 (RFC 8628
   * §5.1: user codes have little entropy, so guessing must be limited). Every code typed or
   * given in the page's URL counts, a right one too: it is counted before it is looked up.
   * @defaultValue `5`
   */
  maxFailures?: number;
  /**
   * How long user codes are counted, from the first one, in milliseconds (at least `1_000`).
   * @defaultValue `900_000` (15 minutes)
   */
  failureWindow?: Duration;
  /**
   * Where user codes are counted, per user. Give a shared one (`RedisRateLimitStore`) when
   * several processes serve the page, or each process allows `maxFailures` of its own.
   * @defaultValue a new in-memory `MemoryRateLimitStore`
   */
  failureStore?: RateLimitStore;
}

const KNOWN = [
  'pages',
  'formKey',
  'formTtl',
  'maxFailures',
  'failureWindow',
  'failureStore',
] as const satisfies readonly (keyof DeviceVerificationOptions)[];

/** The failure store of the options, checked. */
function failureStoreOf(owner: string, store: RateLimitStore | undefined): RateLimitStore {
  const resolved = store ?? new MemoryRateLimitStore({ maxKeys: 100_000 });
  if (typeof resolved?.increment !== 'function') {
    throw invalidOption(`${owner}: \`failureStore\` must be a RateLimitStore (increment)`);
  }
  return resolved;
}

/** A typed code kept to fill in again: short and printable only. */
const keepTyped = (value: string | undefined) =>
  value !== undefined && value.length <= 32 ? value : undefined;

/**
 * The page behind `verification_uri` (RFC 8628 §3.3) for `GET` and `POST /device/verify`:
 * a sign-in form when signed out, then a form with the `user_code` and Allow/Deny buttons
 * (`decision` = `approve` or `deny`). Codes are accepted in any case, with or without the dash.
 *
 * The user approves only what the page showed (§5.4): when the page knows the code (from
 * `verification_uri_complete`, or typed), it names the device's client and lists the scopes,
 * and its form token is bound to that code. An Allow posted for a code the form did not show
 * answers that confirmation page instead of approving; the Allow on it approves. Deny needs no
 * confirmation.
 *
 * Each code looked up counts against the user's `maxFailures` per `failureWindow`, counted
 * BEFORE the lookup (one atomic `increment` of `failureStore`), a right code included; past
 * it the page answers 429 with `Retry-After` without looking the code up (§5.1). The Allow of
 * a confirmation page is not counted again: its code was counted when the page was shown.
 * With the context's credential guard, the sign-in form is throttled per client IP as at the
 * authorization endpoint.
 *
 * @example
 * ```ts
 * const routes = createRouter({ '/device/verify': createDeviceVerificationEndpoint(ctx) });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8628#section-3.3 | RFC 8628 §3.3}
 * @see {@link https://www.rfc-editor.org/rfc/rfc8628#section-5.1 | RFC 8628 §5.1}
 * @see {@link https://www.rfc-editor.org/rfc/rfc8628#section-5.4 | RFC 8628 §5.4}
 */
export function createDeviceVerificationEndpoint(
  ctx: OAuthContext,
  options: DeviceVerificationOptions = {},
): MethodTable {
  const owner = 'createDeviceVerificationEndpoint()';
  assertKnownOptions(owner, options, KNOWN);
  const endpoint = createFormEndpoint(owner, ctx, options);
  const attempts = createUserCodeAttempts(ctx, {
    store: failureStoreOf(owner, options.failureStore),
    limit: countOption(owner, 'maxFailures', options.maxFailures, 5),
    windowMs: durationOption(owner, 'failureWindow', options.failureWindow, 900_000, {
      min: 1_000,
    }),
  });
  const verifier: DeviceVerifier = { ...endpoint, attempts };
  return {
    GET: (req, res) => verifyGet(verifier, req, res),
    POST: (req, res) => verifyPost(verifier, req, res),
  };
}

/** `GET /device/verify`: the sign-in form, else the code form (with the URL's code looked up). */
async function verifyGet(base: DeviceVerifier, req: IncomingMessage, res: ServerResponse) {
  const query = targetQuery(req.url);
  const verifier = inPageLanguage(base, req, query);
  const typed = keepTyped(singleValue(query, 'user_code'));
  const session = await verifier.ctx.sessions.read(req);
  if (session === undefined) return showDeviceSignIn(verifier, res, 200, typed);
  return showTyped(verifier, res, session, typed);
}

/** `POST /device/verify`: the sign-in form, or a decision on a code. */
async function verifyPost(base: DeviceVerifier, req: IncomingMessage, res: ServerResponse) {
  const posted = await readPostedPageForm(req);
  const verifier = inPageLanguage(base, req, 'form' in posted ? posted.form : undefined);
  if (posted.kind === 'refused') {
    return deviceErrorPage(verifier, res, posted.status, posted.detail, posted.headers);
  }
  if (posted.kind === 'mixed' || posted.kind === 'neither') {
    return deviceErrorPage(verifier, res, 400, 'The form is not one of ours.');
  }
  return posted.kind === 'sign-in'
    ? signInPost(verifier, req, res, posted.form)
    : decisionPost(verifier, req, res, posted.form);
}

/** Looks a typed code up within the user's budget, and shows its device or what went wrong. */
async function showTyped(
  verifier: DeviceVerifier,
  res: ServerResponse,
  session: SessionRecord,
  typed?: string,
) {
  if (typed === undefined) return showCodeForm(verifier, res, session, {});
  const outcome = await verifier.attempts.attempt(session.sub, normalizeUserCode(typed));
  if (outcome.kind === 'found') {
    return showCodeForm(verifier, res, session, { found: outcome.found });
  }
  if (outcome.seconds > 0) return tooManyCodes(verifier, res, outcome.seconds);
  return showCodeForm(verifier, res, session, { typed, message: BAD_CODE });
}

/** A sign-in form posted: its token, the credentials, then the code it carried. */
async function signInPost(
  verifier: DeviceVerifier,
  req: IncomingMessage,
  res: ServerResponse,
  form: URLSearchParams,
) {
  const fields: FormFields = form.getAll('user_code').map((v) => ['user_code', v] as const);
  const typed = keepTyped(singleValue(form, 'user_code'));
  const token = singleValue(form, FORM_TOKEN_FIELD);
  if (!verifier.tokens.verify('device-signin', '', fields, token)) {
    return expiredForm(verifier, res);
  }
  const outcome = await signInFromForm(verifier.ctx, req, res, form);
  if ('throttled' in outcome) {
    return sendThrottledPage(res, verifier.pages, outcome.throttled, verifier.language);
  }
  if (!outcome.ok) {
    const { status, message, username } = outcome;
    return showDeviceSignIn(verifier, res, status, typed, message, username);
  }
  return showTyped(verifier, res, outcome.session, typed);
}

/** A decision posted: the session, the form's token (bound to the code shown), the decision. */
async function decisionPost(
  verifier: DeviceVerifier,
  req: IncomingMessage,
  res: ServerResponse,
  form: URLSearchParams,
) {
  const session = await verifier.ctx.sessions.read(req);
  if (session === undefined) {
    const typed = keepTyped(singleValue(form, 'user_code'));
    return showDeviceSignIn(verifier, res, 401, typed, 'Your session has ended. Sign in again.');
  }
  const shown: FormFields = form.getAll(SHOWN_FIELD).map((v) => [SHOWN_FIELD, v] as const);
  const token = singleValue(form, FORM_TOKEN_FIELD);
  if (!verifier.tokens.verify('device', sessionBinding(session), shown, token)) {
    return expiredForm(verifier, res);
  }
  const decision = singleValue(form, 'decision');
  if (decision !== 'approve' && decision !== 'deny') {
    return deviceErrorPage(verifier, res, 400, 'Choose Allow or Deny.');
  }
  return decide(verifier, res, session, form, decision === 'approve');
}

/** A decision on a code: confirmed when the form showed that code, else counted first. */
async function decide(
  verifier: DeviceVerifier,
  res: ServerResponse,
  session: SessionRecord,
  form: URLSearchParams,
  approve: boolean,
) {
  const typed = keepTyped(singleValue(form, 'user_code'));
  const code = typed === undefined ? undefined : normalizeUserCode(typed);
  if (code !== undefined && code === singleValue(form, SHOWN_FIELD)) {
    const found = await findPendingDeviceCode(verifier.ctx, code);
    if (found !== undefined) return recordDecision(verifier, res, session, found, approve);
    return showCodeForm(verifier, res, session, { typed, message: BAD_CODE, status: 400 });
  }
  const outcome = await verifier.attempts.attempt(session.sub, code);
  if (outcome.kind === 'locked') return tooManyCodes(verifier, res, outcome.seconds);
  if (outcome.kind === 'wrong') {
    if (outcome.seconds > 0) return tooManyCodes(verifier, res, outcome.seconds);
    return showCodeForm(verifier, res, session, { typed, message: BAD_CODE, status: 400 });
  }
  // an Allow for a device the page did not show: show it, the next Allow approves
  if (approve) return showCodeForm(verifier, res, session, { found: outcome.found });
  return recordDecision(verifier, res, session, outcome.found, false);
}
