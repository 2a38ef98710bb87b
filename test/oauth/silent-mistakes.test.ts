// Issue 38: an authorization server built from values still being made (`defineClient()` and
// `createKeySet()` without `await`) or from an unset secret is refused at construction, where
// it used to answer invalid_client to every client, or fail later with "signingKey is not a
// function".
import { describe, expect, it } from 'vitest';
import { createSessions } from '../../src/auth/session/session.js';
import { defineClient } from '../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../src/oauth/clients/store.js';
import { createOAuthContext } from '../../src/oauth/context.js';
import { createAuthorizationServer } from '../../src/oauth/server.js';
import { createTokenIssuer } from '../../src/oauth/tokens/issue.js';
import { createKeySet } from '../../src/oauth/tokens/key-set.js';
import { thrownTypeError as thrown } from '../helpers/errors.js';

const issuer = 'https://auth.example.test';
const client = {
  clientId: 'web',
  grantTypes: ['client_credentials'] as const,
  redirectUris: [],
  scopes: [],
};

async function base() {
  return {
    issuer,
    clients: new MemoryClientStore([await defineClient({ ...client, secret: 's'.repeat(32) })]),
    keys: await createKeySet(),
    users: { verify: () => undefined, get: () => undefined },
    sessions: createSessions({ allowedOrigins: [issuer] }),
  };
}

describe('a forgotten await', () => {
  it('MemoryClientStore([defineClient(…)]) names the element and the fix', () => {
    const pending = defineClient({ ...client, secret: 's'.repeat(32) });
    const error = thrown(() => new MemoryClientStore([pending as never]));
    expect(error).toBeInstanceOf(TypeError);
    expect(error.code).toBe('ERR_INVALID_OPTION');
    expect(error.message).toBe(
      'new MemoryClientStore(): `clients[0]` is a Promise: did you forget `await`? (`await defineClient({ … })`)',
    );
    expect(() => new MemoryClientStore().add(pending as never)).toThrow(
      'MemoryClientStore.add(): `client` is a Promise',
    );
    return pending;
  });

  it('keys: createKeySet() says what to write', async () => {
    const options = await base();
    const pending = createKeySet();
    const error = thrown(() => createAuthorizationServer({ ...options, keys: pending as never }));
    expect(error.code).toBe('ERR_INVALID_OPTION');
    expect(error.message).toBe(
      'createAuthorizationServer(): `keys` is a Promise: did you forget `await`? (`keys: await createKeySet()`)',
    );
    expect(() => createTokenIssuer({ issuer, keys: pending as never })).toThrow(
      'createTokenIssuer(): `keys` is a Promise: did you forget `await`?',
    );
    await pending;
  });

  it('any store given as a Promise', async () => {
    const options = await base();
    expect(() => createOAuthContext({ ...options, store: Promise.resolve({}) as never })).toThrow(
      'createAuthorizationServer(): `store` is a Promise: did you forget `await`?',
    );
  });
});

describe('an unset secret', () => {
  it('defineClient({ secret: undefined }) is not a public client', async () => {
    await expect(
      defineClient({ ...client, secret: process.env.PORTICO_UNSET_CLIENT_SECRET }),
    ).rejects.toThrow('defineClient(): `secret` is undefined: is its environment variable set?');
  });

  it('formKey: undefined is not a random key per process', async () => {
    const options = await base();
    expect(() =>
      createAuthorizationServer({ ...options, formKey: process.env.PORTICO_UNSET_FORM_KEY }),
    ).toThrow('createAuthorizationServer(): `formKey` is undefined');
  });
});

describe('durations in seconds', () => {
  it('accessTokenTtl: 900 is refused, 900_000 and "15m" are taken', async () => {
    const options = await base();
    expect(() => createOAuthContext({ ...options, accessTokenTtl: 900 })).toThrow(
      "createAuthorizationServer(): `accessTokenTtl` is 900 ms, which looks like seconds: did you mean 900_000? (write '900ms' for 900 milliseconds)",
    );
    expect(createOAuthContext({ ...options, accessTokenTtl: '15m' }).tokens.accessTokenTtl).toBe(
      900_000,
    );
    expect(createOAuthContext({ ...options, codeTtl: '30s' }).settings.codeTtl).toBe(30_000);
  });
});
