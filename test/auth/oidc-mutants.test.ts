// What a caller can observe of createIdTokenVerifier(), key discovery and the scope helpers
// beyond oidc.test.ts and authenticate.test.ts: the exact option errors, the typed claims of odd
// payloads, the token-length and max_age boundaries (on a frozen clock), the discovery URLs,
// request headers, fallbacks, failures with their cause, cooldown and cache, and the exact 400
// problems and TypeErrors of parseScopes() and assertScopes().
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  assertScopes,
  createIdTokenVerifier,
  createJwtVerifier,
  type IdTokenVerifierOptions,
  JwtError,
  parseScopes,
  scopesFromClaim,
} from '../../src/auth/index.js';
import { discoveryUrls } from '../../src/auth/jwt/discovery.js';
import { HttpError } from '../../src/core/index.js';
import { thrownTypeError } from '../helpers/errors.js';
import { closeAll, listen } from '../helpers/http.js';
import {
  AUDIENCE,
  ISSUER,
  type KeyServer,
  makeKey,
  mint,
  now,
  startKeyServer,
  type TestKey,
} from './jwt/jwt-fixtures.js';

const CLIENT = 'client-123';
const OWNER = 'createIdTokenVerifier()';
/** A fixed instant for the tests that freeze `Date` (half a second into a second). */
const START = Date.UTC(2031, 4, 6, 12, 0, 0, 500);

let key: TestKey;
let provider: KeyServer;

beforeAll(async () => {
  key = await makeKey('k1');
  provider = await startKeyServer([key.jwk]);
});
afterAll(() => provider.close());
afterEach(async () => {
  vi.useRealTimers();
  await closeAll();
});

/** A verifier of ID tokens issued by ISSUER to CLIENT, with `key` given (no discovery). */
const withKeys = (options: Partial<IdTokenVerifierOptions> = {}) =>
  createIdTokenVerifier({
    issuer: ISSUER,
    clientId: CLIENT,
    jwks: { keys: [key.jwk] },
    ...options,
  });

