// Feature switches: an optional endpoint that is off does not exist (404, as an unknown path),
// discovery is derived from the same switches, and what depends on a switch refuses to start.
import type { RequestListener } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { toNodeListener } from '../../src/adapters/node.js';
import { createSessions } from '../../src/auth/session/session.js';
import { createRouter } from '../../src/http/routing/router.js';
import {
  type AuthorizationServerFeatures,
  createAuthorizationServer,
  createKeySet,
  defaultGrants,
  defineClient,
  MemoryClientStore,
} from '../../src/oauth/index.js';
import { thrownTypeError } from '../helpers/errors.js';
import { closeAll, json, listen, request } from '../helpers/http.js';
import { formEncode } from './token-fixtures.js';

afterEach(closeAll);

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

async function baseOptions(issuer: string) {
  return {
    issuer,
    clients: new MemoryClientStore([
      await defineClient({
        clientId: 'tv',
        grantTypes: [DEVICE_GRANT],
        redirectUris: [],
        scopes: ['openid'],
      }),
      await defineClient({
        clientId: 'web',
        secret: 'web-secret',
        grantTypes: ['authorization_code'],
        redirectUris: ['http://127.0.0.1:8080/callback'],
        scopes: ['openid'],
      }),
    ]),
    keys: await createKeySet(),
    users: { verify: () => undefined, get: () => undefined },
    sessions: createSessions({ allowedOrigins: [issuer] }),
  };
}

/** Listens first (the issuer is the real address), then builds the server for it. */
async function start(features?: AuthorizationServerFeatures) {
  let listener: RequestListener = (_req, res) => res.end();
  const listening = await listen((req, res) => listener(req, res));
  const options = await baseOptions(listening.url);
  const server = createAuthorizationServer({ ...options, ...(features && { features }) });
  listener = toNodeListener([createRouter(server.routes)]);
  const metadata = json<Record<string, unknown>>(
    await request(listening, '/.well-known/openid-configuration'),
  );
  return { listening, server, metadata };
}

const OPTIONAL: readonly {
  feature: keyof AuthorizationServerFeatures;
  paths: readonly string[];
  fields: readonly string[];
}[] = [
  {
    feature: 'deviceFlow',
    paths: ['/device', '/device/verify'],
    fields: ['device_authorization_endpoint'],
  },
  {
    feature: 'pushedAuthorizationRequests',
    paths: ['/par'],
    fields: ['pushed_authorization_request_endpoint', 'require_pushed_authorization_requests'],
  },
  {
    feature: 'introspection',
    paths: ['/introspect'],
    fields: [
      'introspection_endpoint',
      'introspection_endpoint_auth_methods_supported',
      'introspection_endpoint_auth_signing_alg_values_supported',
    ],
  },
  {
    feature: 'revocation',
    paths: ['/revoke'],
    fields: [
      'revocation_endpoint',
      'revocation_endpoint_auth_methods_supported',
      'revocation_endpoint_auth_signing_alg_values_supported',
    ],
  },
  { feature: 'endSession', paths: ['/session/end'], fields: ['end_session_endpoint'] },
  { feature: 'userinfo', paths: ['/userinfo'], fields: ['userinfo_endpoint'] },
];

