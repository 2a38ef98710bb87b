// Beyond challenge-list.property.test.ts: parseChallenges() on tabs, token68 with and without
// padding, stray `=`, unparseable values; resourceChallenges() and withResourceParams() exactly.
import { describe, expect, it } from 'vitest';
import {
  bareBearerChallenge,
  parseChallenges,
  resourceChallenges,
  withResourceParams,
} from '../../src/auth/challenge-list.js';
import { HttpError } from '../../src/core/errors/http-error.js';

const c = (scheme: string, text: string, names: string[] = [], token68 = false) => ({
  scheme,
  text,
  names: new Set(names),
  token68,
});

describe('parseChallenges() exactly', () => {
  it('reads a tab between the scheme and its parameters, and after a comma', () => {
    expect(parseChallenges('Bearer\trealm="x"')).toEqual([
      c('bearer', 'Bearer\trealm="x"', ['realm']),
    ]);
    expect(parseChallenges('Bearer \t realm="x"')).toEqual([
      c('bearer', 'Bearer \t realm="x"', ['realm']),
    ]);
    expect(parseChallenges('Bearer a=b,\tc=d')).toEqual([
      c('bearer', 'Bearer a=b,\tc=d', ['a', 'c']),
    ]);
  });

  it('skips tabs before a challenge', () => {
    expect(parseChallenges('\tBearer')).toEqual([c('bearer', 'Bearer')]);
    expect(parseChallenges('Basic,\tBearer')).toEqual([c('basic', 'Basic'), c('bearer', 'Bearer')]);
  });

  it('refuses a value whose challenge does not start with a token', () => {
    expect(parseChallenges('"x"')).toBeUndefined();
    expect(parseChallenges('Bearer, =')).toBeUndefined();
  });

  it('refuses a parameter without a name', () => {
    expect(parseChallenges('Bearer =x')).toBeUndefined();
  });

  it('reads `name=` at the end as a token68 with its padding', () => {
    expect(parseChallenges('Bearer realm=')).toEqual([c('bearer', 'Bearer realm=', [], true)]);
    expect(parseChallenges('Basic abc==, Bearer')).toEqual([
      c('basic', 'Basic abc==', [], true),
      c('bearer', 'Bearer'),
    ]);
  });

  it('refuses a parameter without a value after other parameters', () => {
    expect(parseChallenges('Bearer a=b, c=')).toBeUndefined();
    expect(parseChallenges('Bearer a=b, c==')).toBeUndefined();
  });

  it('reads a token68 without padding, at the end or before a comma', () => {
    expect(parseChallenges('Negotiate abc')).toEqual([c('negotiate', 'Negotiate abc', [], true)]);
    expect(parseChallenges('Negotiate abc, Basic')).toEqual([
      c('negotiate', 'Negotiate abc', [], true),
      c('basic', 'Basic'),
    ]);
    expect(parseChallenges('Negotiate abc,Basic')).toEqual([
      c('negotiate', 'Negotiate abc', [], true),
      c('basic', 'Basic'),
    ]);
  });

  it('reads a word followed by another as the next challenge', () => {
    expect(parseChallenges('Bearer abc def')).toEqual([
      c('bearer', 'Bearer'),
      c('abc', 'abc def', [], true),
    ]);
  });

  it('reads a bare scheme followed by spaces and a comma', () => {
    expect(parseChallenges('Bearer , Basic')).toEqual([c('bearer', 'Bearer'), c('basic', 'Basic')]);
    expect(parseChallenges('Bearer ')).toEqual([c('bearer', 'Bearer')]);
  });

  it('ends the parameters at the first one not after a comma', () => {
    expect(parseChallenges('Bearer a=b c=d')).toBeUndefined();
    expect(parseChallenges('Bearer a=b Basic')).toEqual([
      c('bearer', 'Bearer a=b', ['a']),
      c('basic', 'Basic'),
    ]);
  });
});

const META = 'https://h.example/.well-known/oauth-protected-resource';

