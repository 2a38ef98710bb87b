// Beyond bearer-issuers.test.ts: the claim rules' option checks and their edges (an audience read
// from an array claim, a string audience never matched as a substring), the issuers' shared
// verified-token cache (its bound split between the issuers, `false`, `max: 0`), and the claim
// paths of `scopesClaim`/`rolesClaim` (through a string, null or an array nothing is read).
import { beforeAll, describe, expect, it } from 'vitest';
import { type JwtBearerIssuersOptions, jwtBearer } from '../../../src/auth/jwt/bearer.ts';
import { claimRules } from '../../../src/auth/jwt/claim-rules.ts';
import { bearerVerifier } from '../../../src/auth/jwt/issuers.ts';
import { principalFromClaims } from '../../../src/auth/jwt/principal.ts';
import { makeKey, mint, type TestKey } from './jwt-fixtures.ts';

const OWNER = 'test()';
const messageOf = (run: () => unknown): string => {
  try {
    run();
  } catch (error) {
    return (error as Error).message;
  }
  return 'no error';
};

describe('claim rules', () => {
  const rules = (options: { audienceClaim?: unknown; claims?: unknown }, audience = 'api') =>
    claimRules(OWNER, options, audience);
  const CLAIMS = `${OWNER}: \`claims\` must be an object of claim names and values`;

  it('refuses a `claims` option that is not an object of names and values, exactly', () => {
    for (const claims of [null, 'typ', 42, ['typ']]) {
      expect(
        messageOf(() => rules({ claims })),
        JSON.stringify(claims),
      ).toBe(CLAIMS);
    }
    const bad = (name: string) =>
      `${OWNER}: \`claims.${name}\` must be a string, number or boolean, or a non-empty array of them`;
    expect(messageOf(() => rules({ claims: { '': 'x' } }))).toBe(bad(''));
    for (const value of [null, {}, Number.NaN, ['a', null], [true, {}]]) {
      expect(
        messageOf(() => rules({ claims: { typ: value } })),
        String(value),
      ).toBe(bad('typ'));
    }
    for (const audienceClaim of [42, '', ['aud']]) {
      expect(messageOf(() => rules({ audienceClaim }))).toBe(
        `${OWNER}: \`audienceClaim\` must be a claim name`,
      );
    }
  });

  it('accepts booleans, numbers and strings as required values, and checks them exactly', () => {
    const check = rules({ claims: { email_verified: true, version: [2, 3], typ: 'Bearer' } });
    const payload = { email_verified: true, version: 3, typ: 'Bearer' };
    expect(() => check.check(payload, 'access token')).not.toThrow();
    for (const changed of [{ email_verified: 'true' }, { version: 4 }, { typ: 'bearer' }]) {
      expect(() => check.check({ ...payload, ...changed }, 'access token')).toThrow(
        'The access token is not valid.',
      );
    }
  });

  it('reads an audience from an array claim, and never matches part of a string audience', () => {
    const check = rules({ audienceClaim: 'client_id' }, 'client-1');
    expect(check.joseAudience).toBeUndefined();
    const holds = (value: unknown) => {
      try {
        check.check({ client_id: value }, 'access token');
        return true;
      } catch {
        return false;
      }
    };
    expect(holds('client-1')).toBe(true);
    expect(holds(['other', 'client-1'])).toBe(true);
    expect(holds(['other'])).toBe(false);
    expect(holds([42, { id: 'client-1' }])).toBe(false);
    expect(holds('client')).toBe(false); // 'client-1'.includes('client') would be true
    expect(holds(['client'])).toBe(false);
    expect(holds(undefined)).toBe(false);
    const several = rules({ audienceClaim: 'client_id' }, ['client-1', 'client-2'] as never);
    expect(() => several.check({ client_id: 'client-2' }, 'access token')).not.toThrow();
    expect(() => several.check({ client_id: ['client-2'] }, 'access token')).not.toThrow();
    expect(rules({}, 'api').joseAudience).toBe('api');
  });
});

