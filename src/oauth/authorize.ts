import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SessionRecord } from '../auth/session-store.js';
import { sendRedirect } from '../core/send.js';
import type { MethodTable } from '../http/router.js';
import { assertKnownOptions } from '../internal/options.js';
import type { OAuthClient } from './clients.js';
import type { OAuthContext } from './context.js';
import { OAuthError } from './errors.js';
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
import { isCodeChallenge } from './pkce.js';
import { resolveScopes } from './scope.js';
import { hashToken, newOpaqueToken } from './tokens.js';

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

/** The authorization request parameters portico reads; others are ignored (RFC 6749 §3.1). */
const PARAMS = [
  'response_type',
  'client_id',
  'redirect_uri',
  'scope',
  'state',
  'nonce',
  'code_challenge',
  'code_challenge_method',
  'response_mode',
  'prompt',
  'max_age',
] as const;

/** Longest `state` and `nonce` accepted. */
const MAX_OPAQUE = 1024;

/** `max_age`: a count of seconds, at most nine digits (some 31 years: "any sign-in"). */
const MAX_AGE = /^\d{1,9}$/;

/** A validated authorization request, waiting for the user. */
interface Pending {
  client: OAuthClient;
  redirectUri: string;
  /** True when the request named no redirect URI and the client's only one was taken. */
  redirectUriOmitted: boolean;
  scope: string[];
  state?: string;
  nonce?: string;
  codeChallenge?: string;
  /** OpenID Connect `prompt` values (`none`, `login`, …); unknown ones are ignored. */
  prompt: ReadonlySet<string>;
  /** OpenID Connect `max_age`: the user must have signed in within it, seconds. */
  maxAge?: number;
  /** The request's parameters, as the forms carry them in hidden inputs. */
  fields: FormFields;
}

type Checked =
  | { kind: 'ok'; pending: Pending }
  /** No trustworthy redirect URI: an error page, never a redirect. */
  | { kind: 'page'; message: string }
  /** An error for the client, redirected to its validated redirect URI (RFC 6749 §4.1.2.1). */
  | { kind: 'redirect'; redirectUri: string; error: OAuthError; state?: string };

/** The authorization parameters of a query or form, empty values treated as absent (§3.1). */
function requestFields(params: URLSearchParams): FormFields {
  const fields: [string, string][] = [];
  for (const name of PARAMS) {
    for (const value of params.getAll(name)) if (value !== '') fields.push([name, value]);
  }
  return fields;
}

/**
 * What is wrong with the PKCE parameters of an authorization request, if anything: every
 * client, confidential ones too, must send an S256 `code_challenge` (RFC 9700 §2.1.1, OAuth
 * 2.1 §4.1.1; the error is RFC 7636 §4.4.1's `invalid_request`).
 */
function pkceProblem(challenge: string | undefined, method: string | undefined) {
  if (challenge === undefined) {
    return method === undefined
      ? 'PKCE is required: send code_challenge with code_challenge_method=S256.'
      : 'code_challenge_method without code_challenge.';
  }
  if (method !== 'S256') return 'code_challenge_method must be S256 (plain is not supported).';
  if (!isCodeChallenge(challenge)) return 'code_challenge must be 43 base64url characters (S256).';
  return undefined;
}

/**
 * Adds `params` to a redirect URI, keeping its own query exactly as registered (RFC 6749
 * §3.1.2): the registered URI has no fragment (`defineClient` refuses one).
 *
 * @example
 * ```ts
 * appendQuery('https://app.example.com/cb?tenant=acme', { code, state, iss: issuer });
 * // 'https://app.example.com/cb?tenant=acme&code=…&state=…&iss=…'
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-3.1.2 | RFC 6749 §3.1.2}
 */
