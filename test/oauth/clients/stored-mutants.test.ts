// The serialised form of a client kept outside the process (clients/stored.ts, what
// RedisClientStore writes and reads): every field checked when written, with the message that
// names it, and again when read, where anything that is not such a client reads as absent.
import { describe, expect, it } from 'vitest';
import { readStoredClient, storedClientJson } from '../../../src/oauth/clients/stored.js';

const OWNER = 'store.add()';
const HASH = '$scrypt$ln=15,r=8,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5';
const EC_KEY = { kty: 'EC', crv: 'P-256', x: 'eA', y: 'eQ' };

/** A public client with nothing optional: every test changes what it checks. */
const PUBLIC = {
  clientId: 'stored-app',
  grantTypes: ['authorization_code'],
  redirectUris: ['https://app.example/cb'],
  scopes: ['openid'],
};
const SERVICE = {
  clientId: 'stored-service',
  secretHash: HASH,
  grantTypes: ['client_credentials'],
  redirectUris: [],
  scopes: ['read:messages'],
};
const REGISTRATION = {
  metadata: { client_name: 'Agent' },
  accessTokenHash: 'A'.repeat(43),
  issuedAt: 1_700_000_000,
};

/** The message of the TypeError that storing `client` throws (failing the test otherwise). */
function refusal(client: unknown): string {
  try {
    storedClientJson(OWNER, client);
  } catch (error) {
    expect(error).toBeInstanceOf(TypeError);
    expect((error as { code?: string }).code).toBe('ERR_INVALID_OPTION');
    return (error as Error).message;
  }
  throw new Error('the client was stored');
}

/** The client read back after storing `client`. */
function roundTrip(client: Record<string, unknown>) {
  const { clientId, json } = storedClientJson(OWNER, client);
  expect(clientId).toBe(client.clientId);
  return readStoredClient(json, clientId);
}

