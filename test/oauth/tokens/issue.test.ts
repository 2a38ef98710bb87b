import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { createOAuthContext } from '../../../src/oauth/context.js';
import {
  claimsForScopes,
  createTokenIssuer,
  type UserClaims,
} from '../../../src/oauth/tokens/issue.js';
import { createKeySet, type KeySet } from '../../../src/oauth/tokens/key-set.js';

const issuer = 'https://auth.example.com';
const alice: UserClaims = {
  sub: 'alice',
  name: 'Alice Example',
  role: 'admin',
  email: 'alice@example.com',
  email_verified: true,
  picture: 'https://auth.example.com/avatars/alice.svg',
};

let keys: KeySet;
beforeAll(async () => {
  keys = await createKeySet();
});

async function idTokenClaims(
  idTokenClaims: 'scope' | 'all' | undefined,
  scope: string[],
  user: UserClaims = alice,
) {
  const tokens = createTokenIssuer({ issuer, keys, idTokenClaims });
  const token = await tokens.idToken({ clientId: 'web', user, scope, nonce: 'n-1' });
  expect(decodeProtectedHeader(token)).toMatchObject({ alg: 'RS256', typ: 'JWT' });
  const { payload } = await jwtVerify(token, createLocalJWKSet(keys.jwks()), {
    issuer,
    audience: 'web',
  });
  return payload;
}

describe('ID token claims', () => {
  it('releases the claims of the granted scopes by default (OpenID Connect Core §5.4)', async () => {
    const base = { iss: issuer, sub: 'alice', aud: 'web', nonce: 'n-1' };
    const openid = await idTokenClaims(undefined, ['openid']);
    expect(openid).toMatchObject(base);
    for (const name of ['name', 'picture', 'email', 'email_verified', 'role']) {
      expect(openid).not.toHaveProperty(name);
    }
    const profile = await idTokenClaims('scope', ['openid', 'profile']);
    expect(profile).toMatchObject({ ...base, name: alice.name, picture: alice.picture });
    expect(profile).not.toHaveProperty('email');
    const email = await idTokenClaims('scope', ['openid', 'email']);
    expect(email).toMatchObject({ ...base, email: alice.email, email_verified: true });
    expect(email).not.toHaveProperty('name');
  });

  it("carries every standard claim the user has with 'all', whatever the scopes", async () => {
    const claims = await idTokenClaims('all', ['openid']);
    expect(claims).toMatchObject({
      iss: issuer,
      sub: 'alice',
      aud: 'web',
      name: alice.name,
      picture: alice.picture,
      email: alice.email,
      email_verified: true,
      iat: expect.any(Number),
      exp: expect.any(Number),
    });
    expect((claims.exp as number) - (claims.iat as number)).toBe(3600);
    // role is no standard claim: access tokens carry it, ID tokens do not
    expect(claims).not.toHaveProperty('role');
    // a claim the user does not have is left out, not sent empty
    const bare = await idTokenClaims('all', ['openid'], { sub: 'bob', name: 'Bob' });
    expect(Object.keys(bare).sort()).toEqual(['aud', 'exp', 'iat', 'iss', 'name', 'nonce', 'sub']);
  });

  it('claimsForScopes releases nothing beyond sub without profile or email', () => {
    expect(claimsForScopes(alice, ['openid', 'read:messages'])).toEqual({ sub: 'alice' });
  });

  it('refuses an unknown idTokenClaims value when the server is built', () => {
    expect(() =>
      createOAuthContext({
        issuer,
        keys,
        clients: {} as never,
        users: {} as never,
        sessions: {} as never,
        idTokenClaims: 'everything' as never,
      }),
    ).toThrow(/idTokenClaims/);
  });
});
