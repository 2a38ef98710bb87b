import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SessionRecord } from '../auth/session-store.js';
import type { MethodTable } from '../http/router.js';
import { assertKnownOptions, invalidOption } from '../internal/options.js';
import { MemoryStore } from '../rate-limit/memory-store.js';
import type { RateLimitStore } from '../rate-limit/store.js';
import type { OAuthContext } from './context.js';
import {
  bodyErrorHeaders,
  createFormTokens,
  FORM_TOKEN_FIELD,
  type FormFields,
  type FormPageOptions,
  readPageForm,
  resolvePages,
  sendThrottledPage,
  sessionBinding,
  signInChallenge,
  signInFromForm,
  singleValue,
} from './form-token.js';
import { sendPage } from './pages.js';
import { formatUserCode, normalizeUserCode } from './user-code.js';
import {
  createUserCodeAttempts,
  findPendingDeviceCode,
  type PendingDeviceCode,
} from './user-code-attempts.js';

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
   * Seconds over which user codes are counted, from the first one.
   * @defaultValue `900` (15 minutes)
   */
  failureWindow?: number;
  /**
   * Where user codes are counted, per user. Give a shared one (`RedisRateLimitStore`) when
   * several processes serve the page, or each process allows `maxFailures` of its own.
   * @defaultValue a new in-memory `MemoryStore`
   */
  failureStore?: RateLimitStore;
}

/** The hidden input that names the user code whose device the page showed. */
const SHOWN_FIELD = 'shown_user_code';

const BAD_CODE = 'That code is not valid or has expired. Check the code your device shows.';
const CANNOT = 'This request cannot be completed';

function positive(owner: string, name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw invalidOption(`${owner}: \`${name}\` must be a positive whole number`);
  }
  return value;
}

/** The failure store of the options, checked. */
function failureStoreOf(owner: string, store: RateLimitStore | undefined): RateLimitStore {
  const resolved = store ?? new MemoryStore({ maxKeys: 100_000 });
  if (typeof resolved?.increment !== 'function') {
    throw invalidOption(`${owner}: \`failureStore\` must be a RateLimitStore (increment)`);
  }
  return resolved;
}

/** A typed code kept to fill in again: short and printable only. */
const keepTyped = (value: string | undefined) =>
  value !== undefined && value.length <= 32 ? value : undefined;

