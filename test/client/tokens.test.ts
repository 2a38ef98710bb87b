// The expiry of answered tokens: the provider's expires_in to the millisecond, never floored.
import { describe, expect, it } from 'vitest';
import { expiryOf, tokensOf } from '../../src/client/tokens.js';

describe('expiryOf', () => {
  it('counts expires_in from the time given, to the millisecond', () => {
    expect(expiryOf({ expires_in: 60 }, 1_000_000)).toBe(1_060_000);
    expect(expiryOf({ expires_in: 0.5 }, 1_000_000)).toBe(1_000_500);
    expect(expiryOf({ expires_in: 0 }, 1_000_000)).toBe(1_000_000);
  });

  it('is undefined when the provider said no lifetime, or one that is no number', () => {
    expect(expiryOf({}, 1_000_000)).toBeUndefined();
    expect(expiryOf({ expires_in: Number.POSITIVE_INFINITY }, 1_000_000)).toBeUndefined();
    expect(expiryOf({ expires_in: Number.NaN }, 1_000_000)).toBeUndefined();
    expect(expiryOf({ expires_in: '60' as unknown as number }, 1_000_000)).toBeUndefined();
  });
});

describe('tokensOf', () => {
  it('keeps a 60 s answer read late for 60 s from now, not a second less', () => {
    // openid-client's expiresIn() would say 59 for an answer 1 ms old; tokensOf does not ask it
    const answer = {
      access_token: 'at',
      token_type: 'Bearer',
      expires_in: 60,
      expiresIn: () => 59,
    };
    const before = Date.now();
    const tokens = tokensOf(answer);
    const after = Date.now();
    expect(tokens.expiresAt).toBeGreaterThanOrEqual(before + 60_000);
    expect(tokens.expiresAt).toBeLessThanOrEqual(after + 60_000);
    expect(Object.isFrozen(tokens)).toBe(true);
    expect(tokens).toEqual({ accessToken: 'at', tokenType: 'Bearer', expiresAt: tokens.expiresAt });
  });

  it('has no expiresAt when the provider said none', () => {
    expect(tokensOf({ access_token: 'at', token_type: 'Bearer' })).toEqual({
      accessToken: 'at',
      tokenType: 'Bearer',
    });
  });
});
