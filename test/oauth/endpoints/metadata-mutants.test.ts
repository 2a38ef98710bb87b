// The discovery document, field by field, as a client reads it over a socket; the checks on
// its options and paths; and how a scope parameter with stray spaces is read by the grants.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSessions } from '../../../src/auth/session/session.js';
import { MemoryClientStore } from '../../../src/oauth/clients/store.js';
import {
  type AuthorizationServerOptions,
  createOAuthContext,
  type OAuthContext,
} from '../../../src/oauth/context.js';
import {
  authorizationServerMetadata,
  createMetadataEndpoint,
  type MetadataOptions,
  metadataPaths,
  type OAuthPaths,
  resolveOAuthPaths,
} from '../../../src/oauth/endpoints/metadata.js';
import { refreshTokens } from '../../../src/oauth/store/records.js';
import { hashToken, newOpaqueToken } from '../../../src/oauth/tokens/issue.js';
import { createKeySet, type KeySet } from '../../../src/oauth/tokens/key-set.js';
import { thrownTypeError } from '../../helpers/errors.js';
import { closeAll, json, type Listening, type Reply, request, serve } from '../../helpers/http.js';
import {
  expectError,
  expectTokens,
  ISSUER,
  startTokenServer,
  tokenRequest,
  verifyAccessToken,
} from '../token-fixtures.js';

const ALGS = ['ES256', 'EdDSA', 'Ed25519', 'PS256', 'RS256'];
const CONFIDENTIAL = ['client_secret_basic', 'client_secret_post', 'private_key_jwt'];

let keys: KeySet;

beforeAll(async () => {
  keys = await createKeySet();
});

afterAll(closeAll);

function context(options: Partial<AuthorizationServerOptions> = {}): OAuthContext {
  return createOAuthContext({
    issuer: ISSUER,
    clients: new MemoryClientStore([]),
    keys,
    users: { verify: () => undefined, get: () => undefined },
    sessions: createSessions({ allowedOrigins: [ISSUER] }),
    ...options,
  });
}

/** Serves the metadata endpoint of a fresh context (built here, in the test) and GETs it. */
async function discover(
  options: Partial<AuthorizationServerOptions> = {},
  paths: Partial<OAuthPaths> = {},
  metadataOptions: MetadataOptions = {},
): Promise<{ reply: Reply; doc: Record<string, unknown> }> {
  const server = await serve(createMetadataEndpoint(context(options), paths, metadataOptions));
  const reply = await request(server, '/.well-known/openid-configuration');
  return { reply, doc: json(reply) };
}

