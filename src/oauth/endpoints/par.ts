// Pushed authorization requests (RFC 9126): the client sends its authorization request to the
// server directly, authenticated, and the browser carries only a one-time `request_uri`.
import { randomBytes } from 'node:crypto';
import type { DpopProof } from '../../auth/dpop/dpop.js';
import type { Middleware } from '../../core/compose.js';
import { sendJson } from '../../core/send.js';
import { checkAuthorizationRequest, REQUEST_URI_PREFIX } from '../authorize/request.js';
import type { OAuthClient } from '../clients/client.js';
import type { OAuthContext } from '../context.js';
import { NO_STORE, OAuthError } from '../protocol/errors.js';
import { readOAuthForm } from '../protocol/form.js';
import { singleParams } from '../protocol/parameters.js';
import { oauthEndpoint } from '../shared/endpoint.js';
import { createEndpointProofs } from '../shared/endpoint-proof.js';
import { PendingIds } from '../store/one-time-ids.js';
import { pushedRequests } from '../store/records.js';
import { hashToken } from '../tokens/issue.js';

export { REQUEST_URI_PREFIX };

/**
 * The DPoP key the pushed request binds its code to (RFC 9449 §10.1): a `DPoP` proof at this
 * endpoint gives its key's thumbprint as `dpop_jkt`, which must then agree with a `dpop_jkt`
 * the request names.
 */
function boundKey(proof: DpopProof | undefined, named: string | undefined): string | undefined {
  if (proof === undefined) return named;
  if (named !== undefined && named !== proof.jkt) {
    throw new OAuthError('invalid_dpop_proof', 'dpop_jkt is not the key of the DPoP proof.');
  }
  return proof.jkt;
}

/** The authorization request of a push, checked as `/authorize` checks one; errors as JSON. */
async function checkedPush(
  ctx: OAuthContext,
  client: OAuthClient,
  params: Map<string, string>,
  resources: readonly string[],
  dpopJkt: string | undefined,
): Promise<[string, string][]> {
  if (params.has('request_uri')) {
    throw new OAuthError('invalid_request', 'A pushed request cannot carry a request_uri.');
  }
  if (params.has('request')) {
    throw new OAuthError('invalid_request', 'Request objects are not supported.');
  }
  // FAPI 2.0: the redirect URI is named in the push, never taken by default
  if (ctx.fapi2(client) && !params.has('redirect_uri')) {
    throw new OAuthError('invalid_request', 'redirect_uri is required in a pushed request.');
  }
  const named = params.get('client_id');
  if (named !== undefined && named !== client.clientId) {
    throw new OAuthError('invalid_request', 'client_id is not the authenticated client.');
  }
  // what is kept is authorizationFields' projection: the client's credentials never are
  const request = new URLSearchParams([...params]);
  request.set('client_id', client.clientId);
  for (const resource of resources) request.append('resource', resource);
  if (dpopJkt !== undefined) request.set('dpop_jkt', dpopJkt);
  const checked = await checkAuthorizationRequest(ctx, request, 'par');
  if (checked.kind === 'page') throw new OAuthError('invalid_request', checked.message);
  if (checked.kind === 'redirect') throw checked.error;
  return checked.pending.fields.map(([name, value]) => [name, value]);
}

/**
 * The pushed authorization request endpoint (RFC 9126), for `POST /par`. The client
 * authenticates as at the token endpoint (its guard, methods and errors included) and posts
 * the parameters of an authorization request, checked as `/authorize` checks them: an unknown
 * redirect URI, a missing PKCE challenge or a scope the client may not have is an error here,
 * in the RFC 6749 §5.2 JSON form. The answer is 201 `{ request_uri, expires_in }`
 * (`Cache-Control: no-store`); the browser then goes to
 * `/authorize?client_id=…&request_uri=…`, where the request is taken once, by its own client
 * only (another `client_id` is refused without spending it), within `pushedRequestTtl`. A
 * `DPoP` proof sent here binds the code to its key (`dpop_jkt`, RFC 9449 §10.1). A
 * `request_uri` or `request` in the push is refused.
 *
 * @example
 * ```ts
 * const ctx = createOAuthContext({ issuer, clients, keys, users, sessions });
 * createRouter({ '/par': { POST: createPushedAuthorizationEndpoint(ctx) } });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9126 | RFC 9126}
 */
export function createPushedAuthorizationEndpoint(ctx: OAuthContext): Middleware {
  const endpointProof = createEndpointProofs(ctx);
  return oauthEndpoint(async (req, res) => {
    const form = await readOAuthForm(req);
    // `resource` alone may repeat (RFC 8707 §2), checked with the request below
    const resources = form.getAll('resource');
    form.delete('resource');
    const params = singleParams(form);
    // the assertion's and the proof's ids are recorded once the push holds: a refused push
    // writes nothing to a replay store (still atomically: of two racing uses, one wins)
    const pending = new PendingIds();
    const client = await ctx.authenticateClient(req, params, pending);
    const proof = await endpointProof.check(req);
    if (proof !== undefined) pending.add(proof.remember);
    const pushed = await checkedPush(
      ctx,
      client,
      params,
      resources,
      boundKey(proof, params.get('dpop_jkt')),
    );
    await pending.commit();
    const requestUri = `${REQUEST_URI_PREFIX}${randomBytes(32).toString('base64url')}`;
    const ttl = ctx.settings.pushedRequestTtl;
    await pushedRequests(ctx.store).save(
      hashToken(requestUri),
      { clientId: client.clientId, params: pushed },
      ttl,
    );
    sendJson(res, 201, { request_uri: requestUri, expires_in: Math.floor(ttl / 1000) }, NO_STORE);
  });
}

/** The outcome of {@link takePushedRequest}. */
export type TakenPushedRequest =
  | { kind: 'ok'; params: URLSearchParams }
  | { kind: 'page'; message: string };

/**
 * The authorization request behind `/authorize?client_id=…&request_uri=…`: taken from the
 * store once, for the client that pushed it. It is read first and taken only when `client_id`
 * names the client that pushed it: another client presenting it gets an error page and the
 * request stays for its own client (as a code presented by another client is not consumed at
 * the token endpoint). Every other parameter of the query is ignored (RFC 9126 §4). The
 * request keeps its `request_uri`, so that the forms carry (and seal) where it came from.
 */
export async function takePushedRequest(
  ctx: OAuthContext,
  query: URLSearchParams,
): Promise<TakenPushedRequest> {
  const uris = query.getAll('request_uri');
  const ids = query.getAll('client_id');
  if (uris.length !== 1 || ids.length !== 1) {
    return {
      kind: 'page',
      message: 'A pushed request needs one request_uri and the client_id that pushed it.',
    };
  }
  const requestUri = uris[0]!;
  const unknown = {
    kind: 'page',
    message: 'This request has expired or was used already. Go back to the application.',
  } as const;
  if (!requestUri.startsWith(REQUEST_URI_PREFIX) || requestUri.length > 256) return unknown;
  const hash = hashToken(requestUri);
  const seen = await pushedRequests(ctx.store).get(hash);
  if (seen === undefined) return unknown;
  // read first: another client presenting it is refused without spending it for its own
  if (seen.clientId !== ids[0]) {
    return { kind: 'page', message: 'This request was pushed by another application.' };
  }
  // taken once: of two concurrent uses, one removes it
  if (!(await pushedRequests(ctx.store).destroy(hash))) return unknown;
  const params = new URLSearchParams(seen.params);
  params.set('request_uri', requestUri);
  return { kind: 'ok', params };
}
