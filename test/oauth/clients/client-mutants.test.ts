// defineClient's checks, one by one, with the error each wrong definition gets (a TypeError
// with code ERR_INVALID_OPTION naming the option), the shape of the client it returns, and
// clients with keys (inline or at a jwks_uri) served over a real socket.
import { generateKeyPairSync, randomUUID, type webcrypto } from 'node:crypto';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import type { JwkSet } from '../../../src/core/jwt-types.js';
import { sendJson } from '../../../src/core/send.js';
import { CLIENT_ASSERTION_TYPE } from '../../../src/oauth/clients/assertion.js';
import {
  type ClientDefinition,
  defineClient,
  isConfidential,
  isGrantTypeSyntax,
} from '../../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../../src/oauth/clients/store.js';
import { closeAll, json, type Listening, request, serve } from '../../helpers/http.js';
import { ISSUER, startOAuthServer } from '../token-fixtures.js';

afterAll(closeAll);

/** A public client with nothing optional: every test changes what it checks. */
const PUBLIC: ClientDefinition = {
  clientId: 'checked-client',
  grantTypes: ['authorization_code'],
  redirectUris: ['https://app.example/cb'],
  scopes: ['openid'],
};

/** A service with a secret. */
const SERVICE: ClientDefinition = {
  clientId: 'checked-service',
  secret: 'service-secret',
  grantTypes: ['client_credentials'],
  redirectUris: [],
  scopes: ['read:messages'],
};

/** Public JWKs of each asymmetric family (RFC 7518 §6): what a client may register. */
function publicJwks(): { ec: JWK; rsa: JWK; okp: JWK } {
  const jwk = (pair: { publicKey: { export(o: { format: 'jwk' }): object } }) =>
    pair.publicKey.export({ format: 'jwk' }) as JWK;
  return {
    ec: { ...jwk(generateKeyPairSync('ec', { namedCurve: 'P-256' })), kid: 'ec' },
    rsa: { ...jwk(generateKeyPairSync('rsa', { modulusLength: 2048 })), kid: 'rsa' },
    okp: { ...jwk(generateKeyPairSync('ed25519')), kid: 'okp' },
  };
}

/** The definition error: a TypeError with code ERR_INVALID_OPTION and the message `message`. */
async function refusal(definition: ClientDefinition, message: string | RegExp): Promise<void> {
  const err = await defineClient(definition).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TypeError);
  expect(err).toMatchObject({ code: 'ERR_INVALID_OPTION' });
  if (typeof message === 'string') expect((err as Error).message).toBe(message);
  else expect((err as Error).message).toMatch(message);
}