describe('metadata.ts', () => {
  it('serves exactly the fields of the discovery document, and nothing else', async () => {
    const { reply, doc } = await discover({ dpop: false });
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toMatch(/^application\/json/);
    expect(reply.headers['cache-control']).toBe('public, max-age=300');
    expect(doc).toStrictEqual({
      issuer: ISSUER,
      authorization_endpoint: `${ISSUER}/authorize`,
      pushed_authorization_request_endpoint: `${ISSUER}/par`,
      require_pushed_authorization_requests: false,
      token_endpoint: `${ISSUER}/token`,
      device_authorization_endpoint: `${ISSUER}/device`,
      revocation_endpoint: `${ISSUER}/revoke`,
      introspection_endpoint: `${ISSUER}/introspect`,
      userinfo_endpoint: `${ISSUER}/userinfo`,
      jwks_uri: `${ISSUER}/.well-known/jwks.json`,
      end_session_endpoint: `${ISSUER}/session/end`,
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: [
        'authorization_code',
        'refresh_token',
        'client_credentials',
        'urn:ietf:params:oauth:grant-type:device_code',
      ],
      scopes_supported: ['openid', 'profile', 'email', 'offline_access'],
      token_endpoint_auth_methods_supported: [...CONFIDENTIAL, 'none'],
      revocation_endpoint_auth_methods_supported: [...CONFIDENTIAL, 'none'],
      introspection_endpoint_auth_methods_supported: CONFIDENTIAL,
      token_endpoint_auth_signing_alg_values_supported: ALGS,
      revocation_endpoint_auth_signing_alg_values_supported: ALGS,
      introspection_endpoint_auth_signing_alg_values_supported: ALGS,
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256'],
      claims_supported: [
        'sub',
        'iss',
        'aud',
        'exp',
        'iat',
        'auth_time',
        'nonce',
        'name',
        'picture',
        'email',
        'email_verified',
      ],
      claims_parameter_supported: false,
      request_parameter_supported: false,
      request_uri_parameter_supported: false,
    });
  });

  it('adds the DPoP proof algorithms and the PAR requirement when the server has them', async () => {
    const { doc } = await discover({
      dpop: { algorithms: ['ES256', 'EdDSA'] },
      requirePushedAuthorizationRequests: true,
    });
    expect(doc.dpop_signing_alg_values_supported).toEqual(['ES256', 'EdDSA']);
    expect(doc.require_pushed_authorization_requests).toBe(true);
    const { doc: off } = await discover({ dpop: false });
    expect(Object.keys(off)).not.toContain('dpop_signing_alg_values_supported');
  });

  it('serves the configured scopes, paths and max-age, under an issuer with a trailing slash', async () => {
    const { reply, doc } = await discover(
      { dpop: false, issuer: `${ISSUER}/` },
      { token: '/oauth/token', jwks: '/keys' },
      { scopesSupported: ['openid', 'read:messages'], maxAge: 60_000 },
    );
    expect(reply.headers['cache-control']).toBe('public, max-age=60');
    expect(doc.issuer).toBe(`${ISSUER}/`);
    expect(doc.token_endpoint).toBe(`${ISSUER}/oauth/token`);
    expect(doc.jwks_uri).toBe(`${ISSUER}/keys`);
    expect(doc.authorization_endpoint).toBe(`${ISSUER}/authorize`);
    expect(doc.scopes_supported).toEqual(['openid', 'read:messages']);
  });

  it('looks for the document where RFC 8414 and OpenID Connect Discovery say', () => {
    expect(metadataPaths(`${ISSUER}/`)).toEqual([
      '/.well-known/oauth-authorization-server',
      '/.well-known/openid-configuration',
    ]);
    expect(metadataPaths(`${ISSUER}/tenants/a/`)).toEqual([
      '/.well-known/oauth-authorization-server/tenants/a',
      '/tenants/a/.well-known/openid-configuration',
    ]);
  });

  it('refuses scopesSupported that is not a list of non-empty scope strings', () => {
    const ctx = context();
    const message = 'authorizationServerMetadata(): `scopesSupported` must be scope strings';
    for (const bad of [['openid', ''], [''], [42], ['openid', 42], 'openid', { length: 1 }]) {
      const error = thrownTypeError(() =>
        authorizationServerMetadata(ctx, {}, { scopesSupported: bad as never }),
      );
      expect({ message: error.message, code: error.code }).toEqual({
        message,
        code: 'ERR_INVALID_OPTION',
      });
    }
    expect(() =>
      createMetadataEndpoint(ctx, {}, { scopesSupported: ['read:messages', ''] }),
    ).toThrowError(message);
    expect(authorizationServerMetadata(ctx, {}, { scopesSupported: [] }).scopes_supported).toEqual(
      [],
    );
  });

  it('names itself when given an unknown option or a bad maxAge', () => {
    const ctx = context();
    expect(() =>
      authorizationServerMetadata(ctx, {}, { scopeSupported: ['openid'] } as never),
    ).toThrowError(
      'authorizationServerMetadata(): unknown option `scopeSupported`. Did you mean `scopesSupported`?',
    );
    expect(() => createMetadataEndpoint(ctx, {}, { maxAge: -1 })).toThrowError(
      'createMetadataEndpoint(): `maxAge` must be milliseconds, at least 0',
    );
  });

  it('says client_id_metadata_document_supported only when client metadata documents are on', async () => {
    const { doc } = await discover({ dpop: false, clientMetadataDocuments: true });
    expect(doc.client_id_metadata_document_supported).toBe(true);
    const { doc: off } = await discover({ dpop: false });
    expect(Object.keys(off)).not.toContain('client_id_metadata_document_supported');
  });

  it('names itself when its grants are not a list of grants', () => {
    expect(() =>
      authorizationServerMetadata(context(), {}, { grants: 'password' as never }),
    ).toThrowError(
      'authorizationServerMetadata(): `grants` must be a list of grants ([...defaultGrants, …])',
    );
  });

  it('takes only absolute, printable paths without query or fragment', () => {
    expect(resolveOAuthPaths({ token: '/oauth/token', jwks: '/a/b~c!' })).toMatchObject({
      token: '/oauth/token',
      jwks: '/a/b~c!',
      authorize: '/authorize',
    });
    const refused = (name: keyof OAuthPaths, path: unknown) =>
      expect(
        thrownTypeError(() => resolveOAuthPaths({ [name]: path } as Partial<OAuthPaths>)).message,
      ).toBe(`OAuthPaths: \`${name}\` must be a path starting with /`);
    refused('token', 'oauth/token');
    refused('token', 'token');
    refused('revoke', '/re voke');
    refused('revoke', '/revoke\n');
    refused('userinfo', '/user/infö');
    refused('par', '/par?x=1');
    refused('par', '/par#x');
    refused('jwks', ['/keys']);
    refused('jwks', { toString: () => '/keys' });
    refused('device', undefined);
    expect(() => resolveOAuthPaths({ tokne: '/t' } as never)).toThrowError(
      'OAuthPaths: unknown option `tokne`. Did you mean `token`?',
    );
    // the same check guards the metadata and its endpoint
    expect(() => authorizationServerMetadata(context(), { token: 'oauth/token' })).toThrowError(
      'OAuthPaths: `token` must be a path starting with /',
    );
  });
});

