// protectedResource() (RFC 9728) and the challenges that point to it, over real sockets: the
// document validated with the MCP SDK's own schema, the 401s read by the SDK's own parser.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js';
import { OAuthProtectedResourceMetadataSchema } from '@modelcontextprotocol/sdk/shared/auth.js';
import { SignJWT } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { apiKeyAuth } from '../../src/auth/api-key/authenticator.js';
import { MemoryApiKeyStore } from '../../src/auth/api-key/store.js';
import { authenticate, requireScopes } from '../../src/auth/authenticate.js';
import { challenge } from '../../src/auth/authenticator.js';
import { basicAuth } from '../../src/auth/basic.js';
import { parseChallenges, resourceChallenges } from '../../src/auth/challenge-list.js';
import { jwtBearer } from '../../src/auth/jwt/bearer.js';
import { type ProtectedResource, protectedResource } from '../../src/auth/protected-resource.js';
import { sendJson } from '../../src/core/send.js';
import { silentLogger } from '../../src/diagnostics/index.js';
import { createRouter } from '../../src/http/routing/router.js';
import { createUpgradeHandler } from '../../src/ws/upgrade.js';
import { closeAll, request, serve } from '../helpers/http.js';

afterEach(closeAll);

const ISSUER = 'https://auth.example.com';
const SECRET = 'a-secret-of-at-least-thirty-two-bytes!!';
const bearer = () =>
  jwtBearer({ secret: SECRET, issuer: ISSUER, audience: 'https://api.example.com/mcp' });

function mcpResource(extra: Record<string, unknown> = {}): ProtectedResource {
  return protectedResource({
    resource: 'https://api.example.com/mcp',
    authorizationServers: [ISSUER],
    scopesSupported: ['read:messages', 'write:messages'],
    dpopSigningAlgValuesSupported: ['ES256'],
    resourceName: 'Example "MCP" server',
    ...extra,
  });
}

async function token(scope: string, audience = 'https://api.example.com/mcp'): Promise<string> {
  return new SignJWT({ scope, sub: 'alice' })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(ISSUER)
    .setAudience(audience)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(new TextEncoder().encode(SECRET));
}

/** A fetch Response of a node reply, for the SDK's own parser. */
const asResponse = (headers: Record<string, unknown>) =>
  new Response(null, {
    status: 401,
    headers: Object.entries(headers).flatMap(([k, v]) =>
      Array.isArray(v) ? v.map((x) => [k, String(x)] as [string, string]) : [[k, String(v)]],
    ) as [string, string][],
  });

const firstScheme = (value: unknown) =>
  parseChallenges(Array.isArray(value) ? value.join(', ') : String(value ?? ''))?.[0]?.scheme;

