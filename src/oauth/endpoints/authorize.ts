import type { IncomingMessage, ServerResponse } from 'node:http';
import type { MethodTable } from '../../http/routing/router.js';
import { assertKnownOptions } from '../../internal/options.js';
import { targetQuery } from '../../internal/target.js';
import {
  answeredFailure,
  approve,
  authorizeErrorPage,
  consentedGrant,
  consentOrApprove,
  EXPIRED_FORM,
  redirectToClient,
  showSignIn,
} from '../authorize/answers.js';
import {
  type AuthorizationSource,
  authorizationFields,
  checkAuthorizationRequest,
  REQUEST_URI_PREFIX,
  usableSession,
} from '../authorize/request.js';
import type { OAuthContext } from '../context.js';
import {
  createFormEndpoint,
  FORM_TOKEN_FIELD,
  type FormEndpoint,
  type FormPageOptions,
  inPageLanguage,
  readPostedPageForm,
  sessionBinding,
  singleValue,
} from '../pages/form-token.js';
import { sendThrottledPage, signInFromForm } from '../pages/sign-in-form.js';
import { takePushedRequest } from './par.js';

export { appendQuery } from '../authorize/answers.js';

/**
 * Options of {@link createAuthorizeEndpoint}.
 *
 * @example
 * ```ts
 * const options: AuthorizeEndpointOptions = {
 *   formKey: process.env.FORM_KEY, // shared by every process of the issuer
 *   pages: { signIn: (data) => mySignInPage(data) },
 * };
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-4.1.1 | RFC 6749 §4.1.1}
 */
export interface AuthorizeEndpointOptions extends FormPageOptions {}

const KNOWN = [
  'pages',
  'formKey',
  'formTtl',
] as const satisfies readonly (keyof AuthorizeEndpointOptions)[];

/**
 * The authorization endpoint (RFC 6749 §4.1, OAuth 2.1) for `GET` and `POST /authorize`:
 * `response_type=code` only. The client and its redirect URI are checked first, the URI by
 * exact string comparison with a registered one; either wrong is a 400 error page, never a
 * redirect. Every later error is redirected to the client with `error`,
 * `error_description`, `state` and `iss` (RFC 9207). PKCE (RFC 7636) takes `S256` only and
 * is required of every client, confidential ones too (RFC 9700 §2.1.1, OAuth 2.1): a request
 * without `code_challenge` is redirected `invalid_request`. A signed-out user gets a sign-in
 * form, a signed-in one a consent form; approving redirects (303) with `code`, `state` and
 * `iss`, denying with `error=access_denied`.
 *
 * With the context's credential guard (the `guard` option of `createAuthorizationServer()`),
 * the sign-in form is throttled per client IP: a client that has spent its refused
 * credentials gets a 429 page with `Retry-After` before its password is checked (a right one
 * too) until the window ends, and each wrong password is counted.
 *
 * OpenID Connect's `prompt` and `max_age` (Core §3.1.2.1) are honoured: `prompt=login`, or
 * a session older than `max_age` (seconds, as the request gives it), shows the sign-in form to a signed-in user too
 * (the ID token's `auth_time` is then the new sign-in); `prompt=none` shows no page and
 * redirects `login_required` when a sign-in would be needed, else `consent_required`
 * (consents are not remembered). `none` with another value, or a `max_age` that is not a
 * number of seconds, is `invalid_request`.
 *
 * The pending request travels in the forms' hidden inputs, sealed with a form token (an
 * HMAC over the parameters, the session and the time, see `createFormTokens`) that
 * is also the CSRF token; every post is checked again from the start.
 *
 * @example
 * ```ts
 * const ctx = createOAuthContext({ issuer, clients, keys, users, sessions });
 * const routes = createRouter({ '/authorize': createAuthorizeEndpoint(ctx) });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-4.1 | RFC 6749 §4.1}
 * @see {@link https://www.rfc-editor.org/rfc/rfc7636 | RFC 7636}
 * @see {@link https://www.rfc-editor.org/rfc/rfc9700#section-2.1.1 | RFC 9700 §2.1.1}
 * @see {@link https://www.rfc-editor.org/rfc/rfc9207 | RFC 9207}
 * @see {@link https://www.rfc-editor.org/rfc/rfc9700#section-4.1 | RFC 9700 §4.1}
 * @see {@link https://openid.net/specs/openid-connect-core-1_0.html#AuthRequest | OpenID Connect Core §3.1.2.1}
 */
export function createAuthorizeEndpoint(
  ctx: OAuthContext,
  options: AuthorizeEndpointOptions = {},
): MethodTable {
  const owner = 'createAuthorizeEndpoint()';
  assertKnownOptions(owner, options, KNOWN);
  const endpoint = createFormEndpoint(owner, ctx, options);
  return {
    GET: (req, res) => authorizeGet(endpoint, req, res),
    POST: (req, res) => authorizePost(endpoint, req, res),
  };
}

/**
 * Where a form's request came from, once its form token has verified: a request taken from
 * `/par` travels with its `request_uri`, sealed with the rest.
 */
function sourceOf(form: URLSearchParams): AuthorizationSource {
  return form.has('request_uri') ? 'pushed' : 'query';
}

/** `GET /authorize`: the request in the query. */
function authorizeGet(base: FormEndpoint, req: IncomingMessage, res: ServerResponse) {
  return authorizationRequest(base, req, res, targetQuery(req.url));
}

