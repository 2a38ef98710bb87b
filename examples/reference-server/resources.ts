import type { IncomingMessage } from 'node:http';
import { type ProtectedResource, protectedResource } from 'portico/auth';

/** The service's two protected resources (RFC 9728), as the contract names them. */
export interface Resources {
  /** `BASE_URL` itself: `/api/*`, `/events`, `/ws`, `/userinfo` (today's token audience). */
  readonly api: ProtectedResource;
  /** `{BASE_URL}/mcp` (without BASE_URL's trailing slash): the MCP endpoint. */
  readonly mcp: ProtectedResource;
  /** Both metadata documents, for `createRouter({ ...routes })`. */
  readonly routes: ProtectedResource['routes'];
}

const READ_MESSAGES = 'read:messages';
const WRITE_MESSAGES = 'write:messages';

/**
 * The two resources of the service at `baseUrl`, whose tokens `issuer` issues, DPoP proofs
 * signed with `dpopAlgorithms` (what the authorization server's DPoP verifier accepts).
 */
export function createResources(
  baseUrl: string,
  options: { issuer: string; dpopAlgorithms?: readonly string[] | undefined },
): Resources {
  const shared = {
    authorizationServers: [options.issuer],
    bearerMethodsSupported: ['header'] as const,
    ...(options.dpopAlgorithms !== undefined && {
      dpopSigningAlgValuesSupported: options.dpopAlgorithms,
    }),
  };
  const api = protectedResource({
    ...shared,
    resource: baseUrl,
    // the scopes of the API's own routes, and UserInfo's (openid and the claims it releases)
    scopesSupported: ['openid', 'profile', 'email', READ_MESSAGES, WRITE_MESSAGES],
    resourceName: 'portico reference service API',
  });
  const mcp = protectedResource({
    ...shared,
    resource: `${baseUrl.replace(/\/$/, '')}/mcp`,
    scopesSupported: [READ_MESSAGES, WRITE_MESSAGES],
    resourceName: 'portico reference service MCP server',
  });
  return { api, mcp, routes: { ...api.routes, ...mcp.routes } };
}

/**
 * The scopes a request to the API needs, for the `scope` of its 401's challenges (the
 * checks themselves are the routes' `requireScopes()`): reading messages (and webhooks,
 * which deliver them) needs `read:messages`, changing them `write:messages`, API keys both.
 */
export function apiScopes(req: IncomingMessage): readonly string[] | undefined {
  const path = (req.url ?? '/').split('?', 1)[0]!;
  const read = req.method === 'GET' || req.method === 'HEAD';
  if (path === '/events') return [READ_MESSAGES];
  if (path === '/api/messages' || path.startsWith('/api/messages/')) {
    return [read ? READ_MESSAGES : WRITE_MESSAGES];
  }
  if (path === '/api/webhooks' || path.startsWith('/api/webhooks/')) return [READ_MESSAGES];
  if (path === '/api/keys' && req.method === 'POST') return [READ_MESSAGES, WRITE_MESSAGES];
  return undefined;
}
