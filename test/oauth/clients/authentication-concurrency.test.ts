import { describe, expect, it, vi } from 'vitest';
import * as password from '../../../src/auth/password.js';
import { createClientAuthenticator } from '../../../src/oauth/clients/authentication.js';
import { defineClient } from '../../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../../src/oauth/clients/store.js';

vi.mock('../../../src/auth/password.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../../src/auth/password.js')>();
  return { ...actual, verifyPassword: vi.fn(actual.verifyPassword) };
});

describe('concurrent client authentication', () => {
  it('shares one scrypt check among concurrent requests with the same secret', async () => {
    const clients = new MemoryClientStore([
      await defineClient({
        clientId: 'burst',
        secret: 'burst-secret-0123456789',
        grantTypes: ['client_credentials'],
        redirectUris: [],
        scopes: ['read:messages'],
      }),
    ]);
    const authenticate = createClientAuthenticator(clients);
    const params = new Map([
      ['client_id', 'burst'],
      ['client_secret', 'burst-secret-0123456789'],
    ]);
    const verify = vi.mocked(password.verifyPassword);
    verify.mockClear();
    const results = await Promise.all(
      Array.from({ length: 20 }, () => authenticate({ headers: {} } as never, params)),
    );
    expect(results.every((c) => c.clientId === 'burst')).toBe(true);
    expect(verify).toHaveBeenCalledTimes(1);
    // cached now: no scrypt at all
    await authenticate({ headers: {} } as never, params);
    expect(verify).toHaveBeenCalledTimes(1);
    // a wrong secret is still checked, and refused
    const wrong = new Map([
      ['client_id', 'burst'],
      ['client_secret', 'not-the-secret'],
    ]);
    await expect(authenticate({ headers: {} } as never, wrong)).rejects.toMatchObject({
      error: 'invalid_client',
    });
    expect(verify).toHaveBeenCalledTimes(2);
  });
});
