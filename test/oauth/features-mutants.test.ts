// resolveFeatures(): registration off unless switched on, every other switch on; null and
// unknown switches refused in words that name the owner.
import { describe, expect, it } from 'vitest';
import { resolveFeatures } from '../../src/oauth/features.js';
import { thrownTypeError } from '../helpers/errors.js';

const OWNER = 'createAuthorizationServer()';
const NEEDS = { pushedAuthorizationRequests: [] };

describe('resolveFeatures', () => {
  it('leaves registration off and every other switch on unless told', () => {
    expect(resolveFeatures(OWNER, undefined, NEEDS)).toStrictEqual({
      deviceFlow: true,
      pushedAuthorizationRequests: true,
      introspection: true,
      revocation: true,
      endSession: true,
      userinfo: true,
      registration: false,
    });
    expect(resolveFeatures(OWNER, { registration: true }, NEEDS).registration).toBe(true);
  });

  it('refuses null and an unknown switch, naming the owner', () => {
    const notObject = thrownTypeError(() => resolveFeatures(OWNER, null as never, NEEDS));
    expect(notObject.message).toBe(
      'createAuthorizationServer(): `features` must be an object of switches',
    );
    const unknown = thrownTypeError(() =>
      resolveFeatures(OWNER, { registraton: true } as never, NEEDS),
    );
    expect(unknown.message).toMatch(
      /^createAuthorizationServer\(\) features: unknown option `registraton`/,
    );
  });
});