/** The JwtError a verification rejects with (failing the test when it resolves). */
async function rejection(promise: Promise<unknown>): Promise<JwtError> {
  const error = await promise.then(
    () => expect.unreachable('the verification succeeded'),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(JwtError);
  return error as JwtError;
}

/** The option error `build` throws: a TypeError with code ERR_INVALID_OPTION. */
function optionError(build: () => unknown): string {
  const error = thrownTypeError(build);
  expect(error.code).toBe('ERR_INVALID_OPTION');
  return error.message;
}

const INVALID = { code: 'ERR_JWT_INVALID', kind: 'invalid', message: 'The ID token is not valid.' };

describe('createIdTokenVerifier: options', () => {
  it('requires options, naming itself', () => {
    for (const options of [undefined, null]) {
      expect(optionError(() => createIdTokenVerifier(options as never))).toBe(
        `${OWNER}: options are required`,
      );
    }
  });

  it('requires a non-empty string issuer and clientId', () => {
    for (const issuer of [undefined, '', 42]) {
      expect(optionError(() => createIdTokenVerifier({ issuer, clientId: CLIENT } as never))).toBe(
        `${OWNER}: \`issuer\` is required`,
      );
      expect(optionError(() => withKeys({ issuer } as never))).toBe(
        `${OWNER}: \`issuer\` is required`,
      );
    }
    for (const clientId of [undefined, '', 7]) {
      expect(optionError(() => withKeys({ clientId } as never))).toBe(
        `${OWNER}: \`clientId\` is required`,
      );
    }
  });

  it('requires trustedAudiences to be an array of non-empty strings', () => {
    for (const trustedAudiences of ['api', [''], [42], ['api', null], { 0: 'api' }]) {
      expect(optionError(() => withKeys({ trustedAudiences } as never))).toBe(
        `${OWNER}: \`trustedAudiences\` must be an array of strings`,
      );
    }
    expect(() => withKeys({ trustedAudiences: [] })).not.toThrow();
  });

  it('names clockTolerance and maxTokenLength (at least 16) in their errors', () => {
    expect(optionError(() => withKeys({ clockTolerance: -1 }))).toBe(
      `${OWNER}: \`clockTolerance\` must be milliseconds, at least 0`,
    );
    for (const maxTokenLength of [15, 1, 0]) {
      expect(optionError(() => withKeys({ maxTokenLength }))).toBe(
        `${OWNER}: \`maxTokenLength\` must be an integer, at least 16`,
      );
    }
    expect(() => withKeys({ maxTokenLength: 16 })).not.toThrow();
  });

  it('says what is missing without discovery, and checks the issuer URL only for discovery', async () => {
    expect(
      optionError(() =>
        createIdTokenVerifier({ issuer: provider.url, clientId: CLIENT, discovery: false }),
      ),
    ).toBe(`${OWNER}: without \`discovery\`, give \`jwks\` or \`jwksUrl\``);
    expect(
      optionError(() => createIdTokenVerifier({ issuer: 'not a url', clientId: CLIENT })),
    ).toBe(`${OWNER}: \`issuer\` must be an absolute URL`);
    // with the keys given, the issuer is only compared with `iss`: any string will do
    const v = withKeys({ issuer: 'example-idp' });
    const claims = await v.verify(await mint(key, { iss: 'example-idp', aud: CLIENT }));
    expect(claims.iss).toBe('example-idp');
  });
});

describe('createIdTokenVerifier: verification', () => {
  it('accepts a token of exactly maxTokenLength characters, and refuses one more', async () => {
    const token = await mint(key, { aud: CLIENT });
    expect((await withKeys({ maxTokenLength: token.length }).verify(token)).sub).toBe('alice');
    await expect(
      rejection(withKeys({ maxTokenLength: token.length - 1 }).verify(token)),
    ).resolves.toMatchObject(INVALID);
  });

  it('refuses a token that is not a string with a JwtError, never a crash', async () => {
    const v = withKeys();
    for (const token of [undefined, null, 42, {}]) {
      await expect(rejection(v.verify(token as never))).resolves.toMatchObject(INVALID);
    }
  });

  it('refuses a sub that is not a string', async () => {
    for (const sub of [42, true, { id: 'alice' }]) {
      await expect(
        rejection(withKeys().verify(await mint(key, { aud: CLIENT, sub }))),
      ).resolves.toMatchObject(INVALID);
    }
  });

  it('refuses any extra audience it was not told to trust', async () => {
    // 'Stryker was here' is the element StrykerJS puts in an empty array literal
    for (const other of ['api', 'https://evil.example', 'Stryker was here']) {
      const token = await mint(key, { aud: [CLIENT, other], azp: CLIENT });
      await expect(rejection(withKeys().verify(token))).resolves.toMatchObject(INVALID);
      expect((await withKeys({ trustedAudiences: [other] }).verify(token)).aud).toEqual([
        CLIENT,
        other,
      ]);
    }
  });

  it('keeps the typed claims that have their type and passes the others through untouched', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(START);
    const claims = await withKeys().verify(
      await mint(key, {
        aud: CLIENT,
        azp: CLIENT,
        preferred_username: 7,
        nonce: 8,
        acr: 'urn:mace:incommon:iap:silver',
        locale: ['fr'],
        email_verified: 'false',
        amr: ['pwd', 'otp'],
        '': 0,
        tenant: { id: 't-1' },
      }),
    );
    const t = now();
    expect(claims).toStrictEqual({
      iss: ISSUER,
      aud: CLIENT,
      sub: 'alice',
      iat: t,
      exp: t + 300,
      azp: CLIENT,
      acr: 'urn:mace:incommon:iap:silver',
      email_verified: false,
      amr: ['pwd', 'otp'],
      '': 0,
      tenant: { id: 't-1' },
    });
  });

  it('reads email_verified as a boolean or its string spelling, and drops anything else', async () => {
    const v = withKeys();
    for (const [sent, read] of [
      [true, true],
      [false, false],
      ['true', true],
      ['false', false],
      [1, undefined],
      [0, undefined],
      ['yes', undefined],
      [null, undefined],
    ] as const) {
      const claims = await v.verify(await mint(key, { aud: CLIENT, email_verified: sent }));
      expect(claims.email_verified, JSON.stringify(sent)).toBe(read);
      expect('email_verified' in claims, JSON.stringify(sent)).toBe(read !== undefined);
    }
  });

  it('keeps amr only as an array of strings', async () => {
    const v = withKeys();
    for (const [sent, read] of [
      [['pwd'], ['pwd']],
      [
        ['pwd', 'mfa', 'hwk'],
        ['pwd', 'mfa', 'hwk'],
      ],
      [[], []],
      [['pwd', 1], undefined],
      [[1, 'pwd'], undefined],
      [[null], undefined],
      ['pwd', undefined],
      [{ 0: 'pwd' }, undefined],
    ] as const) {
      const claims = await v.verify(await mint(key, { aud: CLIENT, amr: sent }));
      expect(claims.amr, JSON.stringify(sent)).toEqual(read);
      expect('amr' in claims, JSON.stringify(sent)).toBe(read !== undefined);
    }
  });

  it('checks max_age against auth_time to the second, with the clock tolerance', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(START);
    const t = now();
    const v = withKeys();
    const at = async (authTime: number) => mint(key, { aud: CLIENT, auth_time: authTime });
    // 60 s of max_age and 5 s of tolerance: 65 s is the oldest authentication accepted
    expect((await v.verify(await at(t - 65), { maxAge: 60_000 })).auth_time).toBe(t - 65);
    const expired = await rejection(v.verify(await at(t - 66), { maxAge: 60_000 }));
    expect(expired).toMatchObject({
      code: 'ERR_JWT_EXPIRED',
      kind: 'expired',
      message: 'The authentication is older than max_age allows.',
    });
    const strict = withKeys({ clockTolerance: 0 });
    expect((await strict.verify(await at(t - 60), { maxAge: 60_000 })).auth_time).toBe(t - 60);
    await expect(
      rejection(strict.verify(await at(t - 61), { maxAge: 60_000 })),
    ).resolves.toMatchObject({ code: 'ERR_JWT_EXPIRED' });
    expect((await strict.verify(await at(t), { maxAge: 0 })).auth_time).toBe(t);
    await expect(rejection(strict.verify(await at(t - 1), { maxAge: 0 }))).resolves.toMatchObject({
      code: 'ERR_JWT_EXPIRED',
    });
  });

  it('names verify() and maxAge when maxAge is not a duration', async () => {
    const token = await mint(key, { aud: CLIENT, auth_time: now() });
    for (const maxAge of [-1, 1.5, Number.NaN]) {
      const error = await withKeys()
        .verify(token, { maxAge })
        .then(
          () => expect.unreachable('accepted'),
          (e: unknown) => e,
        );
      expect(error).toBeInstanceOf(TypeError);
      expect(error).toMatchObject({
        code: 'ERR_INVALID_OPTION',
        message: 'verify(): `maxAge` must be milliseconds, at least 0',
      });
    }
  });
});

