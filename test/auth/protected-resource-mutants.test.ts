// Beyond protected-resource.test.ts: every option message of protectedResource() exactly, the
// full metadata document, bounds of resourceName, the preflight headers and the route's path.
import { afterEach, describe, expect, it } from 'vitest';
import { isProtectedResource, protectedResource } from '../../src/auth/protected-resource.js';
import { createRouter } from '../../src/http/routing/router.js';
import { closeAll, request, serve } from '../helpers/http.js';

afterEach(closeAll);

const A = 'https://a.example';
const P = 'protectedResource():';
/** The message `fn` throws, whole. */
const messageOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (error) {
    return (error as Error).message;
  }
  return undefined;
};
const make = (extra: Record<string, unknown>) => () =>
  protectedResource({ resource: A, ...extra } as never);

describe('protectedResource() option messages', () => {
  it('refuses missing options', () => {
    const message = `${P} give the options, with \`resource\``;
    expect(() => protectedResource(undefined as never)).toThrow(message);
    expect(() => protectedResource(null as never)).toThrow(message);
    expect(() => protectedResource(A as never)).toThrow(message);
  });

  it('names `resource` in its URL messages', () => {
    expect(() => protectedResource({ resource: 'api.example.com' })).toThrow(
      `${P} \`resource\` must be an absolute https (or http) URL`,
    );
    expect(() => protectedResource({ resource: new URL(A) as never })).toThrow(
      `${P} \`resource\` must be an absolute https (or http) URL`,
    );
    expect(() => protectedResource({ resource: 'https://u@a.example/' })).toThrow(
      `${P} \`resource\` must have no fragment and no user info`,
    );
    expect(() => protectedResource({ resource: 'https://:p@a.example/' })).toThrow(
      `${P} \`resource\` must have no fragment and no user info`,
    );
    expect(() => protectedResource({ resource: 'https://a.example/:id' })).toThrow(
      `${P} \`resource\` must have no path segment starting with ':'`,
    );
  });

  it('takes a colon inside a path segment', () => {
    expect(protectedResource({ resource: 'https://a.example/a:b' }).metadataPath).toBe(
      '/.well-known/oauth-protected-resource/a:b',
    );
  });

  it('takes a query in the other URLs, not in the issuers', () => {
    expect(make({ jwksUri: 'https://a.example/jwks?v=1' })().metadata.jwks_uri).toBe(
      'https://a.example/jwks?v=1',
    );
    expect(make({ authorizationServers: ['https://as.example/?x=1'] })).toThrow(
      `${P} \`authorizationServers\` must have no query`,
    );
    expect(make({ authorizationServers: ['issuer'] })).toThrow(
      `${P} \`authorizationServers\` must be an absolute https (or http) URL`,
    );
  });

  it('names each URL option in its message', () => {
    for (const name of [
      'jwksUri',
      'resourceDocumentation',
      'resourcePolicyUri',
      'resourceTosUri',
    ]) {
      expect(make({ [name]: 'x' })).toThrow(
        `${P} \`${name}\` must be an absolute https (or http) URL`,
      );
    }
  });

  it('refuses scopes that are not a list of distinct ones', () => {
    const message = `${P} \`scopesSupported\` must be a list of distinct scopes`;
    expect(make({ scopesSupported: 'read' })).toThrow(message);
    expect(make({ scopesSupported: ['a', 'a'] })).toThrow(message);
    expect(make({ scopesSupported: ['a', 'b'] })().metadata.scopes_supported).toEqual(['a', 'b']);
  });

  it('takes every bearer method once', () => {
    expect(
      make({ bearerMethodsSupported: ['header', 'body', 'query'] })().metadata
        .bearer_methods_supported,
    ).toEqual(['header', 'body', 'query']);
    expect(make({ bearerMethodsSupported: ['header', 'header'] })).toThrow(
      `${P} \`bearerMethodsSupported\` must list 'header', 'body' or 'query' (or be [])`,
    );
  });

  it('refuses token lists that are not non-empty lists of distinct names', () => {
    const dpop = `${P} \`dpopSigningAlgValuesSupported\` must be a non-empty list of distinct names (not \`none\`)`;
    expect(make({ dpopSigningAlgValuesSupported: 'ES256' })).toThrow(dpop);
    expect(make({ dpopSigningAlgValuesSupported: [] })).toThrow(dpop);
    expect(make({ dpopSigningAlgValuesSupported: ['ES256', 'none'] })).toThrow(dpop);
    expect(make({ dpopSigningAlgValuesSupported: ['ES256', 'a b'] })).toThrow(dpop);
    expect(make({ dpopSigningAlgValuesSupported: ['ES256', 'ES256'] })).toThrow(dpop);
    expect(make({ resourceSigningAlgValuesSupported: ['none'] })).toThrow(
      `${P} \`resourceSigningAlgValuesSupported\` must be a non-empty list of distinct names (not \`none\`)`,
    );
    const types = `${P} \`authorizationDetailsTypesSupported\` must be a non-empty list of distinct names`;
    expect(make({ authorizationDetailsTypesSupported: [] })).toThrow(types);
    expect(messageOf(make({ authorizationDetailsTypesSupported: [] }))).toBe(types);
    expect(make({ authorizationDetailsTypesSupported: ['none'] })().metadata).toMatchObject({
      authorization_details_types_supported: ['none'],
    });
  });

  it('takes a resourceName of 1 to 200 characters, not blank', () => {
    const message = `${P} \`resourceName\` must be a non-empty string of at most 200`;
    expect(make({ resourceName: 5 })).toThrow(message);
    expect(make({ resourceName: '' })).toThrow(message);
    expect(make({ resourceName: '   ' })).toThrow(message);
    expect(make({ resourceName: 'x'.repeat(201) })).toThrow(message);
    expect(make({ resourceName: 'x'.repeat(200) })().metadata.resource_name).toBe('x'.repeat(200));
    expect(make({ resourceName: 'x'.repeat(199) })().metadata.resource_name).toBe('x'.repeat(199));
    expect(make({ resourceName: 'x' })().metadata.resource_name).toBe('x');
  });

  it('names the flags and maxAge in their messages', () => {
    expect(make({ tlsClientCertificateBoundAccessTokens: 'yes' })).toThrow(
      `${P} \`tlsClientCertificateBoundAccessTokens\` must be a boolean`,
    );
    expect(make({ dpopBoundAccessTokensRequired: 1 })).toThrow(
      `${P} \`dpopBoundAccessTokensRequired\` must be a boolean`,
    );
    expect(make({ maxAge: 'soon' })).toThrow(
      `${P} \`maxAge\` must be milliseconds (a number) or a string with a unit ('500ms', '5s', '15m', '12h'), not "soon"`,
    );
  });
});