describe('protectedResource()', () => {
  it('puts the well-known segment between host and path (RFC 9728 §3.1)', () => {
    expect(mcpResource().metadataUrl).toBe(
      'https://api.example.com/.well-known/oauth-protected-resource/mcp',
    );
    const root = protectedResource({ resource: 'https://api.example.com' });
    expect(root.metadataUrl).toBe('https://api.example.com/.well-known/oauth-protected-resource');
    expect(root.identifier).toBe('https://api.example.com');
    expect(root.metadata.resource).toBe('https://api.example.com');
    const slash = protectedResource({ resource: 'http://127.0.0.1:8080/' });
    expect(slash.metadata.resource).toBe('http://127.0.0.1:8080/');
    expect(slash.metadataPath).toBe('/.well-known/oauth-protected-resource');
    expect(protectedResource({ resource: 'https://h.example/a/b' }).metadataPath).toBe(
      '/.well-known/oauth-protected-resource/a/b',
    );
  });

  it('makes a frozen document the MCP SDK\'s schema accepts, bearer methods ["header"] by default', () => {
    const { metadata } = mcpResource();
    expect(Object.isFrozen(metadata)).toBe(true);
    expect(OAuthProtectedResourceMetadataSchema.parse(metadata)).toEqual({
      resource: 'https://api.example.com/mcp',
      authorization_servers: [ISSUER],
      scopes_supported: ['read:messages', 'write:messages'],
      bearer_methods_supported: ['header'],
      dpop_signing_alg_values_supported: ['ES256'],
      resource_name: 'Example "MCP" server',
    });
    const full = protectedResource({
      resource: 'https://api.example.com',
      jwksUri: 'https://api.example.com/jwks',
      resourceDocumentation: 'https://docs.example.com',
      resourcePolicyUri: 'https://example.com/policy',
      resourceTosUri: 'https://example.com/tos',
      tlsClientCertificateBoundAccessTokens: true,
      dpopBoundAccessTokensRequired: false,
      authorizationDetailsTypesSupported: ['payment_initiation'],
      resourceSigningAlgValuesSupported: ['RS256'],
      bearerMethodsSupported: [],
    }).metadata;
    expect(OAuthProtectedResourceMetadataSchema.parse(full)).toMatchObject({
      jwks_uri: 'https://api.example.com/jwks',
      tls_client_certificate_bound_access_tokens: true,
      dpop_bound_access_tokens_required: false,
      bearer_methods_supported: [],
    });
  });

  it.each([
    [{ resource: 'api.example.com' }, /absolute https/],
    [{ resource: 'ftp://api.example.com' }, /absolute https/],
    [{ resource: 'https://api.example.com/#x' }, /fragment/],
    [{ resource: 'https://u:p@api.example.com/' }, /user info/],
    [{ resource: 'https://api.example.com/?a=1' }, /no query/],
    [{ resource: 'https://a.example', resourse: 'x' }, /Did you mean `resource`/],
    [{ resource: 'https://a.example', scopeSupported: [] }, /Did you mean `scopesSupported`/],
    [{ resource: 'https://a.example', authorizationServers: [] }, /non-empty/],
    [{ resource: 'https://a.example', authorizationServers: ['issuer'] }, /absolute/],
    [{ resource: 'https://a.example', scopesSupported: ['a b'] }, /not a valid scope/],
    [{ resource: 'https://a.example', bearerMethodsSupported: ['cookie'] }, /header/],
    [{ resource: 'https://a.example', dpopSigningAlgValuesSupported: ['none'] }, /not `none`/],
    [{ resource: 'https://a.example', maxAge: 60 }, /looks like seconds/],
    [{ resource: 'https://a.example', resourceName: '' }, /resourceName/],
    [{ resource: 'https://a.example', jwksUri: 'keys' }, /jwksUri/],
    [{ resource: 'https://a.example/:id' }, /starting with ':'/],
  ])('refuses bad options once: %j', (options, message) => {
    expect(() => protectedResource(options as never)).toThrow(message);
  });

  it('serves the document on GET and HEAD: JSON, public max-age, any origin, no credentials', async () => {
    const resource = mcpResource({ maxAge: '10m' });
    const server = await serve([createRouter(resource.routes)]);
    const path = '/.well-known/oauth-protected-resource/mcp';
    const reply = await request(server, path, { headers: { origin: 'https://evil.example' } });
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toMatch(/^application\/json/);
    expect(reply.headers['cache-control']).toBe('public, max-age=600');
    expect(reply.headers['access-control-allow-origin']).toBe('*');
    expect(reply.headers['cross-origin-resource-policy']).toBe('cross-origin');
    expect(JSON.parse(reply.body)).toEqual(resource.metadata);
    const head = await request(server, path, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    expect(head.headers['cache-control']).toBe('public, max-age=600');
    const other = await request(server, '/.well-known/oauth-protected-resource');
    expect(other.status).toBe(404);
  });

  it('serves an identifier with escapes where the router finds its path', async () => {
    const resource = protectedResource({ resource: 'https://h.example/%7Eann/caf%C3%A9' });
    expect(resource.metadataUrl).toBe(
      'https://h.example/.well-known/oauth-protected-resource/%7Eann/caf%C3%A9',
    );
    const server = await serve([createRouter(resource.routes)]);
    const reply = await request(server, '/.well-known/oauth-protected-resource/%7Eann/caf%C3%A9');
    expect(reply.status).toBe(200);
    expect(JSON.parse(reply.body).resource).toBe('https://h.example/%7Eann/caf%C3%A9');
  });

  it('stays readable by any origin behind a credentialed cors(), preflight included', async () => {
    const { cors } = await import('../../src/cors/cors.js');
    const resource = mcpResource();
    const server = await serve([
      createRouter(resource.routes),
      cors({ origins: ['https://app.example'], credentials: true }),
    ]);
    const path = resource.metadataPath;
    const preflight = await request(server, path, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://agent.example',
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'mcp-protocol-version',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('*');
    expect(preflight.headers['access-control-allow-headers']).toBe('*');
    expect(preflight.headers['access-control-allow-credentials']).toBeUndefined();
    // a credentialed cors() that ran first: its Allow-Credentials is taken back
    const after = await serve([
      cors({ origins: ['https://app.example'], credentials: true }),
      createRouter(resource.routes),
    ]);
    const reply = await request(after, path, { headers: { origin: 'https://app.example' } });
    expect(reply.headers['access-control-allow-origin']).toBe('*');
    expect(reply.headers['access-control-allow-credentials']).toBeUndefined();
  });
});

describe('the challenges of authenticate() with a resource', () => {
  const ok = (_req: unknown, res: Parameters<typeof sendJson>[0]) => sendJson(res, 200, {});

  it('no credential: Bearer first, resource_metadata, the scope of the request, no error', async () => {
    const resource = mcpResource();
    const apiKeys = apiKeyAuth({ store: new MemoryApiKeyStore() });
    const basic = basicAuth({ verify: () => undefined });
    const server = await serve([
      authenticate([apiKeys, basic, bearer()], {
        resource,
        scopes: (req) => (req.method === 'GET' ? ['read:messages'] : undefined),
      }),
      ok,
    ]);
    const reply = await request(server, '/mcp');
    expect(reply.status).toBe(401);
    const values = reply.headers['www-authenticate'];
    expect(firstScheme(values)).toBe('bearer');
    const params = extractWWWAuthenticateParams(asResponse(reply.headers));
    expect(params.resourceMetadataUrl?.href).toBe(resource.metadataUrl);
    expect(params.scope).toBe('read:messages');
    expect(params.error).toBeUndefined();
    // every scheme still offered, the others after
    expect(String(values)).toMatch(/ApiKey/);
    expect(String(values)).toMatch(/Basic realm="api", charset="UTF-8"/);
    const post = await request(server, '/mcp', { method: 'POST' });
    expect(post.status).toBe(401);
    expect(String(post.headers['www-authenticate'])).not.toMatch(/scope=/);
  });

  it('a refused token (jwtBearer invalid_token) carries resource_metadata and scope', async () => {
    const resource = mcpResource();
    const server = await serve([
      authenticate([bearer()], { resource, scopes: () => ['write:messages'] }),
      ok,
    ]);
    const wrongAudience = await token('read:messages', 'https://other.example.com');
    const reply = await request(server, '/mcp', {
      headers: { authorization: `Bearer ${wrongAudience}` },
    });
    expect(reply.status).toBe(401);
    const params = extractWWWAuthenticateParams(asResponse(reply.headers));
    expect(params.error).toBe('invalid_token');
    expect(params.resourceMetadataUrl?.href).toBe(resource.metadataUrl);
    expect(params.scope).toBe('write:messages');
    const good = await request(server, '/mcp', {
      headers: { authorization: `Bearer ${await token('read:messages')}` },
    });
    expect(good.status).toBe(200);
  });

  it('a refused API key: Bearer is offered first all the same', async () => {
    const resource = mcpResource();
    const server = await serve([
      authenticate([apiKeyAuth({ store: new MemoryApiKeyStore() }), bearer()], { resource }),
      ok,
    ]);
    const reply = await request(server, '/', {
      headers: { 'x-api-key': 'pk_0123456789abcdef0123456789abcdef' },
    });
    expect(reply.status).toBe(401);
    expect(firstScheme(reply.headers['www-authenticate'])).toBe('bearer');
    expect(String(reply.headers['www-authenticate'])).toContain(
      `resource_metadata="${resource.metadataUrl}"`,
    );
  });

  it('without a resource, the challenges are as before', async () => {
    const server = await serve([
      authenticate([basicAuth({ verify: () => undefined }), bearer()]),
      ok,
    ]);
    const reply = await request(server, '/');
    expect(reply.headers['www-authenticate']).toBe(
      'Basic realm="api", charset="UTF-8", Bearer realm="api"',
    );
  });

  it('requireScopes(): the step-up 403 names every scope needed and the metadata', async () => {
    const resource = mcpResource();
    const server = await serve([
      authenticate([bearer()]),
      requireScopes(['read:messages', 'write:messages'], { resource }),
      ok,
    ]);
    const reply = await request(server, '/', {
      headers: { authorization: `Bearer ${await token('read:messages')}` },
    });
    expect(reply.status).toBe(403);
    const params = extractWWWAuthenticateParams(asResponse(reply.headers));
    expect(params.error).toBe('insufficient_scope');
    expect(params.scope).toBe('read:messages write:messages');
    expect(params.resourceMetadataUrl?.href).toBe(resource.metadataUrl);
    expect(JSON.parse(reply.body).requiredScopes).toEqual(['write:messages']);
    expect(() => requireScopes(['read:messages'], { resourse: resource } as never)).toThrow(
      /Did you mean `resource`/,
    );
    expect(() => requireScopes(['read:messages'], { resource: {} as never })).toThrow(
      /protectedResource\(\)/,
    );
  });

  it('the 403 of a requireScopes() behind authenticate({ resource }) names the metadata too', async () => {
    const resource = mcpResource();
    const server = await serve([
      authenticate([bearer()], { resource }),
      requireScopes(['write:messages']),
      ok,
    ]);
    const reply = await request(server, '/', {
      headers: { authorization: `Bearer ${await token('read:messages')}` },
    });
    expect(reply.status).toBe(403);
    expect(String(reply.headers['www-authenticate'])).toBe(
      `Bearer error="insufficient_scope", error_description="The access token lacks a required scope.", scope="write:messages", resource_metadata="${resource.metadataUrl}"`,
    );
  });

  it('refuses a resource it did not make, and scopes that are not a function', () => {
    expect(() =>
      authenticate([bearer()], { resource: { metadataUrl: 'https://x' } as never }),
    ).toThrow(/protectedResource\(\)/);
    expect(() => authenticate([bearer()], { scopes: ['read:messages'] as never })).toThrow(
      /`scopes` must be a function/,
    );
  });
});

describe('the WebSocket upgrade with a resource', () => {
  let server: Server | undefined;
  afterEach(
    () => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())),
  );

  it('answers a handshake without credential 401 with Bearer first and resource_metadata', async () => {
    const resource = mcpResource();
    const upgrade = createUpgradeHandler({
      path: '/ws',
      authenticators: [basicAuth({ verify: () => undefined }), bearer()],
      resource,
      scopes: ['read:messages'],
      onConnection: () => {},
      logger: silentLogger,
    });
    server = createServer();
    server.on('upgrade', upgrade);
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const reply = await request(port, '/ws', {
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': Buffer.alloc(16, 7).toString('base64'),
      },
    });
    expect(reply.status).toBe(401);
    expect(firstScheme(reply.headers['www-authenticate'])).toBe('bearer');
    const params = extractWWWAuthenticateParams(asResponse(reply.headers));
    expect(params.resourceMetadataUrl?.href).toBe(resource.metadataUrl);
    expect(params.scope).toBe('read:messages');
    expect(params.error).toBeUndefined();
    expect(() =>
      createUpgradeHandler({ path: '/ws', scopes: ['a b'], onConnection: () => {} }),
    ).toThrow(/not a valid scope/);
  });
});

