// The grant contract's checks (defineGrant) and the registry a server builds of its `grants`:
// every mistake refused when the server is made, with what is wrong.
import { describe, expect, it } from 'vitest';
import { createSessions } from '../../../src/index.js';
import {
  authorizationCodeGrant,
  createAuthorizationServer,
  createOAuthContext,
  createTokenEndpoint,
  defaultGrants,
  defineGrant,
  type Grant,
  MemoryClientStore,
  tokenExchangeGrant,
} from '../../../src/oauth/index.js';
import { testKeys } from './fixtures.js';

const handle: Grant['handle'] = async () => ({
  access_token: 'x',
  token_type: 'Bearer',
  expires_in: 1,
  scope: '',
});

async function options() {
  return {
    issuer: 'https://auth.example.test',
    clients: new MemoryClientStore(),
    keys: await testKeys(),
    users: { verify: () => undefined, get: () => undefined },
    sessions: createSessions({ allowedOrigins: ['https://auth.example.test'] }),
  };
}

describe('defineGrant()', () => {
  it('freezes a grant, its parameters listed once', () => {
    const grant = defineGrant({
      type: 'password',
      parameters: ['username', 'password', 'username'],
      handle,
    });
    expect(grant).toEqual({ type: 'password', parameters: ['username', 'password'], handle });
    expect(Object.isFrozen(grant)).toBe(true);
    expect(Object.isFrozen(grant.parameters)).toBe(true);
  });

  it('refuses a grant that cannot be one, saying why', () => {
    const cases: [unknown, string][] = [
      [undefined, 'defineGrant(): a grant is { type, parameters, handle }'],
      [
        { type: 'a b', parameters: [], handle },
        'defineGrant(): `type` must be a grant type: a name or an absolute URI',
      ],
      [
        { type: '', parameters: [], handle },
        'defineGrant(): `type` must be a grant type: a name or an absolute URI',
      ],
      [
        { type: 'x', parameters: 'code', handle },
        'defineGrant(): `parameters` of x must be parameter names',
      ],
      [
        { type: 'x', parameters: ['a b'], handle },
        'defineGrant(): `parameters` of x must be parameter names',
      ],
      [
        { type: 'x', parameters: ['client_secret'], handle },
        'defineGrant(): x lists `client_secret`, which the token endpoint reads itself',
      ],
      [
        { type: 'x', parameters: ['grant_type'], handle },
        'defineGrant(): x lists `grant_type`, which the token endpoint reads itself',
      ],
      [
        { type: 'x', parameters: [], handle: 'no' },
        'defineGrant(): `handle` of x must be a function',
      ],
      [
        { type: 'x', parameters: [], handler: handle },
        'defineGrant(): unknown option `handler`. Did you mean `handle`?',
      ],
    ];
    for (const [grant, message] of cases) {
      expect(() => defineGrant(grant as Grant), message).toThrow(message);
    }
  });
});

describe('the grants of a server', () => {
  it('are the four built-in ones by default, in discovery and at the token endpoint', async () => {
    const auth = createAuthorizationServer(await options());
    expect(auth.metadata().grant_types_supported).toEqual(defaultGrants.map((g) => g.type));
    expect(defaultGrants.map((g) => g.type)).toEqual([
      'authorization_code',
      'refresh_token',
      'client_credentials',
      'urn:ietf:params:oauth:grant-type:device_code',
    ]);
    expect(Object.isFrozen(defaultGrants)).toBe(true);
  });

  it('follow `grants`: added, taken away, in their order', async () => {
    const auth = createAuthorizationServer({
      ...(await options()),
      grants: [tokenExchangeGrant(), authorizationCodeGrant],
    });
    expect(auth.metadata().grant_types_supported).toEqual([
      'urn:ietf:params:oauth:grant-type:token-exchange',
      'authorization_code',
    ]);
  });

  it('refuse two grants of one type, a list that is not one, a forgotten await', async () => {
    const base = await options();
    expect(() =>
      createAuthorizationServer({ ...base, grants: [...defaultGrants, authorizationCodeGrant] }),
    ).toThrow('createAuthorizationServer(): two grants answer `authorization_code`');
    expect(() =>
      createAuthorizationServer({ ...base, grants: authorizationCodeGrant as never }),
    ).toThrow(
      'createAuthorizationServer(): `grants` must be a list of grants ([...defaultGrants, …])',
    );
    expect(() =>
      createAuthorizationServer({
        ...base,
        grants: [Promise.resolve(authorizationCodeGrant)] as never,
      }),
    ).toThrow(/`grants\[0\]` is a Promise/);
    expect(() =>
      createAuthorizationServer({ ...base, grants: [{ type: 'x', parameters: [] }] as never }),
    ).toThrow('defineGrant(): `handle` of x must be a function');
    const ctx = createOAuthContext(base);
    expect(() => createTokenEndpoint(ctx, { grant: [] } as never)).toThrow(
      'createTokenEndpoint(): unknown option `grant`. Did you mean `grants`?',
    );
  });
});
