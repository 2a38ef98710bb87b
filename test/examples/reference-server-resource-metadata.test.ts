// The contract's "The resource's metadata and challenges" (third round), from outside: the
// reference server in its own process, its answers read by the MCP SDK's own discovery code and
// validated with its zod schema, over real sockets.
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import {
  discoverOAuthProtectedResourceMetadata,
  extractWWWAuthenticateParams,
} from '@modelcontextprotocol/sdk/client/auth.js';
import { OAuthProtectedResourceMetadataSchema } from '@modelcontextprotocol/sdk/shared/auth.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

let server: RunningServer;
let issuer: string;

beforeAll(async () => {
  server = await startReferenceServer({ RATE_LIMIT: '100000' });
  issuer = (
    (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as {
      issuer: string;
    }
  ).issuer;
});

afterAll(async () => {
  await server?.stop();
});

const url = (path: string) => `${server.url}${path}`;
const origin = () => new URL(server.url).origin;
const apiMetadataUrl = () => `${origin()}/.well-known/oauth-protected-resource`;
const mcpMetadataUrl = () => `${origin()}/.well-known/oauth-protected-resource/mcp`;

/** An access token of demo-service (client_credentials) with `scope`. */
async function serviceToken(scope: string): Promise<string> {
  const res = await fetch(url('/token'), {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from('demo-service:demo-service-secret').toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope }).toString(),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

/** The challenges of a `WWW-Authenticate` field, split where a new scheme starts. */
function schemes(header: string | null): string[] {
  return [...(header ?? '').matchAll(/(?:^|,\s*)([A-Za-z][\w-]*)(?=\s|,|$)(?!\s*=)/g)].map(
    (m) => m[1]!,
  );
}

describe('the metadata documents (RFC 9728)', () => {
  it("serves BASE_URL's: the SDK's schema holds, resource exactly BASE_URL, the issuer, its scopes", async () => {
    const res = await fetch(url('/.well-known/oauth-protected-resource'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('cache-control')).toMatch(/^public, max-age=\d+$/);
    const body = OAuthProtectedResourceMetadataSchema.parse(await res.json());
    expect(body.resource).toBe(issuer);
    expect(body.authorization_servers).toEqual([issuer]);
    expect(body.bearer_methods_supported).toEqual(['header']);
    expect(body.scopes_supported).toEqual(
      expect.arrayContaining(['read:messages', 'write:messages', 'openid']),
    );
    expect(body.dpop_signing_alg_values_supported).toEqual(expect.arrayContaining(['ES256']));
    expect(body.resource_name).toEqual(expect.any(String));
  });

  it("serves /mcp's at the path-suffixed URL (§3.1): resource BASE_URL without its slash + /mcp", async () => {
    const res = await fetch(url('/.well-known/oauth-protected-resource/mcp'));
    expect(res.status).toBe(200);
    const body = OAuthProtectedResourceMetadataSchema.parse(await res.json());
    expect(body.resource).toBe(`${issuer.replace(/\/$/, '')}/mcp`);
    expect(body.authorization_servers).toEqual([issuer]);
    expect(body.scopes_supported).toEqual(['read:messages', 'write:messages']);
    expect(body.bearer_methods_supported).toEqual(['header']);
    // the SDK's own discovery finds it from the MCP endpoint's URL
    const found = await discoverOAuthProtectedResourceMetadata(`${origin()}/mcp`);
    expect(found.resource).toBe(body.resource);
  });

  it('is readable by any origin without credentials, preflight included', async () => {
    const res = await fetch(url('/.well-known/oauth-protected-resource'), {
      headers: { origin: 'https://agent.example' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    const preflight = await fetch(url('/.well-known/oauth-protected-resource/mcp'), {
      method: 'OPTIONS',
      headers: {
        origin: 'https://agent.example',
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'mcp-protocol-version',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
    expect(preflight.headers.get('access-control-allow-methods')).toContain('GET');
    expect(preflight.headers.get('access-control-allow-headers')).toBe('*');
  });

  it('answers HEAD with the headers and no body; an unknown suffix is a 404 problem', async () => {
    const head = await fetch(url('/.well-known/oauth-protected-resource'), { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('cache-control')).toMatch(/^public, max-age=/);
    expect(await head.text()).toBe('');
    const unknown = await fetch(url('/.well-known/oauth-protected-resource/nothing'));
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });
});

describe('the challenges', () => {
  it("a 401 without credential: Bearer first, resource_metadata, the route's scope, no error", async () => {
    for (const [method, path, scope] of [
      ['GET', '/api/messages', 'read:messages'],
      ['POST', '/api/messages', 'write:messages'],
      ['GET', '/events', 'read:messages'],
      ['GET', '/api/me', undefined],
    ] as const) {
      const res = await fetch(url(path), { method });
      expect(res.status, `${method} ${path}`).toBe(401);
      const header = res.headers.get('www-authenticate');
      expect(schemes(header)[0], header ?? '').toBe('Bearer');
      const params = extractWWWAuthenticateParams(res);
      expect(params.resourceMetadataUrl?.href).toBe(apiMetadataUrl());
      expect(params.scope).toBe(scope);
      expect(params.error).toBeUndefined();
      expect(header).not.toMatch(/error=/);
    }
  });

  it('the SDK follows resource_metadata from the 401 to the document', async () => {
    const res = await fetch(url('/api/messages'));
    const { resourceMetadataUrl } = extractWWWAuthenticateParams(res);
    const found = await discoverOAuthProtectedResourceMetadata(server.url, {
      resourceMetadataUrl: resourceMetadataUrl!,
    });
    expect(found.resource).toBe(issuer);
    expect(found.authorization_servers).toEqual([issuer]);
  });

  it('a bad token: 401 invalid_token, Bearer first, resource_metadata', async () => {
    const res = await fetch(url('/api/messages'), {
      headers: { authorization: 'Bearer not-a-token' },
    });
    expect(res.status).toBe(401);
    expect(schemes(res.headers.get('www-authenticate'))[0]).toBe('Bearer');
    const params = extractWWWAuthenticateParams(res);
    expect(params.error).toBe('invalid_token');
    expect(params.resourceMetadataUrl?.href).toBe(apiMetadataUrl());
    expect(params.scope).toBe('read:messages');
  });

  it('a bad API key: the 401 still starts with Bearer and names the metadata', async () => {
    const res = await fetch(url('/api/messages'), { headers: { 'x-api-key': 'pk_nothing' } });
    expect(res.status).toBe(401);
    expect(schemes(res.headers.get('www-authenticate'))[0]).toBe('Bearer');
    expect(extractWWWAuthenticateParams(res).resourceMetadataUrl?.href).toBe(apiMetadataUrl());
  });

  it('a token without the scope: 403 insufficient_scope naming it and the metadata (step-up)', async () => {
    const token = await serviceToken('read:messages');
    const res = await fetch(url('/api/messages'), {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'hi' }),
    });
    expect(res.status).toBe(403);
    const params = extractWWWAuthenticateParams(res);
    expect(params.error).toBe('insufficient_scope');
    expect(params.scope).toBe('write:messages');
    expect(params.resourceMetadataUrl?.href).toBe(apiMetadataUrl());
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const events = await fetch(url('/events'), {
      headers: { authorization: `Bearer ${await serviceToken('write:messages')}` },
    });
    expect(events.status).toBe(403);
    expect(extractWWWAuthenticateParams(events).scope).toBe('read:messages');
    expect(extractWWWAuthenticateParams(events).resourceMetadataUrl?.href).toBe(apiMetadataUrl());
  });

  it('/userinfo: its 401 and its 403 name the metadata', async () => {
    const missing = await fetch(url('/userinfo'));
    expect(missing.status).toBe(401);
    expect(schemes(missing.headers.get('www-authenticate'))[0]).toBe('Bearer');
    const params = extractWWWAuthenticateParams(missing);
    expect(params.resourceMetadataUrl?.href).toBe(apiMetadataUrl());
    expect(params.error).toBeUndefined();
    const bad = await fetch(url('/userinfo'), { headers: { authorization: 'Bearer nope' } });
    expect(bad.status).toBe(401);
    expect(extractWWWAuthenticateParams(bad).resourceMetadataUrl?.href).toBe(apiMetadataUrl());
    const noOpenid = await fetch(url('/userinfo'), {
      headers: { authorization: `Bearer ${await serviceToken('read:messages')}` },
    });
    expect(noOpenid.status).toBe(403);
    const denied = extractWWWAuthenticateParams(noOpenid);
    expect(denied.error).toBe('insufficient_scope');
    expect(denied.scope).toBe('openid');
    expect(denied.resourceMetadataUrl?.href).toBe(apiMetadataUrl());
  });

  it('the /ws handshake without credential: 401, Bearer first, resource_metadata', async () => {
    const { status, headers } = await new Promise<{
      status: number;
      headers: IncomingHttpHeaders;
    }>((resolve, reject) => {
      const req = httpRequest(url('/ws'), {
        headers: {
          connection: 'Upgrade',
          upgrade: 'websocket',
          'sec-websocket-version': '13',
          'sec-websocket-key': Buffer.alloc(16, 1).toString('base64'),
        },
      });
      req.on('response', (res) => {
        res.resume();
        resolve({ status: res.statusCode!, headers: res.headers });
      });
      req.on('upgrade', () => reject(new Error('upgraded without a credential')));
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(401);
    const header = headers['www-authenticate'] ?? '';
    expect(schemes(header)[0]).toBe('Bearer');
    expect(header).toContain(`resource_metadata="${apiMetadataUrl()}"`);
    expect(header).not.toMatch(/error=/);
  });

  it("the /mcp resource's metadata URL is where resources.ts says", async () => {
    const { createResources } = await import('../../examples/reference-server/resources.js');
    const resources = createResources(issuer, { issuer });
    expect(resources.mcp.metadataUrl).toBe(mcpMetadataUrl());
    expect(resources.api.metadataUrl).toBe(apiMetadataUrl());
    expect(resources.api.identifier).toBe(issuer);
  });
});
