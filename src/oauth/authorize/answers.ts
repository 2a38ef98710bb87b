// The answers of `/authorize`: the redirects to the client, the error page, the sign-in and
// consent forms, and the code an approval issues.
import type { ServerResponse } from 'node:http';
import type { SessionRecord } from '../../auth/session/store.js';
import { sendRedirect } from '../../core/send.js';
import { isConfidential } from '../clients/client.js';
import { approveGrant, rememberedGrant } from '../consents.js';
import type { OAuthContext } from '../context.js';
import { FORM_TOKEN_FIELD, type FormEndpoint, sessionBinding } from '../pages/form-token.js';
import { localizeMessage } from '../pages/messages.js';
import { type FormFields, sendPage } from '../pages/render.js';
import { signInChallenge } from '../pages/sign-in-form.js';
import { codes, type GrantRecord } from '../store/records.js';
import { hashToken, newOpaqueToken } from '../tokens/issue.js';
import type { CheckedAuthorization, PendingAuthorization } from './request.js';

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
  if (query.size === 0) return uri;
  const q = uri.indexOf('?');
  const separator = q === -1 ? '?' : uri.endsWith('?') || uri.endsWith('&') ? '' : '&';
  return `${uri}${separator}${query}`;
}

/** The page of a form that expired or was changed. */
export const EXPIRED_FORM =
  'This form has expired or was changed. Go back to the application and start again.';

/** A 303 to the client's redirect URI, with `params` and `iss` (RFC 9207). */
export function redirectToClient(
  ctx: OAuthContext,
  res: ServerResponse,
  uri: string,
  params: Record<string, string | undefined>,
): void {
  redirectBack(res, uri, { ...params, iss: ctx.issuer });
}

/**
 * A 303 to a URI of a client with `params` added: never cached, and no `Referer` carrying
 * this server's URL (and its query) to the client.
 */
export function redirectBack(
  res: ServerResponse,
  uri: string,
  params: Readonly<Record<string, string | undefined>>,
): void {
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Referrer-Policy', 'no-referrer');
  sendRedirect(res, 303, appendQuery(uri, params));
}

/** An error page of the endpoint's `pages.error`, in the endpoint's language. */
export function authorizeErrorPage(
  endpoint: FormEndpoint,
  res: ServerResponse,
  status: number,
  message: string,
  headers?: Record<string, string>,
): void {
  const { language = 'en' } = endpoint;
  const title = localizeMessage(
    language,
    status === 400 ? 'This request cannot be completed' : 'Something went wrong',
  );
  const data = { status, title, message: localizeMessage(language, message), language };
  sendPage(res, status, endpoint.pages.error(data), { headers, language });
}

/** Answers a failed check (an error page, or an error redirected to the client); true when it did. */
export function answeredFailure(
  endpoint: FormEndpoint,
  res: ServerResponse,
  checked: CheckedAuthorization,
): checked is Exclude<CheckedAuthorization, { kind: 'ok' }> {
  if (checked.kind === 'page') {
    authorizeErrorPage(endpoint, res, 400, checked.message);
    return true;
  }
  if (checked.kind === 'redirect') {
    redirectToClient(endpoint.ctx, res, checked.redirectUri, {
      error: checked.error.error,
      error_description: checked.error.message,
      state: checked.state,
    });
    return true;
  }
  return false;
}

/** The pending request's fields and the token that seals them, for `purpose` and `binding`. */
function sealed(
  endpoint: FormEndpoint,
  fields: FormFields,
  purpose: string,
  binding: string,
): FormFields {
  return [...fields, [FORM_TOKEN_FIELD, endpoint.tokens.issue(purpose, binding, fields)]];
}

/**
 * Where a sign-in elsewhere returns to: this endpoint's path with the pending request's
 * parameters (a pushed request's resolved ones: its `request_uri` was used once already).
 */
function pendingRequestPath(res: ServerResponse, pending: PendingAuthorization): string {
  const path = new URL(res.req?.url ?? '/', 'http://x').pathname;
  const query = new URLSearchParams();
  for (const [name, value] of pending.fields) if (name !== 'request_uri') query.append(name, value);
  return `${path}?${query}`;
}

