// The registration policy (clients/registration-policy.ts) read as a unit: every option's
// default and refusal message, and every metadata check's error code and description, so that
// a changed bound, default or message is a failing test (issue 39's mutation run).
import { describe, expect, it } from 'vitest';
import { redirectUriRefusal } from '../../../src/oauth/clients/redirect-uri.js';
import {
  checkClientMetadata,
  type RegistrationOptions,
  resolveRegistrationPolicy,
} from '../../../src/oauth/clients/registration-policy.js';
import { OAuthError } from '../../../src/oauth/protocol/errors.js';

const OWNER = 'createAuthorizationServer()';
const SCOPES = ['openid', 'read'];
const LISTS = {
  redirectUriShapes: "'https', 'loopback', 'private-use'",
  tokenEndpointAuthMethods:
    "'none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt'",
  grantTypes: "'authorization_code', 'refresh_token', 'client_credentials'",
} as const;
const EC_KEY = { kty: 'EC', crv: 'P-256', x: 'eA', y: 'eQ' };
const APP = { redirect_uris: ['https://app.example/cb'] };

/** The message of the TypeError that resolving `options` throws (failing the test otherwise). */
function optionRefusal(options: unknown): string {
  try {
    resolveRegistrationPolicy(OWNER, options as RegistrationOptions, SCOPES);
  } catch (error) {
    expect(error).toBeInstanceOf(TypeError);
    expect((error as { code?: string }).code).toBe('ERR_INVALID_OPTION');
    return (error as Error).message;
  }
  throw new Error('the options were taken');
}

const policy = (options?: RegistrationOptions) => resolveRegistrationPolicy(OWNER, options, SCOPES);

/** The OAuth error that checking `metadata` throws: `[error, description]`. */
function metadataRefusal(metadata: unknown, options?: RegistrationOptions): [string, string] {
  try {
    checkClientMetadata(policy(options), metadata);
  } catch (error) {
    expect(error).toBeInstanceOf(OAuthError);
    const { error: code, message } = error as OAuthError;
    expect((error as OAuthError).status).toBe(400);
    return [code, message];
  }
  throw new Error('the metadata was taken');
}

const invalid = (description: string) => ['invalid_client_metadata', description];

