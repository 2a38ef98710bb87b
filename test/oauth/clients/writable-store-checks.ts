// The contract of a WritableClientStore, the same checks run against MemoryClientStore
// (store.test.ts) and RedisClientStore on one node and on a cluster, through ioredis and
// node-redis (test/redis/contract/client.ts); and the changes seen at the next request of a
// real authorization server (expectChangesAtNextRequest).

import { randomUUID } from 'node:crypto';
import type { RequestListener } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { expect } from 'vitest';
import { toNodeListener } from '../../../src/adapters/node.js';
import { verifyPassword } from '../../../src/auth/password.js';
import { createSessions } from '../../../src/auth/session/session.js';
import { createRouter } from '../../../src/http/routing/router.js';
import { CLIENT_ASSERTION_TYPE } from '../../../src/oauth/clients/assertion.js';
import {
  type ClientDefinition,
  defineClient,
  type OAuthClient,
} from '../../../src/oauth/clients/client.js';
import type { WritableClientStore } from '../../../src/oauth/clients/store.js';
import { createAuthorizationServer } from '../../../src/oauth/server.js';
import { createKeySet, type KeySet } from '../../../src/oauth/tokens/key-set.js';
import { json, type Listening, listen, request } from '../../helpers/http.js';

/**
 * Opens a fresh, empty store space bounded by `maxClients` (when given) and answers a function
 * giving views of it: for Redis each view is a new store on a new client (another process),
 * for memory the one store.
 */
export type OpenStore = (options?: { maxClients?: number }) => () => WritableClientStore;

/** One check of the contract. */
export interface WritableStoreCheck {
  name: string;
  run(open: OpenStore): Promise<void>;
}

const SECRET = 'partner-secret-0123456789';

let hashed: OAuthClient | undefined;

/** A confidential client_credentials client (its scrypt hash computed once: it is costly). */
async function partner(overrides: Partial<OAuthClient> = {}): Promise<OAuthClient> {
  hashed ??= await defineClient({
    clientId: 'partner',
    secret: SECRET,
    grantTypes: ['client_credentials'],
    redirectUris: [],
    scopes: ['read:messages', 'write:messages'],
  });
  return Object.freeze({ ...hashed, ...overrides });
}