/** What a metadata host answers at a path (its own URL is `base`). */
type Answer = (path: string, base: string) => { status: number; body?: unknown; location?: string };

/** A host of metadata documents that records the path and `Accept` of every request. */
async function metadataHost(answer: Answer) {
  const seen: { path: string; accept: string | undefined }[] = [];
  let base = '';
  const host = await listen((req, res) => {
    const path = req.url ?? '';
    seen.push({ path, accept: req.headers.accept });
    const { status, body, location } = answer(path, base);
    res.writeHead(status, {
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(location === undefined ? {} : { location }),
    });
    res.end(body === undefined ? '' : JSON.stringify(body));
  });
  base = host.url;
  return { base, seen };
}

/** The cause message of the "keys unavailable" error an ID token for `issuer` gets. */
async function discoveryFailure(issuer: string): Promise<string> {
  const v = createIdTokenVerifier({ issuer, clientId: CLIENT });
  const error = await rejection(v.verify(await mint(key, { iss: issuer, aud: CLIENT })));
  expect(error).toMatchObject({
    code: 'ERR_JWT_KEYS_UNAVAILABLE',
    kind: 'unavailable',
    message: 'The keys to verify the token are unavailable; try again later.',
  });
  expect(error.cause).toBeInstanceOf(Error);
  return (error.cause as Error).message;
}

