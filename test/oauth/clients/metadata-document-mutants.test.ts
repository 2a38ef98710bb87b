// A client metadata document read as a unit (clients/metadata-document.ts): each check of
// clientFromDocument with its reason and description, the client it answers, and the client
// id checks that refuse before anything is fetched (issue 39's mutation run).
import { afterAll, describe, expect, it } from 'vitest';
import {
  ClientMetadataDocumentError,
  clientFromDocument,
  createClientMetadataDocuments,
} from '../../../src/oauth/clients/metadata-document.js';

const ID = 'https://agent.example/client.json';
const URL_ID = new URL(ID);
const SERVER_SCOPES = ['openid', 'profile', 'read'];
const DOC = {
  client_id: ID,
  redirect_uris: ['http://127.0.0.1:3000/callback'],
  token_endpoint_auth_method: 'none',
};

/** The refusal of `doc`: `[reason, description]` (failing the test if it is taken). */
function refusal(doc: unknown): [string, string] {
  try {
    clientFromDocument(URL_ID, doc, SERVER_SCOPES);
  } catch (error) {
    expect(error).toBeInstanceOf(ClientMetadataDocumentError);
    const { reason, message, error: code } = error as ClientMetadataDocumentError;
    expect(code).toBe('invalid_client');
    return [reason, message];
  }
  throw new Error('the document was taken');
}

const invalid = (text: string): [string, string] => [
  'invalid-document',
  `The metadata document of ${ID} ${text}`,
];
const take = (doc: Record<string, unknown>) =>
  clientFromDocument(URL_ID, { ...DOC, ...doc }, SERVER_SCOPES);