/** A client with every field of OAuthClient set. */
async function everyField(clientId: string): Promise<OAuthClient> {
  const { publicKey } = await generateKeyPair('ES256', { extractable: true });
  return defineClient({
    clientId,
    jwks: { keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' }] },
    grantTypes: ['authorization_code', 'refresh_token', 'client_credentials'],
    redirectUris: ['https://app.example.test/callback', 'http://127.0.0.1:8080/cb?x=1'],
    postLogoutRedirectUris: ['https://app.example.test/bye'],
    scopes: ['openid', 'profile', 'read:messages'],
    defaultScopes: ['openid'],
    name: 'Every field — ünïcode',
    introspection: 'any',
    dpopBoundAccessTokens: true,
    requirePushedAuthorizationRequests: true,
  });
}

export const writableStoreChecks: readonly WritableStoreCheck[] = [
  {
    name: 'adds, gets, replaces and removes a client, read back as it was written',
    async run(open) {
      const view = open();
      const [a, b] = [view(), view()];
      expect(await a.get('partner')).toBeUndefined();
      const client = await partner();
      await a.add(client);
      const read = await b.get('partner');
      expect(read).toEqual(client);
      expect(Object.isFrozen(read)).toBe(true);
      expect(await verifyPassword(SECRET, read?.secretHash)).toBe(true);
      expect(await verifyPassword('not-the-secret', read?.secretHash)).toBe(false);

      const full = await everyField('every-field');
      await b.add(full);
      expect(await a.get('every-field')).toEqual(full);

      const narrowed = await partner({ scopes: ['read:messages'], name: 'Partner' });
      expect(await b.replace(narrowed)).toBe(true);
      expect(await a.get('partner')).toEqual(narrowed);
      // a replace of no client writes nothing
      expect(await a.replace({ ...narrowed, clientId: 'nobody' })).toBe(false);
      expect(await b.get('nobody')).toBeUndefined();

      expect(await a.remove('partner')).toBe(true);
      expect(await b.get('partner')).toBeUndefined();
      expect(await b.remove('partner')).toBe(false);
      expect(await b.replace(narrowed)).toBe(false);
      expect(await a.get('partner')).toBeUndefined();
      expect(await a.get('every-field')).toEqual(full);
      // removed, its id is free again
      await b.add(client);
      expect(await a.get('partner')).toEqual(client);
    },
  },
  {
    name: 'refuses to add a client whose id is taken (409 ERR_CLIENT_EXISTS), keeping the first',
    async run(open) {
      const view = open();
      const [a, b] = [view(), view()];
      const first = await partner();
      await a.add(first);
      const second = await partner({ scopes: ['write:messages'] });
      await expect(Promise.resolve().then(() => b.add(second))).rejects.toMatchObject({
        status: 409,
        code: 'ERR_CLIENT_EXISTS',
      });
      expect(await a.get('partner')).toEqual(first);
    },
  },
  {
    name: 'holds at most maxClients: a full store refuses an add with a 503 and forgets none',
    async run(open) {
      const view = open({ maxClients: 3 });
      const [a, b] = [view(), view()];
      const clients = await Promise.all(
        ['c1', 'c2', 'c3', 'c4'].map((id) => partner({ clientId: id })),
      );
      for (const client of clients.slice(0, 3)) await a.add(client);
      const refused = await Promise.resolve()
        .then(() => b.add(clients[3]!))
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect(refused).toMatchObject({ status: 503, code: 'ERR_CLIENT_STORE_FULL' });
      expect((refused as { headers?: Record<string, string> }).headers?.['Retry-After']).toBe('60');
      for (const client of clients.slice(0, 3))
        expect(await b.get(client.clientId)).toEqual(client);
      expect(await b.get('c4')).toBeUndefined();
      // full, a client can still be changed; once one is removed there is room again
      const changed = { ...clients[0]!, scopes: ['read:messages'] };
      expect(await b.replace(changed)).toBe(true);
      expect(await a.get('c1')).toEqual(changed);
      expect(await a.remove('c2')).toBe(true);
      await b.add(clients[3]!);
      expect(await a.get('c4')).toEqual(clients[3]);
    },
  },
  {
    name: 'lets exactly one of two simultaneous adds of one id win, and no more than maxClients of many',
    async run(open) {
      const view = open({ maxClients: 4 });
      const [a, b] = [view(), view()];
      for (let round = 0; round < 5; round++) {
        const id = `raced-${round}`;
        const rivals = [
          await partner({ clientId: id, name: 'A' }),
          await partner({ clientId: id, name: 'B' }),
        ];
        const outcomes = await Promise.allSettled([
          Promise.resolve().then(() => a.add(rivals[0]!)),
          Promise.resolve().then(() => b.add(rivals[1]!)),
        ]);
        const won = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [rivals[i]!] : []));
        expect(won).toHaveLength(1);
        const lost = outcomes.find((o) => o.status === 'rejected');
        expect(lost?.status === 'rejected' ? lost.reason : undefined).toMatchObject({
          status: 409,
          code: 'ERR_CLIENT_EXISTS',
        });
        expect(await a.get(id)).toEqual(won[0]);
        expect(await a.remove(id)).toBe(true);
      }
      // eight adds of eight ids at once into room for four: four win, four are refused
      const many = await Promise.all(
        Array.from({ length: 8 }, (_, i) => partner({ clientId: `m${i}` })),
      );
      const outcomes = await Promise.allSettled(
        many.map((client, i) => Promise.resolve().then(() => (i % 2 ? a : b).add(client))),
      );
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(4);
      for (const o of outcomes) {
        if (o.status === 'rejected')
          expect(o.reason).toMatchObject({ status: 503, code: 'ERR_CLIENT_STORE_FULL' });
      }
      const held = await Promise.all(many.map((client) => b.get(client.clientId)));
      expect(held.filter((client) => client !== undefined)).toHaveLength(4);
    },
  },
];

// ---- the next request of a real authorization server sees every change ----

let keys: KeySet | undefined;

const basicOf = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

function tokenRequest(server: Listening, form: Record<string, string>, authorization?: string) {
  return request(server, '/token', {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(authorization === undefined ? {} : { authorization }),
    },
    body: new URLSearchParams(form).toString(),
  });
}