/**
 * An authorization request, from the query of a GET or the form of a POST (OpenID Connect
 * Core §3.1.2.1: both are supported, alike): checked, then the sign-in or the consent form.
 */
async function authorizationRequest(
  base: FormEndpoint,
  req: IncomingMessage,
  res: ServerResponse,
  request: URLSearchParams,
) {
  const { ctx } = base;
  let params = request;
  // a pushed request (RFC 9126): the browser brings its request_uri, the store the request
  const pushed =
    ctx.features.pushedAuthorizationRequests &&
    params.getAll('request_uri').some((uri) => uri.startsWith(REQUEST_URI_PREFIX));
  if (pushed) {
    const taken = await takePushedRequest(ctx, params);
    if (taken.kind === 'page') {
      return authorizeErrorPage(inPageLanguage(base, req, params), res, 400, taken.message);
    }
    params = taken.params;
  }
  // the pages in the request's ui_locales, else its Accept-Language
  const endpoint = inPageLanguage(base, req, params);
  const checked = await checkAuthorizationRequest(ctx, params, pushed ? 'pushed' : 'query');
  if (answeredFailure(endpoint, res, checked)) return;
  const { pending } = checked;
  const session = usableSession(pending, await ctx.sessions.read(req));
  if (pending.prompt.has('none')) {
    // no page may be shown: a code when signed in and consented, else what is missing
    const grant = session === undefined ? undefined : await consentedGrant(ctx, pending, session);
    if (session !== undefined && grant !== undefined) {
      return approve(ctx, res, pending, session, grant);
    }
    return redirectToClient(ctx, res, pending.redirectUri, {
      ...(session === undefined
        ? { error: 'login_required', error_description: 'The user must sign in.' }
        : { error: 'consent_required', error_description: 'The user must consent.' }),
      state: pending.state,
    });
  }
  if (session === undefined) showSignIn(endpoint, res, pending, 200);
  else await consentOrApprove(endpoint, res, pending, session);
}

/**
 * `POST /authorize`: the sign-in form, the consent form's decision, or else an authorization
 * request sent as a form.
 */
async function authorizePost(base: FormEndpoint, req: IncomingMessage, res: ServerResponse) {
  const posted = await readPostedPageForm(req);
  const endpoint = inPageLanguage(base, req, 'form' in posted ? posted.form : undefined);
  if (posted.kind === 'refused') {
    return authorizeErrorPage(endpoint, res, posted.status, posted.detail, posted.headers);
  }
  if (posted.kind === 'mixed') {
    return authorizeErrorPage(endpoint, res, 400, 'The form sent is not one of these pages.');
  }
  if (posted.kind === 'neither') return authorizationRequest(base, req, res, posted.form);
  return posted.kind === 'sign-in'
    ? signInPost(endpoint, req, res, posted.form)
    : consentPost(endpoint, req, res, posted.form);
}

/** A sign-in form posted: its token, the request again, then the credentials. */
async function signInPost(
  endpoint: FormEndpoint,
  req: IncomingMessage,
  res: ServerResponse,
  form: URLSearchParams,
) {
  const { ctx, pages, tokens } = endpoint;
  const token = singleValue(form, FORM_TOKEN_FIELD);
  if (!tokens.verify('signin', '', authorizationFields(form), token)) {
    return authorizeErrorPage(endpoint, res, 400, EXPIRED_FORM);
  }
  const checked = await checkAuthorizationRequest(ctx, form, sourceOf(form));
  if (answeredFailure(endpoint, res, checked)) return;
  const outcome = await signInFromForm(ctx, req, res, form);
  if ('throttled' in outcome) {
    return sendThrottledPage(res, pages, outcome.throttled, endpoint.language);
  }
  if (!outcome.ok) {
    const { status, message, username } = outcome;
    return showSignIn(endpoint, res, checked.pending, status, message, username);
  }
  return consentOrApprove(endpoint, res, checked.pending, outcome.session);
}

/** A consent form posted: the session, its token, the request again, then the decision. */
async function consentPost(
  endpoint: FormEndpoint,
  req: IncomingMessage,
  res: ServerResponse,
  form: URLSearchParams,
) {
  const { ctx, tokens } = endpoint;
  const session = await ctx.sessions.read(req);
  if (session === undefined) {
    // the session ended while the consent page was open: nothing is decided, sign in again
    const checked = await checkAuthorizationRequest(ctx, form);
    if (answeredFailure(endpoint, res, checked)) return;
    return showSignIn(
      endpoint,
      res,
      checked.pending,
      401,
      'Your session has ended. Sign in again.',
    );
  }
  const token = singleValue(form, FORM_TOKEN_FIELD);
  if (!tokens.verify('consent', sessionBinding(session), authorizationFields(form), token)) {
    return authorizeErrorPage(endpoint, res, 400, EXPIRED_FORM);
  }
  const checked = await checkAuthorizationRequest(ctx, form, sourceOf(form));
  if (answeredFailure(endpoint, res, checked)) return;
  const decision = singleValue(form, 'decision');
  if (decision === 'approve') return approve(ctx, res, checked.pending, session);
  if (decision === 'deny') {
    return redirectToClient(ctx, res, checked.pending.redirectUri, {
      error: 'access_denied',
      error_description: 'The user denied the request.',
      state: checked.pending.state,
    });
  }
  return authorizeErrorPage(endpoint, res, 400, 'The decision must be approve or deny.');
}