describe('clientFromDocument()', () => {
  it('answers a frozen public client with the server scopes and the code grant by default', () => {
    const client = take({});
    expect(client).toEqual({
      clientId: ID,
      grantTypes: ['authorization_code'],
      redirectUris: DOC.redirect_uris,
      scopes: SERVER_SCOPES,
      provenance: 'metadata-document',
    });
    expect(Object.isFrozen(client)).toBe(true);
    expect(Object.isFrozen(client.grantTypes)).toBe(true);
    expect(Object.isFrozen(client.scopes)).toBe(true);
    expect(Object.isFrozen(client.redirectUris)).toBe(true);
    expect('postLogoutRedirectUris' in client).toBe(false);
    expect('dpopBoundAccessTokens' in client).toBe(false);
    expect('name' in client).toBe(false);
  });

  it('answers every field it understands', () => {
    const client = take({
      token_endpoint_auth_method: 'private_key_jwt',
      jwks_uri: 'https://agent.example/jwks.json',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      post_logout_redirect_uris: ['https://agent.example/bye'],
      scope: ' read  openid read ',
      client_name: '  Agent  ',
      dpop_bound_access_tokens: true,
    });
    expect(client).toEqual({
      clientId: ID,
      grantTypes: ['authorization_code', 'refresh_token'],
      redirectUris: DOC.redirect_uris,
      postLogoutRedirectUris: ['https://agent.example/bye'],
      scopes: ['read', 'openid'],
      name: 'Agent',
      jwksUri: 'https://agent.example/jwks.json',
      dpopBoundAccessTokens: true,
      provenance: 'metadata-document',
    });
    expect(take({ dpop_bound_access_tokens: false })).not.toHaveProperty('dpopBoundAccessTokens');
    expect(take({ client_name: '   ' })).not.toHaveProperty('name');
    expect(take({ scope: '' }).scopes).toEqual([]);
  });

  it('refuses what is not a JSON object as not-json', () => {
    const message = `The metadata document of ${ID} is not a JSON object.`;
    for (const doc of [null, 'doc', 3, true, [DOC], undefined]) {
      expect(refusal(doc)).toEqual(['not-json', message]);
    }
  });

  it('refuses a document naming another client id, or carrying a secret', () => {
    const other = invalid('names another client_id: it must be its own URL, exactly.');
    for (const client_id of [undefined, `${ID}?x`, 'https://agent.example/other.json']) {
      expect(refusal({ ...DOC, client_id })).toEqual(other);
    }
    const secret = invalid('carries a client secret: a document client has none.');
    expect(refusal({ ...DOC, client_secret: 's' })).toEqual(secret);
    expect(refusal({ ...DOC, client_secret_expires_at: 0 })).toEqual(secret);
    expect(refusal({ ...DOC, client_secret: undefined })).toEqual(secret);
  });

  it('refuses an authentication method other than none and private_key_jwt', () => {
    const message = invalid('must say token_endpoint_auth_method "none" or "private_key_jwt".');
    for (const method of [undefined, 'client_secret_basic', 'NONE']) {
      expect(refusal({ ...DOC, token_endpoint_auth_method: method })).toEqual(message);
    }
  });

  it('asks private_key_jwt for an https jwks_uri at the document origin', () => {
    const pkj = { ...DOC, token_endpoint_auth_method: 'private_key_jwt' };
    const https = invalid('must give an https: jwks_uri for private_key_jwt.');
    for (const jwks_uri of [
      undefined,
      7,
      'not a url',
      'http://agent.example/jwks.json',
      ['https://agent.example/jwks.json'],
    ]) {
      expect(refusal({ ...pkj, jwks_uri })).toEqual(https);
    }
    expect(refusal({ ...pkj, jwks_uri: 'https://keys.example/jwks.json' })).toEqual(
      invalid('must publish its jwks_uri at its own origin.'),
    );
    expect(refusal({ ...pkj, jwks_uri: 'https://agent.example:8443/jwks.json' })).toEqual(
      invalid('must publish its jwks_uri at its own origin.'),
    );
    expect(take({ jwks_uri: 'https://keys.example/jwks.json' })).not.toHaveProperty('jwksUri');
  });

  it('refuses grant types other than a non-empty list of authorization_code and refresh_token', () => {
    const message = invalid(
      'may ask for the grant types authorization_code and refresh_token only.',
    );
    for (const grant_types of [
      'authorization_code',
      [],
      ['client_credentials'],
      ['authorization_code', 'client_credentials'],
      { length: 1 },
    ]) {
      expect(refusal({ ...DOC, grant_types })).toEqual(message);
    }
    expect(take({ grant_types: ['refresh_token'] }).grantTypes).toEqual(['refresh_token']);
  });

  it('refuses response types other than code', () => {
    const message = invalid('may ask for the response type code only.');
    for (const response_types of ['code', ['token'], ['code', 'token'], null]) {
      expect(refusal({ ...DOC, response_types })).toEqual(message);
    }
    expect(take({ response_types: [] }).grantTypes).toEqual(['authorization_code']);
  });

  for (const [name, required] of [
    ['redirect_uris', true],
    ['post_logout_redirect_uris', false],
  ] as const) {
    it(`refuses ${name} that are not 1 to 20 usable URIs`, () => {
      const count = invalid(`must list 1–20 ${name}.`);
      const list = (uris: unknown) => ({ ...DOC, [name]: uris });
      for (const uris of [
        'https://a.example/cb',
        [],
        Array(21).fill('https://a.example/cb'),
        null,
      ]) {
        expect(refusal(list(uris))).toEqual(count);
      }
      if (required) expect(refusal({ ...DOC, redirect_uris: undefined })).toEqual(count);
      const unusable = invalid(`has an unusable entry in ${name}.`);
      for (const uri of [
        7,
        // not a string, though its text is a usable URI
        ['https://a.example/cb'],
        'relative/cb',
        'https://a.example/cb#frag',
        'javascript:alert(1)',
        'DATA:text/html,x',
        'vbscript:x',
        'file:///etc/passwd',
      ]) {
        expect(refusal(list(['https://a.example/ok', uri]))).toEqual(unusable);
      }
      const twenty = Array.from({ length: 20 }, (_, i) => `com.example.app:/cb${i}`);
      const client = clientFromDocument(URL_ID, list([...twenty]), SERVER_SCOPES);
      const taken = name === 'redirect_uris' ? client.redirectUris : client.postLogoutRedirectUris;
      expect(taken).toEqual(twenty);
      expect(Object.isFrozen(taken)).toBe(true);
      // a scheme merely containing a refused word is a scheme like any other
      expect(refusal(list(['x-javascript:cb', 'https://a.example/cb#']))).toEqual(unusable);
      expect(clientFromDocument(URL_ID, list(['x-javascript:cb']), SERVER_SCOPES)).toBeDefined();
    });
  }

  it('refuses a scope that is not a string of scopes this server gives', () => {
    expect(refusal({ ...DOC, scope: ['read'] })).toEqual(
      invalid('has a scope that is not a string.'),
    );
    expect(refusal({ ...DOC, scope: 'read write' })).toEqual(
      invalid('asks for the scope "write", which this server does not give.'),
    );
    const long = 'w'.repeat(100);
    expect(refusal({ ...DOC, scope: `read ${long}` })).toEqual(
      invalid(
        `asks for the scope ${JSON.stringify(long.slice(0, 64))}, which this server does not give.`,
      ),
    );
  });

  it('refuses a client_name that is not short text', () => {
    const message = invalid('has a client_name that is not text of at most 100 characters.');
    for (const client_name of [7, null, 'n'.repeat(101), 'a\nb', 'a\u202eb', 'a\u200bb']) {
      expect(refusal({ ...DOC, client_name })).toEqual(message);
    }
    expect(take({ client_name: 'n'.repeat(100) }).name).toBe('n'.repeat(100));
  });

  it('refuses a dpop_bound_access_tokens that is not a boolean', () => {
    const message = invalid('has a dpop_bound_access_tokens that is not a boolean.');
    for (const bound of ['true', 1, null]) {
      expect(refusal({ ...DOC, dpop_bound_access_tokens: bound })).toEqual(message);
    }
  });
});

