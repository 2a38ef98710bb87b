// private_key_jwt (src/oauth/clients/assertion.ts) at its edges, over a real token endpoint:
// the assertion's size and shape, iss = sub read before any client lookup, aud arrays, typ
// case, the 5-minute exp bound, jti bounds, how long a jti is remembered, and how the keys
// of a client (inline or at a jwks_uri) are kept between requests.
import { randomUUID, type webcrypto } from 'node:crypto';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { MemoryReplayStore, type ReplayStore } from '../../../src/auth/replay/store.js';
import { sendJson } from '../../../src/core/send.js';
import {
  CLIENT_ASSERTION_ALGORITHMS,
  CLIENT_ASSERTION_TYPE,
  createClientAssertionCheck,
} from '../../../src/oauth/clients/assertion.js';
import type { OAuthClient } from '../../../src/oauth/clients/client.js';
import { type ClientStore, MemoryClientStore } from '../../../src/oauth/clients/store.js';
import { closeAll, type Listening, type Reply, request, serve } from '../../helpers/http.js';
import { expectError, expectTokens, ISSUER, startOAuthServer } from '../token-fixtures.js';

type Key = { privateKey: webcrypto.CryptoKey; jwk: JWK };

let es: Key;

beforeAll(async () => {
  const pair = await generateKeyPair('ES256', { extractable: true });
  es = {
    privateKey: pair.privateKey,
    jwk: { ...(await exportJWK(pair.publicKey)), kid: 'es', alg: 'ES256' },
  };
});
afterEach(() => {
  vi.restoreAllMocks();
});
afterAll(closeAll);

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** A client with keys, as a hand-written store holds it. */
function keyClient(clientId: string, keys: Partial<OAuthClient>): OAuthClient {
  return {
    clientId,
    grantTypes: ['client_credentials'],
    redirectUris: [],
    scopes: ['read:messages'],
    ...keys,
  };
}

/** An ES256 assertion of `client` signed with `es`. */
function assertion(
  claims: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
  client = 'key-client',
): Promise<string> {
  const now = nowSeconds();
  return new SignJWT({
    iss: client,
    sub: client,
    aud: ISSUER,
    jti: randomUUID(),
    iat: now,
    exp: now + 60,
    ...claims,
  })
    .setProtectedHeader({ alg: 'ES256', kid: 'es', ...header })
    .sign(es.privateKey);
}