describe('feature switches', () => {
  it('serves and advertises every optional endpoint by default', async () => {
    const { listening, metadata } = await start();
    for (const { paths, fields } of OPTIONAL) {
      for (const field of fields) expect(metadata, field).toHaveProperty(field);
      for (const path of paths) {
        expect((await request(listening, path, { method: 'PATCH' })).status, path).toBe(405);
      }
    }
    expect(metadata.grant_types_supported).toContain(DEVICE_GRANT);
  });

  for (const { feature, paths, fields } of OPTIONAL) {
    it(`leaves out ${feature} when it is off: no route, nothing in discovery`, async () => {
      const { listening, metadata } = await start({ [feature]: false });
      for (const path of paths) {
        const reply = await request(listening, path, { method: 'POST' });
        expect(reply.status, path).toBe(404);
      }
      for (const field of fields) expect(metadata, field).not.toHaveProperty(field);
      // the others stay
      for (const other of OPTIONAL.filter((o) => o.feature !== feature)) {
        expect(metadata, other.feature).toHaveProperty(other.fields[0]!);
      }
      expect(metadata.token_endpoint).toBe(`${listening.url}/token`);
    });
  }

  it('takes the device grant away with the device flow', async () => {
    const { listening, metadata } = await start({ deviceFlow: false });
    expect(metadata.grant_types_supported).not.toContain(DEVICE_GRANT);
    const reply = await request(listening, '/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `grant_type=${formEncode(DEVICE_GRANT)}&device_code=x&client_id=tv`,
    });
    expect(reply.status).toBe(400);
    expect(json(reply)).toMatchObject({ error: 'unsupported_grant_type' });
  });

  it('follows the grants: no device grant, no device flow (and refuses one switched on)', async () => {
    let listener: RequestListener = (_req, res) => res.end();
    const listening = await listen((req, res) => listener(req, res));
    const options = await baseOptions(listening.url);
    const grants = defaultGrants.filter((grant) => grant.type !== DEVICE_GRANT);
    const server = createAuthorizationServer({ ...options, grants });
    listener = toNodeListener([createRouter(server.routes)]);
    expect((await request(listening, '/device', { method: 'POST' })).status).toBe(404);
    expect(server.metadata()).not.toHaveProperty('device_authorization_endpoint');
    expect(server.metadata().grant_types_supported).not.toContain(DEVICE_GRANT);
    expect(
      thrownTypeError(() =>
        createAuthorizationServer({ ...options, grants, features: { deviceFlow: true } }),
      ).message,
    ).toMatch(/`features.deviceFlow` needs the device grant in `grants`/);
  });

  it('answers a request_uri at /authorize as not supported when PAR is off', async () => {
    const { listening } = await start({ pushedAuthorizationRequests: false });
    const query = new URLSearchParams({
      client_id: 'web',
      redirect_uri: 'http://127.0.0.1:8080/callback',
      request_uri: 'urn:ietf:params:oauth:request_uri:abc',
    });
    const reply = await request(listening, `/authorize?${query}`);
    expect(reply.status).toBe(303);
    const location = new URL(String(reply.headers.location));
    expect(location.origin + location.pathname).toBe('http://127.0.0.1:8080/callback');
    expect(location.searchParams.get('error')).toBe('request_uri_not_supported');
  });

  it('refuses switches it does not know, that are not booleans, or that what is asked needs', async () => {
    const options = await baseOptions('https://auth.example.test');
    const make = (extra: object) => () =>
      createAuthorizationServer({ ...options, ...extra } as Parameters<
        typeof createAuthorizationServer
      >[0]);
    expect(thrownTypeError(make({ features: { devicFlow: false } })).message).toMatch(
      /unknown option `devicFlow`. Did you mean `deviceFlow`/,
    );
    expect(thrownTypeError(make({ features: { introspection: 'no' } })).message).toMatch(
      /`features.introspection` must be a boolean/,
    );
    expect(thrownTypeError(make({ features: 'all' })).message).toMatch(
      /`features` must be an object/,
    );
    expect(
      thrownTypeError(
        make({
          features: { pushedAuthorizationRequests: false },
          requirePushedAuthorizationRequests: true,
        }),
      ).message,
    ).toMatch(/`requirePushedAuthorizationRequests` needs pushed authorization requests/);
    expect(
      thrownTypeError(
        make({
          features: { pushedAuthorizationRequests: false },
          fapi2: true,
          keys: await createKeySet({ algorithm: 'ES256' }),
        }),
      ).message,
    ).toMatch(/`fapi2` needs pushed authorization requests/);
  });
});
