// A token endpoint over a real socket, with the reference server's demo clients and users,
// and ways to plant codes, refresh tokens and device codes straight into its store.
import { randomBytes, randomUUID } from 'node:crypto';
import type { OutgoingHttpHeaders } from 'node:http';
import { createLocalJWKSet, type JWTPayload, jwtVerify } from 'jose';
import { expect } from 'vitest';
import { authenticate } from '../../src/auth/authenticate.js';
import { createSessions } from '../../src/auth/session/session.js';
import { compose, type Middleware } from '../../src/core/compose.js';
import { getPrincipal } from '../../src/core/principal.js';
import { sendJson } from '../../src/core/send.js';
import { createRouter } from '../../src/http/routing/router.js';
import { defineClient } from '../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../src/oauth/clients/store.js';
import {
  type AuthorizationServerOptions,
  createOAuthContext,
  type OAuthContext,
} from '../../src/oauth/context.js';
import { createIntrospectionEndpoint } from '../../src/oauth/endpoints/introspection.js';
import { createRevocationEndpoint } from '../../src/oauth/endpoints/revocation.js';
import { createTokenEndpoint } from '../../src/oauth/endpoints/token.js';
import { codeChallengeS256 } from '../../src/oauth/protocol/pkce.js';
import {
  type AuthorizationCodeRecord,
  codes,
  type DeviceCodeRecord,
  deviceCodes,
} from '../../src/oauth/store/records.js';
import { hashToken, newOpaqueToken, type UserClaims } from '../../src/oauth/tokens/issue.js';
import { createKeySet, type KeySet } from '../../src/oauth/tokens/key-set.js';
import { ownAccessTokens } from '../../src/oauth/tokens/verify.js';
import { json, type Listening, type Reply, request, serve } from '../helpers/http.js';

export const ISSUER = 'https://auth.example.test';
export const WEB_REDIRECT = 'http://127.0.0.1:8080/callback';
export const SPA_REDIRECT = 'http://127.0.0.1:5173/callback';
export const USER_SCOPES = [
  'openid',
  'profile',
  'email',
  'offline_access',
  'read:messages',
  'write:messages',
];

export const USERS: Record<string, UserClaims> = {
  alice: {
    sub: 'alice',
    name: 'Alice Example',
    email: 'alice@example.com',
    email_verified: true,
    role: 'admin',
    picture: 'https://example.test/alice.png',
  },
  bob: { sub: 'bob', name: 'Bob Example', email: 'bob@example.com', role: 'user' },
};

/** The demo clients of the reference server, plus a few for the edge cases. */
async function makeClients(): Promise<MemoryClientStore> {
  const store = new MemoryClientStore(
    await Promise.all([
      defineClient({
        clientId: 'demo-service',
        secret: 'demo-service-secret',
        grantTypes: ['client_credentials'],
        redirectUris: [],
        scopes: ['read:messages', 'write:messages'],
      }),
      defineClient({
        clientId: 'reader-service',
        secret: 'reader-service-secret',
        grantTypes: ['client_credentials'],
        redirectUris: [],
        scopes: ['read:messages', 'write:messages'],
        defaultScopes: ['read:messages'],
      }),
      defineClient({
        clientId: 'demo-web',
        secret: 'demo-web-secret',
        grantTypes: ['authorization_code', 'refresh_token'],
        redirectUris: [WEB_REDIRECT],
        scopes: USER_SCOPES,
      }),
      defineClient({
        clientId: 'other-web',
        secret: 'other-web-secret',
        grantTypes: ['authorization_code', 'refresh_token'],
        redirectUris: [WEB_REDIRECT],
        scopes: USER_SCOPES,
      }),
      defineClient({
        clientId: 'no-refresh-web',
        secret: 'no-refresh-web-secret',
        grantTypes: ['authorization_code'],
        redirectUris: [WEB_REDIRECT],
        scopes: USER_SCOPES,
      }),
      defineClient({
        clientId: 'demo-spa',
        grantTypes: ['authorization_code', 'refresh_token'],
        redirectUris: ['http://localhost:5173/callback', SPA_REDIRECT],
        scopes: USER_SCOPES,
      }),
      defineClient({
        clientId: 'demo-device',
        grantTypes: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
        redirectUris: [],
        scopes: USER_SCOPES,
      }),
      defineClient({
        clientId: 'other-device',
        grantTypes: ['urn:ietf:params:oauth:grant-type:device_code'],
        redirectUris: [],
        scopes: USER_SCOPES,
      }),
    ]),
  );
  // A public client that a hand-written store lets claim client_credentials (defineClient refuses).
  store.add(
    Object.freeze({
      clientId: 'odd-public',
      grantTypes: ['client_credentials'] as const,
      redirectUris: [],
      scopes: ['read:messages'],
    }),
  );
  return store;
}