export function appendQuery(uri: string, params: Readonly<Record<string, string | undefined>>) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params))
    if (value !== undefined) query.set(name, value);
  const q = uri.indexOf('?');
  const separator = q === -1 ? '?' : uri.endsWith('?') || uri.endsWith('&') ? '' : '&';
  return `${uri}${separator}${query}`;
}

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
 * a session older than `max_age` seconds, shows the sign-in form to a signed-in user too
 * (the ID token's `auth_time` is then the new sign-in); `prompt=none` shows no page and
 * redirects `login_required` when a sign-in would be needed, else `consent_required`
 * (consents are not remembered). `none` with another value, or a `max_age` that is not a
 * number of seconds, is `invalid_request`.
 *
 * The pending request travels in the forms' hidden inputs, sealed with a form token (an
 * HMAC over the parameters, the session and the time, see {@link createFormTokens}) that
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
  assertKnownOptions(owner, options, ['pages', 'formKey', 'formTtl']);
  const pages = resolvePages(owner, options.pages);
  const tokens = createFormTokens(owner, { key: options.formKey, ttl: options.formTtl });

  /** Validates an authorization request, in the order RFC 6749 §4.1.2.1 sets. */
  async function check(params: URLSearchParams): Promise<Checked> {
    const values = (name: string) => params.getAll(name).filter((v) => v !== '');
    const ids = values('client_id');
    if (ids.length !== 1) {
      return {
        kind: 'page',
        message:
          ids.length === 0
            ? 'The request does not say which application it comes from (client_id).'
            : 'The request names its application more than once.',
      };
    }
    const client = await ctx.clients.get(ids[0]!);
    if (client === undefined) {
      return { kind: 'page', message: 'The application that sent you here is not known.' };
    }
    const uris = values('redirect_uri');
    let redirectUri: string;
    if (uris.length > 1) {
      return { kind: 'page', message: 'The request gives more than one redirect URI.' };
    } else if (uris.length === 1) {
      if (!client.redirectUris.includes(uris[0]!)) {
        return {
          kind: 'page',
          message: 'The redirect URI is not registered for this application.',
        };
      }
      redirectUri = uris[0]!;
    } else if (client.redirectUris.length === 1) {
      redirectUri = client.redirectUris[0]!;
    } else {
      return {
        kind: 'page',
        message:
          client.redirectUris.length === 0
            ? 'This application has no redirect URI to come back to.'
            : 'The request must say which redirect URI to come back to (redirect_uri).',
      };
    }

    const states = values('state');
    const state = states.length === 1 && states[0]!.length <= MAX_OPAQUE ? states[0] : undefined;
    const fail = (error: OAuthError): Checked => ({ kind: 'redirect', redirectUri, error, state });
    const invalid = (description: string) => fail(new OAuthError('invalid_request', description));
    for (const name of PARAMS) {
      if (values(name).length > 1) return invalid(`The parameter ${name} is repeated.`);
    }
    if (states.length === 1 && state === undefined) {
      return invalid(`state must be at most ${MAX_OPAQUE} characters.`);
    }
    const one = (name: string) => values(name)[0];
    const responseType = one('response_type');
    if (responseType === undefined) return invalid('response_type is required.');
    if (responseType !== 'code') {
      return fail(
        new OAuthError('unsupported_response_type', 'Only response_type=code is supported.'),
      );
    }
    const responseMode = one('response_mode');
    if (responseMode !== undefined && responseMode !== 'query') {
      return invalid('Only response_mode=query is supported.');
    }
    if (!client.grantTypes.includes('authorization_code')) {
      return fail(
        new OAuthError(
          'unauthorized_client',
          'This client may not use the authorization code grant.',
        ),
      );
    }
    let scope: string[];
    try {
      scope = resolveScopes(client, one('scope'));
    } catch (err) {
      if (err instanceof OAuthError) return fail(err);
      throw err;
    }
    const challenge = one('code_challenge');
    const method = one('code_challenge_method');
    const pkceError = pkceProblem(challenge, method);
    if (pkceError !== undefined) return invalid(pkceError);
    const nonce = one('nonce');
    if (nonce !== undefined && nonce.length > MAX_OPAQUE) {
      return invalid(`nonce must be at most ${MAX_OPAQUE} characters.`);
    }
    const prompt = new Set((one('prompt') ?? '').split(' ').filter((v) => v !== ''));
    if (prompt.has('none') && prompt.size > 1) {
      return invalid('prompt=none cannot be combined with other prompt values.');
    }
    const maxAgeText = one('max_age');
    if (maxAgeText !== undefined && !MAX_AGE.test(maxAgeText)) {
      return invalid('max_age must be a number of seconds.');
    }
    return {
      kind: 'ok',
      pending: {
        client,
        redirectUri,
        redirectUriOmitted: uris.length === 0,
        scope,
        state,
        nonce,
        codeChallenge: challenge,
        prompt,
        maxAge: maxAgeText === undefined ? undefined : Number(maxAgeText),
        fields: requestFields(params),
      },
    };
  }

  function redirect(
    res: ServerResponse,
    uri: string,
    params: Record<string, string | undefined>,
  ): void {
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Referrer-Policy', 'no-referrer');
    sendRedirect(res, 303, appendQuery(uri, { ...params, iss: ctx.issuer }));
  }

  function errorPage(
    res: ServerResponse,
    status: number,
    message: string,
    headers?: Record<string, string>,
  ): void {
    const title = status === 400 ? 'This request cannot be completed' : 'Something went wrong';
    sendPage(res, status, pages.error({ status, title, message }), { headers });
  }

  /** Answers a failed check; true when it did. */
  function answered(
    res: ServerResponse,
    checked: Checked,
  ): checked is Exclude<Checked, { kind: 'ok' }> {
    if (checked.kind === 'page') {
      errorPage(res, 400, checked.message);
      return true;
    }
    if (checked.kind === 'redirect') {
      redirect(res, checked.redirectUri, {
        error: checked.error.error,
        error_description: checked.error.message,
        state: checked.state,
      });
      return true;
    }
    return false;
  }

  const withToken = (fields: FormFields, purpose: string, binding: string): FormFields => [
    ...fields,
    [FORM_TOKEN_FIELD, tokens.issue(purpose, binding, fields)],
  ];

  function showSignIn(
    res: ServerResponse,
    pending: Pending,
    status: number,
    message?: string,
    username?: string,
  ): void {
    const html = pages.signIn({
      clientName: pending.client.name ?? pending.client.clientId,
      error: message,
      username,
      hidden: withToken(pending.fields, 'signin', ''),
    });
    sendPage(res, status, html, {
      formTargets: [pending.redirectUri],
      headers: status === 401 ? signInChallenge(ctx) : undefined,
    });
  }

  function showConsent(res: ServerResponse, pending: Pending, session: SessionRecord): void {
    const html = pages.consent({
      clientId: pending.client.clientId,
      clientName: pending.client.name ?? pending.client.clientId,
      scopes: pending.scope,
      user: { sub: session.sub, name: session.name },
      redirectUri: pending.redirectUri,
      hidden: withToken(pending.fields, 'consent', sessionBinding(session)),
    });
    sendPage(res, 200, html, { formTargets: [pending.redirectUri] });
  }

  async function approve(res: ServerResponse, pending: Pending, session: SessionRecord) {
    const code = newOpaqueToken();
    await ctx.store.saveCode(
      hashToken(code),
      {
        clientId: pending.client.clientId,
        redirectUri: pending.redirectUri,
        ...(pending.redirectUriOmitted ? { redirectUriOmitted: true } : {}),
        sub: session.sub,
        scope: pending.scope,
        codeChallenge: pending.codeChallenge,
        nonce: pending.nonce,
        authTime: Math.floor(session.createdAt / 1000),
        grantId: randomUUID(),
      },
      ctx.settings.codeTtl * 1000,
    );
    redirect(res, pending.redirectUri, { code, state: pending.state });
  }

  const expired =
    'This form has expired or was changed. Go back to the application and start again.';

  /**
   * The session, when it may answer this request without a new sign-in: `prompt=login`
   * asks for one, and `max_age` for one at most that many seconds old (OpenID Connect Core
   * §3.1.2.1).
   */
  function usableSession(pending: Pending, session: SessionRecord | undefined) {
    if (session === undefined || pending.prompt.has('login')) return undefined;
    if (pending.maxAge !== undefined && Date.now() - session.createdAt > pending.maxAge * 1000) {
      return undefined;
    }
    return session;
  }

  async function authorizeGet(req: IncomingMessage, res: ServerResponse) {
    const url = req.url ?? '';
    const q = url.indexOf('?');
    const checked = await check(new URLSearchParams(q === -1 ? '' : url.slice(q + 1)));
    if (answered(res, checked)) return;
    const { pending } = checked;
    const session = usableSession(pending, await ctx.sessions.read(req));
    if (pending.prompt.has('none')) {
      // no page may be shown: a sign-in is needed, or a consent (none is remembered)
      return redirect(res, pending.redirectUri, {
        ...(session === undefined
          ? { error: 'login_required', error_description: 'The user must sign in.' }
          : { error: 'consent_required', error_description: 'The user must consent.' }),
        state: pending.state,
      });
    }
    if (session === undefined) showSignIn(res, pending, 200);
    else showConsent(res, pending, session);
  }

  async function authorizePost(req: IncomingMessage, res: ServerResponse) {
    const form = await readPageForm(req);
    if (!(form instanceof URLSearchParams)) {
      return errorPage(res, form.status, form.detail, bodyErrorHeaders(form));
    }
    const fields = requestFields(form);
    const token = singleValue(form, FORM_TOKEN_FIELD);
    const signingIn = form.has('username') || form.has('password');
    if (signingIn === form.has('decision')) {
      return errorPage(res, 400, 'The form sent is not one of these pages.');
    }

    if (signingIn) {
      if (!tokens.verify('signin', '', fields, token)) return errorPage(res, 400, expired);
      const checked = await check(form);
      if (answered(res, checked)) return;
      const outcome = await signInFromForm(ctx, req, res, form);
      if ('throttled' in outcome) return sendThrottledPage(res, pages, outcome.throttled);
      if (!outcome.ok) {
        return showSignIn(res, checked.pending, outcome.status, outcome.message, outcome.username);
      }
      return showConsent(res, checked.pending, outcome.session);
    }

    const session = await ctx.sessions.read(req);
    if (session === undefined) {
      // the session ended while the consent page was open: nothing is decided, sign in again
      const checked = await check(form);
      if (answered(res, checked)) return;
      return showSignIn(res, checked.pending, 401, 'Your session has ended. Sign in again.');
    }
    if (!tokens.verify('consent', sessionBinding(session), fields, token)) {
      return errorPage(res, 400, expired);
    }
    const checked = await check(form);
    if (answered(res, checked)) return;
    const decision = singleValue(form, 'decision');
    if (decision === 'approve') return approve(res, checked.pending, session);
    if (decision === 'deny') {
      return redirect(res, checked.pending.redirectUri, {
        error: 'access_denied',
        error_description: 'The user denied the request.',
        state: checked.pending.state,
      });
    }
    return errorPage(res, 400, 'The decision must be approve or deny.');
  }

  return { GET: authorizeGet, POST: authorizePost };
}