describe('storedClientJson', () => {
  it('writes version 1 and the fields of OAuthClient, read back equal and frozen', () => {
    const full = {
      ...PUBLIC,
      clientId: 'full',
      jwks: { keys: [EC_KEY] },
      postLogoutRedirectUris: ['https://app.example/bye'],
      defaultScopes: ['openid'],
      name: 'Full',
      introspection: 'any',
      dpopBoundAccessTokens: true,
      requirePushedAuthorizationRequests: false,
      provenance: 'registered',
      registration: REGISTRATION,
    };
    const { json } = storedClientJson(OWNER, full);
    expect(JSON.parse(json)).toEqual({ v: 1, client: full });
    const read = readStoredClient(json, 'full');
    expect(read).toEqual(full);
    expect(Object.isFrozen(read)).toBe(true);
    expect(Object.isFrozen(read?.scopes)).toBe(true);
    expect(Object.isFrozen(read?.registration)).toBe(true);
    expect(Object.isFrozen(read?.registration?.metadata)).toBe(true);
    expect(roundTrip(SERVICE)).toEqual(SERVICE);
    expect(roundTrip({ ...SERVICE, jwksUri: undefined })).toEqual(SERVICE);
  });

  it('copies the lists it is given: a later change of the definition changes nothing', () => {
    const scopes = ['openid'];
    const { json } = storedClientJson(OWNER, { ...PUBLIC, scopes });
    scopes.push('admin');
    expect(readStoredClient(json, PUBLIC.clientId)?.scopes).toEqual(['openid']);
  });

  it('refuses what is not an object', () => {
    for (const value of [null, undefined, 'client', 7, [PUBLIC]]) {
      expect(refusal(value)).toBe(`${OWNER}: a client must be an object (defineClient())`);
    }
  });

  it('refuses a secret in clear, a function and any field that is not of OAuthClient', () => {
    expect(refusal({ ...PUBLIC, secret: 's3cret' })).toBe(
      `${OWNER}: a stored client holds the hash of its secret, never the secret: give the client defineClient() made`,
    );
    expect(refusal({ ...PUBLIC, resolveKeys: () => [] })).toBe(
      `${OWNER}: a stored client cannot hold \`resolveKeys\` (a function, which is not JSON)`,
    );
    expect(refusal({ ...PUBLIC, owner: 'alice' })).toBe(
      `${OWNER}: a stored client cannot hold \`owner\` (not a field of OAuthClient)`,
    );
    // an unknown field left undefined is no field
    expect(roundTrip({ ...PUBLIC, owner: undefined })).toEqual(PUBLIC);
  });

  it('takes a clientId of 1 to 128 visible ASCII characters', () => {
    const message = `${OWNER}: \`clientId\` must be 1–128 visible ASCII characters`;
    for (const clientId of ['', 'a'.repeat(129), 'my app', 'app\x7f', 'é', 7, undefined]) {
      expect(refusal({ ...PUBLIC, clientId }), String(clientId)).toBe(message);
    }
    for (const clientId of ['a', 'a'.repeat(128), '!~', 'urn:x:app']) {
      expect(roundTrip({ ...PUBLIC, clientId })?.clientId).toBe(clientId);
    }
  });

  it('takes only a hash of hashPassword() as the secret', () => {
    const message = `${OWNER}: \`secretHash\` must be a hash of hashPassword() (defineClient())`;
    for (const secretHash of [
      'secret',
      `x${HASH}`,
      `${HASH}!`,
      '$scrypt$ln=100,r=8,p=1$c2FsdA$a2V5',
      '$scrypt$ln=15,r=8,p=1$$a2V5',
      7,
    ]) {
      expect(refusal({ ...SERVICE, secretHash }), String(secretHash)).toBe(message);
    }
  });

  it('takes a hash of two-digit parameters, and refuses one that only reads as a hash', () => {
    const message = `${OWNER}: \`secretHash\` must be a hash of hashPassword() (defineClient())`;
    for (const secretHash of [
      '$scrypt$ln=15,r=16,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5',
      '$scrypt$ln=15,r=8,p=16$c2FsdHNhbHQ$a2V5a2V5a2V5',
      '$scrypt$ln=9,r=99,p=99$c2FsdHNhbHQ$a2V5a2V5a2V5',
    ]) {
      expect(roundTrip({ ...SERVICE, secretHash })?.secretHash, secretHash).toBe(secretHash);
    }
    // its string is a hash, itself is not a string
    for (const secretHash of [[HASH], { toString: () => HASH }]) {
      expect(refusal({ ...SERVICE, secretHash }), String(secretHash)).toBe(message);
    }
  });

  it('takes keys inline or at a URL, never both, nor with a secret', () => {
    const { secretHash: _, ...keyed } = SERVICE;
    expect(refusal({ ...keyed, jwks: { keys: [EC_KEY] }, jwksUri: 'https://app.example/k' })).toBe(
      `${OWNER}: give \`jwks\` or \`jwksUri\`, not both`,
    );
    expect(refusal({ ...SERVICE, jwks: { keys: [EC_KEY] } })).toBe(
      `${OWNER}: a client authenticates with a secret or with keys, not both`,
    );
    expect(refusal({ ...SERVICE, jwksUri: 'https://app.example/k' })).toBe(
      `${OWNER}: a client authenticates with a secret or with keys, not both`,
    );
    expect(refusal({ ...keyed, jwksUri: 7 })).toBe(
      `${OWNER}: \`jwksUri\` must be a string (an https: URL)`,
    );
    expect(refusal({ ...keyed, jwksUri: 'ftp://app.example/k' })).toBe(
      `${OWNER}: \`jwksUri\` must be an https: URL`,
    );
    // keys make a client confidential: client_credentials is its to use
    expect(roundTrip({ ...keyed, jwksUri: 'https://app.example/k' })?.jwksUri).toBe(
      'https://app.example/k',
    );
    expect(roundTrip({ ...keyed, jwks: { keys: [EC_KEY] } })?.jwks).toEqual({ keys: [EC_KEY] });
  });

  it('takes public RSA, EC or OKP keys only, as JSON', () => {
    const { secretHash: _, ...keyed } = SERVICE;
    const set = `${OWNER}: \`jwks\` must be a JWK Set with at least one key`;
    for (const jwks of [{ keys: [] }, { keys: 'x' }, [EC_KEY], 'jwks']) {
      expect(refusal({ ...keyed, jwks }), JSON.stringify(jwks)).toBe(set);
    }
    expect(refusal({ ...keyed, jwks: { keys: [{ kty: 'oct', k: 'c2VjcmV0' }] } })).toBe(
      `${OWNER}: \`jwks\` keys must be RSA, EC or OKP public keys`,
    );
    for (const member of ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k']) {
      expect(refusal({ ...keyed, jwks: { keys: [{ ...EC_KEY, [member]: 'AA' }] } }), member).toBe(
        `${OWNER}: \`jwks\` must hold public keys only`,
      );
    }
    expect(refusal({ ...keyed, jwks: { keys: [{ ...EC_KEY, n: 1n }] } })).toBe(
      `${OWNER}: \`jwks\` must be JSON`,
    );
    // JSON that does not read back as itself: a toJSON answering no key set, a changing member
    const renamed = { keys: [EC_KEY], toJSON: () => ({ keys: 'none' }) };
    expect(refusal({ ...keyed, jwks: renamed })).toBe(`${OWNER}: \`jwks\` must be JSON`);
    let reads = 0;
    const changing = {
      keys: [
        {
          ...EC_KEY,
          get x() {
            reads++;
            return `eA${reads}`;
          },
        },
      ],
    };
    expect(refusal({ ...keyed, jwks: changing })).toBe(`${OWNER}: \`jwks\` must be JSON`);
    const rsa = { kty: 'RSA', n: 'AQAB', e: 'AQAB' };
    const okp = { kty: 'OKP', crv: 'Ed25519', x: 'eA' };
    expect(roundTrip({ ...keyed, jwks: { keys: [rsa, okp] } })?.jwks).toEqual({ keys: [rsa, okp] });
  });

  it('refuses client_credentials, and introspection of any token, for a public client', () => {
    expect(refusal({ ...PUBLIC, grantTypes: ['client_credentials'] })).toBe(
      `${OWNER}: client_credentials needs a confidential client (a secret or keys)`,
    );
    expect(refusal({ ...PUBLIC, introspection: 'any' })).toBe(
      `${OWNER}: \`introspection: 'any'\` needs a confidential client`,
    );
    expect(refusal({ ...PUBLIC, introspection: 'all' })).toBe(
      `${OWNER}: \`introspection\` must be 'own' or 'any'`,
    );
    expect(roundTrip({ ...PUBLIC, introspection: 'own' })?.introspection).toBe('own');
    expect(roundTrip({ ...SERVICE, introspection: 'any' })?.introspection).toBe('any');
  });

  it('takes lists of strings, and absolute URIs without fragment for redirects', () => {
    for (const name of ['grantTypes', 'redirectUris', 'scopes', 'defaultScopes']) {
      for (const value of ['openid', [7], null]) {
        expect(refusal({ ...PUBLIC, [name]: value }), `${name} ${value}`).toBe(
          `${OWNER}: \`${name}\` must be an array of strings`,
        );
      }
    }
    for (const name of ['redirectUris', 'postLogoutRedirectUris']) {
      for (const uri of ['/cb', 'https://app.example/cb#top']) {
        expect(refusal({ ...PUBLIC, [name]: [uri] }), `${name} ${uri}`).toBe(
          `${OWNER}: \`${name}\` holds \`${uri}\`, not an absolute URI without fragment`,
        );
      }
    }
    expect(refusal({ ...PUBLIC, postLogoutRedirectUris: 'x' })).toBe(
      `${OWNER}: \`postLogoutRedirectUris\` must be an array of strings`,
    );
    expect(roundTrip({ ...PUBLIC, redirectUris: ['com.example.app:/cb'] })?.redirectUris).toEqual([
      'com.example.app:/cb',
    ]);
  });

  it('checks scopes as scope tokens', () => {
    expect(refusal({ ...PUBLIC, scopes: ['read messages'] })).toMatch(/scope/);
    expect(refusal({ ...PUBLIC, defaultScopes: ['read"'] })).toMatch(/scope/);
    expect(roundTrip({ ...PUBLIC, defaultScopes: ['openid'] })?.defaultScopes).toEqual(['openid']);
  });

  it('takes a string name, boolean flags and a known provenance', () => {
    expect(refusal({ ...PUBLIC, name: 7 })).toBe(`${OWNER}: \`name\` must be a string`);
    for (const flag of ['dpopBoundAccessTokens', 'requirePushedAuthorizationRequests']) {
      expect(refusal({ ...PUBLIC, [flag]: 'true' }), flag).toBe(
        `${OWNER}: \`${flag}\` must be a boolean`,
      );
      expect(roundTrip({ ...PUBLIC, [flag]: true })).toMatchObject({ [flag]: true });
      expect(roundTrip({ ...PUBLIC, [flag]: false })).toMatchObject({ [flag]: false });
    }
    expect(refusal({ ...PUBLIC, provenance: 'dynamic' })).toBe(
      `${OWNER}: \`provenance\` must be 'configured', 'registered' or 'metadata-document'`,
    );
    for (const provenance of ['configured', 'registered', 'metadata-document']) {
      expect(roundTrip({ ...PUBLIC, provenance })?.provenance).toBe(provenance);
    }
    const bare = roundTrip(PUBLIC)!;
    for (const field of ['name', 'introspection', 'provenance', 'registration', 'jwks']) {
      expect(field in bare, field).toBe(false);
    }
  });

  it('takes a registration of JSON metadata without secrets, a token hash and a time', () => {
    const message = `${OWNER}: \`registration\` must hold \`metadata\` (an object), \`accessTokenHash\` and \`issuedAt\``;
    for (const registration of [
      null,
      'registered',
      { ...REGISTRATION, metadata: null },
      { ...REGISTRATION, metadata: ['x'] },
      { ...REGISTRATION, metadata: 'x' },
      { ...REGISTRATION, accessTokenHash: 'A'.repeat(42) },
      { ...REGISTRATION, accessTokenHash: 'A'.repeat(44) },
      { ...REGISTRATION, accessTokenHash: `${'A'.repeat(42)}=` },
      { ...REGISTRATION, accessTokenHash: 7 },
      { ...REGISTRATION, accessTokenHash: ['A'.repeat(43)] },
      { ...REGISTRATION, issuedAt: 1.5 },
      { ...REGISTRATION, issuedAt: '1700000000' },
    ]) {
      expect(refusal({ ...PUBLIC, registration }), JSON.stringify(registration)).toBe(message);
    }
    for (const secret of ['client_secret', 'registration_access_token']) {
      expect(
        refusal({ ...PUBLIC, registration: { ...REGISTRATION, metadata: { [secret]: 'x' } } }),
      ).toBe(`${OWNER}: \`registration.metadata\` never holds a secret`);
    }
    expect(refusal({ ...PUBLIC, registration: { ...REGISTRATION, metadata: { size: 1n } } })).toBe(
      `${OWNER}: \`registration.metadata\` must be JSON`,
    );
    const hash = `${'a'.repeat(21)}-_${'Z9'.repeat(10)}`;
    expect(
      roundTrip({ ...PUBLIC, registration: { ...REGISTRATION, accessTokenHash: hash } })
        ?.registration?.accessTokenHash,
    ).toBe(hash);
  });
});

