import { readFileSync } from 'node:fs';
import {
  type AuthorizationServer,
  createAuthorizationServer,
  createKeySet,
  defineClient,
  MemoryClientStore,
  type Sessions,
  type UserClaims,
} from 'portico';
import type { User, Users } from './users.js';

const USER_CLIENT_SCOPES = [
  'openid',
  'profile',
  'email',
  'offline_access',
  'read:messages',
  'write:messages',
];

/** The demo clients of the contract; their secrets are hashed as they are registered. */
async function demoClients(): Promise<MemoryClientStore> {
  return new MemoryClientStore(
    await Promise.all([
      defineClient({
        clientId: 'demo-service',
        secret: 'demo-service-secret',
        grantTypes: ['client_credentials'],
        redirectUris: [],
        scopes: ['read:messages', 'write:messages'],
      }),
      defineClient({
        clientId: 'demo-web',
        secret: 'demo-web-secret',
        grantTypes: ['authorization_code', 'refresh_token'],
        redirectUris: ['http://127.0.0.1:8080/callback'],
        scopes: USER_CLIENT_SCOPES,
      }),
      defineClient({
        clientId: 'demo-spa',
        grantTypes: ['authorization_code', 'refresh_token'],
        redirectUris: ['http://localhost:5173/callback', 'http://127.0.0.1:5173/callback'],
        scopes: USER_CLIENT_SCOPES,
      }),
      defineClient({
        clientId: 'demo-device',
        grantTypes: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
        redirectUris: [],
        scopes: USER_CLIENT_SCOPES,
      }),
    ]),
  );
}

function claimsOf(user: User): UserClaims {
  return {
    sub: user.sub,
    name: user.name,
    role: user.role,
    email: user.email,
    email_verified: true,
  };
}

/** The authorization server of the reference service, at the contract's paths. */
export async function createOAuth(options: {
  issuer: string;
  users: Users;
  sessions: Sessions;
  signingKeyPath: string | undefined;
}): Promise<AuthorizationServer> {
  const keys = await createKeySet(
    options.signingKeyPath === undefined
      ? {}
      : { keys: [readFileSync(options.signingKeyPath, 'utf8')] },
  );
  return createAuthorizationServer({
    issuer: options.issuer,
    clients: await demoClients(),
    keys,
    sessions: options.sessions,
    users: {
      async verify(username, password) {
        const user = await options.users.verify(username, password);
        return user === undefined ? undefined : claimsOf(user);
      },
      get(sub) {
        const user = options.users.get(sub);
        return user === undefined ? undefined : claimsOf(user);
      },
    },
    tokenPathAliases: ['/oauth/token'],
    scopesSupported: USER_CLIENT_SCOPES,
  });
}