describe('protectedResource() document', () => {
  it('writes every member under its RFC 9728 name', () => {
    const { metadata } = protectedResource({
      resource: 'https://api.example.com/mcp',
      authorizationServers: ['https://as.example'],
      jwksUri: 'https://api.example.com/jwks',
      scopesSupported: ['read'],
      bearerMethodsSupported: ['body'],
      resourceSigningAlgValuesSupported: ['RS256'],
      resourceName: 'API',
      resourceDocumentation: 'https://docs.example.com',
      resourcePolicyUri: 'https://example.com/policy',
      resourceTosUri: 'https://example.com/tos',
      tlsClientCertificateBoundAccessTokens: true,
      authorizationDetailsTypesSupported: ['payment_initiation'],
      dpopSigningAlgValuesSupported: ['ES256'],
      dpopBoundAccessTokensRequired: false,
    });
    expect(JSON.parse(JSON.stringify(metadata))).toStrictEqual({
      resource: 'https://api.example.com/mcp',
      authorization_servers: ['https://as.example'],
      jwks_uri: 'https://api.example.com/jwks',
      scopes_supported: ['read'],
      bearer_methods_supported: ['body'],
      resource_signing_alg_values_supported: ['RS256'],
      resource_name: 'API',
      resource_documentation: 'https://docs.example.com',
      resource_policy_uri: 'https://example.com/policy',
      resource_tos_uri: 'https://example.com/tos',
      tls_client_certificate_bound_access_tokens: true,
      authorization_details_types_supported: ['payment_initiation'],
      dpop_signing_alg_values_supported: ['ES256'],
      dpop_bound_access_tokens_required: false,
    });
    expect(JSON.stringify(protectedResource({ resource: A }).metadata)).toBe(
      '{"resource":"https://a.example","bearer_methods_supported":["header"]}',
    );
  });

  it('recognises only the resources it made', () => {
    expect(isProtectedResource(protectedResource({ resource: A }))).toBe(true);
    for (const v of [null, undefined, 1, 'x', {}]) expect(isProtectedResource(v)).toBe(false);
  });

  it('routes the metadata path with percent-encoded unreserved characters decoded', () => {
    const resource = protectedResource({ resource: 'https://h.example/%7Eann/caf%C3%A9/%2D%2f' });
    expect(Object.keys(resource.routes)).toEqual([
      '/.well-known/oauth-protected-resource/~ann/caf%C3%A9/-%2f',
    ]);
  });
});

describe('protectedResource() preflight', () => {
  it('answers a CORS preflight with exact headers, other OPTIONS with Allow only', async () => {
    const resource = protectedResource({ resource: A });
    const server = await serve([createRouter(resource.routes)]);
    const path = resource.metadataPath;
    const pre = await request(server, path, {
      method: 'OPTIONS',
      headers: { origin: 'https://agent.example', 'access-control-request-method': 'GET' },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.allow).toBe('GET, HEAD, OPTIONS');
    expect(pre.headers['access-control-allow-origin']).toBe('*');
    expect(pre.headers['access-control-allow-methods']).toBe('GET, HEAD');
    expect(pre.headers['access-control-allow-headers']).toBe('*');
    expect(pre.headers['access-control-max-age']).toBe('86400');
    expect(pre.headers['cross-origin-resource-policy']).toBe('cross-origin');
    for (const headers of [
      {},
      { origin: 'https://agent.example' },
      { 'access-control-request-method': 'GET' },
    ]) {
      const plain = await request(server, path, { method: 'OPTIONS', headers });
      expect(plain.status).toBe(204);
      expect(plain.headers.allow).toBe('GET, HEAD, OPTIONS');
      expect(plain.headers['access-control-allow-origin']).toBeUndefined();
      expect(plain.headers['access-control-allow-methods']).toBeUndefined();
      expect(plain.headers['access-control-max-age']).toBeUndefined();
    }
  });
});
