import type { RequestListener } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { toNodeListener } from '../../src/adapters/node.js';
import { createSessions } from '../../src/auth/session/session.js';
import { createRouter } from '../../src/http/routing/router.js';
import { defineClient } from '../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../src/oauth/clients/store.js';
import { createAuthorizationServer } from '../../src/oauth/server.js';
import { createKeySet } from '../../src/oauth/tokens/key-set.js';
import { closeAll, json, listen, request } from '../helpers/http.js';

afterEach(closeAll);

/** Listens first (the issuer is the real address), then builds the server for it. */
async function start(issuerPath: string, paths: Record<string, string> = {}) {
  let listener: RequestListener = (_req, res) => res.end();
  const listening = await listen((req, res) => listener(req, res));
  const issuer = `${listening.url}${issuerPath}`;
  const server = createAuthorizationServer({
    issuer,
    clients: new MemoryClientStore([
      await defineClient({
        clientId: 'tv',
        grantTypes: ['urn:ietf:params:oauth:grant-type:device_code'],
        redirectUris: [],
        scopes: ['openid'],
      }),
    ]),
    keys: await createKeySet(),
    users: { verify: () => undefined, get: () => undefined },
    sessions: createSessions({ allowedOrigins: [listening.url] }),
    paths,
    tokenPathAliases: ['/oauth/token'],
    jwksMaxAge: 60_000,
  });
  listener = toNodeListener([createRouter(server.routes)]);
  return { listening, issuer, server };
}

describe('createAuthorizationServer', () => {
  it('routes its endpoints by the normal form of the path, and refuses what readers split differently', async () => {
    const { listening } = await start('/auth');
    const encoded = await request(listening, '/auth/%2Ewell-known/openid-%63onfiguration');
    expect(encoded.status).toBe(200);
    expect((await request(listening, '/%61uth/jwks')).status).toBe(
      (await request(listening, '/auth/jwks')).status,
    );
    for (const path of ['/auth/x/../token', '/auth%2Ftoken', '/auth//token', '/x/../auth/jwks']) {
      const refused = await request(listening, path, { method: 'POST' });
      expect(refused.status, path).toBe(400);
      expect(refused.headers['content-type']).toBe('application/problem+json');
    }
  });

  it('serves every advertised endpoint under an issuer with a path', async () => {
    const { listening, issuer } = await start('/auth');
    const oidc = await request(listening, '/auth/.well-known/openid-configuration');
    expect(oidc.status).toBe(200);
    const rfc8414 = await request(listening, '/.well-known/oauth-authorization-server/auth');
    expect(json(rfc8414)).toEqual(json(oidc));
    const metadata = json<Record<string, string>>(oidc);
    expect(metadata.issuer).toBe(issuer);
    const jwks = await request(listening, new URL(metadata.jwks_uri!).pathname);
    expect(jwks.status).toBe(200);
    expect(jwks.headers['cache-control']).toContain('max-age=60');
    for (const name of [
      'token_endpoint',
      'revocation_endpoint',
      'introspection_endpoint',
      'device_authorization_endpoint',
    ]) {
      const path = new URL(metadata[name]!).pathname;
      expect(path.startsWith('/auth/'), name).toBe(true);
      expect((await request(listening, path)).status, name).toBe(405); // POST only: routed, not 404
    }
    expect((await request(listening, '/auth/oauth/token')).status).toBe(405);
  });

  it('advertises the device page where it is mounted', async () => {
    const { listening, issuer } = await start('', { deviceVerify: '/activate' });
    const reply = await request(listening, '/device', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'client_id=tv&scope=openid',
    });
    expect(reply.status).toBe(200);
    expect(json(reply).verification_uri).toBe(`${issuer}/activate`);
    expect((await request(listening, '/activate')).status).toBe(200);
  });

  it('answers body problems on every OAuth endpoint as invalid_request with status 400', async () => {
    const { listening } = await start('');
    for (const path of ['/token', '/device', '/revoke', '/introspect']) {
      const large = await request(listening, path, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: `client_id=tv&pad=${'a'.repeat(70 * 1024)}`,
      });
      expect({ path, status: large.status, error: json(large).error }).toEqual({
        path,
        status: 400,
        error: 'invalid_request',
      });
      const notForm = await request(listening, path, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: '{"client_id":"tv"}',
      });
      expect({ path, status: notForm.status, error: json(notForm).error }).toEqual({
        path,
        status: 400,
        error: 'invalid_request',
      });
    }
  });
});