/** A real authorization server (createAuthorizationServer, its routes on a socket) over `clients`. */
export async function startServerOver(clients: WritableClientStore): Promise<Listening> {
  keys ??= await createKeySet();
  let listener: RequestListener = (_req, res) => res.end();
  const listening = await listen((req, res) => listener(req, res));
  const server = createAuthorizationServer({
    issuer: listening.url,
    clients,
    keys,
    users: { verify: () => undefined, get: () => undefined },
    sessions: createSessions({ allowedOrigins: [listening.url] }),
  });
  listener = toNodeListener([createRouter(server.routes)]);
  return listening;
}

/** Status, error and scope of a token answer. */
function outcome(reply: { status: number; body: string }) {
  const body = json<{ error?: string; scope?: string; access_token?: string }>(reply);
  return {
    status: reply.status,
    error: body.error,
    scope: body.scope,
    token: typeof body.access_token,
  };
}

/**
 * Adds a client to `clients` while a real server runs over it, gets a token with it
 * (client_credentials, client_secret_basic), narrows its scopes, rotates its secret, removes
 * it: each change seen at the next request. Then a private_key_jwt client read back
 * authenticates with its keys.
 */
export async function expectChangesAtNextRequest(
  clients: WritableClientStore,
  definition: Partial<ClientDefinition> = {},
): Promise<void> {
  const server = await startServerOver(clients);
  const id = definition.clientId ?? `runtime-${randomUUID()}`;
  const basic = basicOf(id, SECRET);
  const both = { grant_type: 'client_credentials', scope: 'read:messages write:messages' };
  expect(outcome(await tokenRequest(server, both, basic))).toMatchObject({
    status: 401,
    error: 'invalid_client',
  });

  const added = await defineClient({
    clientId: id,
    secret: SECRET,
    grantTypes: ['client_credentials'],
    redirectUris: [],
    scopes: ['read:messages', 'write:messages'],
    ...definition,
  });
  await clients.add(added);
  expect(outcome(await tokenRequest(server, both, basic))).toEqual({
    status: 200,
    error: undefined,
    scope: 'read:messages write:messages',
    token: 'string',
  });

  expect(await clients.replace({ ...added, scopes: ['read:messages'] })).toBe(true);
  expect(outcome(await tokenRequest(server, both, basic))).toMatchObject({
    status: 400,
    error: 'invalid_scope',
  });
  expect(
    outcome(await tokenRequest(server, { grant_type: 'client_credentials' }, basic)),
  ).toMatchObject({
    status: 200,
    scope: 'read:messages',
  });

  const rotated = await defineClient({
    clientId: id,
    secret: 'the-rotated-secret-987',
    grantTypes: ['client_credentials'],
    redirectUris: [],
    scopes: ['read:messages'],
  });
  expect(await clients.replace(rotated)).toBe(true);
  expect(
    outcome(await tokenRequest(server, { grant_type: 'client_credentials' }, basic)),
  ).toMatchObject({
    status: 401,
    error: 'invalid_client',
  });
  const rotatedBasic = basicOf(id, 'the-rotated-secret-987');
  expect(
    outcome(await tokenRequest(server, { grant_type: 'client_credentials' }, rotatedBasic)),
  ).toMatchObject({
    status: 200,
  });

  expect(await clients.remove(id)).toBe(true);
  const gone = await tokenRequest(server, { grant_type: 'client_credentials' }, rotatedBasic);
  expect(outcome(gone)).toMatchObject({ status: 401, error: 'invalid_client' });
  expect(gone.headers['www-authenticate']).toMatch(/^Basic/);

  // private_key_jwt: the keys stored with the client are the keys it signs with
  const pair = await generateKeyPair('ES256', { extractable: true });
  const keyId = `${id}-keys`;
  await clients.add(
    await defineClient({
      clientId: keyId,
      jwks: { keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256' }] },
      grantTypes: ['client_credentials'],
      redirectUris: [],
      scopes: ['read:messages'],
    }),
  );
  const assertion = () =>
    new SignJWT({ jti: randomUUID() })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(keyId)
      .setSubject(keyId)
      .setAudience(server.url)
      .setIssuedAt()
      .setExpirationTime('1m')
      .sign(pair.privateKey);
  const withKeys = async () =>
    outcome(
      await tokenRequest(server, {
        grant_type: 'client_credentials',
        client_assertion_type: CLIENT_ASSERTION_TYPE,
        client_assertion: await assertion(),
      }),
    );
  expect(await withKeys()).toMatchObject({ status: 200, scope: 'read:messages' });
  expect(await clients.remove(keyId)).toBe(true);
  expect(await withKeys()).toMatchObject({ status: 401, error: 'invalid_client' });
}