describe('discovery', () => {
  it('looks for OpenID Connect metadata under the issuer, then for RFC 8414 metadata', () => {
    expect(discoveryUrls('https://id.example.test')).toEqual([
      'https://id.example.test/.well-known/openid-configuration',
      'https://id.example.test/.well-known/oauth-authorization-server',
    ]);
    for (const issuer of [
      'https://id.example.test/tenants/acme',
      'https://id.example.test/tenants/acme/',
      'https://id.example.test/tenants/acme///',
    ]) {
      expect(discoveryUrls(issuer), issuer).toEqual([
        'https://id.example.test/tenants/acme/.well-known/openid-configuration',
        'https://id.example.test/.well-known/oauth-authorization-server/tenants/acme',
      ]);
    }
  });

  it('falls back to RFC 8414 metadata, asking for JSON each time', async () => {
    const { base, seen } = await metadataHost((path, origin) =>
      path === '/.well-known/oauth-authorization-server/tenant'
        ? { status: 200, body: { issuer: `${origin}/tenant`, jwks_uri: provider.jwksUrl } }
        : { status: 404 },
    );
    const issuer = `${base}/tenant`;
    const v = createIdTokenVerifier({ issuer, clientId: CLIENT });
    const claims = await v.verify(await mint(key, { iss: issuer, aud: CLIENT }));
    expect(claims.iss).toBe(issuer);
    expect(seen).toEqual([
      { path: '/tenant/.well-known/openid-configuration', accept: 'application/json' },
      { path: '/.well-known/oauth-authorization-server/tenant', accept: 'application/json' },
    ]);
  });

  it('never follows a redirect of the metadata', async () => {
    const { base, seen } = await metadataHost((path, origin) => {
      if (path === '/.well-known/openid-configuration') {
        return { status: 302, location: `${origin}/moved` };
      }
      if (path === '/moved') {
        return { status: 200, body: { issuer: origin, jwks_uri: provider.jwksUrl } };
      }
      return { status: 404 };
    });
    expect(await discoveryFailure(base)).toBe('No metadata document could be fetched');
    expect(seen.map((s) => s.path)).toEqual([
      '/.well-known/openid-configuration',
      '/.well-known/oauth-authorization-server',
    ]);
  });

  it('says why the metadata was refused', async () => {
    const jwks = provider.jwksUrl;
    const documents: [(origin: string) => unknown, string][] = [
      [() => null, 'The metadata names another issuer'],
      [() => ({ jwks_uri: jwks }), 'The metadata names another issuer'],
      [
        () => ({ issuer: 'https://evil.test', jwks_uri: jwks }),
        'The metadata names another issuer',
      ],
      [(origin) => ({ issuer: `${origin}/`, jwks_uri: jwks }), 'The metadata names another issuer'],
      [(origin) => ({ issuer: origin }), 'The metadata has no jwks_uri'],
      [(origin) => ({ issuer: origin, jwks_uri: 42 }), 'The metadata has no jwks_uri'],
    ];
    for (const [document, reason] of documents) {
      const { base, seen } = await metadataHost((path, origin) =>
        path === '/.well-known/openid-configuration'
          ? { status: 200, body: document(origin) }
          : { status: 404 },
      );
      expect(await discoveryFailure(base), String(document)).toBe(reason);
      expect(seen).toHaveLength(1); // a document that was found is never passed over
    }
  });

  it('waits 30 s after a failed discovery, then keeps the keys it found', async () => {
    const idp = await startKeyServer([key.jwk]);
    try {
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(START);
      idp.discovery = { issuer: 'https://elsewhere.test' };
      const v = createIdTokenVerifier({ issuer: idp.url, clientId: CLIENT });
      const token = await mint(key, { iss: idp.url, aud: CLIENT });
      const unavailable = { code: 'ERR_JWT_KEYS_UNAVAILABLE' };
      await expect(rejection(v.verify(token))).resolves.toMatchObject(unavailable);
      expect(idp.discoveryHits).toBe(1);
      idp.discovery = {}; // fixed, but not asked again before the cooldown is over
      vi.setSystemTime(START + 29_999);
      await expect(rejection(v.verify(token))).resolves.toMatchObject(unavailable);
      expect(idp.discoveryHits).toBe(1);
      vi.setSystemTime(START + 30_000);
      expect((await v.verify(token)).iss).toBe(idp.url);
      expect(idp.discoveryHits).toBe(2);
      // found keys stay in use, even when the clock steps back into the cooldown
      vi.setSystemTime(START + 1_000);
      expect((await v.verify(token)).iss).toBe(idp.url);
      expect(idp.discoveryHits).toBe(2);
    } finally {
      await idp.close();
    }
  });

  it('lets an access-token verifier cache tokens until the discovered keys change', async () => {
    const [k1, k2] = await Promise.all([makeKey('rot-1'), makeKey('rot-2')]);
    const idp = await startKeyServer([k1.jwk]);
    try {
      const v = createJwtVerifier({
        issuer: idp.url,
        audience: AUDIENCE,
        jwksOptions: { cooldownDuration: 0 },
      });
      const old = await mint(k1, { iss: idp.url });
      const first = await v.verify(old);
      expect(await v.verify(old)).toBe(first); // the cached verification itself
      idp.keys = [k2.jwk];
      expect((await v.verify(await mint(k2, { iss: idp.url }))).payload.iss).toBe(idp.url);
      const error = await rejection(v.verify(old));
      expect(error).toMatchObject({ code: 'ERR_JWT_INVALID', kind: 'invalid' });
      expect(idp.discoveryHits).toBe(1);
    } finally {
      await idp.close();
    }
  });
});

