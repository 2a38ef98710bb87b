// The token issuer (src/oauth/tokens/issue.ts) at the edges the main suites leave out: the
// hint of a key set passed as a Promise, an access token's audiences taken as they were when
// asked (even while jose still loads), and the cut of its lifetime to `expiresAt` (at least a
// whole second left, otherwise no token). Each test builds its own key set.
import { decodeJwt } from 'jose';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createTokenIssuer } from '../../../src/oauth/tokens/issue.js';
import { createKeySet, type KeySet } from '../../../src/oauth/tokens/key-set.js';

const ISSUER = 'https://auth.example.test';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('createTokenIssuer options', () => {
  it('names the await a key set passed as a Promise is missing', async () => {
    const pending = createKeySet({ algorithm: 'ES256' });
    expect(() => createTokenIssuer({ issuer: ISSUER, keys: pending as unknown as KeySet })).toThrow(
      expect.objectContaining({
        code: 'ERR_INVALID_OPTION',
        message:
          'createTokenIssuer(): `keys` is a Promise: did you forget `await`? (`keys: await createKeySet()`)',
      }),
    );
    await pending;
  });
});

describe('the audiences of an access token', () => {
  it('are those of the request as it was made, even when jose loads first', async () => {
    const keys = await createKeySet({ algorithm: 'ES256' });
    // a fresh module graph: the first token signed there waits for jose to load
    vi.resetModules();
    const fresh = await import('../../../src/oauth/tokens/issue.js');
    const lazy = await import('../../../src/internal/lazy.js');
    expect(lazy.loadedJose()).toBeUndefined();
    const tokens = fresh.createTokenIssuer({ issuer: ISSUER, keys });
    const audience = ['https://api.example.test', 'https://mcp.example.test'];
    const issued = tokens.accessToken({ sub: 'svc', clientId: 'svc', scope: [], audience });
    audience.push('https://late.example.test');
    audience[0] = 'https://changed.example.test';
    const { token } = await issued;
    expect(decodeJwt(token).aud).toEqual(['https://api.example.test', 'https://mcp.example.test']);
  });
});

describe('an access token cut to expiresAt', () => {
  const NOW = 1_900_000_000; // epoch seconds, fixed for the test

  async function issuer() {
    const keys = await createKeySet({ algorithm: 'ES256' });
    const tokens = createTokenIssuer({ issuer: ISSUER, keys, accessTokenTtl: 900_000 });
    vi.spyOn(Date, 'now').mockReturnValue(NOW * 1000 + 500);
    return (expiresAt: number) =>
      tokens.accessToken({ sub: 'svc', clientId: 'svc', scope: [], expiresAt });
  }

  it('lives until expiresAt when that is sooner, down to one second', async () => {
    const issue = await issuer();
    const inOne = await issue(NOW + 1);
    expect(inOne.expiresIn).toBe(1);
    expect(decodeJwt(inOne.token).exp).toBe(NOW + 1);
    expect((await issue(NOW + 60)).expiresIn).toBe(60);
    expect((await issue(NOW + 5_000)).expiresIn).toBe(900);
  });

  it('is not issued at or past expiresAt', async () => {
    const issue = await issuer();
    for (const expiresAt of [NOW, NOW - 10, Number.NaN]) {
      await expect(issue(expiresAt), String(expiresAt)).rejects.toThrow(
        new Error('An access token cannot be issued past its `expiresAt`.'),
      );
    }
  });
});
