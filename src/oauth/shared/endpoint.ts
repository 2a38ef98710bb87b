import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Middleware } from '../../core/compose.js';
import { asOAuthError, sendOAuthError } from '../protocol/errors.js';

/**
 * Runs an OAuth endpoint handler, answering an {@link OAuthError} in the RFC 6749 §5.2 form,
 * and so a 503 of a store (full, or Redis down) too, as `temporarily_unavailable` with its
 * `Retry-After`. Any other failure goes on to the adapter.
 * @internal
 */
export function oauthEndpoint(
  handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
): Middleware {
  return async function oauthHandler(req, res) {
    try {
      await handler(req, res);
    } catch (error) {
      const answer = asOAuthError(error);
      if (answer === undefined) throw error;
      sendOAuthError(res, answer);
    }
  };
}
