import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CheckedDpopProof } from '../../auth/dpop/dpop.js';
import type { Middleware } from '../../core/compose.js';
import { log } from '../../core/logger.js';
import { send } from '../../core/send.js';
import { requestFields } from '../../core/trace-context.js';
import {
  published,
  type TokenIssuedMessage,
  type TokenRefusedMessage,
} from '../../diagnostics/channels.js';
import { assertKnownOptions } from '../../internal/options.js';
import type { OAuthClient } from '../clients/client.js';
import type { OAuthContext } from '../context.js';
import type { Grant, TokenBinding, TokenResponse } from '../grants/contract.js';
import { grantRegistry } from '../grants/registry.js';
import { asOAuthError, NO_STORE, OAuthError, sendOAuthError } from '../protocol/errors.js';
import { readOAuthForm } from '../protocol/form.js';
import { singleParams } from '../protocol/parameters.js';
import { takeResources } from '../resources.js';
import { createEndpointProofs } from '../shared/endpoint-proof.js';
import { PendingIds } from '../store/one-time-ids.js';

/** Options of {@link createTokenEndpoint}. */
export interface TokenEndpointOptions {
  /**
   * The grants it answers, by their `type`: any other `grant_type` is
   * `unsupported_grant_type`.
   * @defaultValue `defaultGrants`
   */
  grants?: readonly Grant[];
}

const OPTIONS = ['grants'] as const satisfies readonly (keyof TokenEndpointOptions)[];

/** The parameters a grant is given: `grant_type` and those it lists, nothing else. */
function grantParams(grant: Grant, params: ReadonlyMap<string, string>): Map<string, string> {
  const given = new Map<string, string>();
  for (const name of ['grant_type', ...grant.parameters]) {
    const value = params.get(name);
    if (value !== undefined) given.set(name, value);
  }
  return given;
}

/** The headers of every token answer (RFC 6749 §5.1), made once. */
const TOKEN_HEADERS = Object.freeze({ ...NO_STORE, 'Content-Type': 'application/json' });

function sendTokens(res: ServerResponse, tokens: TokenResponse): void {
  send(res, 200, JSON.stringify(tokens), TOKEN_HEADERS);
}

/**
 * The key the tokens of this request are bound to (RFC 9449 §5): that of its `DPoP` proof,
 * checked for POST at this endpoint's URL (the issuer's origin and the request's path), its
 * `jti` added to `pending` for the grant to record (`commit`) before it spends anything. No
 * proof: bearer tokens, unless the client must have bound ones (`dpopBoundAccessTokens`, or
 * held to FAPI 2.0, whose proofs must not be RS256 either).
 */
function tokenBinding(
  ctx: OAuthContext,
  proof: CheckedDpopProof | undefined,
  client: OAuthClient,
  pending: PendingIds,
): TokenBinding {
  const fapi2 = ctx.fapi2(client);
  const commit = () => pending.commit();
  if (proof === undefined) {
    if (client.dpopBoundAccessTokens === true || fapi2) {
      throw new OAuthError('invalid_dpop_proof', 'This client must send a DPoP proof.');
    }
    return { commit };
  }
  // FAPI 2.0 (cryptography): PS256, ES256 or EdDSA
  if (fapi2 && proof.alg.startsWith('RS')) {
    throw new OAuthError('invalid_dpop_proof', 'Sign the DPoP proof with PS256, ES256 or EdDSA.');
  }
  pending.add(proof.remember);
  return { jkt: proof.jkt, commit };
}

/**
 * A client names a grant type that no grant of this server answers: a typo, or a grant left
 * out of `grants`. The request is `unsupported_grant_type`; the deployment is told once per
 * client and type (`warned`, bounded).
 */
function unregistered(
  ctx: OAuthContext,
  warned: Set<string>,
  client: OAuthClient,
  grantType: string,
): void {
  const key = `${client.clientId} ${grantType}`;
  if (warned.has(key) || warned.size >= 1_000) return;
  warned.add(key);
  log(
    ctx.logger,
    'warn',
    { component: 'oauth', event: 'token.unregistered_grant', clientId: client.clientId, grantType },
    'a client names a grant type no grant of this server answers (not in `grants`)',
  );
}

/** The refusals of a credential (a grant, a proof, a client assertion) the guard counts. */
const REFUSED_CREDENTIALS = new Set(['invalid_grant', 'invalid_client', 'invalid_dpop_proof']);

/**
 * The answer to a refusal once the client authenticated: a refused grant, proof or assertion
 * is counted by the guard (client authentication counts its own), whose 429 then answers.
 */
async function counted(ctx: OAuthContext, req: IncomingMessage, answer: OAuthError) {
  if (ctx.guard === undefined || !REFUSED_CREDENTIALS.has(answer.error)) return answer;
  try {
    await ctx.guard.refused(req);
    return answer;
  } catch (error) {
    return asOAuthError(error) ?? answer;
  }
}

