import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
} from 'node:crypto';
import { readFileSync } from 'node:fs';
import { calculateJwkThumbprint, exportJWK, type JWK } from 'jose';
import {
  type ApiKeyStore,
  type Authenticator,
  apiKeyAuth,
  basicAuth,
  createApiKey,
  createSessions,
  importApiKey,
  jwtBearer,
  MemoryApiKeyStore,
  mtlsAuth,
  type Principal,
} from 'portico';
import { USER_SCOPES, type User, type Users } from './users.js';

/** The server's token signing key: RS256, from `SIGNING_KEY` (a PEM file) or made at start. */
export interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  /** The public half as a JWK, as `/.well-known/jwks.json` publishes it. */
  publicJwk: JWK;
}

export async function loadSigningKey(path: string | undefined): Promise<SigningKey> {
  const privateKey =
    path === undefined
      ? generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey
      : createPrivateKey(readFileSync(path));
  const jwk = await exportJWK(createPublicKey(privateKey));
  const kid = await calculateJwkThumbprint(jwk);
  return { kid, privateKey, publicJwk: { ...jwk, kid, use: 'sig', alg: 'RS256' } };
}

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

/** Every mechanism of the contract, in the order `/api/*` tries them. */
export async function createAuth(options: {
  users: Users;
  baseUrl: string;
  signingKey: SigningKey;
  allowedOrigins: readonly string[];
  secureCookies: boolean;
  demoApiKey: string | undefined;
  mtls: boolean;
}): Promise<AuthSetup> {
  const { users } = options;
  const apiKeys = new MemoryApiKeyStore();
  let generatedDemoKey: string | undefined;
  if (options.demoApiKey) {
    await importApiKey(apiKeys, options.demoApiKey, { owner: 'alice', name: 'demo' });
  } else {
    generatedDemoKey = (await createApiKey(apiKeys, { owner: 'alice', name: 'demo' })).key;
  }
  const sessions = createSessions({
    allowedOrigins: [...options.allowedOrigins],
    cookie: { secure: options.secureCookies },
  });
  const bearer = jwtBearer({
    jwks: { keys: [options.signingKey.publicJwk] },
    issuer: options.baseUrl,
    audience: options.baseUrl,
    algorithms: ['RS256'],
    typ: 'at+jwt',
    toPrincipal(payload) {
      const user = typeof payload.sub === 'string' ? users.get(payload.sub) : undefined;
      const scope =
        typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : [];
      return {
        sub: String(payload.sub),
        name: typeof payload.name === 'string' ? payload.name : user?.name,
        role: typeof payload.role === 'string' ? payload.role : user?.role,
        scopes: scope,
        method: 'bearer',
        claims: payload,
        clientId: typeof payload.client_id === 'string' ? payload.client_id : undefined,
      };
    },
  });
  const apiKey = apiKeyAuth({
    store: apiKeys,
    resolve(record) {
      const user = users.get(record.owner);
      if (user === undefined) return undefined;
      return principalOf(user, 'api_key', {
        keyId: record.id,
        scopes: record.scopes ?? USER_SCOPES,
      });
    },
  });
  const basic = basicAuth({
    async verify(username, password) {
      const user = await users.verify(username, password);
      return user === undefined ? undefined : principalOf(user, 'basic');
    },
  });
  const authenticators: Authenticator[] = [bearer, apiKey, sessions.authenticator, basic];
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