describe('the challenge list', () => {
  it('reads challenges, parameters, quoted commas and token68 (RFC 9110 §11.6.1)', () => {
    const parsed = parseChallenges(
      'Bearer realm="a, b", error=invalid_token, DPoP algs="ES256", Negotiate abc==, Basic',
    );
    expect(parsed?.map((c) => [c.scheme, c.text, [...c.names], c.token68])).toEqual([
      ['bearer', 'Bearer realm="a, b", error=invalid_token', ['realm', 'error'], false],
      ['dpop', 'DPoP algs="ES256"', ['algs'], false],
      ['negotiate', 'Negotiate abc==', [], true],
      ['basic', 'Basic', [], false],
    ]);
    expect(parseChallenges('Bearer realm="unterminated')).toBeUndefined();
  });

  it('adds the parameters once, quoted and escaped, to Bearer and DPoP only', () => {
    const metadata = 'https://h.example/.well-known/oauth-protected-resource/a"b';
    const out = resourceChallenges(
      ['Basic realm="x"', `DPoP algs="ES256", Bearer realm="api", resource_metadata="kept"`],
      { resourceMetadata: metadata, scope: 'read:messages' },
      401,
    );
    expect(out).toEqual([
      'Bearer realm="api", resource_metadata="kept", scope="read:messages"',
      'Basic realm="x"',
      `DPoP algs="ES256", resource_metadata=${JSON.stringify(metadata).replace(/"$/, '"')}, scope="read:messages"`,
    ]);
    expect(out[2]).toContain('a\\"b');
    // a 403 gets resource_metadata, never a scope of ours
    expect(
      resourceChallenges(
        [challenge('Bearer', { error: 'insufficient_scope', scope: 'x:y' })],
        {
          resourceMetadata: 'https://m',
          scope: 'read:messages',
        },
        403,
      ),
    ).toEqual(['Bearer error="insufficient_scope", scope="x:y", resource_metadata="https://m"']);
  });
});
