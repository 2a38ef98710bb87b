// OpenID Connect RP-Initiated Logout 1.0: the end-session endpoint. The client sends the
// browser here (GET, or a form POST) with `id_token_hint`, `client_id`,
// `post_logout_redirect_uri` and `state`; the user is asked on a page of this server (a form
// sealed to the session, so no other site can end it), the session ends, and the browser goes
// back to a URI registered for that client, never to any other.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SessionRecord } from '../../auth/session/store.js';
import type { Middleware } from '../../core/compose.js';
import type { MethodTable } from '../../http/routing/router.js';
import { assertKnownOptions, functionOption } from '../../internal/options.js';
import { targetQuery } from '../../internal/target.js';
import { authorizeErrorPage, redirectBack } from '../authorize/answers.js';
import { readIdTokenHint } from '../authorize/id-token-hint.js';
import type { OAuthClient } from '../clients/client.js';
import { ClientMetadataDocumentError } from '../clients/metadata-document.js';
import type { OAuthContext } from '../context.js';
import {
  createFormEndpoint,
  FORM_TOKEN_FIELD,
  type FormEndpoint,
  type FormPageOptions,
  inPageLanguage,
  languageField,
  readPostedPageForm,
  sessionBinding,
  singleValue,
} from '../pages/form-token.js';
import { type FormFields, sendPage } from '../pages/render.js';

/** The parameters of a logout request (RP-Initiated Logout 1.0 §2) portico reads. */
const PARAMS = ['id_token_hint', 'client_id', 'post_logout_redirect_uri', 'state'] as const;

/**
 * Options of {@link createEndSessionEndpoint}.
 *
 * @example
 * ```ts
 * const options: EndSessionEndpointOptions = { formKey: process.env.FORM_KEY };
 * ```
 */
export interface EndSessionEndpointOptions extends FormPageOptions {
  /**
   * What a `POST` carrying none of the logout parameters (no body, or a form without
   * `id_token_hint`, `client_id`, `post_logout_redirect_uri`, `state` or a decision) does
   * instead: for an application whose own sign-out API lives at the same path.
   * @defaultValue none: such a POST is a logout request like any other (the sign-out page)
   */
  withoutParameters?: Middleware;
}

const KNOWN = [
  'pages',
  'formKey',
  'formTtl',
  'withoutParameters',
] as const satisfies readonly (keyof EndSessionEndpointOptions)[];

