// Beyond authenticate-mutants.test.ts: requireScopes() names itself in its unknown-option and
// `resource` messages; requireRole() reads a principal without a `roles` list as holding none.
import { describe, expect, it } from 'vitest';
import { requireRole, requireScopes } from '../../src/auth/authenticate.js';
import { setPrincipal } from '../../src/core/principal.js';
import { fakeRequest } from '../helpers/fake-http.js';

describe('requireScopes() option messages', () => {
  it('names itself for an unknown option and a foreign resource', () => {
    expect(() => requireScopes(['read'], { bogus: 1 } as never)).toThrow(
      'requireScopes(): unknown option `bogus`.',
    );
    expect(() => requireScopes(['read'], { resource: {} as never })).toThrow(
      'requireScopes(): `resource` must be made by protectedResource()',
    );
  });
});

describe('requireRole()', () => {
  it('a principal without a roles list holds only its role', () => {
    // any role name: none is held through a missing `roles` list
    const done = Promise.resolve();
    const next = () => done;
    const mw = requireRole(['Stryker was here', 'admin']);
    const req = fakeRequest();
    setPrincipal(req, { sub: 'u', scopes: [], method: 'basic' });
    expect(() => mw(req, undefined as never, next)).toThrow(
      expect.objectContaining({ status: 403 }),
    );
    setPrincipal(req, { sub: 'u', scopes: [], method: 'basic', role: 'admin' });
    expect(mw(req, undefined as never, next)).toBe(done);
  });
});
