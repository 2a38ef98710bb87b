import {
  type AuthorizationServer,
  compose,
  getParams,
  type MethodTable,
  notFound,
  requirePrincipal,
  sendJson,
  sendNoContent,
} from 'portico';
import { ownCredentialOnly } from './keys.js';

/**
 * `/api/grants`: the caller's authorized applications (a consent remembered per client, with
 * the grant its tokens carry), and the revocation of one: its refresh and access tokens stop
 * working, its WebSocket connections and event streams end, its webhooks go, and the consent
 * is forgotten. The user's own credentials only: a client's token must not see or end grants.
 */
export function grantRoutes(oauth: AuthorizationServer): Record<string, MethodTable> {
  const own = ownCredentialOnly('Grants');
  return {
    '/api/grants': {
      GET: compose([
        own,
        async (req, res) => {
          const grants = await oauth.consents.list(requirePrincipal(req).sub);
          sendJson(
            res,
            200,
            grants.map((grant) => ({
              id: grant.id,
              client_id: grant.clientId,
              scopes: grant.scope,
              createdAt: grant.createdAt,
            })),
            { 'Cache-Control': 'no-store' },
          );
        },
      ]),
    },
    '/api/grants/:id': {
      DELETE: compose([
        own,
        async (req, res) => {
          const revoked = await oauth.consents.revoke(
            requirePrincipal(req).sub,
            getParams(req).id ?? '',
          );
          if (!revoked) throw notFound('You have no grant with this id.');
          sendNoContent(res);
        },
      ]),
    },
  };
}
