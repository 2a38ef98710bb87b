// A token endpoint and a DPoP resource (/api/me) sharing the authorization server's stores of
// one-time ids, over real sockets; hand-made DPoP proofs and client assertions (jose); and
// the floods of refused requests one address sends at each store.
import { randomUUID, type webcrypto } from 'node:crypto';
import type { OutgoingHttpHeaders } from 'node:http';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { authenticate } from '../../src/auth/authenticate.js';
import { accessTokenHash } from '../../src/auth/dpop/dpop.js';
import type { ReplayStore } from '../../src/auth/replay/store.js';
import { compose, type Middleware } from '../../src/core/compose.js';
import { getPrincipal } from '../../src/core/principal.js';
import { sendJson } from '../../src/core/send.js';
import { createRouter } from '../../src/http/routing/router.js';
import { CLIENT_ASSERTION_TYPE } from '../../src/oauth/clients/assertion.js';
import type { OAuthClient } from '../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../src/oauth/clients/store.js';
import type { AuthorizationServerOptions, OAuthContext } from '../../src/oauth/context.js';
import { createPushedAuthorizationEndpoint } from '../../src/oauth/endpoints/par.js';
import { createTokenEndpoint } from '../../src/oauth/endpoints/token.js';
import { ownAccessTokens } from '../../src/oauth/tokens/verify.js';
import { json, type Listening, type Reply, request, serve } from '../helpers/http.js';
import { ISSUER, startTokenServer } from './token-fixtures.js';

const ORIGIN = new URL(ISSUER).origin;

/** A signing key: its private half, public JWK and RFC 7638 thumbprint. */
export interface Key {
  privateKey: webcrypto.CryptoKey;
  jwk: JWK;
  jkt: string;
}

export async function newKey(kid?: string): Promise<Key> {
  const pair = await generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await exportJWK(pair.publicKey)), ...(kid && { kid, alg: 'ES256' }) };
  return { privateKey: pair.privateKey, jwk, jkt: await calculateJwkThumbprint(jwk) };
}

/**
 * A DPoP proof of `key`: a POST to /token (or `endpoint`), or a GET of /api/me with
 * `accessToken`'s `ath`.
 */
export function dpopProof(key: Key, accessToken?: string, endpoint = '/token'): Promise<string> {
  const target =
    accessToken === undefined
      ? { htm: 'POST', htu: `${ORIGIN}${endpoint}` }
      : { htm: 'GET', htu: `${ORIGIN}/api/me`, ath: accessTokenHash(accessToken) };
  return new SignJWT({ ...target, jti: randomUUID(), iat: Math.floor(Date.now() / 1000) })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: key.jwk })
    .sign(key.privateKey);
}

/** The clients: `demo-spa` (public), and two that authenticate with their keys. */
export function replayClients(keys: Record<'key-client' | 'other-key-client', Key>) {
  const keyClient = (clientId: keyof typeof keys): OAuthClient => ({
    clientId,
    grantTypes: ['client_credentials', 'refresh_token'],
    redirectUris: [],
    scopes: ['read:messages'],
    jwks: { keys: [keys[clientId].jwk] },
  });
  return new MemoryClientStore([
    Object.freeze({
      clientId: 'demo-spa',
      grantTypes: ['authorization_code', 'refresh_token'] as const,
      redirectUris: ['http://127.0.0.1:5173/callback'],
      scopes: ['openid', 'read:messages'],
    }),
    keyClient('key-client'),
    keyClient('other-key-client'),
  ]);
}

/** A client assertion of `clientId`, signed with its key. */
export function clientAssertion(clientId: string, key: Key, jti = randomUUID()): Promise<string> {
  const t = Math.floor(Date.now() / 1000);
  return new SignJWT({ jti })
    .setProtectedHeader({ alg: 'ES256', kid: key.jwk.kid })
    .setIssuer(clientId)
    .setSubject(clientId)
    .setAudience(ISSUER)
    .setIssuedAt(t)
    .setExpirationTime(t + 60)
    .sign(key.privateKey);
}

/** The one-time-id stores of a server under test. */
export interface ReplayStores {
  assertions: ReplayStore;
  dpop: ReplayStore;
}