describe('several issuers', () => {
  let a: TestKey;
  let b: TestKey;
  beforeAll(async () => {
    a = await makeKey('a1');
    b = await makeKey('b1');
  });
  const ISS_A = 'https://a.test';
  const ISS_B = 'https://b.test';
  const options = (extra: Partial<JwtBearerIssuersOptions> = {}): JwtBearerIssuersOptions => ({
    issuers: [
      { issuer: ISS_A, audience: 'api', publicKey: a.pem },
      { issuer: ISS_B, audience: 'api', publicKey: b.pem },
    ],
    ...extra,
  });
  const verifier = (extra: Partial<JwtBearerIssuersOptions> = {}) =>
    bearerVerifier(OWNER, options(extra), undefined);
  const tokenOf = (key: TestKey, iss: string, sub = 'alice') => mint(key, { iss, aud: 'api', sub });

  it('caches verified tokens by default, and not with `cache: false` or `max: 0`', async () => {
    const token = await tokenOf(a, ISS_A);
    const cached = verifier();
    expect(await cached.verify(token)).toBe(await cached.verify(token));
    for (const cache of [false, { max: 0 }] as const) {
      const uncached = verifier({ cache });
      const first = await uncached.verify(token);
      expect(first.payload).toMatchObject({ iss: ISS_A, sub: 'alice' });
      expect(await uncached.verify(token), JSON.stringify(cache)).not.toBe(first);
    }
    expect(messageOf(() => verifier({ cache: { max: -1 } }))).toBe(
      `${OWNER}: \`cache.max\` must be an integer, at least 0`,
    );
  });

  it('splits the cache bound between the issuers', async () => {
    // max 2 over two issuers: one token each; a second token of A evicts the first
    const v = verifier({ cache: { max: 2 } });
    const first = await tokenOf(a, ISS_A, 'alice');
    const second = await tokenOf(a, ISS_A, 'bob');
    const kept = await v.verify(first);
    await v.verify(second);
    expect(await v.verify(first)).not.toBe(kept);
    // while a token of B does not evict A's
    const again = await v.verify(first);
    await v.verify(await tokenOf(b, ISS_B));
    expect(await v.verify(first)).toBe(again);
  });

  it('refuses entries that are not objects or have no issuer, exactly', () => {
    for (const entry of [null, 'https://a.test', 42]) {
      expect(messageOf(() => bearerVerifier(OWNER, { issuers: [entry] } as never, undefined))).toBe(
        `${OWNER}: issuers[0] must be an object with \`issuer\` and \`audience\``,
      );
    }
    expect(
      messageOf(() =>
        bearerVerifier(OWNER, { issuers: [{ issuer: '', audience: 'api' }] } as never, undefined),
      ),
    ).toBe(`${OWNER}: issuers[0]: \`issuer\` must be one non-empty string`);
    expect(
      messageOf(() =>
        bearerVerifier(
          OWNER,
          {
            issuers: [
              { issuer: ISS_A, audience: 'api', publicKey: a.pem, toPrincipal: 42 as never },
            ],
          },
          undefined,
        ),
      ),
    ).toBe(`${OWNER}: issuers[0]: \`toPrincipal\` must be a function`);
  });

  it('refuses a token of no listed issuer as an access token, and maps no payload of one', async () => {
    const v = verifier();
    await expect(v.verify(await tokenOf(a, 'https://c.test'))).rejects.toThrow(
      'The access token is not valid.',
    );
    await expect(v.verify('not-a-jwt')).rejects.toThrow('The access token is not valid.');
    expect(v.toPrincipal({ iss: 'https://c.test', sub: 'alice' }, { alg: 'RS256' })).toBe(
      undefined,
    );
    expect(v.toPrincipal({ iss: ISS_A, sub: 'alice' }, { alg: 'RS256' })).toMatchObject({
      sub: 'alice',
    });
  });
});

describe('claim paths of scopesClaim and rolesClaim', () => {
  it('refuses paths that are not names, naming the option and the caller', () => {
    for (const path of [42, [], ['a', ''], ['a', 5], {}]) {
      expect(
        messageOf(() => principalFromClaims({ sub: 'k' }, { scopesClaim: path as never })),
        JSON.stringify(path),
      ).toBe(
        'principalFromClaims(): `scopesClaim` must be a claim name, or an array of names down to a nested claim',
      );
    }
    expect(messageOf(() => principalFromClaims({ sub: 'k' }, { rolesClaim: '' }))).toBe(
      'principalFromClaims(): `rolesClaim` must be a claim name, or an array of names down to a nested claim',
    );
  });

  it('reads nothing through a string, null or an array on the way', () => {
    const payload = { sub: 'k', s: 'admin', n: null, list: ['admin'], deep: { r: 'admin' } };
    const roles = (rolesClaim: string[]) => principalFromClaims(payload, { rolesClaim })?.roles;
    expect(roles(['s', '0'])).toBeUndefined();
    expect(roles(['n', 'r'])).toBeUndefined();
    expect(roles(['list', '0'])).toBeUndefined();
    expect(roles(['deep', 'r'])).toEqual(['admin']);
  });

  it('keeps only strings as roles, whatever else has a length', () => {
    const payload = { sub: 'k', roles: [['admin'], { length: 1 }, 'user'] };
    expect(principalFromClaims(payload, { rolesClaim: 'roles' })?.roles).toEqual(['user']);
  });

  it('keeps roles of up to 256 characters', () => {
    const payload = { sub: 'k', roles: ['r'.repeat(255), 'r'.repeat(256), 'r'.repeat(257)] };
    expect(principalFromClaims(payload, { rolesClaim: 'roles' })?.roles).toEqual([
      'r'.repeat(255),
      'r'.repeat(256),
    ]);
  });

  it('copies a path array once: changing it afterwards changes nothing', async () => {
    const key = await makeKey('p1');
    const path = ['realm', 'roles'];
    const v = bearerVerifier(
      OWNER,
      { issuer: 'https://a.test', audience: 'api', publicKey: key.pem, rolesClaim: path },
      undefined,
    );
    path[1] = 'other';
    const token = await mint(key, {
      iss: 'https://a.test',
      aud: 'api',
      realm: { roles: ['admin'], other: ['root'] },
    });
    const { payload, protectedHeader } = await v.verify(token);
    expect(v.toPrincipal(payload, protectedHeader)).toMatchObject({ roles: ['admin'] });
  });

  it('refuses a toPrincipal beside scopesClaim or rolesClaim alone', () => {
    for (const mapping of [{ scopesClaim: 'perms' }, { rolesClaim: 'groups' }]) {
      expect(
        messageOf(() =>
          jwtBearer({
            issuer: 'https://a.test',
            audience: 'api',
            jwksUrl: 'https://a.test/jwks',
            toPrincipal: () => undefined,
            ...mapping,
          }),
        ),
      ).toMatch(/not both/);
    }
  });
});
