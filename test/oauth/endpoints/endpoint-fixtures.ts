// What the endpoint suites that build a context per test share: the issuer, one key set and
// the confidential clients `web` and `other`, made once (their secrets take a while to hash)
// and used read-only, and a context over them.
import { createSessions } from '../../../src/auth/session/session.js';
import { defineClient } from '../../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../../src/oauth/clients/store.js';
import {
  type AuthorizationServerOptions,
  createOAuthContext,
  type OAuthContext,
} from '../../../src/oauth/context.js';
import { createKeySet } from '../../../src/oauth/tokens/key-set.js';
import { type Listening, type Reply, request } from '../../helpers/http.js';

export const ISSUER = 'https://auth.example.test';
export const SECRETS = { web: 'web-secret-1234', other: 'other-secret-1234' } as const;

const KEYS = createKeySet();
const client = (clientId: 'web' | 'other', host: string) =>
  defineClient({
    clientId,
    secret: SECRETS[clientId],
    grantTypes: ['authorization_code', 'refresh_token'],
    redirectUris: [`https://${host}/cb`],
    scopes: ['openid', 'profile', 'email'],
  });
const CLIENTS = (async () =>
  new MemoryClientStore([
    await client('web', 'app.example.com'),
    await client('other', 'other.example.com'),
  ]))();

/** A context of the shared keys and clients, whose users are `get`'s; `options` win. */
export async function endpointContext(
  get: AuthorizationServerOptions['users']['get'],
  options: Partial<AuthorizationServerOptions> = {},
): Promise<OAuthContext> {
  return createOAuthContext({
    issuer: ISSUER,
    clients: await CLIENTS,
    keys: await KEYS,
    users: { verify: () => undefined, get },
    sessions: createSessions({ allowedOrigins: [ISSUER] }),
    ...options,
  });
}

/** GET /userinfo, with `token` as a Bearer token when given. */
export function userInfo(server: Listening, token?: string): Promise<Reply> {
  return request(server, '/userinfo', {
    headers: token === undefined ? {} : { Authorization: `Bearer ${token}` },
  });
}