describe('resourceChallenges() exactly', () => {
  it('leaves a challenge that already has every parameter as it is', () => {
    expect(
      resourceChallenges([`Bearer resource_metadata="${META}"`], { resourceMetadata: META }, 401),
    ).toEqual([`Bearer resource_metadata="${META}"`]);
    expect(resourceChallenges(['Bearer', 'DPoP algs="ES256"'], {}, 401)).toEqual([
      'Bearer',
      'DPoP algs="ES256"',
    ]);
  });

  it('adds scope on a 401 only', () => {
    const params = { resourceMetadata: META, scope: 'read' };
    expect(resourceChallenges(['Bearer error="insufficient_scope"'], params, 403)).toEqual([
      `Bearer error="insufficient_scope", resource_metadata="${META}"`,
    ]);
    expect(resourceChallenges(['Bearer'], params, 401)).toEqual([
      `Bearer resource_metadata="${META}", scope="read"`,
    ]);
  });

  it('keeps an unparseable value as it is, after the Bearer one', () => {
    expect(resourceChallenges(['"bad"', 'Bearer'], { resourceMetadata: META }, 401)).toEqual([
      `Bearer resource_metadata="${META}"`,
      '"bad"',
    ]);
  });

  it('puts the configured Bearer first on a 401 without a token scheme only', () => {
    const params = { resourceMetadata: META, bearer: 'Bearer realm="api"' };
    expect(resourceChallenges(['DPoP algs="ES256"'], params, 401)).toEqual([
      `DPoP algs="ES256", resource_metadata="${META}"`,
    ]);
    expect(resourceChallenges(['Basic realm="x"'], params, 403)).toEqual(['Basic realm="x"']);
    expect(resourceChallenges(['Basic realm="x"'], params, 401)).toEqual([
      `Bearer realm="api", resource_metadata="${META}"`,
      'Basic realm="x"',
    ]);
  });

  it('ignores a configured Bearer it cannot read', () => {
    expect(resourceChallenges(['Basic'], { bearer: '"x"' }, 401)).toEqual(['Basic']);
    expect(resourceChallenges(['Basic'], { bearer: '' }, 401)).toEqual(['Basic']);
  });
});

describe('bareBearerChallenge()', () => {
  it('skips values it cannot read', () => {
    expect(bareBearerChallenge(['"x"', 'Basic, Bearer realm="a"'])).toBe('Bearer realm="a"');
    expect(bareBearerChallenge(['"x"', 'Bearer abc'])).toBeUndefined();
  });
});

describe('withResourceParams() exactly', () => {
  const params = { resourceMetadata: META, bearer: 'Bearer' };

  it('answers anything but an HttpError as it is', () => {
    const thing = { status: 401, headers: {}, detail: 'x' };
    expect(withResourceParams(thing, params)).toBe(thing);
  });

  it('answers other statuses as they are', () => {
    const error = new HttpError(500, 'x', { headers: { 'WWW-Authenticate': 'Bearer' } });
    expect(withResourceParams(error, params)).toBe(error);
  });

  it('adds the parameters to a 400 that has challenges', () => {
    const error = new HttpError(400, 'x', {
      headers: { 'WWW-Authenticate': 'Bearer error="invalid_request"' },
    });
    const out = withResourceParams(error, params) as HttpError;
    expect(out).not.toBe(error);
    expect(out.headers).toEqual({
      'WWW-Authenticate': [`Bearer error="invalid_request", resource_metadata="${META}"`],
    });
  });

  it('answers a 400 or 403 without challenges as it is', () => {
    const e403 = new HttpError(403, 'x', { headers: { 'Retry-After': '5' } });
    expect(withResourceParams(e403, params)).toBe(e403);
    const odd = new HttpError(403, 'x', { headers: { undefined: 'Bearer' } });
    expect(withResourceParams(odd, params)).toBe(odd);
  });

  it('offers the configured Bearer on a 401 without challenges', () => {
    const error = new HttpError(401, 'x', { headers: { 'Retry-After': '5' }, code: 'C' });
    const out = withResourceParams(error, params) as HttpError;
    expect(out.headers).toEqual({
      'Retry-After': '5',
      'WWW-Authenticate': [`Bearer resource_metadata="${META}"`],
    });
    expect(out.status).toBe(401);
    expect(out.code).toBe('C');
    expect(out.detail).toBe('x');
  });

  it('sets no WWW-Authenticate when no challenge is left', () => {
    const e401 = new HttpError(401, 'x', { headers: { 'Retry-After': '5' } });
    expect((withResourceParams(e401, { resourceMetadata: META }) as HttpError).headers).toEqual({
      'Retry-After': '5',
    });
    const e403 = new HttpError(403, 'x', { headers: { 'WWW-Authenticate': '' } });
    expect((withResourceParams(e403, params) as HttpError).headers).toEqual({});
  });

  it('keeps the other headers and replaces the challenges under whatever case they had', () => {
    const error = new HttpError(401, 'x', {
      headers: { 'Retry-After': '5', 'www-authenticate': ['Basic', 'Bearer'], 'X-A': 'b' },
    });
    const out = withResourceParams(error, params) as HttpError;
    expect(out.headers).toEqual({
      'Retry-After': '5',
      'X-A': 'b',
      'WWW-Authenticate': [`Bearer resource_metadata="${META}"`, 'Basic'],
    });
  });
});
