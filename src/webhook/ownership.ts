import { conflict, forbidden, type HttpError, unprocessable } from '../core/errors/errors.js';
import type { Principal } from '../core/principal.js';
import { isCtlFreeName } from '../internal/grammar.js';
import type { WebhookEndpoint, WebhookEndpointAdmission } from './store.js';

/** Who owns an endpoint and what it ends with, as {@link checkOwnership} accepts them. */
export type EndpointOwnership = Pick<WebhookEndpoint, 'owner' | 'credentialIds'>;

/**
 * The revocation ids a webhook subscription ends with: grants, API keys and the OAuth client
 * (deleted through RFC 7592), not sessions.
 */
const LASTING = ['grant:', 'api_key:', 'client:'];

/**
 * The revocation ids of `principal` that a webhook subscription it registers should end
 * with: its OAuth grant (`grant:<id>`), its OAuth client (`client:<id>`, which ends when the
 * client is deleted) and its API key (`api_key:<id>`). A session or a single
 * token is left out: a subscription outlives a login, not the authorization it was made with.
 *
 * @example
 * ```ts
 * const principal = requirePrincipal(req);
 * await sender.addEndpoint({
 *   url,
 *   owner: principal.sub,
 *   credentialIds: webhookCredentialIds(principal),
 * });
 * ```
 */
export function webhookCredentialIds(principal: Pick<Principal, 'credentialIds'>): string[] {
  return (principal.credentialIds ?? []).filter((id) => LASTING.some((p) => id.startsWith(p)));
}

/** Checks the `owner` and `credentialIds` of a new endpoint; returns them as they are stored. */
export function checkOwnership(input: EndpointOwnership): EndpointOwnership {
  const { owner, credentialIds } = input;
  if (owner !== undefined && (typeof owner !== 'string' || owner === '' || owner.length > 200)) {
    throw new TypeError('`owner` must be a string of 1–200 characters.');
  }
  if (
    credentialIds !== undefined &&
    (!Array.isArray(credentialIds) ||
      credentialIds.length > 16 ||
      credentialIds.some((id) => !isCtlFreeName(id, 300)))
  ) {
    throw new TypeError('`credentialIds` must be up to 16 revocation ids of 1–300 characters.');
  }
  return {
    ...(owner !== undefined && { owner }),
    ...(credentialIds !== undefined &&
      credentialIds.length > 0 && {
        credentialIds: [...new Set(credentialIds)],
      }),
  };
}

/** The problem answering a refused registration: 409 for a URL already registered, else 422. */
export function admissionRefused(
  result: Exclude<WebhookEndpointAdmission, 'added'>,
  maxPerOwner: number,
): HttpError {
  if (result === 'duplicate') {
    return conflict('You already have a webhook endpoint with this URL.', {
      code: 'ERR_WEBHOOK_ENDPOINT_EXISTS',
    });
  }
  return unprocessable([
    {
      field: 'url',
      message: `You have ${maxPerOwner} webhook endpoints, the most allowed; remove one first.`,
    },
  ]);
}

/** The problem answering a registration made with a credential revoked meanwhile. */
export const credentialRevoked = (): HttpError =>
  forbidden('The credential this endpoint was registered with has been revoked.', {
    code: 'ERR_CREDENTIAL_REVOKED',
  });
