// The authorization request of `/authorize`: read, and checked in the order RFC 6749 §4.1.2.1
// sets, before any page is shown or any post is acted on.
import type { SessionRecord } from '../../auth/session/store.js';
import type { OAuthClient } from '../clients/client.js';
import { ClientMetadataDocumentError } from '../clients/metadata-document.js';
import { findRedirectUri } from '../clients/redirect-uri.js';
import { resolveScopes } from '../clients/scope.js';
import type { OAuthContext } from '../context.js';
import type { FormFields } from '../pages/render.js';
import { OAuthError } from '../protocol/errors.js';
import { isCodeChallenge } from '../protocol/pkce.js';
import { configuredResources } from '../resources.js';
import { readIdTokenHint } from './id-token-hint.js';

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
  'id_token_hint',
  'dpop_jkt',
  // OpenID Connect: the pages' languages (ui_locales), passed through (claims_locales)
  'ui_locales',
  'claims_locales',
  // carried only by a request taken from /par, and sealed with it in the forms
  'request_uri',
  // RFC 8707: the resources the grant is for; the one parameter that may repeat
  'resource',
] as const;

/** The parameters that may appear more than once. */
const REPEATABLE: ReadonlySet<string> = new Set(['resource']);

/**
 * The prefix of every `request_uri` this server issues (RFC 9126 §2.2).
 *
 * @example
 * ```ts
 * const { request_uri } = await pushed.json();
 * request_uri.startsWith(REQUEST_URI_PREFIX); // true
 * ```
 */
export const REQUEST_URI_PREFIX = 'urn:ietf:params:oauth:request_uri:';

/** A JWK SHA-256 thumbprint (RFC 7638): 43 base64url characters. */
const JKT = /^[A-Za-z0-9_-]{43}$/;

/** Longest `state` and `nonce` accepted. */
const MAX_OPAQUE = 1024;

/** `max_age`: a count of seconds, at most nine digits (some 31 years: "any sign-in"). */
const MAX_AGE = /^\d{1,9}$/;

/** A validated authorization request, waiting for the user. */
export interface PendingAuthorization {
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
  /**
   * OpenID Connect `max_age` (sent in seconds): the user must have signed in within it, in
   * milliseconds.
   */
  maxAge?: number;
  /** The DPoP key the code is bound to (`dpop_jkt`, RFC 9449 §10). */
  dpopJkt?: string;
  /** The user an `id_token_hint` names (OpenID Connect Core §3.1.2.1), when one was sent. */
  hintedSub?: string;
  /** The configured resources the request named (RFC 8707); empty: none named. */
  resources: readonly string[];
  /** The request's parameters, as the forms carry them in hidden inputs. */
  fields: FormFields;
}

/**
 * Where an authorization request's parameters come from: `'query'`, the browser's request
 * (or a form that carries it); `'pushed'`, a request taken from `/par` by its `request_uri`
 * (or a sealed form that carries it); `'par'`, a request being pushed now.
 */
export type AuthorizationSource = 'query' | 'pushed' | 'par';

/**
 * Whether `client` must push its authorization requests (RFC 9126 §5-6): the server says so
 * for every client, or the client's registration does, or the FAPI 2.0 profile holds it.
 */
export function mustPush(ctx: OAuthContext, client: OAuthClient): boolean {
  return (
    ctx.settings.requirePushedAuthorizationRequests ||
    client.requirePushedAuthorizationRequests === true ||
    ctx.fapi2(client)
  );
}

/** The outcome of {@link checkAuthorizationRequest}. */
export type CheckedAuthorization =
  | { kind: 'ok'; pending: PendingAuthorization }
  /** No trustworthy redirect URI: an error page, never a redirect. */
  | { kind: 'page'; message: string }
  /** An error for the client, redirected to its validated redirect URI (RFC 6749 §4.1.2.1). */
  | { kind: 'redirect'; redirectUri: string; error: OAuthError; state?: string };