describe('parseScopes', () => {
  /** The 400 problem parseScopes throws about `field`. */
  const problem = (field: string, detail: string, message: string) =>
    expect.objectContaining({
      status: 400,
      code: 'ERR_INVALID_SCOPE',
      type: 'urn:portico:problem:invalid-request',
      detail,
      message: detail,
      errors: [{ field, message }],
    });

  it('refuses what is not a string or an array, naming the field (`scope` by default)', () => {
    for (const value of [42, null, undefined, { scope: 'read:x' }]) {
      expect(() => parseScopes(value)).toThrow(HttpError);
      expect(() => parseScopes(value)).toThrow(
        problem(
          'scope',
          'scope must be a space-separated string of scopes.',
          'must be a string of scopes',
        ),
      );
    }
    expect(() => parseScopes(42, 'scopes')).toThrow(
      problem(
        'scopes',
        'scopes must be a space-separated string of scopes.',
        'must be a string of scopes',
      ),
    );
  });

  it('takes 64 scopes and refuses 65', () => {
    const scopes = Array.from({ length: 65 }, (_, i) => `read:item${i}`);
    expect(parseScopes(scopes.slice(0, 64).join(' '))).toEqual(scopes.slice(0, 64));
    expect(parseScopes(scopes.slice(0, 64))).toEqual(scopes.slice(0, 64));
    for (const value of [scopes.join(' '), scopes]) {
      expect(() => parseScopes(value)).toThrow(HttpError);
      expect(() => parseScopes(value)).toThrow(
        problem('scope', 'scope holds more than 64 scopes.', 'at most 64 scopes'),
      );
    }
    expect(() => parseScopes(scopes, 'scopes')).toThrow(
      problem('scopes', 'scopes holds more than 64 scopes.', 'at most 64 scopes'),
    );
  });

  it('refuses a malformed scope, or one that is not a string even if it reads as one', () => {
    const malformed = (field: string) =>
      problem(
        field,
        `${field} holds a malformed scope; scopes look like read:messages.`,
        'each scope must look like <action>:<object> or be an OpenID scope',
      );
    for (const value of ['read:x Read:y', ['read messages'], [['read:messages']], [7]]) {
      expect(() => parseScopes(value), JSON.stringify(value)).toThrow(HttpError);
      expect(() => parseScopes(value), JSON.stringify(value)).toThrow(malformed('scope'));
    }
    expect(() => parseScopes(['openid', ['read:messages']], 'scopes')).toThrow(malformed('scopes'));
  });
});

describe('scopesFromClaim and assertScopes', () => {
  it('reads a claim of another type as no scope at all', () => {
    for (const value of [42, null, undefined, true, { scope: 'read:x' }]) {
      expect(scopesFromClaim(value)).toEqual([]);
    }
  });

  it('throws a TypeError naming the owner and the scope', () => {
    expect(() => assertScopes('myRoute()', ['read:messages', 'openid'])).not.toThrow();
    expect(optionError(() => assertScopes('myRoute()', ['read:messages', 'read messages']))).toBe(
      'myRoute(): `read messages` is not a valid scope',
    );
    // an array reads as 'read:messages' once stringified, yet it is no scope
    expect(optionError(() => assertScopes('myRoute()', [['read:messages']] as never))).toBe(
      'myRoute(): `read:messages` is not a valid scope',
    );
    expect(optionError(() => assertScopes('myRoute()', [42] as never))).toBe(
      'myRoute(): `42` is not a valid scope',
    );
  });
});