let keys: KeySet | undefined;
let clients: MemoryClientStore | undefined;

/** A token endpoint on its own server and context (keys and clients are shared, being costly). */
export async function startTokenServer(
  options: Partial<AuthorizationServerOptions> = {},
): Promise<{ ctx: OAuthContext; server: Listening }> {
  keys ??= await createKeySet();
  clients ??= await makeClients();
  const ctx = createOAuthContext({
    issuer: ISSUER,
    clients,
    keys,
    users: {
      verify: () => undefined,
      get: (sub) => {
        if (sub === 'explode') throw new Error('the user database is down');
        return USERS[sub];
      },
    },
    sessions: createSessions({ allowedOrigins: [ISSUER] }),
    ...options,
  });
  return { ctx, server: await serve(createTokenEndpoint(ctx)) };
}

/**
 * The token, revocation and introspection endpoints on one server and context, with
 * `/api/me` answering the principal that `ownAccessTokens` makes of a bearer token.
 */
export async function startOAuthServer(
  options: Partial<AuthorizationServerOptions> = {},
): Promise<{ ctx: OAuthContext; server: Listening }> {
  const { ctx } = await startTokenServer(options);
  const me: Middleware = (req, res) => sendJson(res, 200, getPrincipal(req));
  const router = createRouter({
    '/token': { POST: createTokenEndpoint(ctx) },
    '/revoke': createRevocationEndpoint(ctx),
    '/introspect': createIntrospectionEndpoint(ctx),
    '/api/me': { GET: compose([authenticate([ownAccessTokens(ctx)]), me]) },
  });
  return { ctx, server: await serve(router) };
}

/** `application/x-www-form-urlencoded` as oauth4webapi writes Basic credentials: even `-` and `.` escaped. */
export function formEncode(value: string): string {
  return encodeURIComponent(value)
    .replace(/[-_.!~*'()]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%20/g, '+');
}

export const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${formEncode(id)}:${formEncode(secret)}`).toString('base64')}`;

export const SECRETS: Record<string, string> = {
  'demo-service': 'demo-service-secret',
  'reader-service': 'reader-service-secret',
  'demo-web': 'demo-web-secret',
  'other-web': 'other-web-secret',
  'no-refresh-web': 'no-refresh-web-secret',
};

/** POSTs a token request: `client` authenticates with Basic when it has a secret, else with `client_id`. */
export function tokenRequest(
  server: Listening,
  params: Record<string, string>,
  options: { client?: string; headers?: OutgoingHttpHeaders; path?: string } = {},
): Promise<Reply> {
  const form = new URLSearchParams(params);
  const headers: OutgoingHttpHeaders = { 'Content-Type': 'application/x-www-form-urlencoded' };
  if (options.client !== undefined) {
    const secret = SECRETS[options.client];
    if (secret === undefined) form.set('client_id', options.client);
    else headers.Authorization = basic(options.client, secret);
  }
  return request(server, options.path ?? '/token', {
    method: 'POST',
    headers: { ...headers, ...options.headers },
    body: form.toString(),
  });
}

/** demo-web redeems an authorization `code` with its PKCE `verifier`. */
export function redeemWebCode(server: Listening, code: string, verifier: string): Promise<Reply> {
  return tokenRequest(
    server,
    { grant_type: 'authorization_code', code, redirect_uri: WEB_REDIRECT, code_verifier: verifier },
    { client: 'demo-web' },
  );
}

/** Asserts an RFC 6749 §5.2 error answer and returns its body. */
export function expectError(
  reply: Reply,
  error: string,
  status = error === 'invalid_client' ? 401 : 400,
) {
  expect({ status: reply.status, error: json(reply).error }).toEqual({ status, error });
  expectTokenHeaders(reply);
  expect(typeof json(reply).error_description).toBe('string');
  return json(reply);
}

/** The headers every token endpoint answer carries (RFC 6749 §5.1). */
export function expectTokenHeaders(reply: Reply): void {
  expect(reply.headers['content-type']).toBe('application/json');
  expect(reply.headers['cache-control']).toBe('no-store');
  expect(reply.headers.pragma).toBe('no-cache');
}

/** Asserts a 200 token response and returns it. */
export function expectTokens(reply: Reply) {
  if (reply.status !== 200) throw new Error(`expected 200, got ${reply.status}: ${reply.body}`);
  expectTokenHeaders(reply);
  const body = json<{
    access_token: string;
    token_type: string;
    expires_in: number;
    scope: string;
    refresh_token?: string;
    id_token?: string;
  }>(reply);
  expect(body.token_type).toBe('Bearer');
  return body;
}

/** A PKCE verifier and its S256 challenge. */
export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: codeChallengeS256(verifier) };
}

