import {
  type ApiKeyStore,
  type Authenticator,
  apiKeyAuth,
  basicAuth,
  createApiKey,
  createSessions,
  MemoryApiKeyStore,
  mtlsAuth,
  type Principal,
  type Revocations,
  type SessionStore,
} from 'portico';
import { apiKeyCredentialId, importApiKey } from 'portico/auth';
import { USER_SCOPES, type User, type Users } from './users.js';

function principalOf(
  user: User,
  method: Principal['method'],
  extra: Partial<Principal> = {},
): Principal {
  return { sub: user.sub, name: user.name, role: user.role, scopes: USER_SCOPES, method, ...extra };
}

export interface AuthSetup {
  authenticators: Authenticator[];
  sessions: ReturnType<typeof createSessions>;
  apiKeys: ApiKeyStore;
  /** The demo key when this process generated it (to print once), else undefined. */
  generatedDemoKey: string | undefined;
}

/** Every mechanism of the contract but bearer tokens (the authorization server's), in order. */
export async function createAuth(options: {
  users: Users;
  allowedOrigins: readonly string[];
  secureCookies: boolean;
  demoApiKey: string | undefined;
  mtls: boolean;
  /** Shared stores (Redis) when several processes serve as one; in memory otherwise. */
  apiKeyStore?: ApiKeyStore | undefined;
  sessionStore?: SessionStore | undefined;
  /** Where a deleted key or a signed-out session is announced, so its streams end. */
  revocations: Revocations;
}): Promise<AuthSetup> {
  const { users, revocations } = options;
  const apiKeys = options.apiKeyStore ?? new MemoryApiKeyStore({ revocations });
  let generatedDemoKey: string | undefined;
  if (options.demoApiKey) {
    try {
      await importApiKey(apiKeys, options.demoApiKey, { owner: 'alice', name: 'demo' });
    } catch (error) {
      // in a shared store, another process of the service imported it first
      if ((error as { code?: unknown }).code !== 'ERR_API_KEY_EXISTS') throw error;
    }
  } else {
    generatedDemoKey = (await createApiKey(apiKeys, { owner: 'alice', name: 'demo' })).key;
  }
  const sessions = createSessions({
    ...(options.sessionStore !== undefined && { store: options.sessionStore }),
    allowedOrigins: [...options.allowedOrigins],
    cookie: { secure: options.secureCookies },
    revocations,
  });
  const apiKey = apiKeyAuth({
    store: apiKeys,
    resolve(record) {
      const user = users.get(record.owner);
      if (user === undefined) return undefined;
      // with the key's credential id (what ends a stream when the key is revoked) set here,
      // portico does not copy the principal to add it
      return {
        sub: user.sub,
        name: user.name,
        role: user.role,
        scopes: record.scopes ?? USER_SCOPES,
        method: 'api_key',
        keyId: record.id,
        credentialIds: [apiKeyCredentialId(record.id)],
      };
    },
  });
  const basic = basicAuth({
    async verify(username, password) {
      const user = await users.verify(username, password);
      return user === undefined ? undefined : principalOf(user, 'basic');
    },
  });
  // a session carries its user's full rights, whichever sign-in made it (the authorization
  // server's sign-in page opens sessions that name no scopes of this API)
  const session: Authenticator = {
    scheme: sessions.authenticator.scheme,
    ...(sessions.authenticator.challenge !== undefined && {
      challenge: sessions.authenticator.challenge,
    }),
    ...(sessions.authenticator.headers !== undefined && {
      headers: sessions.authenticator.headers,
    }),
    async authenticate(req) {
      const found = await sessions.authenticator.authenticate(req);
      if (found === undefined) return undefined;
      // the session's revocation id and end: a stream opened with it ends with it
      const { credentialIds, expiresAt } = found;
      const user = users.get(found.sub);
      if (user !== undefined) return principalOf(user, 'session', { credentialIds, expiresAt });
      // a user signed in at the upstream provider (`<sub>@<host>`, never a local name): as
      // the sign-in made them
      if (!found.sub.includes('@')) return undefined;
      const linked = { sub: found.sub, name: found.name ?? found.sub, role: 'user' };
      return principalOf(linked as User, 'session', { credentialIds, expiresAt });
    },
  };
  const authenticators: Authenticator[] = [apiKey, session, basic];
  if (options.mtls) {
    authenticators.push(
      mtlsAuth({
        map(certificate) {
          const cn = certificate.subject?.CN;
          const name = Array.isArray(cn) ? cn[0] : cn;
          if (!name) return undefined;
          const user = users.get(name);
          return user
            ? principalOf(user, 'mtls', { certificate })
            : { sub: name, name, role: 'user', scopes: USER_SCOPES, method: 'mtls', certificate };
        },
      }),
    );
  }
  return { authenticators, sessions, apiKeys, generatedDemoKey };
}