/** Whether a request carries a body (a length above 0, or chunks). */
const hasBody = (req: IncomingMessage) =>
  (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0') ||
  req.headers['transfer-encoding'] !== undefined;

/** A logout request, checked: where to send the browser after, if anywhere. */
interface LogoutRequest {
  client?: OAuthClient;
  /** A `post_logout_redirect_uri` registered for `client`, exactly. */
  redirectUri?: string;
  state?: string;
  /** The request's parameters, as the confirmation form carries them. */
  fields: FormFields;
}

/**
 * The end-session endpoint of OpenID Connect RP-Initiated Logout 1.0, for `GET` and `POST`
 * (a form): `id_token_hint` (an ID token of this server, expired ones accepted; its `sub`
 * must be the signed-in user's for the hint to count), `client_id` (one of the token's
 * audiences when both are sent), `post_logout_redirect_uri` (compared exactly with the
 * client's `postLogoutRedirectUris`; an unregistered one is an error page, never a redirect)
 * and `state` (sent back with it). A signed-in user is always asked on a page of this server
 * (a form sealed to the session: another site cannot end it); approving ends the session
 * (`sessions.signOut`) and redirects (303) to the URI with `state`, else shows a signed-out
 * page. With nobody signed in there is nothing to end: the browser goes back at once.
 *
 * @example
 * ```ts
 * const routes = createRouter({ '/logout': createEndSessionEndpoint(ctx) });
 * // an RP: https://op.example/logout?id_token_hint=…&post_logout_redirect_uri=https%3A%2F%2Frp.example%2F&state=xyz
 * ```
 * @see {@link https://openid.net/specs/openid-connect-rpinitiated-1_0.html | OpenID Connect RP-Initiated Logout 1.0}
 */
export function createEndSessionEndpoint(
  ctx: OAuthContext,
  options: EndSessionEndpointOptions = {},
): MethodTable {
  const owner = 'createEndSessionEndpoint()';
  assertKnownOptions(owner, options, KNOWN);
  const endpoint = createFormEndpoint(owner, ctx, options);
  const withoutParameters = functionOption(owner, 'withoutParameters', options.withoutParameters);
  return {
    GET(req, res) {
      return logoutRequest(endpoint, req, res, targetQuery(req.url));
    },
    async POST(req, res, next) {
      if (withoutParameters !== undefined && !hasBody(req))
        return withoutParameters(req, res, next);
      const posted = await readPostedPageForm(req);
      const page = inPageLanguage(endpoint, req, 'form' in posted ? posted.form : undefined);
      if (posted.kind === 'refused') {
        return authorizeErrorPage(page, res, posted.status, posted.detail, posted.headers);
      }
      if (posted.kind !== 'decision' && posted.kind !== 'neither') {
        return authorizeErrorPage(page, res, 400, 'The form is not one of ours.');
      }
      if (posted.kind === 'neither') {
        const bare = PARAMS.every((name) => !posted.form.has(name));
        if (bare && withoutParameters !== undefined) return withoutParameters(req, res, next);
        return logoutRequest(endpoint, req, res, posted.form);
      }
      return logoutDecision(page, req, res, posted.form);
    },
  };
}

/** Checks a logout request: an error message for a page, or what it asks. */
async function checkLogout(
  ctx: OAuthContext,
  params: URLSearchParams,
): Promise<LogoutRequest | { error: string }> {
  for (const name of PARAMS) {
    if (params.getAll(name).length > 1) {
      return { error: 'A parameter of the sign-out request is repeated.' };
    }
  }
  const value = (name: string) => singleValue(params, name);
  const hintText = value('id_token_hint');
  const hint = hintText === undefined ? undefined : await readIdTokenHint(ctx, hintText);
  if (hintText !== undefined && hint === undefined) {
    return { error: 'The sign-out request names an ID token this server did not issue.' };
  }
  let clientId = value('client_id');
  if (clientId !== undefined && hint !== undefined && !hint.audience.includes(clientId)) {
    return { error: 'The ID token was not issued to this application.' };
  }
  if (clientId === undefined && hint?.audience.length === 1) clientId = hint.audience[0];
  let client: OAuthClient | undefined;
  try {
    client = clientId === undefined ? undefined : await ctx.clients.get(clientId);
  } catch (error) {
    // a client metadata document that cannot be used: said on the page
    if (error instanceof ClientMetadataDocumentError) return { error: error.message };
    throw error;
  }
  if (clientId !== undefined && client === undefined) {
    return { error: 'The application that sent you here is not known.' };
  }
  const redirectUri = value('post_logout_redirect_uri');
  if (redirectUri !== undefined) {
    if (client === undefined) {
      return { error: 'The sign-out request must say which application it comes from.' };
    }
    if (!(client.postLogoutRedirectUris ?? []).includes(redirectUri)) {
      return { error: 'The address to return to is not registered for this application.' };
    }
  }
  const fields: [string, string][] = [];
  for (const name of PARAMS) {
    const v = value(name);
    if (v !== undefined) fields.push([name, v]);
  }
  return { client, redirectUri, state: value('state'), fields };
}

/** A logout request: checked, then the confirmation page, or back at once if nobody is signed in. */
async function logoutRequest(
  base: FormEndpoint,
  req: IncomingMessage,
  res: ServerResponse,
  params: URLSearchParams,
): Promise<void> {
  const endpoint = inPageLanguage(base, req, params);
  const checked = await checkLogout(endpoint.ctx, params);
  if ('error' in checked) return authorizeErrorPage(endpoint, res, 400, checked.error);
  const session = await endpoint.ctx.sessions.read(req);
  if (session === undefined) return finish(endpoint, res, checked, true);
  showLogout(endpoint, res, checked, session);
}

/** The confirmation page, its form sealed to the session and the request. */
function showLogout(
  endpoint: FormEndpoint,
  res: ServerResponse,
  request: LogoutRequest,
  session: SessionRecord,
): void {
  const { pages, tokens, language = 'en' } = endpoint;
  const fields = [...request.fields, ...languageField(endpoint)];
  const html = pages.logout({
    user: { sub: session.sub, name: session.name },
    clientName:
      request.client === undefined ? undefined : (request.client.name ?? request.client.clientId),
    hidden: [
      ...fields,
      [FORM_TOKEN_FIELD, tokens.issue('logout', sessionBinding(session), fields)],
    ],
    language,
  });
  // the form's answer may redirect to the client: the page's form-action must allow it
  const formTargets = request.redirectUri === undefined ? [] : [request.redirectUri];
  sendPage(res, 200, html, { language, formTargets });
}

/** The confirmation page's answer: the session ended (or kept), then back to the client. */
async function logoutDecision(
  endpoint: FormEndpoint,
  req: IncomingMessage,
  res: ServerResponse,
  form: URLSearchParams,
): Promise<void> {
  const { ctx, tokens } = endpoint;
  const checked = await checkLogout(ctx, form);
  if ('error' in checked) return authorizeErrorPage(endpoint, res, 400, checked.error);
  const session = await ctx.sessions.read(req);
  // ended meanwhile (another tab): nothing left to decide
  if (session === undefined) return finish(endpoint, res, checked, true);
  const fields = [...checked.fields, ...languageField(endpoint)];
  const token = singleValue(form, FORM_TOKEN_FIELD);
  if (!tokens.verify('logout', sessionBinding(session), fields, token)) {
    return authorizeErrorPage(
      endpoint,
      res,
      400,
      'This form has expired or was changed. Open the page again.',
    );
  }
  const decision = singleValue(form, 'decision');
  if (decision !== 'logout' && decision !== 'stay') {
    return authorizeErrorPage(endpoint, res, 400, 'Choose Sign out or Stay signed in.');
  }
  if (decision === 'logout') await ctx.sessions.signOut(req, res);
  return finish(endpoint, res, checked, decision === 'logout');
}

/** Back to the client's registered URI with `state`, else the page saying where things stand. */
function finish(
  endpoint: FormEndpoint,
  res: ServerResponse,
  request: LogoutRequest,
  signedOut: boolean,
): void {
  if (request.redirectUri !== undefined) {
    redirectBack(res, request.redirectUri, { state: request.state });
    return;
  }
  const { pages, language = 'en' } = endpoint;
  sendPage(res, 200, pages.loggedOut({ signedOut, language }), { language });
}