/** What the code form shows: a typed code, or the device of a found one, and a message. */
interface CodeFormView {
  typed?: string;
  found?: PendingDeviceCode;
  message?: string;
  status?: number;
}

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
  const attempts = createUserCodeAttempts(ctx, {
    store: failureStoreOf(owner, options.failureStore),
    limit: positive(owner, 'maxFailures', options.maxFailures, 5),
    windowMs: positive(owner, 'failureWindow', options.failureWindow, 900) * 1000,
  });

  function errorPage(
    res: ServerResponse,
    status: number,
    message: string,
    headers?: Record<string, string>,
    title = CANNOT,
  ): void {
    sendPage(res, status, pages.error({ status, title, message }), { headers });
  }

  const tooMany = (res: ServerResponse, seconds: number) =>
    errorPage(
      res,
      429,
      `Too many codes tried. Wait ${Math.ceil(seconds / 60)} minute(s) and try again.`,
      { 'Retry-After': String(seconds) },
      'Too many attempts',
    );

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

  /** The code form; with a found code, its device shown and the form token bound to it. */
  async function showCodeForm(res: ServerResponse, session: SessionRecord, view: CodeFormView) {
    const record = view.found?.record;
    const fields: FormFields = record === undefined ? [] : [[SHOWN_FIELD, record.userCode]];
    const client = record === undefined ? undefined : await ctx.clients.get(record.clientId);
    const html = pages.deviceCode({
      user: { sub: session.sub, name: session.name },
      userCode: record === undefined ? view.typed : formatUserCode(record.userCode),
      clientId: record?.clientId,
      clientName: record === undefined ? undefined : (client?.name ?? record.clientId),
      scopes: record?.scope,
      error: view.message,
      hidden: [
        ...fields,
        [FORM_TOKEN_FIELD, tokens.issue('device', sessionBinding(session), fields)],
      ],
    });
    sendPage(res, view.status ?? 200, html);
  }

  /** Looks a typed code up within the user's budget, and shows its device or what went wrong. */
  async function showTyped(res: ServerResponse, session: SessionRecord, typed?: string) {
    if (typed === undefined) return showCodeForm(res, session, {});
    const outcome = await attempts.attempt(session.sub, normalizeUserCode(typed));
    if (outcome.kind === 'found') return showCodeForm(res, session, { found: outcome.found });
    if (outcome.seconds > 0) return tooMany(res, outcome.seconds);
    return showCodeForm(res, session, { typed, message: BAD_CODE });
  }

  async function record(
    res: ServerResponse,
    session: SessionRecord,
    { hash, record }: PendingDeviceCode,
    approved: boolean,
  ) {
    await ctx.store.updateDeviceCode(
      hash,
      approved
        ? {
            ...record,
            status: 'approved',
            sub: session.sub,
            authTime: Math.floor(session.createdAt / 1000),
          }
        : { ...record, status: 'denied' },
    );
    const client = await ctx.clients.get(record.clientId);
    sendPage(res, 200, pages.deviceDone({ approved, clientName: client?.name ?? record.clientId }));
  }

  /** A decision on a code: confirmed when the form showed that code, else counted first. */
  async function decide(
    res: ServerResponse,
    session: SessionRecord,
    form: URLSearchParams,
    approve: boolean,
  ) {
    const typed = keepTyped(singleValue(form, 'user_code'));
    const code = typed === undefined ? undefined : normalizeUserCode(typed);
    if (code !== undefined && code === singleValue(form, SHOWN_FIELD)) {
      const found = await findPendingDeviceCode(ctx, code);
      if (found !== undefined) return record(res, session, found, approve);
      return showCodeForm(res, session, { typed, message: BAD_CODE, status: 400 });
    }
    const outcome = await attempts.attempt(session.sub, code);
    if (outcome.kind === 'locked') return tooMany(res, outcome.seconds);
    if (outcome.kind === 'wrong') {
      if (outcome.seconds > 0) return tooMany(res, outcome.seconds);
      return showCodeForm(res, session, { typed, message: BAD_CODE, status: 400 });
    }
    // an Allow for a device the page did not show: show it, the next Allow approves
    if (approve) return showCodeForm(res, session, { found: outcome.found });
    return record(res, session, outcome.found, false);
  }

  async function verifyGet(req: IncomingMessage, res: ServerResponse) {
    const url = req.url ?? '';
    const q = url.indexOf('?');
    const query = new URLSearchParams(q === -1 ? '' : url.slice(q + 1));
    const typed = keepTyped(singleValue(query, 'user_code'));
    const session = await ctx.sessions.read(req);
    if (session === undefined) return showSignIn(res, 200, typed);
    return showTyped(res, session, typed);
  }

  async function signInPost(req: IncomingMessage, res: ServerResponse, form: URLSearchParams) {
    const fields: FormFields = form.getAll('user_code').map((v) => ['user_code', v] as const);
    const typed = keepTyped(singleValue(form, 'user_code'));
    if (!tokens.verify('device-signin', '', fields, singleValue(form, FORM_TOKEN_FIELD))) {
      return expired(res);
    }
    const outcome = await signInFromForm(ctx, req, res, form);
    if ('throttled' in outcome) return sendThrottledPage(res, pages, outcome.throttled);
    if (!outcome.ok) {
      return showSignIn(res, outcome.status, typed, outcome.message, outcome.username);
    }
    return showTyped(res, outcome.session, typed);
  }

  async function decisionPost(req: IncomingMessage, res: ServerResponse, form: URLSearchParams) {
    const session = await ctx.sessions.read(req);
    if (session === undefined) {
      const typed = keepTyped(singleValue(form, 'user_code'));
      return showSignIn(res, 401, typed, 'Your session has ended. Sign in again.');
    }
    const shown: FormFields = form.getAll(SHOWN_FIELD).map((v) => [SHOWN_FIELD, v] as const);
    const token = singleValue(form, FORM_TOKEN_FIELD);
    if (!tokens.verify('device', sessionBinding(session), shown, token)) return expired(res);
    const decision = singleValue(form, 'decision');
    if (decision !== 'approve' && decision !== 'deny') {
      return errorPage(res, 400, 'Choose Allow or Deny.');
    }
    return decide(res, session, form, decision === 'approve');
  }

  const expired = (res: ServerResponse) =>
    errorPage(res, 400, 'This form has expired or was changed. Open the page again.');

  async function verifyPost(req: IncomingMessage, res: ServerResponse) {
    const form = await readPageForm(req);
    if (!(form instanceof URLSearchParams)) {
      return errorPage(res, form.status, form.detail, bodyErrorHeaders(form));
    }
    const signingIn = form.has('username') || form.has('password');
    if (signingIn === form.has('decision')) {
      return errorPage(res, 400, 'The form is not one of ours.');
    }
    return signingIn ? signInPost(req, res, form) : decisionPost(req, res, form);
  }

  return { GET: verifyGet, POST: verifyPost };
}