/** /token and a DPoP resource /api/me (answering the principal's method) on one server. */
export async function startReplayServer(
  clients: MemoryClientStore,
  stores: ReplayStores,
  options: Partial<AuthorizationServerOptions> = {},
): Promise<{ ctx: OAuthContext; server: Listening }> {
  const { ctx } = await startTokenServer({
    clients,
    replay: stores.assertions,
    dpop: { replay: stores.dpop },
    ...options,
  });
  const bearer = ownAccessTokens(ctx, { dpop: { origin: ORIGIN, verifier: ctx.dpop! } });
  const me: Middleware = (req, res) => sendJson(res, 200, { method: getPrincipal(req)?.method });
  const guard = options.guard === undefined ? {} : { guard: options.guard };
  const server = await serve(
    createRouter({
      '/token': { POST: createTokenEndpoint(ctx) },
      '/par': { POST: createPushedAuthorizationEndpoint(ctx) },
      '/api/me': { GET: compose([authenticate([bearer], guard), me]) },
    }),
  );
  return { ctx, server };
}

/** POSTs a token request with `form`, and these headers. */
export function postToken(
  server: Listening,
  form: Record<string, string>,
  headers: OutgoingHttpHeaders = {},
): Promise<Reply> {
  return request(server, '/token', {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
  });
}

/** The form of a `client_credentials` request authenticated with `assertion`. */
export const assertionForm = (assertion: string): Record<string, string> => ({
  grant_type: 'client_credentials',
  client_assertion_type: CLIENT_ASSERTION_TYPE,
  client_assertion: assertion,
});

/** `client_credentials` for a key client, with a fresh assertion and, given a key, a proof. */
export async function keyClientToken(
  server: Listening,
  clientId: string,
  clientKey: Key,
  proofKey?: Key,
  headers: OutgoingHttpHeaders = {},
): Promise<Reply> {
  return postToken(server, assertionForm(await clientAssertion(clientId, clientKey)), {
    ...(proofKey && { DPoP: await dpopProof(proofKey) }),
    ...headers,
  });
}

/** GET /api/me with a DPoP-bound token and a fresh proof of `key` (or the given one). */
export async function callApi(
  server: Listening,
  token: string,
  key: Key,
  proof?: string,
  headers: OutgoingHttpHeaders = {},
): Promise<Reply> {
  return request(server, '/api/me', {
    headers: {
      Authorization: `DPoP ${token}`,
      DPoP: proof ?? (await dpopProof(key, token)),
      ...headers,
    },
  });
}

/** Runs `send` `count` times, `width` at a time, and returns the statuses seen. */
export async function flood(
  count: number,
  send: (i: number) => Promise<Reply>,
  width = 16,
): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  for (let i = 0; i < count; i += width) {
    const batch = Array.from({ length: Math.min(width, count - i) }, (_, j) => send(i + j));
    for (const reply of await Promise.all(batch)) {
      statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
    }
  }
  return statuses;
}

/** A made-up token or code: well formed, never issued. */
const madeUp = () => randomUUID().replaceAll('-', '');

/**
 * The floods of refused requests one address sends, each with a valid one-time JWT: DPoP
 * proofs (of `keys`, in turn) with a made-up code of the public client at /token, and with a
 * made-up access token at /api/me; assertions of `key-client` with a made-up refresh token.
 */
export function floods(server: Listening, clientKey: Key, keys: readonly Key[]) {
  const key = (i: number) => keys[i % keys.length]!;
  return {
    tokenProofs: (count: number) =>
      flood(count, async (i) =>
        postToken(
          server,
          {
            grant_type: 'authorization_code',
            client_id: 'demo-spa',
            code: madeUp(),
            code_verifier: `${madeUp()}${madeUp()}`,
            redirect_uri: 'http://127.0.0.1:5173/callback',
          },
          { DPoP: await dpopProof(key(i)) },
        ),
      ),
    apiProofs: (count: number) =>
      flood(count, async (i) => {
        const token = `${madeUp()}.${madeUp()}.${madeUp()}`;
        return callApi(server, token, key(i));
      }),
    pushProofs: (count: number) =>
      flood(count, async (i) =>
        request(server, '/par', {
          method: 'POST',
          headers: {
            'Content-Type': 'application/x-www-form-urlencoded',
            DPoP: await dpopProof(key(i), undefined, '/par'),
          },
          // refused: a redirect URI the public client never registered
          body: new URLSearchParams({
            client_id: 'demo-spa',
            response_type: 'code',
            redirect_uri: 'https://evil.example/callback',
            scope: 'openid',
            code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
            code_challenge_method: 'S256',
          }).toString(),
        }),
      ),
    assertions: (count: number) =>
      flood(count, async () =>
        postToken(server, {
          grant_type: 'refresh_token',
          refresh_token: madeUp(),
          client_assertion_type: CLIENT_ASSERTION_TYPE,
          client_assertion: await clientAssertion('key-client', clientKey),
        }),
      ),
  };
}

/** The error of an OAuth error answer. */
export const errorOf = (reply: Reply) => json<{ error?: string }>(reply).error;