/** Plants an authorization code for demo-web (by default) as the authorize endpoint would. */
export async function plantCode(
  ctx: OAuthContext,
  overrides: Partial<AuthorizationCodeRecord> = {},
  ttlMs = 60_000,
): Promise<{ code: string; record: AuthorizationCodeRecord }> {
  const code = newOpaqueToken();
  const record: AuthorizationCodeRecord = {
    clientId: 'demo-web',
    redirectUri: WEB_REDIRECT,
    sub: 'alice',
    scope: ['openid', 'profile', 'email', 'offline_access', 'read:messages'],
    nonce: 'n-0S6_WzA2Mj',
    authTime: Math.floor(Date.now() / 1000) - 30,
    grantId: randomUUID(),
    ...overrides,
  };
  await codes(ctx.store).save(hashToken(code), record, ttlMs);
  return { code, record };
}

/** Plants a pending device authorization for demo-device (by default). */
export async function plantDeviceCode(
  ctx: OAuthContext,
  overrides: Partial<DeviceCodeRecord> = {},
): Promise<{ deviceCode: string; hash: string; record: DeviceCodeRecord }> {
  const deviceCode = newOpaqueToken();
  const record: DeviceCodeRecord = {
    clientId: 'demo-device',
    scope: ['openid', 'profile', 'offline_access', 'read:messages'],
    userCode: randomBytes(4).toString('hex').toUpperCase(),
    status: 'pending',
    interval: 5_000,
    grantId: randomUUID(),
    ...overrides,
  };
  const hash = hashToken(deviceCode);
  await deviceCodes(ctx.store).save(hash, record, 600_000);
  return { deviceCode, hash, record };
}

/** Verifies an access token as a resource server would (RFC 9068) and returns its claims. */
export async function verifyAccessToken(ctx: OAuthContext, token: string): Promise<JWTPayload> {
  const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(ctx.keys.jwks()), {
    issuer: ISSUER,
    audience: ISSUER,
    typ: 'at+jwt',
  });
  expect(protectedHeader.typ).toBe('at+jwt');
  return payload;
}

/** Verifies an ID token for `clientId` and returns its claims. */
export async function verifyIdToken(
  ctx: OAuthContext,
  token: string,
  clientId: string,
): Promise<JWTPayload> {
  const { payload } = await jwtVerify(token, createLocalJWKSet(ctx.keys.jwks()), {
    issuer: ISSUER,
    audience: clientId,
  });
  return payload;
}
