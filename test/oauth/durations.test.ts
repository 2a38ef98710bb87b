// Every duration of the authorization server is in milliseconds; the protocol's values in
// seconds (`expires_in`, `interval`, `exp`, `max-age`) are converted when written.
import { createLocalJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSessions } from '../../src/auth/session/session.js';
import { defineClient } from '../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../src/oauth/clients/store.js';
import { type AuthorizationServerOptions, createOAuthContext } from '../../src/oauth/context.js';
import { createDeviceAuthorizationEndpoint } from '../../src/oauth/endpoints/device-authorization.js';
import { createJwksEndpoint } from '../../src/oauth/endpoints/jwks.js';
import { createMetadataEndpoint } from '../../src/oauth/endpoints/metadata.js';
import { createFormTokens } from '../../src/oauth/pages/form-token.js';
import { deviceCodes } from '../../src/oauth/store/records.js';
import { MemoryRecordStore } from '../../src/oauth/store/store.js';
import { createTokenIssuer } from '../../src/oauth/tokens/issue.js';
import { createKeySet, type KeySet } from '../../src/oauth/tokens/key-set.js';
import { thrownTypeError as thrown } from '../helpers/errors.js';
import { closeAll, json, request, serve } from '../helpers/http.js';

const issuer = 'https://auth.example.test';
let keys: KeySet;
let clients: MemoryClientStore;

beforeAll(async () => {
  keys = await createKeySet();
  clients = new MemoryClientStore([
    await defineClient({
      clientId: 'tv',
      grantTypes: ['urn:ietf:params:oauth:grant-type:device_code'],
      redirectUris: [],
      scopes: ['read:messages'],
    }),
  ]);
});

afterAll(closeAll);

function context(options: Partial<AuthorizationServerOptions> = {}) {
  return createOAuthContext({
    issuer,
    clients,
    keys,
    users: { verify: () => undefined, get: () => undefined },
    sessions: createSessions({ allowedOrigins: [issuer] }),
    ...options,
  });
}

describe('durations in milliseconds', () => {
  it('keeps the defaults in ctx.settings and ctx.tokens, in milliseconds', () => {
    const ctx = context();
    expect(ctx.settings).toEqual({
      codeTtl: 60_000,
      refreshTokenTtl: 2_592_000_000,
      refreshGracePeriod: 0,
      deviceCodeTtl: 600_000,
      devicePollInterval: 5_000,
      pushedRequestTtl: 60_000,
      requirePushedAuthorizationRequests: false,
    });
    expect(ctx.tokens.accessTokenTtl).toBe(900_000);
  });

  it('bounds codeTtl and refreshGracePeriod at 60_000, and refuses what is not whole milliseconds', () => {
    expect(context({ codeTtl: 60_000, refreshGracePeriod: 60_000 }).settings.codeTtl).toBe(60_000);
    for (const options of [
      { codeTtl: 60_001 },
      { refreshGracePeriod: 60_001 },
      { accessTokenTtl: 1.5 },
      { idTokenTtl: -1 },
      { refreshTokenTtl: Number.NaN },
      { deviceCodeTtl: '600000' as never },
      { devicePollInterval: -5_000 },
    ]) {
      const error = thrown(() => context(options));
      expect(error).toBeInstanceOf(TypeError);
      expect(error.code).toBe('ERR_INVALID_OPTION');
      expect(error.message).toMatch(/^createAuthorizationServer\(\): `\w+` must be milliseconds/);
    }
  });

  it('signs exp and answers expires_in in whole seconds, rounded down', async () => {
    const tokens = createTokenIssuer({ issuer, keys, accessTokenTtl: 90_999 });
    const access = await tokens.accessToken({ sub: 'svc', clientId: 'svc', scope: [] });
    expect(access.expiresIn).toBe(90);
    const { payload } = await jwtVerify(access.token, createLocalJWKSet(keys.jwks()), { issuer });
    expect(payload.exp! - payload.iat!).toBe(90);
    expect(() => createTokenIssuer({ issuer, keys, idTokenTtl: 0.5 })).toThrow(
      /createTokenIssuer\(\): `idTokenTtl`/,
    );
  });

  it('writes max-age in whole seconds for the JWKS and the metadata', async () => {
    const ctx = context();
    const jwks = await serve(createJwksEndpoint(ctx, { maxAge: 90_500 }));
    expect((await request(jwks, '/')).headers['cache-control']).toBe('public, max-age=90');
    const metadata = await serve(createMetadataEndpoint(ctx, {}, { maxAge: '999ms' }));
    expect((await request(metadata, '/')).headers['cache-control']).toBe('public, max-age=0');
    const byDefault = await serve(createJwksEndpoint(ctx));
    expect((await request(byDefault, '/')).headers['cache-control']).toBe('public, max-age=300');
    expect(() => createJwksEndpoint(ctx, { maxAge: -1 })).toThrow(/createJwksEndpoint\(\)/);
    expect(() => createMetadataEndpoint(ctx, {}, { maxAge: 1.5 })).toThrow(
      /createMetadataEndpoint\(\)/,
    );
  });

  it('tells the device expires_in rounded down and interval rounded up, and stores milliseconds', async () => {
    const store = new MemoryRecordStore();
    const ctx = context({ store, deviceCodeTtl: 600_500, devicePollInterval: 5_500 });
    const device = await serve(createDeviceAuthorizationEndpoint(ctx));
    const reply = await request(device, '/', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'client_id=tv',
    });
    expect(reply.status).toBe(200);
    const body = json(reply);
    expect(body.expires_in).toBe(600);
    expect(body.interval).toBe(6);
    const found = deviceCodes(store).findByKey(String(body.user_code).replace('-', ''));
    expect(found?.record.interval).toBe(5_500);
  });

  it('takes formTtl in milliseconds, at least 1_000', () => {
    let clock = 1_700_000_000_000;
    const tokens = createFormTokens('test()', { ttl: 60_000, now: () => clock });
    const token = tokens.issue('consent', 'b', [['a', '1']]);
    clock += 60_000;
    expect(tokens.verify('consent', 'b', [['a', '1']], token)).toBe(true);
    clock += 1_000;
    expect(tokens.verify('consent', 'b', [['a', '1']], token)).toBe(false);
    expect(() => createFormTokens('test()', { ttl: 999 })).toThrow(
      'test(): `formTtl` must be milliseconds, at least 1000',
    );
  });
});