describe('scope.ts', () => {
  let ctx: OAuthContext;
  let server: Listening;

  beforeAll(async () => {
    ({ ctx, server } = await startTokenServer());
  });

  /** A client_credentials request; `scope` is left out of the form when `undefined`. */
  const clientCredentials = (client: string, scope?: string) =>
    tokenRequest(
      server,
      { grant_type: 'client_credentials', ...(scope !== undefined && { scope }) },
      { client },
    );

  it('reads a blank or missing scope as none requested: the client’s default scopes, else all its scopes', async () => {
    expect(expectTokens(await clientCredentials('reader-service')).scope).toBe('read:messages');
    expect(expectTokens(await clientCredentials('demo-service')).scope).toBe(
      'read:messages write:messages',
    );
    const reader = expectTokens(await clientCredentials('reader-service', '   '));
    expect(reader.scope).toBe('read:messages');
    const demo = expectTokens(await clientCredentials('demo-service', ' '));
    expect(demo.scope).toBe('read:messages write:messages');
    expect((await verifyAccessToken(ctx, demo.access_token)).scope).toBe(
      'read:messages write:messages',
    );
  });

  it('reads a requested scope with repeated and outer spaces as its scopes', async () => {
    const tokens = expectTokens(
      await clientCredentials('demo-service', ' write:messages  read:messages write:messages '),
    );
    expect(tokens.scope).toBe('write:messages read:messages');
    // malformed, or well-formed but not the client's: both refused
    for (const scope of ['read:messages  admin', 'read:messages  admin:all']) {
      const refused = expectError(await clientCredentials('demo-service', scope), 'invalid_scope');
      expect(refused.error_description).toBe(
        'A requested scope is unknown or not allowed for this client.',
      );
    }
  });

  async function plantRefreshToken(scope: string[]): Promise<string> {
    const token = newOpaqueToken();
    await refreshTokens(ctx.store).save(
      hashToken(token),
      {
        clientId: 'demo-web',
        sub: 'alice',
        scope,
        grantId: `grant-${newOpaqueToken()}`,
        familyExpiresAt: Date.now() + 600_000,
      },
      600_000,
    );
    return token;
  }

  const refresh = (token: string, scope?: string) =>
    tokenRequest(
      server,
      { grant_type: 'refresh_token', refresh_token: token, ...(scope !== undefined && { scope }) },
      { client: 'demo-web' },
    );

  it('keeps the granted scope on a refresh whose scope is blank or missing', async () => {
    const token = await plantRefreshToken(['read:messages', 'write:messages']);
    const tokens = expectTokens(await refresh(token, '  '));
    expect(tokens.scope).toBe('read:messages write:messages');
    const next = expectTokens(await refresh(tokens.refresh_token!));
    expect(next.scope).toBe('read:messages write:messages');
  });

  it('narrows on a refresh whose scope has repeated spaces, and refuses widening in words', async () => {
    const token = await plantRefreshToken(['read:messages', 'write:messages']);
    const narrowed = expectTokens(await refresh(token, '  write:messages   write:messages '));
    expect(narrowed.scope).toBe('write:messages');
    const wider = await plantRefreshToken(['read:messages']);
    const refused = expectError(
      await refresh(wider, 'read:messages  write:messages'),
      'invalid_scope',
    );
    expect(refused.error_description).toBe('The requested scope is wider than the original grant.');
  });
});