describe('resolveRegistrationPolicy()', () => {
  it('answers the documented defaults, frozen, for no options or an empty object', () => {
    for (const options of [undefined, {}]) {
      const p = policy(options);
      expect(p).toEqual({
        initialAccessToken: undefined,
        redirectUriShapes: ['https', 'loopback', 'private-use'],
        authMethods: ['none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt'],
        grantTypes: ['authorization_code', 'refresh_token', 'client_credentials'],
        scopes: SCOPES,
        review: undefined,
        limit: 10,
        windowMs: 3_600_000,
        store: undefined,
        trustProxy: false,
      });
      expect(Object.isFrozen(p)).toBe(true);
      for (const list of [p.scopes, p.redirectUriShapes, p.authMethods, p.grantTypes]) {
        expect(Object.isFrozen(list)).toBe(true);
      }
    }
  });

  it('refuses a registration option that is not an object', () => {
    for (const options of [null, 'open', 5, true]) {
      expect(optionRefusal(options)).toBe(`${OWNER}: \`registration\` must be an object`);
    }
  });

  it('refuses unknown option names', () => {
    expect(optionRefusal({ limits: 5 })).toMatch(/registration/);
  });

  for (const [name, list] of Object.entries(LISTS)) {
    it(`refuses a ${name} that is not a non-empty list of what portico supports`, () => {
      const message = `${OWNER}: \`registration.${name}\` must be a non-empty list of ${list}`;
      for (const value of ['https', [], ['https', 'ftp'], ['none', 'secret'], [7]]) {
        expect(optionRefusal({ [name]: value })).toBe(message);
      }
    });
  }

  it('takes a subset of each list, once each, frozen', () => {
    const p = policy({
      redirectUriShapes: ['loopback', 'loopback'],
      tokenEndpointAuthMethods: ['none', 'private_key_jwt', 'none'],
      grantTypes: ['client_credentials'],
    });
    expect(p.redirectUriShapes).toEqual(['loopback']);
    expect(p.authMethods).toEqual(['none', 'private_key_jwt']);
    expect(p.grantTypes).toEqual(['client_credentials']);
    expect(Object.isFrozen(p.authMethods)).toBe(true);
    expect(Object.isFrozen(p.grantTypes)).toBe(true);
  });

  it('refuses an initial access token shorter than 16 characters, takes 16', () => {
    expect(optionRefusal({ initialAccessToken: 'x'.repeat(15) })).toBe(
      `${OWNER}: \`registration.initialAccessToken\` must be 16 characters or more`,
    );
    expect(optionRefusal({ initialAccessToken: '' })).toMatch(/16 characters or more/);
    expect(policy({ initialAccessToken: 'x'.repeat(16) }).initialAccessToken).toBeTypeOf(
      'function',
    );
  });

  it('checks a fixed initial access token: the same token only, of any length', () => {
    const token = 'initial-access-token-1234';
    const check = policy({ initialAccessToken: token }).initialAccessToken!;
    const req = {} as never;
    expect(check(token, req)).toBe(true);
    expect(check(`${token}x`, req)).toBe(false);
    expect(check(token.slice(0, -1), req)).toBe(false);
    expect(check(token.toUpperCase(), req)).toBe(false);
    expect(check('', req)).toBe(false);
  });

  it('takes a function deciding on the token as it is, and refuses anything else', () => {
    const decide = () => true;
    expect(policy({ initialAccessToken: decide }).initialAccessToken).toBe(decide);
    expect(optionRefusal({ initialAccessToken: 42 })).toBe(
      `${OWNER}: \`registration.initialAccessToken\` must be a function`,
    );
    expect(optionRefusal({ review: 'yes' })).toBe(
      `${OWNER}: \`registration.review\` must be a function`,
    );
    const review = () => false as const;
    expect(policy({ review }).review).toBe(review);
  });

  it('refuses scopes that are not a list of scope tokens, and keeps each once', () => {
    const message = `${OWNER}: \`registration.scopes\` must be a list of scope tokens`;
    for (const scopes of [
      'openid',
      [7],
      ['read write'],
      ['say"hi'],
      ['back\\slash'],
      [''],
      ['é'],
    ]) {
      expect(optionRefusal({ scopes })).toBe(message);
    }
    const p = policy({ scopes: ['read', 'read', 'a:b!#~'] });
    expect(p.scopes).toEqual(['read', 'a:b!#~']);
    expect(resolveRegistrationPolicy(OWNER, undefined, ['x', 'x', 'y']).scopes).toEqual(['x', 'y']);
    expect(() => resolveRegistrationPolicy(OWNER, undefined, ['bad scope'])).toThrow(message);
  });

  it('refuses a list of scopes with one bad token among good ones, and takes an empty list', () => {
    const message = `${OWNER}: \`registration.scopes\` must be a list of scope tokens`;
    expect(optionRefusal({ scopes: ['read', 'bad scope'] })).toBe(message);
    expect(optionRefusal({ scopes: ['bad scope', 'read'] })).toBe(message);
    expect(() => resolveRegistrationPolicy(OWNER, undefined, ['openid', 'x"y'])).toThrow(message);
    expect(policy({ scopes: [] }).scopes).toEqual([]);
  });

  it('refuses a windowMs under one second however it is written', () => {
    const message = `${OWNER}: \`registration.windowMs\` must be milliseconds, at least 1000`;
    for (const windowMs of [0, '999ms', '0s']) {
      expect(optionRefusal({ windowMs } as never), String(windowMs)).toBe(message);
    }
    expect(policy({ windowMs: '1s' } as never).windowMs).toBe(1_000);
  });

  it('refuses a store without increment, takes one with it', () => {
    const message = `${OWNER}: \`registration.store\` must be a RateLimitStore`;
    for (const store of [null, {}, { increment: 1 }, 'redis']) {
      expect(optionRefusal({ store })).toBe(message);
    }
    const store = { increment: async () => ({ count: 1, resetAt: 0 }) };
    expect(policy({ store } as never).store).toBe(store);
  });

  it('checks limit and windowMs (at least one second), and keeps trustProxy', () => {
    expect(policy({ limit: 3, windowMs: 1_000 })).toMatchObject({ limit: 3, windowMs: 1_000 });
    expect(optionRefusal({ windowMs: 999 })).toMatch(/registration\.windowMs/);
    expect(optionRefusal({ limit: 0 })).toMatch(/registration\.limit/);
    expect(policy({ trustProxy: 'loopback' }).trustProxy).toBe('loopback');
  });
});