/** The sign-in form, the pending request in its hidden inputs. */
export function showSignIn(
  endpoint: FormEndpoint,
  res: ServerResponse,
  pending: PendingAuthorization,
  status: number,
  message?: string,
  username?: string,
): void {
  const { language = 'en' } = endpoint;
  const html = endpoint.pages.signIn({
    clientName: pending.client.name ?? pending.client.clientId,
    unverified: (pending.client.provenance ?? 'configured') !== 'configured',
    error: message === undefined ? undefined : localizeMessage(language, message),
    username,
    hidden: sealed(endpoint, pending.fields, 'signin', ''),
    links: endpoint.ctx.signInLinks(pendingRequestPath(res, pending)),
    language,
  });
  sendPage(res, status, html, {
    language,
    formTargets: [pending.redirectUri],
    headers: status === 401 ? signInChallenge(endpoint.ctx) : undefined,
  });
}

/** The consent form of a signed-in user, its token bound to the session. */
export function showConsent(
  endpoint: FormEndpoint,
  res: ServerResponse,
  pending: PendingAuthorization,
  session: SessionRecord,
): void {
  const html = endpoint.pages.consent({
    clientId: pending.client.clientId,
    clientName: pending.client.name ?? pending.client.clientId,
    unverified: (pending.client.provenance ?? 'configured') !== 'configured',
    scopes: pending.scope,
    user: { sub: session.sub, name: session.name },
    redirectUri: pending.redirectUri,
    hidden: sealed(endpoint, pending.fields, 'consent', sessionBinding(session)),
    language: endpoint.language ?? 'en',
  });
  sendPage(res, 200, html, {
    formTargets: [pending.redirectUri],
    language: endpoint.language ?? 'en',
  });
}

/**
 * A signed-in user's answer to a request: the code at once when the user already consented to
 * every scope it asks for (unless `prompt=consent` asks again), else the consent form.
 */
export async function consentOrApprove(
  endpoint: FormEndpoint,
  res: ServerResponse,
  pending: PendingAuthorization,
  session: SessionRecord,
): Promise<void> {
  const grant = await consentedGrant(endpoint.ctx, pending, session);
  if (grant !== undefined) return approve(endpoint.ctx, res, pending, session, grant);
  showConsent(endpoint, res, pending, session);
}

/**
 * Whether the code of `pending` can only reach its client: a confidential client proves who
 * it is at the token endpoint, and a web redirect (http, https) is delivered by the browser to
 * that origin alone; a private-use scheme (`com.example.app:/cb`) can be claimed by any app on
 * the device, so a remembered consent never answers it silently (RFC 8252 §8.6).
 */
function clientIsAssured(pending: PendingAuthorization): boolean {
  if (isConfidential(pending.client)) return true;
  return /^https?:\/\//i.test(pending.redirectUri);
}

/**
 * The remembered grant of `session`'s user that covers `pending`, if it may answer without
 * asking: never for `prompt=consent`, nor for a public client whose identity the redirect
 * cannot assure.
 */
export async function consentedGrant(
  ctx: OAuthContext,
  pending: PendingAuthorization,
  session: SessionRecord,
): Promise<GrantRecord | undefined> {
  if (pending.prompt.has('consent') || !clientIsAssured(pending)) return undefined;
  return rememberedGrant(ctx, session.sub, pending.client.clientId, pending.scope);
}

/**
 * An approval: a new code (stored as its hash for `codeTtl`) under the user's grant to the
 * client (remembered, or widened, from now; `grant` when it was just read), redirected to the
 * client.
 */
export async function approve(
  ctx: OAuthContext,
  res: ServerResponse,
  pending: PendingAuthorization,
  session: SessionRecord,
  grant?: GrantRecord,
): Promise<void> {
  const { client, scope } = pending;
  const grantId = await approveGrant(ctx, session.sub, client.clientId, scope, grant);
  const code = newOpaqueToken();
  await codes(ctx.store).save(
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
      grantId,
      ...(pending.dpopJkt !== undefined && { dpopJkt: pending.dpopJkt }),
      ...(pending.resources.length > 0 && { resources: [...pending.resources] }),
    },
    ctx.settings.codeTtl,
  );
  redirectToClient(ctx, res, pending.redirectUri, { code, state: pending.state });
}
