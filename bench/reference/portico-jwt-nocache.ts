/**
 * `portico` as the reference server's modules see it in the `reference-bearer-nocache` row:
 * the package itself, except that `createAuthorizationServer` returns a server whose
 * `bearer` authenticator is `ownAccessTokens(context, { cache: false })`, the same
 * authenticator the package builds (`ownAccessTokens(context)`) without its verified-token
 * cache. Nothing else changes. (The reference server has no setting for that cache: its
 * `oauth.bearer` is the authorization server's own, always cached.)
 */
import {
  type AuthorizationServer,
  type CreateAuthorizationServerOptions,
  createAuthorizationServer as createCachedAuthorizationServer,
} from 'portico';
import { ownAccessTokens } from 'portico/oauth';

export * from 'portico';

export function createAuthorizationServer(
  options: CreateAuthorizationServerOptions,
): AuthorizationServer {
  const server = createCachedAuthorizationServer(options);
  return Object.freeze({
    context: server.context,
    paths: server.paths,
    routes: server.routes,
    bearer: ownAccessTokens(server.context, { cache: false }),
    resources: server.resources,
    bearerFor: (identifier: string) =>
      ownAccessTokens(server.context, { cache: false, resource: identifier }),
    consents: server.consents,
    metadata: () => server.metadata(),
  });
}
