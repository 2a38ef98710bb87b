// Beyond credential-check.test.ts: what check() answers without a credential, the scope a
// refusal names (joined, validated, none when empty), and which refusals authRefused hears.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterEach, describe, expect, it } from 'vitest';
import type { Authenticator } from '../../src/auth/authenticator.js';
import { createCredentialCheck, publishRefusal } from '../../src/auth/credential-check.js';
import { invalidCredentials } from '../../src/auth/errors.js';
import { HttpError } from '../../src/core/errors/http-error.js';
import { channels } from '../../src/diagnostics/index.js';
import { fakeRequest } from '../helpers/fake-http.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function heard(name: string): Record<string, unknown>[] {
  const messages: Record<string, unknown>[] = [];
  const listener = (message: unknown) => {
    const { req: _req, ...rest } = message as Record<string, unknown>;
    messages.push(rest);
  };
  subscribe(name, listener);
  cleanups.push(() => unsubscribe(name, listener));
  return messages;
}

const nobody: Authenticator = {
  scheme: 'Bearer',
  challenge: 'Bearer realm="api"',
  authenticate: () => undefined,
};

const refusal = () => invalidCredentials('Bearer realm="api"', 'The token is not valid.');
const challengesOf = (error: HttpError) => error.headers['WWW-Authenticate'];

describe('createCredentialCheck()', () => {
  it('answers no credential and no `missing` with presented false, nothing else', async () => {
    const check = createCredentialCheck('t()', [nobody], { guard: undefined, surface: 'http' });
    expect(await check.check(fakeRequest())).toStrictEqual({ presented: false });
  });

  it('adds the scopes of the request to a refusal, without a resource too', () => {
    const check = createCredentialCheck('t()', [nobody], {
      guard: undefined,
      surface: 'http',
      scopes: () => ['read', 'write'],
    });
    expect(challengesOf(check.answer(fakeRequest(), refusal()))).toEqual([
      'Bearer realm="api", scope="read write"',
    ]);
  });

  it('names no scope when the request needs none', () => {
    const check = createCredentialCheck('t()', [nobody], {
      guard: undefined,
      surface: 'http',
      scopes: () => [],
    });
    expect(challengesOf(check.answer(fakeRequest(), refusal()))).toEqual(['Bearer realm="api"']);
  });

  it('refuses scopes of the request that are not scope tokens', () => {
    const check = createCredentialCheck('t()', [nobody], {
      guard: undefined,
      surface: 'http',
      scopes: () => ['a b'],
    });
    expect(() => check.answer(fakeRequest(), refusal())).toThrow('t(): `a b` is not a valid scope');
  });
});

describe('publishRefusal()', () => {
  it('publishes 4xx refusals and the 503 of a guard, not other failures', () => {
    const messages = heard(channels.authRefused);
    const req = fakeRequest();
    publishRefusal(req, new Error('boom'), 'http');
    publishRefusal(req, { status: 401, code: 'X' }, 'http');
    publishRefusal(req, new HttpError(500), 'http');
    publishRefusal(req, new HttpError(501), 'http');
    publishRefusal(req, new HttpError(599), 'http');
    expect(messages).toEqual([]);
    publishRefusal(req, new HttpError(499), 'http');
    publishRefusal(req, new HttpError(503), 'ws');
    expect(messages).toEqual([
      { status: 499, code: 'ERR_HTTP_499', mechanism: undefined, surface: 'http' },
      { status: 503, code: 'ERR_HTTP_503', mechanism: undefined, surface: 'ws' },
    ]);
  });
});
