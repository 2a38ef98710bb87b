import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  type Authenticator,
  type AuthorizationServer,
  type CredentialGuard,
  createAuthorizationServer,
  createKeySet,
  defineClient,
  type JwkSet,
  type Middleware,
  type OAuthClient,
  type Sessions,
  type TrustProxy,
  type UserClaims,
} from 'portico';
import type { Logger } from 'portico/diagnostics';
import {
  clientStores,
  createEndSessionEndpoint,
  defaultGrants,
  TOKEN_EXCHANGE_GRANT,
  tokenExchangeGrant,
} from 'portico/oauth';
import { clientMetadataAllowPrivate } from './config.js';
import type { SharedState } from './shared-state.js';
import type { Upstream } from './upstream.js';
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
async function demoClients(fapiJwks: JwkSet | undefined): Promise<OAuthClient[]> {
  return Array.from(
    await Promise.all([
      // DEMO_FAPI_JWKS: a client of the FAPI 2.0 baseline, authenticated by its keys
      // (private_key_jwt), pushing its requests (PAR) and getting DPoP-bound tokens only
      ...(fapiJwks === undefined
        ? []
        : [
            defineClient({
              clientId: 'demo-fapi',
              jwks: fapiJwks,
              grantTypes: ['authorization_code', 'refresh_token'],
              redirectUris: ['http://127.0.0.1:8080/callback'],
              scopes: USER_CLIENT_SCOPES,
              requirePushedAuthorizationRequests: true,
              dpopBoundAccessTokens: true,
            }),
          ]),
      defineClient({
        clientId: 'demo-service',
        secret: 'demo-service-secret',
        // its own tokens, and tokens acting for a user whose token it was given (RFC 8693)
        grantTypes: ['client_credentials', TOKEN_EXCHANGE_GRANT],
        redirectUris: [],
        scopes: ['read:messages', 'write:messages'],
        // a resource server too: it may introspect every access token, not only its own
        introspection: 'any',
      }),
      defineClient({
        clientId: 'demo-web',
        secret: 'demo-web-secret',
        grantTypes: ['authorization_code', 'refresh_token'],
        redirectUris: ['http://127.0.0.1:8080/callback'],
        postLogoutRedirectUris: ['http://127.0.0.1:8080/'],
        scopes: USER_CLIENT_SCOPES,
      }),
      defineClient({
        clientId: 'demo-spa',
        grantTypes: ['authorization_code', 'refresh_token'],
        redirectUris: ['http://localhost:5173/callback', 'http://127.0.0.1:5173/callback'],
        postLogoutRedirectUris: ['http://127.0.0.1:5173/', 'http://localhost:5173/'],
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

/** The identity claims of a user: the specification's identity-token table, and `role`. */
function claimsOf(user: User, issuer: string): UserClaims {
  return {
    sub: user.sub,
    name: user.name,
    role: user.role,
    email: user.email,
    email_verified: true,
    picture: new URL(user.picturePath, issuer).href,
  };
}

/** A new RS256 signing key, as PKCS#8 PEM. */
function newSigningKeyPem(): string {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
}

/** The identifier of the MCP endpoint as a resource (RFC 8707): `{BASE_URL}/mcp`. */
export function mcpResource(issuer: string): string {
  return `${issuer.replace(/\/$/, '')}/mcp`;
}

/** The reference service's authorization server, with the verifier of its `/mcp` resource. */
export interface ReferenceOAuth extends AuthorizationServer {
  /** `{BASE_URL}/mcp`, the MCP endpoint's resource identifier. */
  readonly mcpResource: string;
  /** Verifies tokens for `/mcp` (audience includes it); `bearer` is BASE_URL's. */
  readonly mcpBearer: Authenticator;
}

/** The authorization server of the reference service, at the contract's paths. */
export async function createOAuth(options: {
  issuer: string;
  users: Users;
  sessions: Sessions;
  signingKeyPath: string | undefined;
  /** Shared state: the grant store, and the keys every process must agree on. */
  shared: SharedState;
  /** Counts wrong passwords at the sign-in forms and failed client authentication. */
  guard: CredentialGuard;
  /** Where the endpoints' failures are logged. */
  logger: Logger;
  /** `REGISTRATION_LIMIT` (10 per client IP per hour) and the proxies to believe about the IP. */
  registration?: { limit: number; trustProxy: TrustProxy } | undefined;
  /** `DEMO_FAPI_JWKS`: the public keys of client `demo-fapi`, when it is registered. */
  fapiJwks?: JwkSet | undefined;
  /** What `POST /logout` without RP-Initiated Logout parameters does: the API's sign-out. */
  apiSignOut: Middleware;
  /** Client metadata documents from loopback/private addresses. @defaultValue `CLIENT_METADATA_ALLOW_PRIVATE` */
  clientMetadataAllowPrivate?: boolean;
  /** `UPSTREAM_ISSUER`: users may sign in there too; its linked users are users here. */
  upstream?: Upstream | undefined;
}): Promise<ReferenceOAuth> {
  const { shared } = options;
  // SIGNING_KEY, else one key for the whole service (made by the first process with Redis)
  const pem =
    options.signingKeyPath === undefined
      ? await shared.agreed('signing-key', newSigningKeyPem)
      : readFileSync(options.signingKeyPath, 'utf8');
  const keys = await createKeySet({ keys: [pem] });
  // sign-in and consent forms are bound by an HMAC: every process must use the same key
  const formKey = await shared.agreed('form-key', () => randomBytes(32).toString('base64url'));
  const server = createAuthorizationServer({
    issuer: options.issuer,
    // RP-Initiated Logout at /logout, whose bare POST stays the API's sign-out (below)
    paths: { endSession: '/logout' },
    formKey,
    guard: options.guard,
    logger: options.logger,
    // DPoP proofs (RFC 9449) at /token and on the API: made within the last 60 seconds; their
    // jti accepted once, by every process, in a store apart from the client assertions'
    dpop: {
      maxAge: 60_000,
      ...(shared.replayStores !== undefined && { replay: shared.replayStores.dpop }),
    },
    ...(shared.replayStores !== undefined && { replay: shared.replayStores.assertions }),
    // a revoked grant (at /revoke, by refresh-token reuse) ends its streams and webhooks
    revocations: shared.revocations,
    ...(shared.oauthStore !== undefined && { store: shared.oauthStore }),
    ...(shared.deviceFailureStore !== undefined && {
      deviceFailureStore: shared.deviceFailureStore,
    }),
    // the demo clients, and beside them those that register themselves at /register (RFC
    // 7591): open, REGISTRATION_LIMIT per client IP per hour, kept in memory or in Redis
    clients: clientStores(await demoClients(options.fapiJwks), shared.clientStore),
    features: { registration: true },
    registration: {
      limit: options.registration?.limit ?? 10,
      windowMs: 3_600_000,
      trustProxy: options.registration?.trustProxy ?? false,
      ...(shared.rateLimitStore !== undefined && { store: shared.rateLimitStore }),
    },
    // RFC 8707: tokens are for BASE_URL (the default: the API, /events, /ws, /userinfo) or
    // for /mcp, each carrying only the scopes its resource understands
    resources: [
      { identifier: options.issuer, scopes: USER_CLIENT_SCOPES },
      { identifier: mcpResource(options.issuer), scopes: ['read:messages', 'write:messages'] },
    ],
    grants: [
      ...defaultGrants,
      // token exchange (RFC 8693): demo-service trades a user's access token for one acting on
      // the user's behalf, for one of the two resources (its targets by default)
      tokenExchangeGrant({ clients: ['demo-service'] }),
    ],
    keys,
    sessions: options.sessions,
    users: {
      async verify(username, password) {
        const user = await options.users.verify(username, password);
        return user === undefined ? undefined : claimsOf(user, options.issuer);
      },
      async get(sub) {
        const user = options.users.get(sub);
        if (user !== undefined) return claimsOf(user, options.issuer);
        // a user who signed in at the upstream provider: the profile it gave
        const linked = await options.upstream?.user(sub);
        return linked === undefined
          ? undefined
          : { sub, name: linked.name, role: 'user', ...(linked.email && { email: linked.email }) };
      },
    },
    // the sign-in pages of /authorize and /device/verify link to the upstream provider
    ...(options.upstream !== undefined && { signInWith: options.upstream.signIn }),
    // the contract: ID tokens carry the identity-token table (name, email, picture, …)
    // whenever `openid` is granted, not only with `profile` and `email`
    idTokenClaims: 'all',
    tokenPathAliases: ['/oauth/token'],
    scopesSupported: USER_CLIENT_SCOPES,
    // an https client_id with a path is the client its metadata document describes (fetched
    // through the webhooks' address guard, at most 5 s and 5 KiB, cached at most 24 h)
    clientMetadataDocuments: {
      allowPrivate: options.clientMetadataAllowPrivate ?? clientMetadataAllowPrivate(),
    },
  });
  const logout = createEndSessionEndpoint(server.context, {
    formKey,
    withoutParameters: options.apiSignOut,
  });
  const mcp = mcpResource(options.issuer);
  return {
    ...server,
    routes: { ...server.routes, '/logout': logout },
    // the /mcp endpoint's own verifier: tokens whose audience includes {BASE_URL}/mcp
    mcpResource: mcp,
    mcpBearer: server.bearerFor(mcp),
  };
}