/** The authorization parameters of a query or form, empty values treated as absent (§3.1). */
export function authorizationFields(params: URLSearchParams): FormFields {
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

/** The non-empty values of a parameter. */
type Values = (name: string) => string[];

/** Where errors may be redirected: the client, and the redirect URI it registered. */
type Target =
  | { kind: 'ok'; client: OAuthClient; redirectUri: string }
  | { kind: 'page'; message: string };

/**
 * The client and its redirect URI, compared exactly with a registered one: until both are
 * known, every error is a page (a redirect could reach anyone).
 */
async function redirectTarget(ctx: OAuthContext, values: Values): Promise<Target> {
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
  let client: OAuthClient | undefined;
  try {
    client = await ctx.clients.get(ids[0]!);
  } catch (error) {
    // a client metadata document that cannot be used: said on the page, never redirected
    if (error instanceof ClientMetadataDocumentError)
      return { kind: 'page', message: error.message };
    throw error;
  }
  if (client === undefined) {
    return { kind: 'page', message: 'The application that sent you here is not known.' };
  }
  const uris = values('redirect_uri');
  if (uris.length > 1) {
    return { kind: 'page', message: 'The request gives more than one redirect URI.' };
  }
  if (uris.length === 1) {
    if (findRedirectUri(client.redirectUris, uris[0]!) === undefined) {
      return { kind: 'page', message: 'The redirect URI is not registered for this application.' };
    }
    return { kind: 'ok', client, redirectUri: uris[0]! };
  }
  if (client.redirectUris.length === 1) {
    return { kind: 'ok', client, redirectUri: client.redirectUris[0]! };
  }
  return {
    kind: 'page',
    message:
      client.redirectUris.length === 0
        ? 'This application has no redirect URI to come back to.'
        : 'The request must say which redirect URI to come back to (redirect_uri).',
  };
}

/**
 * Validates an authorization request, in the order RFC 6749 §4.1.2.1 sets: the client and its
 * redirect URI first (errors are pages), then every other parameter (errors are redirected to
 * the client with its `state`).
 */
export async function checkAuthorizationRequest(
  ctx: OAuthContext,
  params: URLSearchParams,
  source: AuthorizationSource = 'query',
): Promise<CheckedAuthorization> {
  const values: Values = (name) => params.getAll(name).filter((v) => v !== '');
  // a request_uri of /par is taken from the store by the caller, never trusted from a form or
  // query; any other is a request object by reference, refused once the client is known
  const requestUris = values('request_uri');
  // with PAR off, a request_uri of its shape is one more request object by reference
  const pushedUri =
    ctx.features.pushedAuthorizationRequests &&
    requestUris.some((uri) => uri.startsWith(REQUEST_URI_PREFIX));
  if (requestUris.length > 0 && source !== 'pushed' && (source === 'par' || pushedUri)) {
    return {
      kind: 'page',
      message:
        source === 'par'
          ? 'A pushed request cannot carry a request_uri.'
          : 'This request must be started again from the application.',
    };
  }
  const target = await redirectTarget(ctx, values);
  if (target.kind === 'page') return target;
  const { client, redirectUri } = target;

  const states = values('state');
  const state = states.length === 1 && states[0]!.length <= MAX_OPAQUE ? states[0] : undefined;
  const fail = (error: OAuthError): CheckedAuthorization => ({
    kind: 'redirect',
    redirectUri,
    error,
    state,
  });
  const invalid = (description: string) => fail(new OAuthError('invalid_request', description));
  // OpenID Connect Core §6: request objects (RFC 9101) are not supported, and a client that
  // believes its parameters signed must be told so rather than have the outer ones used
  if (values('request').length > 0) {
    return fail(
      new OAuthError('request_not_supported', 'Request objects (request) are not supported.'),
    );
  }
  if (requestUris.length > 0 && source === 'query') {
    return fail(
      new OAuthError(
        'request_uri_not_supported',
        'Request objects by reference (request_uri) are supported only from the pushed authorization request endpoint.',
      ),
    );
  }
  for (const name of PARAMS) {
    if (values(name).length > 1 && !REPEATABLE.has(name)) {
      return invalid(`The parameter ${name} is repeated.`);
    }
  }
  if (states.length === 1 && state === undefined) {
    return invalid(`state must be at most ${MAX_OPAQUE} characters.`);
  }
  if (source === 'query' && mustPush(ctx, client)) {
    return invalid('This client must push its authorization requests (PAR, RFC 9126).');
  }
  const one = (name: string) => values(name)[0];
  const dpopJkt = one('dpop_jkt');
  if (dpopJkt !== undefined && !JKT.test(dpopJkt)) {
    return invalid('dpop_jkt must be a JWK SHA-256 thumbprint (43 base64url characters).');
  }
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
  let resources: string[];
  try {
    resources = configuredResources(ctx.resources, [...new Set(values('resource'))]);
  } catch (err) {
    if (err instanceof OAuthError) return fail(err);
    throw err;
  }
  const challenge = one('code_challenge');
  const pkceError = pkceProblem(challenge, one('code_challenge_method'));
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
  const hintText = one('id_token_hint');
  const hint = hintText === undefined ? undefined : await readIdTokenHint(ctx, hintText);
  if (hintText !== undefined && hint === undefined) {
    return invalid('id_token_hint is not an ID token issued by this server.');
  }
  return {
    kind: 'ok',
    pending: {
      client,
      redirectUri,
      redirectUriOmitted: values('redirect_uri').length === 0,
      scope,
      state,
      nonce,
      codeChallenge: challenge,
      prompt,
      maxAge: maxAgeText === undefined ? undefined : Number(maxAgeText) * 1000,
      ...(dpopJkt !== undefined && { dpopJkt }),
      ...(hint !== undefined && { hintedSub: hint.sub }),
      resources,
      fields: authorizationFields(params),
    },
  };
}

/**
 * The session, when it may answer this request without a new sign-in: `prompt=login` asks for
 * one, `max_age` for one at most that old, and an `id_token_hint` for the user it names
 * (OpenID Connect Core §3.1.2.1).
 */
export function usableSession(
  pending: PendingAuthorization,
  session: SessionRecord | undefined,
): SessionRecord | undefined {
  if (session === undefined || pending.prompt.has('login')) return undefined;
  if (pending.hintedSub !== undefined && pending.hintedSub !== session.sub) return undefined;
  if (pending.maxAge !== undefined && Date.now() - session.createdAt > pending.maxAge) {
    return undefined;
  }
  return session;
}
