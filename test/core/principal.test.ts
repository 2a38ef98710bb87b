import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import * as fromAuth from '../../src/auth/index.js';
import {
  getPrincipal,
  principalKey,
  requirePrincipal,
  setPrincipal,
} from '../../src/core/principal.js';
import { principalRateLimitKey } from '../../src/rate-limit/key.js';

describe('the principal slot (core)', () => {
  it('stores, reads and requires the principal of a request', () => {
    const req = {} as IncomingMessage;
    expect(getPrincipal(req)).toBeUndefined();
    expect(() => requirePrincipal(req)).toThrow(expect.objectContaining({ status: 401 }));
    setPrincipal(req, { sub: 'u-1', scopes: [], method: 'api_key', keyId: 'k-1' });
    expect(requirePrincipal(req).sub).toBe('u-1');
    // what runs after authentication reads it from core, without auth
    expect(principalRateLimitKey(req)).toBe('key:k-1');
  });

  it('is the one portico/auth re-exports', () => {
    expect(fromAuth.principalKey).toBe(principalKey);
    expect(fromAuth.getPrincipal).toBe(getPrincipal);
    expect(fromAuth.setPrincipal).toBe(setPrincipal);
    expect(fromAuth.requirePrincipal).toBe(requirePrincipal);
  });
});
