// The resource-indicator helpers of src/oauth/resources.ts (RFC 8707), called directly: the
// `resources` option refusing an entry that is not an object (null, a string, a number) with
// its own message, an identifier that is not a string even when it stringifies to a URL, a
// scope list with one bad or non-string entry, a `name` that is kept when a non-empty string
// and refused otherwise; `resource` values of a form (empty ones dropped, a malformed one
// invalid_target with its exact description); configured resources and the audience of a
// grant's token with their exact refusals, and the default resource for a grant that holds
// an empty list. No sockets: each function is pure.
import { describe, expect, it } from 'vitest';
import { OAuthError } from '../../src/oauth/protocol/errors.js';
import {
  type ConfiguredResource,
  configuredResources,
  resolveResources,
  takeResources,
  tokenAudience,
} from '../../src/oauth/resources.js';

const OWNER = 'createAuthorizationServer()';
const ISSUER = 'https://auth.example.test';
const API = 'https://api.example.test';
const MCP = 'https://mcp.example.test/mcp';

const resolve = (value: unknown) => resolveResources(OWNER, value as never, ISSUER);

/** What `run` throws (it must throw). */
function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

/** `run` throws an OAuthError `invalid_target` with exactly `description`. */
function expectInvalidTarget(run: () => unknown, description: string): void {
  const error = thrown(run);
  expect(error).toBeInstanceOf(OAuthError);
  expect((error as OAuthError).error).toBe('invalid_target');
  expect((error as OAuthError).message).toBe(description);
}

const MALFORMED = 'resource must be an absolute URI without a fragment (RFC 8707 §2).';

describe('resolveResources', () => {
  it('refuses an entry that is not an object, null included, with the entry message', () => {
    for (const given of [null, 'https://api.example.test', 42, undefined]) {
      const error = thrown(() => resolve([given]));
      expect(error, String(given)).toBeInstanceOf(TypeError);
      expect((error as Error).message).toBe(
        `${OWNER}: each of \`resources\` is { identifier, scopes?, name? }`,
      );
      expect((error as { code?: string }).code).toBe('ERR_INVALID_OPTION');
    }
  });

  it('refuses an identifier that is not a string, even one that reads as a URL', () => {
    for (const identifier of [new URL(API), [API], 42]) {
      expect(() => resolve([{ identifier }])).toThrow(
        `${OWNER}: \`resources[].identifier\` must be an absolute URI without a fragment (RFC 8707 §2)`,
      );
    }
  });

  it('refuses scopes with one bad name among good ones, or a name that is not a string', () => {
    const message = `${OWNER}: \`scopes\` of the resource ${API} must be a list of scope names`;
    expect(() => resolve([{ identifier: API, scopes: ['read', 'a b'] }])).toThrow(message);
    expect(() => resolve([{ identifier: API, scopes: ['read', 42] }])).toThrow(message);
    expect(() => resolve([{ identifier: API, scopes: [42] }])).toThrow(message);
    expect(resolve([{ identifier: API, scopes: ['read', 'write', 'read'] }])).toEqual([
      { identifier: API, scopes: ['read', 'write'], name: undefined },
    ]);
  });

  it('keeps a non-empty name, and refuses one that is empty or not a string', () => {
    expect(resolve([{ identifier: API, name: 'The API' }, { identifier: MCP }])).toEqual([
      { identifier: API, scopes: undefined, name: 'The API' },
      { identifier: MCP, scopes: undefined, name: undefined },
    ]);
    const message = `${OWNER}: \`name\` of the resource ${API} must be a non-empty string`;
    for (const name of ['', 42, null]) {
      expect(() => resolve([{ identifier: API, name }])).toThrow(message);
    }
  });
});

describe('takeResources', () => {
  it('drops empty values, takes duplicates once, and removes resource from the form', () => {
    const form = new URLSearchParams([
      ['resource', ''],
      ['resource', API],
      ['resource', ''],
      ['resource', API],
      ['resource', MCP],
      ['scope', 'openid'],
    ]);
    expect(takeResources(form)).toEqual([API, MCP]);
    expect(form.toString()).toBe('scope=openid');
    expect(takeResources(new URLSearchParams([['resource', '']]))).toEqual([]);
  });

  it('refuses a malformed value, even after good ones, as invalid_target', () => {
    for (const bad of ['not a uri', `${API}#x`, '/relative', `${API} ${MCP}`]) {
      expectInvalidTarget(
        () =>
          takeResources(
            new URLSearchParams([
              ['resource', API],
              ['resource', bad],
            ]),
          ),
        MALFORMED,
      );
    }
  });
});

describe('configuredResources and tokenAudience', () => {
  const configured: readonly ConfiguredResource[] = resolve([
    { identifier: API },
    { identifier: MCP, scopes: ['read'] },
  ]);

  it('refuses a malformed resource and an unknown one, each exactly described', () => {
    expectInvalidTarget(() => configuredResources(configured, ['not a uri']), MALFORMED);
    expectInvalidTarget(
      () => configuredResources(configured, ['https://elsewhere.example.test']),
      'Tokens are not issued for this resource.',
    );
    // spelled otherwise, a configured one is named by its configured identifier
    expect(configuredResources(configured, ['https://API.example.test/', API])).toEqual([API]);
  });

  it('gives the default resource to a grant that holds none, an empty list as no list', () => {
    expect(tokenAudience(configured, undefined, [])).toEqual([API]);
    expect(tokenAudience(configured, [], [])).toEqual([API]);
    expect(tokenAudience(configured, [], [MCP])).toEqual([MCP]);
    expect(tokenAudience(configured, [MCP], [])).toEqual([MCP]);
  });

  it('refuses a resource the grant does not cover, exactly described', () => {
    expectInvalidTarget(
      () => tokenAudience(configured, [MCP], [API]),
      'The grant does not cover this resource.',
    );
  });
});