describe('clients.ts', () => {
  describe('clientId', () => {
    const MESSAGE = 'defineClient(): `clientId` must be 1–128 visible ASCII characters';

    it('takes 1 to 128 visible ASCII characters', async () => {
      for (const clientId of ['a', '~!', 'x'.repeat(128), 'client:42/web.app']) {
        expect((await defineClient({ ...PUBLIC, clientId })).clientId).toBe(clientId);
      }
    });

    it('refuses an empty, too long, spaced, control or non-ASCII clientId', async () => {
      for (const clientId of [
        '',
        'x'.repeat(129),
        ' leading-space',
        'trailing-space ',
        'trailing-newline\n',
        '\tleading-tab',
        'in side',
        'clïent',
      ]) {
        await refusal({ ...PUBLIC, clientId }, MESSAGE);
      }
    });

    it('refuses a clientId that is not a string, even one that reads as a valid id', async () => {
      for (const clientId of [12345, ['client'], { toString: () => 'client' }]) {
        await refusal({ ...PUBLIC, clientId: clientId as unknown as string }, MESSAGE);
      }
    });
  });

  describe('secret', () => {
    const MESSAGE = 'defineClient(): a client secret must be a string of 8 characters or more';

    it('takes a secret of 8 characters, and keeps only its hash', async () => {
      const client = await defineClient({ ...SERVICE, secret: '12345678' });
      expect(client.secretHash).toMatch(/^\$scrypt\$ln=\d+,r=\d+,p=\d+\$/);
      expect(client.secretHash).not.toContain('12345678');
      expect(client).not.toHaveProperty('secret');
      expect(isConfidential(client)).toBe(true);
    });

    it('refuses a secret shorter than 8 characters', async () => {
      for (const secret of ['', 'x', '1234567']) await refusal({ ...SERVICE, secret }, MESSAGE);
    });

    it('refuses a secret that is not a string, whatever its length', async () => {
      for (const secret of [123456789, { length: 32 }, ['a-long-enough-secret']]) {
        await refusal({ ...SERVICE, secret: secret as unknown as string }, MESSAGE);
      }
    });
  });

  describe('redirect URIs', () => {
    it('refuses a relative redirect URI, naming it', async () => {
      await refusal(
        { ...PUBLIC, redirectUris: ['/relative/cb'] },
        'defineClient(): `/relative/cb` is not an absolute redirect URI',
      );
      await refusal(
        { ...PUBLIC, postLogoutRedirectUris: ['signed-out'] },
        'defineClient(): `signed-out` is not an absolute redirect URI',
      );
    });

    it('refuses a redirect URI with a fragment (RFC 6749 §3.1.2)', async () => {
      const message = 'defineClient(): a redirect URI must not have a fragment';
      await refusal({ ...PUBLIC, redirectUris: ['https://app.example/cb#top'] }, message);
      await refusal(
        { ...PUBLIC, postLogoutRedirectUris: ['https://app.example/bye#x'] }, //
        message,
      );
    });

    it('refuses a redirect URI that is not a string, a URL object too', async () => {
      await refusal(
        { ...PUBLIC, redirectUris: [new URL('https://app.example/cb') as unknown as string] },
        'defineClient(): each redirect URI must be a string',
      );
    });

    it('refuses a redirect URI ending in an empty fragment (RFC 6749 §3.1.2)', async () => {
      await refusal(
        { ...PUBLIC, redirectUris: ['https://app.example/cb#'] },
        'defineClient(): a redirect URI must not have a fragment',
      );
    });

    it('keeps post-logout redirect URIs as a frozen copy, and has none when none are given', async () => {
      const given = ['https://app.example/bye', 'https://app.example/again'];
      const client = await defineClient({ ...PUBLIC, postLogoutRedirectUris: given });
      given.push('https://evil.example/');
      expect(client.postLogoutRedirectUris).toEqual([
        'https://app.example/bye',
        'https://app.example/again',
      ]);
      expect(Object.isFrozen(client.postLogoutRedirectUris)).toBe(true);
      const without = await defineClient(PUBLIC);
      expect(without.postLogoutRedirectUris).toBeUndefined();
      expect('postLogoutRedirectUris' in without).toBe(false);
    });
  });

  describe('grants', () => {
    it("refuses a near miss of one of portico's grant types, naming the one meant", async () => {
      await refusal(
        { ...SERVICE, grantTypes: ['urn:ietf:params:oauth:grant-type:device-code'] },
        'defineClient(): unknown grant `urn:ietf:params:oauth:grant-type:device-code`. Did you mean `urn:ietf:params:oauth:grant-type:device_code`?',
      );
      await refusal(
        { ...SERVICE, grantTypes: ['Client_Credential'] },
        'defineClient(): unknown grant `Client_Credential`. Did you mean `client_credentials`?',
      );
    });

    it('refuses what cannot be a grant type: a name or an absolute URI (RFC 6749 §A.10)', async () => {
      for (const grant of ['pass word', '', 'a/b', 'not a uri:', 7 as never]) {
        await refusal(
          { ...SERVICE, grantTypes: [grant] },
          `defineClient(): unknown grant \`${String(grant)}\`: a grant type is a name or an absolute URI`,
        );
      }
    });

    it('takes the type of a grant the server registers: a name, an absolute URI', async () => {
      const client = await defineClient({
        ...SERVICE,
        grantTypes: ['password', 'urn:example:grant-type:magic-link', 'client_credentials'],
      });
      expect(client.grantTypes).toEqual([
        'password',
        'urn:example:grant-type:magic-link',
        'client_credentials',
      ]);
    });

    it('refuses client_credentials for a public client', async () => {
      await refusal(
        { ...PUBLIC, grantTypes: ['client_credentials'] },
        'defineClient(): client_credentials needs a confidential client (a secret or keys)',
      );
    });

    it('keeps grants and redirect URIs as frozen copies', async () => {
      const grantTypes: ClientDefinition['grantTypes'] = ['authorization_code', 'refresh_token'];
      const redirectUris = ['https://app.example/cb', 'https://app.example/other'];
      const client = await defineClient({ ...PUBLIC, grantTypes, redirectUris });
      (grantTypes as string[]).push('client_credentials');
      redirectUris.push('https://evil.example/');
      expect(client.grantTypes).toEqual(['authorization_code', 'refresh_token']);
      expect(client.redirectUris).toEqual(['https://app.example/cb', 'https://app.example/other']);
      expect(Object.isFrozen(client.grantTypes)).toBe(true);
      expect(Object.isFrozen(client.redirectUris)).toBe(true);
      expect(Object.isFrozen(client)).toBe(true);
      expect(isConfidential(client)).toBe(false);
    });
  });

  describe('introspection and flags', () => {
    it("refuses an introspection other than 'own' or 'any', and 'any' for a public client", async () => {
      await refusal(
        { ...SERVICE, introspection: 'all' as never },
        "defineClient(): `introspection` must be 'own' or 'any'",
      );
      await refusal(
        { ...PUBLIC, introspection: 'any' },
        "defineClient(): `introspection: 'any'` needs a confidential client (a secret or keys)",
      );
    });

    it("takes introspection 'own' for a public client and 'any' for a confidential one", async () => {
      expect((await defineClient({ ...PUBLIC, introspection: 'own' })).introspection).toBe('own');
      expect((await defineClient({ ...SERVICE, introspection: 'any' })).introspection).toBe('any');
    });

    it('refuses dpopBoundAccessTokens or requirePushedAuthorizationRequests that is not a boolean', async () => {
      await refusal(
        { ...PUBLIC, dpopBoundAccessTokens: 'yes' as unknown as boolean },
        'defineClient(): `dpopBoundAccessTokens` must be a boolean',
      );
      await refusal(
        { ...PUBLIC, requirePushedAuthorizationRequests: 1 as unknown as boolean },
        'defineClient(): `requirePushedAuthorizationRequests` must be a boolean',
      );
    });

    it('takes both flags as booleans', async () => {
      const client = await defineClient({
        ...PUBLIC,
        dpopBoundAccessTokens: true,
        requirePushedAuthorizationRequests: false,
      });
      expect(client).toMatchObject({
        dpopBoundAccessTokens: true,
        requirePushedAuthorizationRequests: false,
      });
    });
  });

  describe('scopes', () => {
    it('refuses an invalid scope or default scope, naming it', async () => {
      await refusal(
        { ...PUBLIC, scopes: ['openid', 'two words'] },
        'defineClient(): `two words` is not a valid scope',
      );
      await refusal(
        { ...PUBLIC, defaultScopes: ['bad"scope'] },
        'defineClient(): `bad"scope` is not a valid scope',
      );
    });
  });

  describe('keys (private_key_jwt)', () => {
    const KEYED = {
      clientId: 'keyed-client',
      grantTypes: ['client_credentials' as const],
      redirectUris: [],
      scopes: ['read:messages'],
    };

    it('takes inline public RSA, EC and OKP keys for a client_credentials client', async () => {
      const { ec, rsa, okp } = publicJwks();
      for (const keys of [[ec], [rsa], [okp], [ec, rsa, okp]]) {
        const client = await defineClient({ ...KEYED, jwks: { keys } });
        expect(client.jwks).toEqual({ keys });
        expect(client.secretHash).toBeUndefined();
        expect(isConfidential(client)).toBe(true);
      }
      const resourceServer = await defineClient({
        ...KEYED,
        jwks: { keys: [ec] },
        introspection: 'any',
      });
      expect(resourceServer.introspection).toBe('any');
    });

    it('takes a jwks_uri for a client_credentials client', async () => {
      const client = await defineClient({ ...KEYED, jwksUri: 'https://keys.example/jwks.json' });
      expect(client.jwksUri).toBe('https://keys.example/jwks.json');
      expect(client.jwks).toBeUndefined();
      expect(isConfidential(client)).toBe(true);
    });

    it('keeps a copy of the keys: changing the given set afterwards changes nothing', async () => {
      const { ec, rsa } = publicJwks();
      const given: JwkSet = { keys: [ec] };
      const before = structuredClone(given);
      const client = await defineClient({ ...KEYED, jwks: given });
      expect(client.jwks).not.toBe(given);
      (given.keys as JWK[]).push(rsa);
      (given.keys[0] as JWK).d = 'private';
      expect(client.jwks).toEqual(before);
      expect(client.jwks?.keys).toHaveLength(1);
      expect(client.jwks?.keys[0]).not.toHaveProperty('d');
    });

    it('has no jwks member when it has no inline keys', async () => {
      for (const definition of [
        SERVICE,
        PUBLIC,
        { ...KEYED, jwksUri: 'https://keys.example/jwks' },
      ]) {
        const client = await defineClient(definition);
        expect('jwks' in client).toBe(false);
        expect(Object.keys(client)).not.toContain('jwks');
      }
    });

    it('refuses keys and a jwks_uri together, or keys with a secret', async () => {
      const { ec } = publicJwks();
      await refusal(
        { ...KEYED, jwks: { keys: [ec] }, jwksUri: 'https://keys.example/jwks' },
        'defineClient(): give `jwks` or `jwksUri`, not both',
      );
      await refusal(
        { ...KEYED, jwksUri: 'https://keys.example/jwks', secret: 'a-long-secret' },
        'defineClient(): a client authenticates with a secret or with keys, not both',
      );
    });

    it('refuses a jwks_uri that is not an absolute http(s) URL', async () => {
      await refusal(
        { ...KEYED, jwksUri: 'file:///etc/passwd' },
        'defineClient(): `jwksUri` must be an https: URL',
      );
      await refusal(
        { ...KEYED, jwksUri: '/jwks.json' },
        'defineClient(): `jwksUri` must be an absolute URL',
      );
    });

    it('refuses a jwks that is not a non-empty JWK Set', async () => {
      const message = 'defineClient(): `jwks` must be a JWK Set with at least one key';
      for (const jwks of [{ keys: [] }, { keys: 'none' }, { keys: [['kty']] }, []]) {
        await refusal({ ...KEYED, jwks: jwks as unknown as JwkSet }, message);
      }
    });

    it('refuses a key of another type than RSA, EC or OKP, even one without private members', async () => {
      const message = 'defineClient(): `jwks` keys must be RSA, EC or OKP public keys';
      const { ec } = publicJwks();
      for (const key of [{ kty: 'oct', k: 'c2VjcmV0' }, { kty: 'XYZ', x: 'abc' }, { x: 'abc' }]) {
        await refusal({ ...KEYED, jwks: { keys: [ec, key as JWK] } }, message);
      }
    });

    it('refuses a private key among the keys', async () => {
      const { ec, rsa } = publicJwks();
      for (const key of [
        { ...ec, d: 'private' },
        { ...rsa, p: 'prime' },
      ]) {
        await refusal(
          { ...KEYED, jwks: { keys: [rsa, key] } },
          'defineClient(): `jwks` must hold public keys only',
        );
      }
    });
  });

  describe('MemoryClientStore', () => {
    it('starts empty, then knows the clients added to it', async () => {
      const store = new MemoryClientStore();
      expect(store.get('checked-client')).toBeUndefined();
      const client = await defineClient(PUBLIC);
      store.add(client);
      expect(store.get('checked-client')).toBe(client);
      expect(store.get('other')).toBeUndefined();
    });

    it('knows the clients it was built with, and refuses two of one id', async () => {
      const first = await defineClient(PUBLIC);
      const second = await defineClient({ ...PUBLIC, name: 'Second' });
      const service = await defineClient(SERVICE);
      const store = new MemoryClientStore([first, service]);
      expect(store.get('checked-client')).toBe(first);
      expect(store.get('checked-service')).toBe(service);
      expect(() => new MemoryClientStore([first, second])).toThrow(
        'new MemoryClientStore(): two clients have the id `checked-client`',
      );
    });
  });

  describe('clients with keys at the token endpoint', () => {
    type Key = { privateKey: webcrypto.CryptoKey; jwk: JWK };

    async function newKey(alg: string, kid: string): Promise<Key> {
      const pair = await generateKeyPair(alg, { extractable: true });
      return {
        privateKey: pair.privateKey,
        jwk: { ...(await exportJWK(pair.publicKey)), kid, alg },
      };
    }

    function assertion(key: Key, client: string): Promise<string> {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ iss: client, sub: client, aud: ISSUER, jti: randomUUID() })
        .setIssuedAt(now)
        .setExpirationTime(now + 60)
        .setProtectedHeader({ alg: key.jwk.alg as string, kid: key.jwk.kid })
        .sign(key.privateKey);
    }

    function clientCredentials(server: Listening, value: string) {
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

    it('issues tokens to clients defined with inline keys or a jwks_uri, with the keys they had when defined', async () => {
      const inline = await newKey('ES256', 'inline');
      const remote = await newKey('EdDSA', 'remote');
      const stranger = await newKey('ES256', 'stranger');
      const jwksHost = await serve((_req, res) => sendJson(res, 200, { keys: [remote.jwk] }));
      const givenKeys: JwkSet = { keys: [inline.jwk] };
      const clients = new MemoryClientStore();
      clients.add(
        await defineClient({
          clientId: 'inline-keys',
          jwks: givenKeys,
          grantTypes: ['client_credentials'],
          redirectUris: [],
          scopes: ['read:messages'],
        }),
      );
      clients.add(
        await defineClient({
          clientId: 'remote-keys',
          jwksUri: `${jwksHost.url}/jwks.json`,
          grantTypes: ['client_credentials'],
          redirectUris: [],
          scopes: ['read:messages'],
        }),
      );
      // the application swaps the keys of its own object: the registered client keeps its own
      (givenKeys.keys as JWK[])[0] = stranger.jwk;
      const { server } = await startOAuthServer({ clients });

      for (const [key, client] of [
        [inline, 'inline-keys'],
        [remote, 'remote-keys'],
      ] as const) {
        const reply = await clientCredentials(server, await assertion(key, client));
        expect(reply.status, reply.body).toBe(200);
        expect(json(reply)).toMatchObject({ token_type: 'Bearer', scope: 'read:messages' });
      }
      const refused = await clientCredentials(server, await assertion(stranger, 'inline-keys'));
      expect(refused.status).toBe(401);
      expect(json(refused)).toMatchObject({ error: 'invalid_client' });
    });
  });
});