/** A compact JWS with these segments, its signature never checked (refused before, or at, `alg`). */
function unverifiable(header: Record<string, unknown>, claims: Record<string, unknown>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part(header)}.${part(claims)}.c2lnbmF0dXJl`;
}

/** A token endpoint (with revocation and introspection) whose clients are `clients`. */
async function start(clients: ClientStore, replay?: ReplayStore): Promise<Listening> {
  return (
    await startOAuthServer({
      clients,
      ...(replay && { replay, dpop: { replay: new MemoryReplayStore() } }),
    })
  ).server;
}

/** The one client `key-client`, with the public key of `es` inline. */
const inlineClients = () =>
  new MemoryClientStore([keyClient('key-client', { jwks: { keys: [es.jwk] } })]);

function clientCredentials(server: Listening, value: string): Promise<Reply> {
  return request(server, '/token', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_assertion_type: CLIENT_ASSERTION_TYPE,
      client_assertion: value,
    }).toString(),
  });
}

const refused = (reply: Reply) =>
  expect(expectError(reply, 'invalid_client').error_description).toBe(
    'Client authentication failed.',
  );

/** A valid assertion exactly `length` characters long (a `pad` claim fills it up). */
async function assertionOfLength(length: number): Promise<string> {
  const b64 = (json: string) => Math.ceil((Buffer.byteLength(json) * 4) / 3);
  const now = nowSeconds();
  const base = {
    iss: 'key-client',
    sub: 'key-client',
    aud: ISSUER,
    jti: randomUUID(),
    iat: now,
    exp: now + 60,
  };
  for (const header of [{ alg: 'ES256', kid: 'es' }, { alg: 'ES256' }]) {
    for (let n = 0; n < length; n++) {
      const claims = { ...base, pad: 'x'.repeat(n) };
      // header.payload.signature, an ES256 signature being 86 characters
      const total = b64(JSON.stringify(header)) + b64(JSON.stringify(claims)) + 88;
      if (total > length) break;
      if (total === length) {
        const value = await new SignJWT(claims).setProtectedHeader(header).sign(es.privateKey);
        expect(value).toHaveLength(length);
        return value;
      }
    }
  }
  throw new Error(`no assertion of ${length} characters`);
}

describe('assertionClientId', () => {
  it('takes a valid assertion of exactly 8192 characters and refuses one of 8193', async () => {
    const server = await start(inlineClients());
    expectTokens(await clientCredentials(server, await assertionOfLength(8192)));
    refused(await clientCredentials(server, await assertionOfLength(8193)));
  });

  it('refuses a validly signed assertion that is not compact base64url (padded signature)', async () => {
    const server = await start(inlineClients());
    const good = await assertion();
    const signature = good.slice(good.lastIndexOf('.') + 1);
    expect(signature).toHaveLength(86);
    // the same bytes, as standard padded base64url: jose alone would take it
    refused(await clientCredentials(server, `${good}==`));
    expectTokens(await clientCredentials(server, good));
  });

  it.each([
    ['without iss nor sub', { iss: undefined, sub: undefined }],
    ['whose iss and sub are numbers', { iss: 42, sub: 42 }],
    ['whose iss and sub are empty', { iss: '', sub: '' }],
    ['whose iss is empty and sub is not', { iss: '', sub: 'key-client' }],
    ['whose iss is not its sub', { iss: 'key-client', sub: 'other-client' }],
  ])('refuses an assertion %s before looking any client up', async (_name, claims) => {
    const lookups: unknown[] = [];
    const store = inlineClients();
    const server = await start({
      get: (clientId) => {
        lookups.push(clientId);
        return store.get(clientId);
      },
    });
    const value = unverifiable(
      { alg: 'ES256', kid: 'es' },
      { aud: ISSUER, jti: randomUUID(), exp: nowSeconds() + 60, ...claims },
    );
    refused(await clientCredentials(server, value));
    expect(lookups).toEqual([]);
  });
});

describe('createClientAssertionCheck', () => {
  it('takes an aud array that names the issuer among other audiences', async () => {
    const server = await start(inlineClients());
    for (const aud of [
      ['https://other.example.test', ISSUER],
      [ISSUER, 'https://other.example.test'],
      ['https://other.example.test', `${ISSUER}/token`],
    ]) {
      expectTokens(await clientCredentials(server, await assertion({ aud })));
    }
    refused(
      await clientCredentials(server, await assertion({ aud: ['https://other.example.test'] })),
    );
  });

  it.each(['JWT', 'jwt', 'client-authentication+jwt', 'Client-Authentication+JWT'])(
    'takes an assertion typed %s (typ compared without case)',
    async (typ) => {
      const server = await start(inlineClients());
      expectTokens(await clientCredentials(server, await assertion({}, { typ })));
    },
  );

  it('takes an exp 5 minutes ahead, and up to the clock tolerance (5 s) beyond', async () => {
    const server = await start(inlineClients());
    expectTokens(await clientCredentials(server, await assertion({ exp: nowSeconds() + 300 })));
    // a whole second, so that exp lands exactly on now + 5 minutes + the tolerance
    const now = (nowSeconds() + 1) * 1000;
    vi.spyOn(Date, 'now').mockReturnValue(now);
    const edge = await assertion({ iat: now / 1000, exp: now / 1000 + 305 });
    expectTokens(await clientCredentials(server, edge));
    const beyond = await assertion({ iat: now / 1000, exp: now / 1000 + 306 });
    refused(await clientCredentials(server, beyond));
  });

  it('takes a jti of 256 characters, and refuses an empty one or one of 257', async () => {
    const server = await start(inlineClients());
    expectTokens(await clientCredentials(server, await assertion({ jti: 'j'.repeat(256) })));
    refused(await clientCredentials(server, await assertion({ jti: 'k'.repeat(257) })));
    refused(await clientCredentials(server, await assertion({ jti: '' })));
  });

  it('remembers the jti until exp plus the clock tolerance', async () => {
    const remembered: [string, number][] = [];
    const replay: ReplayStore = {
      remember: (id, ttlMs) => {
        remembered.push([id, ttlMs]);
        return true;
      },
    };
    const server = await start(inlineClients(), replay);
    const now = (nowSeconds() + 1) * 1000;
    vi.spyOn(Date, 'now').mockReturnValue(now);
    const jti = randomUUID();
    expectTokens(
      await clientCredentials(
        server,
        await assertion({ jti, iat: now / 1000, exp: now / 1000 + 60 }),
      ),
    );
    expect(remembered).toEqual([[`client-assertion:key-client:${jti}`, 65_000]]);
  });

  it('reads a client’s inline keys once, not at every request', async () => {
    let reads = 0;
    const jwks = {
      get keys() {
        reads++;
        return [es.jwk];
      },
    };
    const server = await start(new MemoryClientStore([keyClient('key-client', { jwks })]));
    expectTokens(await clientCredentials(server, await assertion()));
    expectTokens(await clientCredentials(server, await assertion()));
    expect(reads).toBe(1);
  });
});

describe('createClientAssertionCheck with keys at a jwks_uri', () => {
  /** A JWKS host serving the key of `es` at any path, counting the fetches per path. */
  async function jwksHost() {
    const fetches = new Map<string, number>();
    const host = await serve((req, res) => {
      const path = req.url ?? '/';
      fetches.set(path, (fetches.get(path) ?? 0) + 1);
      sendJson(res, 200, { keys: [es.jwk] });
    });
    return { fetches, url: (path: string) => `${host.url}${path}` };
  }

  it('fetches a client’s jwks_uri once for several assertions', async () => {
    const host = await jwksHost();
    const server = await start(
      new MemoryClientStore([keyClient('remote', { jwksUri: host.url('/a.json') })]),
    );
    for (let i = 0; i < 3; i++) {
      expectTokens(await clientCredentials(server, await assertion({}, {}, 'remote')));
    }
    expect(Object.fromEntries(host.fetches)).toEqual({ '/a.json': 1 });
  });

  it('keeps the keys of several jwks_uris side by side', async () => {
    const host = await jwksHost();
    const server = await start(
      new MemoryClientStore([
        keyClient('a', { jwksUri: host.url('/a.json') }),
        keyClient('b', { jwksUri: host.url('/b.json') }),
      ]),
    );
    for (const client of ['a', 'b', 'a', 'b']) {
      expectTokens(await clientCredentials(server, await assertion({}, {}, client)));
    }
    expect(Object.fromEntries(host.fetches)).toEqual({ '/a.json': 1, '/b.json': 1 });
  });

  it('keeps 1000 jwks_uris, dropping the oldest for the 1001st', async () => {
    const host = await jwksHost();
    const clients = new MemoryClientStore([keyClient('first', { jwksUri: host.url('/first') })]);
    for (let i = 0; i < 1000; i++) {
      clients.add(keyClient(`c${i}`, { jwksUri: host.url(`/c${i}`) }));
    }
    const server = await start(clients);
    expectTokens(await clientCredentials(server, await assertion({}, {}, 'first')));
    expectTokens(await clientCredentials(server, await assertion({}, {}, 'first')));
    expect(host.fetches.get('/first')).toBe(1);
    // 999 other uris: 1000 kept, the first among them (alg HS256 is refused before any fetch)
    const named = (id: string) =>
      unverifiable(
        { alg: 'HS256' },
        { iss: id, sub: id, aud: ISSUER, jti: randomUUID(), exp: nowSeconds() + 60 },
      );
    const others = Array.from({ length: 1000 }, (_, i) => `c${i}`);
    const refuse = async (ids: string[]) => {
      for (let i = 0; i < ids.length; i += 20) {
        const replies = await Promise.all(
          ids.slice(i, i + 20).map((id) => clientCredentials(server, named(id))),
        );
        for (const reply of replies) expect(reply.status).toBe(401);
      }
    };
    await refuse(others.slice(0, 999));
    expectTokens(await clientCredentials(server, await assertion({}, {}, 'first')));
    expect(host.fetches.get('/first')).toBe(1);
    // the 1000th other uri makes 1001: the first one goes, and is fetched again
    await refuse(others.slice(999));
    expectTokens(await clientCredentials(server, await assertion({}, {}, 'first')));
    expect(host.fetches.get('/first')).toBe(2);
    expect(host.fetches.size).toBe(1);
  });
});

describe('createClientAssertionCheck: who fetches a self-described client’s keys', () => {
  const target = { endpoint: `${ISSUER}/token`, fapi2: false };
  const registered = (jwksUri: string) =>
    keyClient('registered-client', { jwksUri, provenance: 'registered' });
  const signed = () => assertion({}, {}, 'registered-client');

  it('uses the address guard by default: a loopback jwks_uri is never fetched', async () => {
    let fetched = 0;
    const host = await serve((_req, res) => {
      fetched++;
      sendJson(res, 200, { keys: [es.jwk] });
    });
    const check = createClientAssertionCheck({ issuer: ISSUER, clockTolerance: 5_000 });
    const client = registered(`${host.url}/jwks.json`);
    expect(await check(client, await signed(), target)).toBeUndefined();
    expect(fetched).toBe(0);
  });

  it('uses the fetch it is given, and that one only', async () => {
    const asked: string[] = [];
    const check = createClientAssertionCheck({
      issuer: ISSUER,
      clockTolerance: 5_000,
      selfDescribedKeys: async (href) => {
        asked.push(href);
        return new Response(JSON.stringify({ keys: [es.jwk] }), {
          headers: { 'content-type': 'application/json' },
        });
      },
    });
    const client = registered('https://agent.example/jwks.json');
    expect(await check(client, await signed(), target)).toMatchObject({
      ttlMs: expect.any(Number),
    });
    expect(asked).toEqual(['https://agent.example/jwks.json']);
  });
});

describe('createClientAssertionCheck for a client held to FAPI 2.0', () => {
  it('refuses RS256 there (no RSASSA-PKCS1-v1_5) and takes PS256; elsewhere RS256 too', async () => {
    const pairs = {
      RS256: await generateKeyPair('RS256', { extractable: true }),
      PS256: await generateKeyPair('PS256', { extractable: true }),
    };
    const keys = await Promise.all(
      Object.entries(pairs).map(async ([alg, pair]) => ({
        ...(await exportJWK(pair.publicKey)),
        kid: alg,
        alg,
      })),
    );
    const client = keyClient('rsa-client', { jwks: { keys } });
    const check = createClientAssertionCheck({ issuer: ISSUER, clockTolerance: 5_000 });
    const signedWith = (alg: keyof typeof pairs) => {
      const now = nowSeconds();
      return new SignJWT({ jti: randomUUID(), iat: now, exp: now + 60 })
        .setProtectedHeader({ alg, kid: alg })
        .setIssuer('rsa-client')
        .setSubject('rsa-client')
        .setAudience(ISSUER)
        .sign(pairs[alg].privateKey);
    };
    const fapi2 = { endpoint: `${ISSUER}/token`, fapi2: true };
    const plain = { endpoint: `${ISSUER}/token`, fapi2: false };
    expect(await check(client, await signedWith('RS256'), fapi2)).toBeUndefined();
    expect(await check(client, await signedWith('PS256'), fapi2)).toBeDefined();
    expect(await check(client, await signedWith('RS256'), plain)).toBeDefined();
  });
});

describe('the constants of client assertions', () => {
  it('names the assertion type of RFC 7523 and the asymmetric algorithms, frozen', () => {
    expect(CLIENT_ASSERTION_TYPE).toBe('urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
    expect(CLIENT_ASSERTION_ALGORITHMS).toEqual(['ES256', 'EdDSA', 'Ed25519', 'PS256', 'RS256']);
    expect(Object.isFrozen(CLIENT_ASSERTION_ALGORITHMS)).toBe(true);
  });

  it.each(['at+jwt', 'JOSE', 'jwt+client-authentication'])(
    'refuses an assertion typed %s',
    async (typ) => {
      const server = await start(inlineClients());
      refused(await clientCredentials(server, await assertion({}, { typ })));
    },
  );

  it('takes an assertion without typ', async () => {
    const server = await start(inlineClients());
    expectTokens(await clientCredentials(server, await assertion()));
  });
});