describe('readStoredClient', () => {
  const { json } = storedClientJson(OWNER, PUBLIC);

  it('reads as absent what is not this client written by this version', () => {
    expect(readStoredClient(json, PUBLIC.clientId)).toEqual(PUBLIC);
    for (const text of [undefined, null, 7, Buffer.from(json), '', '{', 'null', '[]']) {
      expect(readStoredClient(text, PUBLIC.clientId), String(text)).toBeUndefined();
    }
    expect(readStoredClient(json, 'another')).toBeUndefined();
    expect(readStoredClient(JSON.stringify({ v: 2, client: PUBLIC }), PUBLIC.clientId)).toBe(
      undefined,
    );
    expect(readStoredClient(JSON.stringify({ client: PUBLIC }), PUBLIC.clientId)).toBe(undefined);
    expect(readStoredClient(JSON.stringify({ v: '1', client: PUBLIC }), PUBLIC.clientId)).toBe(
      undefined,
    );
  });

  it('reads as absent a stored client that fails a check (tampered data)', () => {
    const tampered = (client: unknown) => JSON.stringify({ v: 1, client });
    for (const client of [
      { ...PUBLIC, secret: 'in clear' },
      { ...PUBLIC, grantTypes: ['client_credentials'] },
      { ...PUBLIC, redirectUris: ['https://evil.example/cb#x'] },
      { ...PUBLIC, isAdmin: true },
      null,
    ]) {
      expect(readStoredClient(tampered(client), PUBLIC.clientId)).toBeUndefined();
    }
  });
});