/**
 * The token endpoint (RFC 6749 §3.2), answering the grants it is given (`grants`, by
 * default `defaultGrants`: `authorization_code` with PKCE, `refresh_token` rotating,
 * `client_credentials` and `urn:ietf:params:oauth:grant-type:device_code`, RFC 8628). Another
 * `grant_type` is `unsupported_grant_type`; one the client's `grantTypes` does not name is
 * `unauthorized_client`; a grant sees only the parameters it lists. The client authenticates with
 * `client_secret_basic`, `client_secret_post` or, if public, `none`; each parameter may
 * appear once. It answers every request itself: tokens as `200` JSON (RFC 6749 §5.1), every
 * failure in the OAuth error format (§5.2) rather than as Problem Details, both with
 * `Content-Type: application/json` and `Cache-Control: no-store`. A store that cannot serve
 * (Redis down) or is full, and a client past its budget of failed client authentications
 * (`guard`), get `temporarily_unavailable` with their status (503, 429) and `Retry-After`.
 * Each grant asks the store whether it can take one (`checkCapacity`) before it spends a
 * code or rotates a refresh token for tokens the store could not keep. The `jti` of the
 * request's client assertion and DPoP proof are recorded only then, once the client and the
 * grant hold: a refused request writes nothing to a replay store, and of two requests racing
 * with one proof, one wins. With a `guard`, a refused grant (`invalid_grant`), proof
 * (`invalid_dpop_proof`) or assertion counts against the client's IP as a failed client
 * authentication does, the request that spends it answered 429. Mount it for POST only
 * (the router's method table answers other methods with 405); a non-POST that still reaches
 * it gets a 405 `invalid_request` with `Allow: POST`.
 *
 * @example
 * ```ts
 * const ctx = createOAuthContext({ issuer, clients, keys, users, sessions });
 * const token = createTokenEndpoint(ctx, { grants: [...defaultGrants, tokenExchangeGrant()] });
 * router.route('/token', { POST: token });
 * router.route('/oauth/token', { POST: token });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-3.2 | RFC 6749 §3.2}
 */
export function createTokenEndpoint(
  ctx: OAuthContext,
  options: TokenEndpointOptions = {},
): Middleware {
  assertKnownOptions('createTokenEndpoint()', options, OPTIONS);
  const grants = grantRegistry('createTokenEndpoint()', options.grants, ctx.features);
  const isRegistered = (type: string | undefined) => type !== undefined && grants.has(type);
  const endpointProof = createEndpointProofs(ctx);
  const warned = new Set<string>();
  return async function tokenEndpoint(req, res) {
    let grantType: string | undefined;
    let clientId: string | undefined;
    try {
      if (req.method !== 'POST') {
        throw new OAuthError('invalid_request', 'The token endpoint takes POST requests only.', {
          status: 405,
          headers: { Allow: 'POST' },
        });
      }
      const form = await readOAuthForm(req);
      // `resource` alone may repeat (RFC 8707 §2): the grants get them separated by spaces
      const resources = takeResources(form);
      const params = singleParams(form);
      if (resources.length > 0) params.set('resource', resources.join(' '));
      grantType = params.get('grant_type');
      // the jti of its assertion and proof: recorded once the grant holds, nothing before
      const pending = new PendingIds();
      const client = await ctx.authenticateClient(req, params, pending);
      clientId = client.clientId;
      if (grantType === undefined || grantType === '') {
        throw new OAuthError('invalid_request', 'The parameter grant_type is required.');
      }
      const grant = grants.get(grantType);
      if (grant === undefined) {
        if (client.grantTypes.includes(grantType)) unregistered(ctx, warned, client, grantType);
        throw new OAuthError('unsupported_grant_type', 'This grant type is not supported.');
      }
      if (!client.grantTypes.includes(grantType)) {
        throw new OAuthError('unauthorized_client', 'This client may not use this grant type.');
      }
      const binding = tokenBinding(ctx, await endpointProof.check(req), client, pending);
      const tokens = await grant.handle(ctx, client, grantParams(grant, params), binding);
      await pending.commit(); // a grant that did not: before any token leaves
      sendTokens(res, tokens);
      if (published.tokenIssued.hasSubscribers) {
        published.tokenIssued.publish({
          req,
          grantType,
          clientId,
          scope: tokens.scope,
          refreshToken: tokens.refresh_token !== undefined,
        } satisfies TokenIssuedMessage);
      }
    } catch (err) {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      let answer = asOAuthError(err);
      if (answer === undefined) {
        // parameters and headers carry credentials: the error alone, with the request's ids
        log(
          ctx.logger,
          'error',
          { component: 'oauth', event: 'token.failed', ...requestFields(req), err },
          'the token endpoint failed unexpectedly',
        );
        answer = new OAuthError('server_error', 'The authorization server failed unexpectedly.');
      } else if (clientId !== undefined) answer = await counted(ctx, req, answer);
      sendOAuthError(res, answer);
      if (published.tokenRefused.hasSubscribers) {
        published.tokenRefused.publish({
          req,
          // only a grant type this server knows: anything else is the caller's text
          grantType: isRegistered(grantType) ? grantType : undefined,
          clientId,
          error: answer.error,
          status: answer.status,
        } satisfies TokenRefusedMessage);
      }
    }
  };
}