describe('checkClientMetadata()', () => {
  it('refuses what is not a JSON object', () => {
    for (const value of [null, 'x', 3, [], [APP], undefined]) {
      expect(metadataRefusal(value)).toEqual(invalid('The client metadata must be a JSON object.'));
    }
  });

  it('answers the RFC 7591 §2 defaults and drops what it does not understand', () => {
    const metadata = checkClientMetadata(policy(), {
      ...APP,
      unknown_field: 'x',
      client_secret: 's',
    });
    expect(metadata).toEqual({
      redirect_uris: APP.redirect_uris,
      token_endpoint_auth_method: 'client_secret_basic',
      grant_types: ['authorization_code'],
      response_types: ['code'],
      scope: 'openid read',
      application_type: 'web',
    });
  });

  it('answers every field it understands, lists once each', () => {
    // the fields taken as they are, at their longest
    const described = {
      client_name: 'N'.repeat(200),
      client_uri: 'https://app.example/',
      logo_uri: 'https://app.example/logo.png',
      tos_uri: 'https://app.example/tos',
      policy_uri: 'https://app.example/policy',
      software_id: 'S'.repeat(200),
      software_version: '1.0',
    };
    const metadata = checkClientMetadata(policy(), {
      redirect_uris: ['https://app.example/cb', 'https://app.example/cb', 'http://127.0.0.1/cb'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token', 'authorization_code'],
      response_types: ['code'],
      scope: ' read  read ',
      ...described,
      contacts: ['a@app.example', 'a@app.example', `${'c'.repeat(308)}@app.example`],
      application_type: 'native',
    });
    expect(metadata).toEqual({
      redirect_uris: ['https://app.example/cb', 'http://127.0.0.1/cb'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      scope: 'read',
      ...described,
      contacts: ['a@app.example', `${'c'.repeat(308)}@app.example`],
      application_type: 'native',
    });
  });

  it('answers a client_credentials client without redirect URIs nor response types', () => {
    const metadata = checkClientMetadata(policy(), {
      grant_types: ['client_credentials'],
      token_endpoint_auth_method: 'client_secret_post',
      scope: '',
    });
    expect(metadata).toEqual({
      token_endpoint_auth_method: 'client_secret_post',
      grant_types: ['client_credentials'],
      response_types: [],
      scope: '',
      application_type: 'web',
    });
    expect('redirect_uris' in metadata).toBe(false);
  });

  it('refuses an authentication method the policy does not allow, naming those it does', () => {
    const options = { tokenEndpointAuthMethods: ['none', 'private_key_jwt'] } as const;
    expect(metadataRefusal({ ...APP }, options)).toEqual(
      invalid('token_endpoint_auth_method must be one of none, private_key_jwt.'),
    );
    expect(metadataRefusal({ ...APP, token_endpoint_auth_method: 'tls_client_auth' })).toEqual(
      invalid(
        'token_endpoint_auth_method must be one of none, client_secret_basic, client_secret_post, private_key_jwt.',
      ),
    );
  });

  it('refuses grant types that are not a short list of allowed ones', () => {
    const shape = invalid('grant_types must be an array of at most 3 strings.');
    for (const grant_types of ['authorization_code', [1], ['a', 'b', 'c', 'd'], { 0: 'x' }]) {
      expect(metadataRefusal({ ...APP, grant_types })).toEqual(shape);
    }
    expect(metadataRefusal({ ...APP, grant_types: [] })).toEqual(
      invalid('grant_types must name at least one grant type.'),
    );
    expect(metadataRefusal({ ...APP, grant_types: ['implicit'] })).toEqual(
      invalid('grant_types may hold only authorization_code, refresh_token, client_credentials.'),
    );
    expect(
      metadataRefusal(
        { ...APP, grant_types: ['refresh_token'] },
        { grantTypes: ['authorization_code'] },
      ),
    ).toEqual(invalid('grant_types may hold only authorization_code.'));
  });

  it('refuses client_credentials for a public client and refresh_token without the code grant', () => {
    expect(
      metadataRefusal({ grant_types: ['client_credentials'], token_endpoint_auth_method: 'none' }),
    ).toEqual(invalid('client_credentials needs a confidential client (not `none`).'));
    expect(metadataRefusal({ grant_types: ['refresh_token', 'client_credentials'] })).toEqual(
      invalid('refresh_token needs the authorization_code grant.'),
    );
  });

  it('refuses response types other than code, and code without the code grant or the reverse', () => {
    expect(metadataRefusal({ ...APP, response_types: ['token'] })).toEqual(
      invalid('response_types may hold only code.'),
    );
    expect(metadataRefusal({ ...APP, response_types: ['code', 'token'] })).toEqual(
      invalid('response_types must be an array of at most 1 strings.'),
    );
    const together = invalid(
      'response_types code and grant type authorization_code go together (RFC 7591 §2.1).',
    );
    expect(metadataRefusal({ ...APP, response_types: [] })).toEqual(together);
    expect(
      metadataRefusal({ grant_types: ['client_credentials'], response_types: ['code'] }),
    ).toEqual(together);
  });

  it('asks redirect URIs of the code grant and checks each one against the shapes allowed', () => {
    const required = [
      'invalid_redirect_uri',
      'redirect_uris is required for the authorization_code grant.',
    ];
    expect(metadataRefusal({})).toEqual(required);
    expect(metadataRefusal({ redirect_uris: [] })).toEqual(required);
    expect(
      metadataRefusal({
        redirect_uris: Array.from({ length: 11 }, (_, i) => `https://a.example/${i}`),
      }),
    ).toEqual(invalid('redirect_uris must be an array of at most 10 strings.'));
    for (const uri of [
      'http://app.example/cb',
      'javascript:alert(1)',
      'https://app.example/cb#x',
    ]) {
      const refusal = redirectUriRefusal(uri, ['https', 'loopback', 'private-use']);
      expect(refusal).toBeTypeOf('string');
      expect(metadataRefusal({ redirect_uris: ['https://ok.example/cb', uri] })).toEqual([
        'invalid_redirect_uri',
        `${refusal}.`,
      ]);
    }
    expect(
      metadataRefusal(
        { redirect_uris: ['http://127.0.0.1/cb'] },
        { redirectUriShapes: ['https'] },
      )[0],
    ).toBe('invalid_redirect_uri');
  });

  it('asks private_key_jwt for exactly one of jwks and jwks_uri, and the others for neither', () => {
    const pkj = { ...APP, token_endpoint_auth_method: 'private_key_jwt' };
    const one = invalid('private_key_jwt needs jwks or jwks_uri (one of them).');
    expect(metadataRefusal(pkj)).toEqual(one);
    expect(
      metadataRefusal({ ...pkj, jwks: { keys: [EC_KEY] }, jwks_uri: 'https://app.example/jwks' }),
    ).toEqual(one);
    const only = invalid('jwks and jwks_uri go with token_endpoint_auth_method private_key_jwt.');
    expect(metadataRefusal({ ...APP, jwks: { keys: [EC_KEY] } })).toEqual(only);
    expect(metadataRefusal({ ...APP, jwks_uri: 'https://app.example/jwks' })).toEqual(only);
    const jwks = { keys: [EC_KEY] };
    const taken = checkClientMetadata(policy(), { ...pkj, jwks });
    expect(taken.jwks).toEqual(jwks);
    expect(taken.jwks).not.toBe(jwks);
    expect(taken.jwks!.keys[0]).not.toBe(EC_KEY);
    expect(
      checkClientMetadata(policy(), { ...pkj, jwks_uri: 'https://app.example/jwks' }).jwks_uri,
    ).toBe('https://app.example/jwks');
  });

  it('refuses a jwks that is not a small set of public RSA, EC or OKP keys', () => {
    const pkj = { ...APP, token_endpoint_auth_method: 'private_key_jwt' };
    const size = invalid('jwks must be a JWK Set of 1 to 10 keys.');
    for (const jwks of [
      'keys',
      { keys: [] },
      { keys: [1] },
      { keys: Array(11).fill(EC_KEY) },
      null,
    ]) {
      expect(metadataRefusal({ ...pkj, jwks })).toEqual(size);
    }
    expect(
      checkClientMetadata(policy(), { ...pkj, jwks: { keys: Array(10).fill(EC_KEY) } }).jwks!.keys,
    ).toHaveLength(10);
    for (const kty of ['oct', 'ec', undefined]) {
      expect(metadataRefusal({ ...pkj, jwks: { keys: [EC_KEY, { ...EC_KEY, kty }] } })).toEqual(
        invalid('jwks keys must be RSA, EC or OKP public keys.'),
      );
    }
    for (const kty of ['RSA', 'OKP']) {
      expect(
        checkClientMetadata(policy(), { ...pkj, jwks: { keys: [{ kty, n: 'x', e: 'AQAB' }] } })
          .jwks,
      ).toBeDefined();
    }
    for (const member of ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k']) {
      expect(metadataRefusal({ ...pkj, jwks: { keys: [{ ...EC_KEY, [member]: 'x' }] } })).toEqual(
        invalid('jwks must hold public keys only.'),
      );
    }
    const big = { keys: [{ ...EC_KEY, x: 'x'.repeat(16_400) }] };
    expect(metadataRefusal({ ...pkj, jwks: big })).toEqual(invalid('jwks is too large.'));
    const fits = { keys: [{ ...EC_KEY, x: 'x'.repeat(16_300) }] };
    expect(checkClientMetadata(policy(), { ...pkj, jwks: fits }).jwks).toEqual(fits);
  });

  it('takes a jwks of exactly 16384 characters of JSON, and refuses one more', () => {
    const pkj = { ...APP, token_endpoint_auth_method: 'private_key_jwt' };
    const sized = (length: number) => {
      const jwks = { keys: [{ ...EC_KEY, x: '' }] };
      jwks.keys[0]!.x = 'x'.repeat(length - JSON.stringify(jwks).length);
      expect(JSON.stringify(jwks)).toHaveLength(length);
      return jwks;
    };
    const largest = sized(16_384);
    expect(checkClientMetadata(policy(), { ...pkj, jwks: largest }).jwks).toEqual(largest);
    expect(metadataRefusal({ ...pkj, jwks: sized(16_385) })).toEqual(invalid('jwks is too large.'));
  });

  it('answers no member at all for an optional field not given', () => {
    const pkj = { ...APP, token_endpoint_auth_method: 'private_key_jwt' };
    const base = [
      'application_type',
      'grant_types',
      'redirect_uris',
      'response_types',
      'scope',
      'token_endpoint_auth_method',
    ];
    const keysOf = (metadata: object) => Object.keys(metadata).sort();
    expect(keysOf(checkClientMetadata(policy(), { ...APP }))).toEqual(base);
    expect(keysOf(checkClientMetadata(policy(), { ...pkj, jwks: { keys: [EC_KEY] } }))).toEqual(
      [...base, 'jwks'].sort(),
    );
    expect(
      keysOf(checkClientMetadata(policy(), { ...pkj, jwks_uri: 'https://app.example/jwks' })),
    ).toEqual([...base, 'jwks_uri'].sort());
    expect(
      keysOf(
        checkClientMetadata(policy(), { ...APP, contacts: ['a@app.example'], client_name: 'A' }),
      ),
    ).toEqual([...base, 'client_name', 'contacts'].sort());
  });

  for (const name of ['client_uri', 'logo_uri', 'tos_uri', 'policy_uri', 'jwks_uri']) {
    it(`refuses a ${name} that is not an https URL without credentials`, () => {
      const base =
        name === 'jwks_uri'
          ? { ...APP, token_endpoint_auth_method: 'private_key_jwt' }
          : { ...APP };
      expect(metadataRefusal({ ...base, [name]: 'not a url' })).toEqual(
        invalid(`${name} must be an absolute https URL.`),
      );
      for (const url of [
        'http://app.example/',
        'https://u@app.example/',
        'https://:p@app.example/',
      ]) {
        expect(metadataRefusal({ ...base, [name]: url })).toEqual(
          invalid(`${name} must be an https URL without credentials.`),
        );
      }
      for (const value of ['', 7, `https://app.example/${'x'.repeat(1981)}`]) {
        expect(metadataRefusal({ ...base, [name]: value })).toEqual(
          invalid(`${name} must be a string of 1 to 2000 characters.`),
        );
      }
      const long = `https://app.example/${'x'.repeat(1980)}`;
      expect(long).toHaveLength(2000);
      expect(
        (checkClientMetadata(policy(), { ...base, [name]: long }) as Record<string, unknown>)[name],
      ).toBe(long);
    });
  }

  for (const name of ['client_name', 'software_id', 'software_version']) {
    it(`refuses a ${name} that is empty, longer than 200 or with control characters`, () => {
      for (const value of ['', 'x'.repeat(201), 5, null]) {
        expect(metadataRefusal({ ...APP, [name]: value })).toEqual(
          invalid(`${name} must be a string of 1 to 200 characters.`),
        );
      }
      for (const value of [
        'a\x00b',
        'a\nb',
        'a\x1fb',
        'a\x7fb',
        'a\u202ab',
        'a\u202eb',
        'a\u2066b',
        'a\u2069b',
      ]) {
        expect(metadataRefusal({ ...APP, [name]: value })).toEqual(
          invalid(`${name} must not hold control or bidirectional formatting characters.`),
        );
      }
      for (const value of ['a\x20b', 'a\u2065b', 'a\u202fb', 'a\u2029b', 'é']) {
        expect(
          (checkClientMetadata(policy(), { ...APP, [name]: value }) as Record<string, unknown>)[
            name
          ],
        ).toBe(value);
      }
    });
  }

  it('refuses a scope that is not a short string of scopes this server grants', () => {
    const shape = invalid('scope must be a string of space-separated scopes.');
    expect(metadataRefusal({ ...APP, scope: ['openid'] })).toEqual(shape);
    expect(metadataRefusal({ ...APP, scope: 'x'.repeat(2001) })).toEqual(shape);
    expect(metadataRefusal({ ...APP, scope: 'openid write' })).toEqual(
      invalid('The scope "write" is not one this server grants.'),
    );
    const policyOf = (scopes: string[]) => resolveRegistrationPolicy(OWNER, undefined, scopes);
    const long = 'r'.repeat(2000);
    expect(checkClientMetadata(policyOf([long]), { ...APP, scope: long }).scope).toBe(long);
    expect(checkClientMetadata(policy(), { ...APP, scope: 'read openid' }).scope).toBe(
      'read openid',
    );
  });

  it('refuses contacts that are not short e-mail addresses', () => {
    const message = invalid('contacts must be e-mail addresses of at most 320 characters.');
    for (const contact of ['', 'c'.repeat(321), 'a\x00@b', 'a\n@b', 'a\x1f@b', 'a\x7f@b']) {
      expect(metadataRefusal({ ...APP, contacts: ['ok@app.example', contact] })).toEqual(message);
    }
    expect(metadataRefusal({ ...APP, contacts: Array(11).fill('a@b') })).toEqual(
      invalid('contacts must be an array of at most 10 strings.'),
    );
    expect(checkClientMetadata(policy(), { ...APP, contacts: ['c'.repeat(320)] }).contacts).toEqual(
      ['c'.repeat(320)],
    );
    expect(checkClientMetadata(policy(), { ...APP, contacts: [] }).contacts).toEqual([]);
  });

  it('refuses an application type other than web and native', () => {
    for (const application_type of ['browser', '', 1, false]) {
      expect(metadataRefusal({ ...APP, application_type })).toEqual(
        invalid('application_type must be web or native.'),
      );
    }
    expect(
      checkClientMetadata(policy(), { ...APP, application_type: 'web' }).application_type,
    ).toBe('web');
  });
});
