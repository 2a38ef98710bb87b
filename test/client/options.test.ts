// upstreamProvider() and createSignIn() refuse, at construction and with the option's name,
// what they could not use safely: an http issuer off this machine, a secret without a method
// that sends it, parameters portico sets itself, a short sealing key, an open base URL.
import { describe, expect, it } from 'vitest';
import { createSessions } from '../../src/auth/session/session.ts';
import { upstreamProvider } from '../../src/client/provider.ts';
import { createSignIn } from '../../src/client/sign-in.ts';

const OIDC = { name: 'idp', issuer: 'https://id.example.test', clientId: 'app' };
const sessions = createSessions({ allowedOrigins: ['https://app.example.test'] });
const signInWith = (extra: Record<string, unknown>) =>
  createSignIn({
    baseUrl: 'https://app.example.test',
    secret: 'x'.repeat(32),
    sessions,
    providers: [upstreamProvider(OIDC)],
    toUser: () => undefined,
    ...extra,
  } as never);

describe('upstreamProvider() options', () => {
  it('takes an OpenID Provider by issuer, a loopback one over http', () => {
    expect(upstreamProvider(OIDC)).toMatchObject({
      name: 'idp',
      label: 'idp',
      kind: 'oidc',
      issuer: 'https://id.example.test',
      scope: 'openid email profile',
    });
    expect(upstreamProvider({ ...OIDC, issuer: 'http://127.0.0.1:4000' }).issuer).toBe(
      'http://127.0.0.1:4000',
    );
  });

  it('refuses what it cannot use, naming the option', () => {
    const cases: [Record<string, unknown>, string | RegExp][] = [
      [{ ...OIDC, issuer: 'http://id.example.test' }, /`issuer` must be https/],
      [{ ...OIDC, issuer: 'not a url' }, /`issuer` must be an absolute URL/],
      [{ ...OIDC, name: 'a/b' }, /`name` must be letters, digits, - and _/],
      [{ ...OIDC, clientId: '' }, /`clientId` must be a non-empty string/],
      [{ ...OIDC, clientAuth: 'client_secret_basic' }, /needs `clientSecret`/],
      [{ ...OIDC, clientSecret: 's', clientAuth: 'none' }, /takes no `clientSecret`/],
      [{ ...OIDC, clientAuth: 'magic' }, /`clientAuth` must be one of/],
      [{ ...OIDC, authorizationParams: { state: 'x' } }, /without the parameters portico sets/],
      [{ ...OIDC, authorizationParams: { code_challenge: 'x' } }, /without the parameters/],
      [{ ...OIDC, timeout: 0 }, /`timeout`/],
      [{ ...OIDC, issuerr: 'x' }, /unknown option `issuerr`/],
      [
        {
          name: 'gh',
          authorizationEndpoint: 'https://gh.test/a',
          tokenEndpoint: 'https://gh.test/t',
          clientId: 'a',
        },
        /needs `profile`/,
      ],
    ];
    for (const [options, message] of cases) {
      expect(() => upstreamProvider(options as never), JSON.stringify(options)).toThrow(message);
    }
  });
});

describe('createSignIn() options', () => {
  it('refuses what it cannot use, naming the option', () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ secret: 'short' }, /`secret` must be a string or bytes of 32 or more/],
      [{ secret: [] }, /`secret` is required/],
      [
        { baseUrl: 'https://app.example.test/?a=1' },
        /`baseUrl` must be an absolute http\(s\) URL without a query/,
      ],
      [{ providers: [] }, /`providers` must be a non-empty array/],
      [{ providers: [{ name: 'x' }] }, /must come from upstreamProvider\(\)/],
      [
        { providers: [upstreamProvider(OIDC), upstreamProvider(OIDC)] },
        /two providers are named idp/,
      ],
      [{ toUser: undefined }, /`toUser` is required/],
      [{ sessions: {} }, /`sessions` must come from createSessions\(\)/],
      [{ prefix: 'login' }, /`prefix` must be a path/],
      [
        { defaultReturnTo: 'https://evil.example/' },
        /`defaultReturnTo` must be a path of this origin/,
      ],
      [{ transactionLifetime: 1_000 }, /`transactionLifetime`/],
      [{ cookie: { name: '__Host-x', secure: false } }, /needs `cookie.secure`/],
      [{ tokens: 'yes' }, /`tokens` must be an object/],
      [{ tokens: { stor: {} } }, /unknown option `stor`/],
    ];
    for (const [extra, message] of cases) {
      expect(() => signInWith(extra), JSON.stringify(extra)).toThrow(message);
    }
  });

  it('routes each provider under the prefix, and links to them returning to a local path only', () => {
    const signIn = signInWith({ prefix: '/auth' });
    expect(Object.keys(signIn.routes)).toEqual(['/auth/idp', '/auth/idp/callback']);
    expect(signIn.links('/account?tab=2')).toEqual([
      { name: 'idp', label: 'idp', href: '/auth/idp?returnTo=%2Faccount%3Ftab%3D2' },
    ]);
    expect(signIn.links('https://evil.example/')[0]!.href).toBe('/auth/idp');
  });
});