describe('the grant types, the given options and the provenance of a definition', () => {
  it('reads a grant type as a name or an absolute URI of at most 255 characters', () => {
    for (const value of [
      'a',
      'x'.repeat(255),
      'my.grant-type_2',
      'urn:example:grant',
      'https://g.example/x',
    ]) {
      expect(isGrantTypeSyntax(value)).toBe(true);
    }
    // a space after the scheme, a leading space (that URL parsing would strip), no scheme letter
    for (const value of ['', 'x'.repeat(256), 'a:b c', ' a:b', '1a:b', 'http://[', 7, undefined]) {
      expect(isGrantTypeSyntax(value)).toBe(false);
    }
    expect(isGrantTypeSyntax(`urn:${'x'.repeat(251)}`)).toBe(true);
    expect(isGrantTypeSyntax(`urn:${'x'.repeat(252)}`)).toBe(false);
  });

  it('answers "did you mean" for a near miss of each of portico\'s grant types', async () => {
    for (const [typo, meant] of [
      ['authorization-code', 'authorization_code'],
      ['refresh-token', 'refresh_token'],
      ['client-credentials', 'client_credentials'],
      [
        'urn:ietf:params:oauth:grant-type:device-code',
        'urn:ietf:params:oauth:grant-type:device_code',
      ],
      [
        'urn:ietf:params:oauth:grant-type:token_exchange',
        'urn:ietf:params:oauth:grant-type:token-exchange',
      ],
    ]) {
      await expect(defineClient({ ...SERVICE, grantTypes: [typo as never] })).rejects.toThrow(
        `defineClient(): unknown grant \`${typo}\`. Did you mean \`${meant}\`?`,
      );
    }
  });

  it('refuses keys given but undefined (an unset environment variable), naming them', async () => {
    for (const name of ['secret', 'jwks', 'jwksUri']) {
      await expect(defineClient({ ...PUBLIC, [name]: undefined })).rejects.toThrow(`\`${name}\``);
    }
  });

  it('takes each provenance and refuses any other', async () => {
    for (const provenance of ['configured', 'registered', 'metadata-document'] as const) {
      expect((await defineClient({ ...PUBLIC, provenance })).provenance).toBe(provenance);
    }
    await expect(defineClient({ ...PUBLIC, provenance: 'stored' as never })).rejects.toThrow(
      "defineClient(): `provenance` must be 'configured', 'registered' or 'metadata-document'",
    );
  });

  it('takes a client without post-logout redirect URIs', async () => {
    const client = await defineClient({ ...PUBLIC });
    expect(client.redirectUris).toEqual(PUBLIC.redirectUris);
    expect(client.postLogoutRedirectUris ?? []).toEqual([]);
  });
});
