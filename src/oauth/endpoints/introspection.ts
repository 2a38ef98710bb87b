import type { Middleware } from '../../core/compose.js';
import { sendJson } from '../../core/send.js';
import { methods } from '../../http/routing/router.js';
import { isConfidential, type OAuthClient } from '../clients/client.js';
import type { OAuthContext } from '../context.js';
import { NO_STORE, OAuthError } from '../protocol/errors.js';
import { oauthEndpoint } from '../shared/endpoint.js';
import { looksLikeJwt, readTokenRequest } from '../shared/token-request.js';
import { refreshTokens } from '../store/records.js';
import { hashToken } from '../tokens/issue.js';
import { createAnyResourceVerifier, isAccessTokenRevoked } from '../tokens/verify.js';

/**
 * An introspection answer (RFC 7662 §2.2).
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc7662#section-2.2 | RFC 7662 §2.2}
 */
export interface IntrospectionResponse {
  active: boolean;
  scope?: string;
  client_id?: string;
  sub?: string;
  exp?: number;
  iat?: number;
  iss?: string;
  aud?: string | string[];
  token_type?: 'Bearer' | 'DPoP' | 'refresh_token';
  jti?: string;
  /** The token's confirmation (RFC 7800): `jkt` (RFC 9449 §6.2) or `x5t#S256` (RFC 8705 §3.2). */
  cnf?: Record<string, unknown>;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Whether a verified payload is bound to a DPoP key. */
const isDpopBound = (payload: Readonly<Record<string, unknown>>) => {
  const { cnf } = payload;
  return isObject(cnf) && typeof cnf.jkt === 'string';
};

/** Introspection tells about other clients' tokens: only confidential clients may ask. */
function refusePublicClients(client: OAuthClient): void {
  if (!isConfidential(client)) {
    throw new OAuthError(
      'invalid_client',
      'Token introspection is open to confidential clients only.',
    );
  }
}

const INACTIVE: IntrospectionResponse = Object.freeze({ active: false });

/** `application/json` exactly (RFC 7662 §2.2) and never stored. */
const INTROSPECTION_HEADERS = Object.freeze({ 'Content-Type': 'application/json', ...NO_STORE });

/** Whether `client` may learn about an access token issued to `clientId` (its own, or any when registered so). */
function mayIntrospect(client: OAuthClient, clientId: unknown): boolean {
  return client.introspection === 'any' || clientId === client.clientId;
}

/**
 * The token introspection endpoint (RFC 7662), for `POST`, open to confidential clients only:
 * a public client, or failed client authentication, is `invalid_client` (401). The client
 * sends `token`, with an optional `token_type_hint`. A client learns only about the tokens
 * issued to itself, unless it is registered as a resource server that may introspect any
 * access token (`introspection: 'any'`, see {@link OAuthClient}).
 *
 * - An access token of this server, good, whose grant is not revoked, and that the client may
 *   introspect: `{ active: true, scope, client_id, sub, exp, iat, iss, aud, token_type:
 *   'Bearer', jti }`; an access token of another client, to a client that may not:
 *   `{ active: false }` (RFC 7662 §2.2).
 * - A refresh token of the calling client, not yet rotated nor revoked:
 *   `{ active: true, scope, client_id, sub, iss, token_type: 'refresh_token', exp }` where
 *   `exp` is the end of its family. Another client's refresh token reads as inactive: refresh
 *   tokens are only ever shown to their own client.
 * - Anything else (unknown, expired, revoked, rotated, an ID token): `{ active: false }`.
 *
 * Answers are `application/json` with `Cache-Control: no-store`; other methods get `405`.
 *
 * @example
 * ```ts
 * createRouter({ '/introspect': createIntrospectionEndpoint(ctx) });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc7662 | RFC 7662}
 */
export function createIntrospectionEndpoint(ctx: OAuthContext): Middleware {
  // a token for any configured resource (RFC 8707) is one of ours
  const verifier = createAnyResourceVerifier(ctx);

  async function accessToken(
    client: OAuthClient,
    token: string,
  ): Promise<IntrospectionResponse | undefined> {
    if (!looksLikeJwt(token)) return undefined;
    let payload: Awaited<ReturnType<typeof verifier.verify>>['payload'];
    try {
      ({ payload } = await verifier.verify(token));
    } catch {
      return undefined;
    }
    if (!mayIntrospect(client, payload.client_id)) return INACTIVE;
    if (await isAccessTokenRevoked(ctx, payload)) return INACTIVE;
    const answer: IntrospectionResponse = {
      active: true,
      scope: typeof payload.scope === 'string' ? payload.scope : '',
      client_id: typeof payload.client_id === 'string' ? payload.client_id : undefined,
      sub: payload.sub,
      exp: payload.exp,
      iat: payload.iat,
      iss: payload.iss,
      aud: Array.isArray(payload.aud) ? [...payload.aud] : payload.aud,
      token_type: isDpopBound(payload) ? 'DPoP' : 'Bearer',
      jti: payload.jti,
      // a resource server that introspects checks the binding itself (RFC 9449 §6.2)
      ...(isObject(payload.cnf) && { cnf: { ...payload.cnf } }),
    };
    return answer;
  }

  async function refreshToken(
    client: OAuthClient,
    token: string,
  ): Promise<IntrospectionResponse | undefined> {
    const found = await refreshTokens(ctx.store).find(hashToken(token));
    if (found === undefined) return undefined;
    const { record } = found;
    if (
      found.state !== 'fresh' ||
      record.clientId !== client.clientId ||
      record.familyExpiresAt <= Date.now() ||
      (await ctx.store.isGrantRevoked(record.grantId))
    ) {
      return INACTIVE;
    }
    return {
      active: true,
      scope: record.scope.join(' '),
      client_id: record.clientId,
      sub: record.sub,
      iss: ctx.issuer,
      token_type: 'refresh_token',
      exp: Math.floor(record.familyExpiresAt / 1000),
    };
  }

  const handler = oauthEndpoint(async (req, res) => {
    const { client, token, hint } = await readTokenRequest(ctx, req, refusePublicClients);
    const lookups =
      hint === 'refresh_token'
        ? [() => refreshToken(client, token), () => accessToken(client, token)]
        : [() => accessToken(client, token), () => refreshToken(client, token)];
    let answer: IntrospectionResponse = INACTIVE;
    for (const lookup of lookups) {
      const found = await lookup();
      if (found !== undefined) {
        answer = found;
        break;
      }
    }
    sendJson(res, 200, answer, INTROSPECTION_HEADERS);
  });
  return methods({ POST: handler });
}
