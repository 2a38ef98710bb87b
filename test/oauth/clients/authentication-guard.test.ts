// Guessing client secrets against a real authorization server with a credential guard: every
// endpoint that authenticates clients counts the failures of one address, and once its budget
// is spent answers 429 temporarily_unavailable, to the right secret too; another address is
// not affected.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCredentialGuard } from '../../../src/auth/credential-guard.js';
import { createRouter } from '../../../src/http/routing/router.js';
import { createDeviceAuthorizationEndpoint } from '../../../src/oauth/endpoints/device-authorization.js';
import { createIntrospectionEndpoint } from '../../../src/oauth/endpoints/introspection.js';
import { createRevocationEndpoint } from '../../../src/oauth/endpoints/revocation.js';
import { createTokenEndpoint } from '../../../src/oauth/endpoints/token.js';
import { closeAll, json, type Listening, type Reply, request, serve } from '../../helpers/http.js';
import { basic, expectError, expectTokens, startTokenServer } from '../token-fixtures.js';

const LIMIT = 3;
let server: Listening;

beforeAll(async () => {
  const guard = createCredentialGuard({ limit: LIMIT, windowMs: 60_000, trustProxy: 'loopback' });
  const { ctx } = await startTokenServer({ guard });
  server = await serve(
    createRouter({
      '/token': { POST: createTokenEndpoint(ctx) },
      '/revoke': createRevocationEndpoint(ctx),
      '/introspect': createIntrospectionEndpoint(ctx),
      '/device': { POST: createDeviceAuthorizationEndpoint(ctx) },
    }),
  );
});

afterAll(closeAll);

let addresses = 0;
/** A fresh client address, as the trusted (loopback) proxy reports it. */
const newAddress = () => `203.0.113.${++addresses}`;

function post(path: string, ip: string, form: Record<string, string>, headers = {}) {
  return request(server, path, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/x-www-form-urlencoded',
      'X-Forwarded-For': ip,
      ...headers,
    },
    body: new URLSearchParams(form).toString(),
  });
}

const RIGHT = { Authorization: basic('demo-service', 'demo-service-secret') };
const WRONG = { Authorization: basic('demo-service', 'not-the-secret') };
const token = (ip: string, headers: Record<string, string>) =>
  post('/token', ip, { grant_type: 'client_credentials' }, headers);

/** The 429 of a spent budget, in the OAuth error format, never cached. */
function expectThrottled(reply: Reply): void {
  expect(reply.status, reply.body).toBe(429);
  expect(json(reply).error).toBe('temporarily_unavailable');
  expect(typeof json(reply).error_description).toBe('string');
  expect(reply.headers['content-type']).toBe('application/json');
  expect(reply.headers['cache-control']).toBe('no-store');
  expect(Number(reply.headers['retry-after'])).toBeGreaterThan(0);
  expect(Number(reply.headers['retry-after'])).toBeLessThanOrEqual(60);
}

describe('client authentication with a credential guard', () => {
  it('refuses the right secret with 429 once an address spent its failures at /token; another address is unaffected', async () => {
    const guesser = newAddress();
    for (let i = 0; i < LIMIT; i++) expectError(await token(guesser, WRONG), 'invalid_client');
    // the failure that goes past the limit is answered 429 instead of the verdict
    expectThrottled(await token(guesser, WRONG));
    // the right secret, from the same address, is refused too
    expectThrottled(await token(guesser, RIGHT));
    // another address still gets its tokens
    expectTokens(await token(newAddress(), RIGHT));
  });

  it('counts failures of every endpoint that authenticates clients as one budget', async () => {
    const guesser = newAddress();
    // an unknown client at /revoke, a wrong secret at /introspect, a secret for a public client at /device
    expectError(
      await post('/revoke', guesser, { token: 'x' }, { Authorization: basic('nobody', 'guess') }),
      'invalid_client',
    );
    expectError(await post('/introspect', guesser, { token: 'x' }, WRONG), 'invalid_client');
    expectError(
      await post('/device', guesser, { client_id: 'demo-device', client_secret: 'made-up-secret' }),
      'invalid_client',
    );
    // spent: each endpoint refuses from this address, right credentials included
    expectThrottled(await post('/revoke', guesser, { token: 'x' }, RIGHT));
    expectThrottled(await post('/introspect', guesser, { token: 'x' }, RIGHT));
    expectThrottled(await post('/device', guesser, { client_id: 'demo-device' }));
    expectThrottled(await token(guesser, RIGHT));

    const other = newAddress();
    expect((await post('/revoke', other, { token: 'x' }, RIGHT)).status).toBe(200);
    expect(json(await post('/introspect', other, { token: 'x' }, RIGHT))).toEqual({
      active: false,
    });
    expect((await post('/device', other, { client_id: 'demo-device' })).status).toBe(200);
  });

  it('does not count successes nor malformed requests', async () => {
    const client = newAddress();
    for (let i = 0; i < LIMIT * 2; i++) expectTokens(await token(client, RIGHT));
    for (let i = 0; i < LIMIT * 2; i++) {
      expectError(await token(client, { Authorization: 'Basic !!!' }), 'invalid_request');
    }
    expectTokens(await token(client, RIGHT));
  });
});