describe('the client id of a metadata document, refused before any fetch', () => {
  const documents = createClientMetadataDocuments();
  afterAll(() => documents.close());

  /** The refusal of resolving `clientId`: its description. */
  async function idRefusal(clientId: string): Promise<string> {
    const error = await documents.resolve(clientId).then(
      () => {
        throw new Error('resolved');
      },
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ClientMetadataDocumentError);
    expect((error as ClientMetadataDocumentError).reason).toBe('invalid-id');
    return (error as Error).message;
  }

  it('handles ids written as http(s) URLs only, at the start', () => {
    expect(documents.handles(ID)).toBe(true);
    expect(documents.handles('HTTP://agent.example/c')).toBe(true);
    expect(documents.handles('my-app')).toBe(false);
    expect(documents.handles('app-https://agent.example/c')).toBe(false);
  });

  it('refuses an id that is too long or not visible characters, showing 200 characters of it', async () => {
    const long = `https://agent.example/${'a'.repeat(1_003)}`;
    expect(long).toHaveLength(1_025);
    expect(await idRefusal(long)).toBe(
      `The client id ${JSON.stringify(`${long.slice(0, 200)}…`)} is not a usable URL.`,
    );
    const spaced = 'https://agent.example/a b';
    expect(await idRefusal(spaced)).toBe(
      `The client id ${JSON.stringify(spaced)} is not a usable URL.`,
    );
    const exactly = `https://agent.example/${'a'.repeat(178)}`;
    expect(exactly).toHaveLength(200);
    expect(await idRefusal(`${exactly}#`)).toBe(
      `The client id ${JSON.stringify(`${exactly.slice(0, 200)}…`)} must carry no user name, password or fragment.`,
    );
  });

  it('refuses an id that is not an https URL with a path, in normal form, without credentials', async () => {
    expect(await idRefusal('https://')).toBe('The client id "https://" is not a URL.');
    expect(await idRefusal('http://agent.example/c')).toBe(
      'The client id "http://agent.example/c" must be an https: URL to be looked up.',
    );
    for (const id of [
      'https://u@agent.example/c',
      'https://:p@agent.example/c',
      'https://agent.example/c#f',
    ]) {
      expect(await idRefusal(id)).toBe(
        `The client id ${JSON.stringify(id)} must carry no user name, password or fragment.`,
      );
    }
    for (const id of [
      'https://agent.example/',
      'https://agent.example/a/../c',
      'https://Agent.example/c',
    ]) {
      expect(await idRefusal(id)).toBe(
        `The client id ${JSON.stringify(id)} must be an https: URL with a path, in its normal form (no dot segments).`,
      );
    }
  });
});
